package blobhttp

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/server"
)

// Request headers become the arguments of the blob service's calls here; what the service
// returns becomes response headers here too. (x-ms- response headers are written lower case,
// as Azure writes them, by assigning the header map directly.)

func invalidHeader(name, value, why string) *azerr.Error {
	e := azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. %s: %s", name, why)
	e.Details = []azerr.Detail{{Name: "HeaderName", Value: name}, {Name: "HeaderValue", Value: value}}
	return e
}

func missingHeader(name string) *azerr.Error {
	e := azerr.Newf(azerr.MissingRequiredHeader, "A required HTTP header was not specified: %s.", name)
	e.Details = []azerr.Detail{{Name: "HeaderName", Value: name}}
	return e
}

// etags splits an If-Match or If-None-Match value (a comma list of tags, or *).
func etags(h http.Header, name string) []blob.ETag {
	var out []blob.ETag
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, blob.ETag(t))
			}
		}
	}
	return out
}

// httpDate reads an HTTP date header; an unreadable one is ignored, as RFC 9110 says.
func httpDate(h http.Header, name string) time.Time {
	v := h.Get(name)
	if v == "" {
		return time.Time{}
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// conditions reads If-Match, If-None-Match, If-Modified-Since and If-Unmodified-Since, or,
// with prefix "x-ms-source-", the conditions on a copy's source.
func conditions(h http.Header, prefix string) blob.Conditions {
	tags := "x-ms-if-tags"
	if prefix != "" {
		tags = prefix + "if-tags" // x-ms-source-if-tags
	}
	return blob.Conditions{
		IfMatch:           etags(h, prefix+"If-Match"),
		IfNoneMatch:       etags(h, prefix+"If-None-Match"),
		IfModifiedSince:   httpDate(h, prefix+"If-Modified-Since"),
		IfUnmodifiedSince: httpDate(h, prefix+"If-Unmodified-Since"),
		IfTags:            h.Get(tags),
	}
}

// metadata reads the x-ms-meta-* headers, names in the case the client wrote them where the
// server could recover it (server.MetaName).
func metadata(h http.Header) blob.Metadata {
	var md blob.Metadata
	for k, vs := range h {
		name, ok := server.MetaName(k)
		if !ok {
			continue
		}
		if md == nil {
			md = blob.Metadata{}
		}
		md[name] = strings.Join(vs, ",")
	}
	return md
}

// base64Header decodes a base64 header: the error names the header and is code's.
func base64Header(h http.Header, name string, code azerr.Code) ([]byte, error) {
	v := h.Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if code == azerr.InvalidMD5 {
			return nil, azerr.New(azerr.InvalidMD5)
		}
		return nil, invalidHeader(name, v, "not base64")
	}
	return b, nil
}

// checksums reads a body's Content-MD5 and x-ms-content-crc64.
func checksums(h http.Header) (blob.Checksums, error) {
	md5, err := base64Header(h, "Content-MD5", azerr.InvalidMD5)
	if err != nil {
		return blob.Checksums{}, err
	}
	crc, err := base64Header(h, "x-ms-content-crc64", azerr.InvalidHeaderValue)
	return blob.Checksums{MD5: md5, CRC64: crc}, err
}

// blobProperties reads the content properties a write sets: the x-ms-blob-* headers, falling
// back to the plain content headers when plain is set (Put Blob). any reports whether a header
// was sent at all.
func blobProperties(h http.Header, plain bool) (p blob.ContentProperties, any bool, err error) {
	get := func(xms, std string) string {
		if v, ok := h[http.CanonicalHeaderKey(xms)]; ok {
			any = true
			return strings.Join(v, ",")
		}
		if plain && std != "" {
			return h.Get(std)
		}
		return ""
	}
	p.ContentType = get("x-ms-blob-content-type", "Content-Type")
	p.ContentEncoding = get("x-ms-blob-content-encoding", "Content-Encoding")
	p.ContentLanguage = get("x-ms-blob-content-language", "Content-Language")
	p.ContentDisposition = get("x-ms-blob-content-disposition", "Content-Disposition")
	p.CacheControl = get("x-ms-blob-cache-control", "Cache-Control")
	if _, ok := h["X-Ms-Blob-Content-Md5"]; ok {
		any = true
	}
	p.ContentMD5, err = base64Header(h, "x-ms-blob-content-md5", azerr.InvalidMD5)
	return p, any, err
}

// tags reads x-ms-tags: query-string encoded k=v pairs.
func tags(h http.Header) (blob.Tags, error) {
	v := h.Get("x-ms-tags")
	if v == "" {
		return nil, nil
	}
	q, err := url.ParseQuery(v)
	if err != nil {
		return nil, invalidHeader("x-ms-tags", v, "not query-string encoded tags")
	}
	t := blob.Tags{}
	for k, vs := range q {
		if len(vs) != 1 {
			return nil, azerr.Newf(azerr.InvalidTag, "The tags specified are invalid: %q is given more than once.", k)
		}
		t[k] = vs[0]
	}
	return t, nil
}

// byteRange reads x-ms-range, else Range; ok is false when neither is there or parses.
func byteRange(h http.Header) (blob.ByteRange, bool) {
	v := h.Get("x-ms-range")
	if v == "" {
		v = h.Get("Range")
	}
	if v == "" {
		return blob.ByteRange{}, false
	}
	return blob.ParseRange(v)
}

// int64Header reads an optional integer header.
func int64Header(h http.Header, name string) (*int64, error) {
	v := h.Get(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, invalidHeader(name, v, "not an integer")
	}
	return &n, nil
}

func intHeader(h http.Header, name string) (*int, error) {
	n, err := int64Header(h, name)
	if n == nil || err != nil {
		return nil, err
	}
	i := int(*n)
	return &i, nil
}

// contentLength is a write's body length: required (411 MissingContentLengthHeader), as
// clients never send chunked bodies.
func contentLength(rq *request) (int64, error) {
	if rq.R.ContentLength < 0 {
		return 0, azerr.New(azerr.MissingContentLengthHeader)
	}
	return rq.R.ContentLength, nil
}

// readXMLBody reads a small XML request body, at most limit bytes (413 beyond).
func readXMLBody(rq *request, limit int64) ([]byte, error) {
	if rq.R.ContentLength > limit {
		e := azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. The request may carry at most %d bytes.", limit)
		e.Details = []azerr.Detail{{Name: "MaxLimit", Value: strconv.FormatInt(limit, 10)}}
		return nil, e
	}
	b, err := io.ReadAll(io.LimitReader(rq.R.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. The request may carry at most %d bytes.", limit)
	}
	return b, nil
}

// path is the blob the request addresses, with its snapshot if any.
func (rq *request) path() blob.Path {
	return blob.Path{Account: rq.Account, Container: rq.container, Name: rq.blob, Snapshot: rq.Query.Get("snapshot"), VersionID: rq.Query.Get("versionid")}
}

func leaseID(h http.Header) string { return h.Get("x-ms-lease-id") }

// --- response headers ---

func httpTime(t time.Time) []string { return []string{t.UTC().Format(http.TimeFormat)} }

// setETag writes ETag and Last-Modified.
func setETag(h http.Header, etag blob.ETag, modified time.Time) {
	h["Etag"] = []string{string(etag)}
	h["Last-Modified"] = httpTime(modified)
}

// requestScope is the encryption scope a request names: its SAS's signed scope (ses), in
// which whatever the SAS writes is encrypted, else x-ms-encryption-scope; "" for none.
func requestScope(rq *request) string {
	if ses := rq.grant.EncryptionScope(); ses != "" {
		return ses
	}
	return rq.R.Header.Get("x-ms-encryption-scope")
}

// answerScope writes x-ms-encryption-scope, the scope a write put its bytes in, when there is
// one.
func answerScope(h http.Header, scope string) {
	if scope != "" {
		h["x-ms-encryption-scope"] = []string{scope}
	}
}

// setVersionID writes x-ms-version-id for a blob of a versioned account: the version read,
// or the one a write made.
func setVersionID(h http.Header, b *blob.Blob) {
	if b.VersionID != "" {
		h["x-ms-version-id"] = []string{b.VersionID}
	}
}

func setLease(h http.Header, l blob.LeaseInfo) {
	if l.State == "" {
		return
	}
	h["x-ms-lease-status"] = []string{l.Status}
	h["x-ms-lease-state"] = []string{string(l.State)}
	if l.Duration != "" {
		h["x-ms-lease-duration"] = []string{l.Duration}
	}
}

func setMetadata(h http.Header, md blob.Metadata) {
	for _, name := range md.Names() {
		h["x-ms-meta-"+name] = []string{md[name]}
	}
}

// setBlobHeaders writes what Get Blob and Get Blob Properties report about b (blob.md §9.3).
// Content-MD5 is the caller's: a ranged read reports it as x-ms-blob-content-md5. Every read
// of a blob passes here, so the values of its own share one allocation (net/http never
// modifies them).
func setBlobHeaders(h http.Header, b *blob.Blob) {
	setETag(h, b.ETag, b.LastModified)
	h["x-ms-creation-time"] = httpTime(b.Created)
	v := make(headerValues, 0, 8)
	h["x-ms-blob-type"] = v.one(string(b.Type))
	h["Accept-Ranges"] = bytesValue
	p := b.Properties
	h["Content-Type"] = v.one(p.ContentType)
	if p.ContentEncoding != "" {
		h["Content-Encoding"] = v.one(p.ContentEncoding)
	}
	if p.ContentLanguage != "" {
		h["Content-Language"] = v.one(p.ContentLanguage)
	}
	if p.ContentDisposition != "" {
		h["Content-Disposition"] = v.one(p.ContentDisposition)
	}
	if p.CacheControl != "" {
		h["Cache-Control"] = v.one(p.CacheControl)
	}
	setLease(h, b.Lease)
	setMetadata(h, b.Metadata)
	switch b.Type {
	case blob.PageBlob:
		h["x-ms-blob-sequence-number"] = v.one(strconv.FormatInt(b.SequenceNumber, 10))
	case blob.AppendBlob:
		h["x-ms-blob-committed-block-count"] = v.one(strconv.Itoa(b.CommittedBlockCount))
		if b.Sealed {
			// Absent, not false, on an unsealed blob, as the real service answers.
			h["x-ms-blob-sealed"] = trueValue
		}
	}
	if c := b.Copy; c != nil {
		h["x-ms-copy-id"] = v.one(c.ID)
		h["x-ms-copy-source"] = v.one(c.Source)
		h["x-ms-copy-status"] = v.one(c.Status)
		h["x-ms-copy-progress"] = v.one(c.Progress)
		if !c.CompletionTime.IsZero() {
			// Absent while the copy is pending.
			h["x-ms-copy-completion-time"] = httpTime(c.CompletionTime)
		}
		if c.Description != "" {
			h["x-ms-copy-status-description"] = v.one(c.Description)
		}
	}
	if b.IncrementalCopy {
		h["x-ms-incremental-copy"] = trueValue
		h["x-ms-copy-destination-snapshot"] = v.one(b.CopyDestinationSnapshot)
	}
	if len(b.Tags) > 0 {
		h["x-ms-tag-count"] = v.one(strconv.Itoa(len(b.Tags)))
	}
	answerProtection(h, b)
	if b.AccessTier != "" {
		h["x-ms-access-tier"] = v.one(b.AccessTier)
		if b.AccessTierInferred {
			h["x-ms-access-tier-inferred"] = trueValue
		}
		if !b.AccessTierChanged.IsZero() {
			h["x-ms-access-tier-change-time"] = httpTime(b.AccessTierChanged)
		}
		if b.ArchiveStatus != "" {
			h["x-ms-archive-status"] = v.one(b.ArchiveStatus)
			h["x-ms-rehydrate-priority"] = v.one(b.RehydratePriority)
		}
	}
	if b.Snapshot == "" {
		h["x-ms-server-encrypted"] = trueValue
	}
	setVersionID(h, b)
	if b.IsCurrentVersion {
		h["x-ms-is-current-version"] = trueValue
	}
	if b.EncryptionKeySHA256 != "" {
		// Read with its key (customer-provided keys, cpk.go), which the answer names.
		h["x-ms-encryption-key-sha256"] = v.one(b.EncryptionKeySHA256)
	}
	if b.EncryptionScope != "" {
		h["x-ms-encryption-scope"] = v.one(b.EncryptionScope)
	}
}

// headerValues hands out one-value header values from one backing array; each is capped at
// its one element, so that nothing appended to it can reach its neighbours.
type headerValues []string

func (v *headerValues) one(s string) []string {
	*v = append(*v, s)
	n := len(*v)
	return (*v)[n-1 : n : n]
}

// Header values that never change (net/http never modifies a header's values).
var (
	bytesValue = []string{"bytes"}
	trueValue  = []string{"true"}
)

func setChecksums(h http.Header, c blob.Checksums, md5 bool) {
	if md5 && c.MD5 != nil {
		h["Content-Md5"] = []string{base64.StdEncoding.EncodeToString(c.MD5)}
	}
	if c.CRC64 != nil {
		h["x-ms-content-crc64"] = []string{base64.StdEncoding.EncodeToString(c.CRC64)}
	}
}

// done answers a bodiless success.
func (rq *request) done(status int) error {
	rq.W.Header()["Content-Length"] = []string{"0"}
	rq.W.WriteHeader(status)
	return nil
}

// writeXML answers status with an XML body.
func (rq *request) writeXML(status int, body []byte) error {
	h := rq.W.Header()
	h["Content-Type"] = []string{"application/xml"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rq.W.WriteHeader(status)
	if rq.R.Method != http.MethodHead {
		_, _ = rq.W.Write(body)
	}
	return nil
}
