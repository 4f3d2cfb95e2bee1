package blob

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// ETag is an entity tag as sent in the ETag header: a quoted strong validator shaped like
// Azure's, "0x" and 15 upper-case hex digits of .NET ticks ("0x8DA7B2FB962744D").
type ETag string

// AnyETag is the "*" of If-Match and If-None-Match.
const AnyETag ETag = "*"

func etagOf(ticks int64) ETag { return ETag(fmt.Sprintf("\"0x%X\"", ticks)) }

// Unquoted returns the tag without its quotes, as List Blobs writes it.
func (e ETag) Unquoted() string { return strings.Trim(string(e), "\"") }

// matches compares two tags by their text, with or without quotes (List Blobs hands out
// unquoted ones, which clients send back).
func (e ETag) matches(o ETag) bool { return e.Unquoted() == o.Unquoted() }

// Conditions are a request's conditional headers (shared/spec/blob.md §3), parsed by the HTTP
// layer: If-Match and If-None-Match values (a comma list split into tags, AnyETag for "*"),
// If-Modified-Since and If-Unmodified-Since (zero when absent), and x-ms-if-tags as sent (a
// tag expression, tagquery.go; 400 InvalidHeaderValue when it is not one). The same type
// carries the x-ms-source-if-* headers of copies.
type Conditions struct {
	IfMatch           []ETag
	IfNoneMatch       []ETag
	IfModifiedSince   time.Time
	IfUnmodifiedSince time.Time
	IfTags            string
	// CustomerKey, when not nil, is the SHA-256 (base64) of the customer-provided key the
	// request carries (x-ms-encryption-key; "" for none), for an operation that takes one:
	// a blob written with a key is read and written with that key only, and one written
	// without takes none (checkCustomerKey). Nil for the operations that take no key.
	CustomerKey *string
	// NoOverwrite says the request's credential may create the blob but not replace it (a
	// SAS with c and not w): an existing blob is 403 UnauthorizedBlobOverwrite.
	NoOverwrite bool
	// TierIfModifiedSince and TierIfUnmodifiedSince (x-ms-access-tier-if-modified-since,
	// -if-unmodified-since; Delete Blob) judge when the blob's tier was last set: 412
	// AccessTierChangeTimeConditionNotMet.
	TierIfModifiedSince, TierIfUnmodifiedSince time.Time
	// EncryptionScope, when not nil, is the encryption scope the request names ("" for none)
	// for an operation that writes metadata into an existing blob (Set Blob Metadata,
	// Snapshot Blob), which must be the blob's own (blobState.checkScope). Nil elsewhere.
	EncryptionScope *string
}

// checkTierTime judges the tier-time conditions against when the tier was last set (zero:
// never, which no such condition accepts).
func (c Conditions) checkTierTime(changed time.Time) error {
	if c.TierIfModifiedSince.IsZero() && c.TierIfUnmodifiedSince.IsZero() {
		return nil
	}
	if changed.IsZero() ||
		!c.TierIfModifiedSince.IsZero() && !modifiedAfter(changed, c.TierIfModifiedSince) ||
		!c.TierIfUnmodifiedSince.IsZero() && modifiedAfter(changed, c.TierIfUnmodifiedSince) {
		return azerr.New(azerr.AccessTierChangeTimeConditionNotMet)
	}
	return nil
}

// checkCustomerKey compares the request's customer-provided key with the one an existing
// blob was written with (stored, "" for none), as recorded from the real service: 409
// BlobUsesCustomerSpecifiedEncryption when the request has none, 409
// BlobDoesNotUseCustomerSpecifiedEncryption when the blob has none, 409
// BlobCustomerSpecifiedEncryptionMismatch when they differ.
func (c Conditions) checkCustomerKey(stored string) error {
	if c.CustomerKey == nil || *c.CustomerKey == stored {
		return nil
	}
	switch {
	case *c.CustomerKey == "":
		return azerr.New(azerr.BlobUsesCustomerSpecifiedEncryption)
	case stored == "":
		return azerr.New(azerr.BlobDoesNotUseCustomerSpecifiedEncryption)
	}
	return azerr.New(azerr.BlobCustomerSpecifiedEncryptionMismatch)
}

// customerKey is the key a write gives the content it makes ("" for none).
func (c Conditions) customerKey() string {
	if c.CustomerKey == nil {
		return ""
	}
	return *c.CustomerKey
}

// IsZero reports whether no condition is set.
func (c Conditions) IsZero() bool {
	return len(c.IfMatch) == 0 && len(c.IfNoneMatch) == 0 && c.IfModifiedSince.IsZero() && c.IfUnmodifiedSince.IsZero() && c.IfTags == ""
}

// onContainer is c for a container, which has no tags: x-ms-if-tags does not apply to it.
func (c Conditions) onContainer() Conditions {
	c.IfTags = ""
	return c
}

// tagsHold judges x-ms-if-tags on a resource with tags (nil: none, or no resource).
func (c Conditions) tagsHold(tags Tags) (bool, error) {
	if c.IfTags == "" {
		return true, nil
	}
	expr, err := parseTagExpr(c.IfTags, ifTagsCondition)
	if err != nil {
		return false, ifTagsError(c.IfTags, err)
	}
	return expr.matches("", tags), nil
}

// checkTags is tagsHold as an answer: a condition that does not hold is 412 ConditionNotMet.
func (c Conditions) checkTags(tags Tags) error {
	ok, err := c.tagsHold(tags)
	if err == nil && !ok {
		err = azerr.New(azerr.ConditionNotMet)
	}
	return err
}

func anyTag(tags []ETag) bool {
	for _, t := range tags {
		if t == AnyETag {
			return true
		}
	}
	return false
}

func matchesAny(tags []ETag, e ETag) bool {
	for _, t := range tags {
		if t == AnyETag || t.matches(e) {
			return true
		}
	}
	return false
}

// modifiedAfter compares at whole seconds, the resolution of the HTTP dates clients send.
func modifiedAfter(modified, since time.Time) bool {
	return modified.Truncate(time.Second).After(since)
}

// checkRead judges a read (Get Blob, Get Blob Properties and Metadata, Get Page Ranges) of
// an existing resource: If-Match ∧ If-Unmodified-Since ∧ (If-None-Match ∨ If-Modified-Since),
// several If-Match values OR-ed and several If-None-Match values AND-ed. The first two failing
// is 412 ConditionNotMet; the last failing is 304 Not Modified (code ConditionNotMet, with the
// resource's ETag and Last-Modified headers, which a 304 carries). If-None-Match: * cannot be
// satisfied by a read: 400 UnsatisfiableCondition (Azurite's code; the real one is not
// documented). x-ms-if-tags failing is 412 ConditionNotMet, as If-Match.
func (c Conditions) checkRead(etag ETag, modified time.Time, tags Tags) error {
	if anyTag(c.IfNoneMatch) {
		return azerr.Newf(azerr.UnsatisfiableCondition, "The request includes an unsatisfiable condition for this operation: If-None-Match: * on a read.")
	}
	if err := c.checkTags(tags); err != nil {
		return err
	}
	if len(c.IfMatch) > 0 && !matchesAny(c.IfMatch, etag) {
		return azerr.New(azerr.ConditionNotMet)
	}
	if !c.IfUnmodifiedSince.IsZero() && modifiedAfter(modified, c.IfUnmodifiedSince) {
		return azerr.New(azerr.ConditionNotMet)
	}
	noneMatch := len(c.IfNoneMatch) > 0
	sinceSet := !c.IfModifiedSince.IsZero()
	if !noneMatch && !sinceSet {
		return nil
	}
	if noneMatch && !matchesAny(c.IfNoneMatch, etag) {
		return nil
	}
	if sinceSet && modifiedAfter(modified, c.IfModifiedSince) {
		return nil
	}
	return notModified(etag, modified)
}

// notModified is the 304 of a read whose If-None-Match or If-Modified-Since failed.
func notModified(etag ETag, modified time.Time) *azerr.Error {
	e := azerr.New(azerr.ConditionNotMet)
	e.Status = http.StatusNotModified
	e.Header = http.Header{
		"Etag":          {string(etag)},
		"Last-Modified": {modified.UTC().Format(http.TimeFormat)},
	}
	return e
}

// writeKind tells checkWrite how If-None-Match: * fails on an existing resource.
type writeKind uint8

const (
	// modify: any write to an existing resource; If-None-Match: * fails with 412.
	modify writeKind = iota
	// create: Put Blob, Put Block List, Copy and Put Blob From URL, where If-None-Match: *
	// means "only if it does not exist yet" and fails with 409 BlobAlreadyExists.
	create
	// remove: Delete Blob, judged as modify, except that a pending copy into the blob does
	// not stop it (the copy ends with the blob).
	remove
)

// checkWrite judges a write. exists tells whether the resource exists (etag, modified and tags
// are then its current ones). On a missing resource only If-Match (412, even with *) and
// x-ms-if-tags (no tags to match) fail; on an existing one every condition must hold (412
// ConditionNotMet, or code when the conditions are a copy's source conditions) — evaluating
// them all as a conjunction is a superset of Azure's precedence rules for the combinations
// SDKs send.
func (c Conditions) checkWrite(exists bool, etag ETag, modified time.Time, tags Tags, kind writeKind, code azerr.Code) error {
	ok, err := c.tagsHold(tags)
	if err != nil {
		return err
	}
	if !exists {
		if len(c.IfMatch) > 0 || c.IfTags != "" {
			return azerr.New(code)
		}
		return nil
	}
	if !ok {
		return azerr.New(code)
	}
	if anyTag(c.IfNoneMatch) {
		if kind == create {
			return azerr.New(azerr.BlobAlreadyExists)
		}
		return azerr.New(code)
	}
	switch {
	case len(c.IfMatch) > 0 && !matchesAny(c.IfMatch, etag),
		len(c.IfNoneMatch) > 0 && matchesAny(c.IfNoneMatch, etag),
		!c.IfModifiedSince.IsZero() && !modifiedAfter(modified, c.IfModifiedSince),
		!c.IfUnmodifiedSince.IsZero() && modifiedAfter(modified, c.IfUnmodifiedSince):
		return azerr.New(code)
	}
	return nil
}
