package blob

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/uuid"
)

// Copies within an account. The destination gets its own content whose pieces refer to the
// source's objects, so no byte is copied (except a small blob's inline bytes); every copy
// commit is conditioned on the source record it read, which keeps those objects referenced
// until the destination's own references are written. Copies of this server's blobs complete
// before they are acknowledged; only an asynchronous copy from another server may be answered
// pending (pending.go).

// SourceOptions are a copy source's x-ms-source-lease-id and x-ms-source-if-* conditions
// (unmet: 412 SourceConditionNotMet).
type SourceOptions struct {
	LeaseID    string
	Conditions Conditions
	// Fetched says the source is read as a GET of it would be: the *From URL operations,
	// where a source condition a GET refuses leaves the copy source unverified
	// (CannotVerifyCopySource with the GET's status: 304 for If-None-Match and
	// If-Modified-Since, as azblob's live tests see the real service answer, 412 for
	// If-Match and If-Unmodified-Since), but for an If-Match no ETag can satisfy (412
	// SourceConditionNotMet). Copy Blob's own source conditions fail with 412
	// SourceConditionNotMet.
	Fetched bool
	// CRC64 (x-ms-source-content-crc64), when not nil, must be the CRC-64 of the source
	// range a *From URL operation reads (400 Crc64Mismatch).
	CRC64 []byte
	// CustomerKey is the SHA-256 (base64) of x-ms-source-encryption-key, "" for none: a
	// source written with a customer-provided key is read with that key only (409
	// CannotVerifyCopySource, as the .NET SDK's recordings see the real service answer).
	CustomerKey string
	// Refused, when not nil, is why the source cannot be read at all (its URL or credential):
	// Copy Blob and Put Blob From URL answer it once the destination's lease and conditions
	// have passed, as the service judges the destination before it fetches the source (the
	// JS SDK's live "conditional tags sync copy's destination blob" test copies from a URL
	// no server here can read and expects the destination's ConditionNotMet).
	Refused error
	// Fetch, when not nil, reads the source from another server instead of the source path,
	// which then names nothing: the destination is judged first, then Fetch is called once.
	// LeaseID, Conditions and CustomerKey are for Fetch to send with its GET; the service does
	// not judge them.
	Fetch Fetch
	// FetchTags, with Fetch, reads the source's tags (Get Blob Tags), for a copy that takes
	// them (x-ms-copy-source-tag-option: COPY); its errors are the copy's answer.
	FetchTags func(ctx context.Context) (Tags, error)

	// rehydrates says the copy may read an archived source: an asynchronous Copy Blob, which
	// rehydrates it into an online tier. Every other copy of an archived source is 409
	// BlobArchived, as reading it is.
	rehydrates bool
}

// withTags is fetch, reading the source's tags into tags first when copyTags says the copy
// takes them: after the destination is judged, before the bytes.
func (o SourceOptions) withTags(copyTags bool, tags *Tags) Fetch {
	if !copyTags || o.FetchTags == nil {
		return o.Fetch
	}
	return func(ctx context.Context, r *ByteRange) (*RemoteSource, error) {
		t, err := o.FetchTags(ctx)
		if err != nil {
			return nil, err
		}
		*tags = t
		return o.Fetch(ctx, r)
	}
}

// loadSource reads a copy's source (of dst's account or another) for a copy into dst: a
// missing container or blob is 404 CannotVerifyCopySource, as the real service answers.
func (s *Service) loadSource(ctx context.Context, dst, src Path, o SourceOptions) (blobState, error) {
	st, err := s.loadExisting(ctx, src)
	var e *azerr.Error
	if errors.As(err, &e) && (e.Code == azerr.BlobNotFound || e.Code == azerr.ContainerNotFound) {
		return blobState{}, azerr.Newf(azerr.CannotVerifyCopySource, "The specified blob does not exist. (The copy source %s/%s was not found.)", src.Container, src.Name)
	}
	if err != nil {
		return blobState{}, err
	}
	if st.key.Row == rowBase {
		if err := st.b.Lease.checkAccess(s.Now(), o.LeaseID, false, blobLease); err != nil {
			return blobState{}, err
		}
	}
	if st.b.KeySHA != "" && o.CustomerKey != st.b.KeySHA {
		e := azerr.Newf(azerr.CannotVerifyCopySource, "The given customer specified encryption does not match the encryption used to encrypt the blob.")
		e.Status = http.StatusConflict
		return blobState{}, e
	}
	if o.Fetched {
		c := o.Conditions
		if err := (Conditions{IfNoneMatch: c.IfNoneMatch, IfModifiedSince: c.IfModifiedSince}).checkWrite(true, etagOf(st.b.ETag), time.Unix(0, st.b.Modified), nil, modify, azerr.SourceConditionNotMet); err != nil {
			e := azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: its conditions answered 304 Not Modified.")
			e.Status = http.StatusNotModified
			e.Header = http.Header{"x-ms-copy-source-status-code": {"304"}}
			return blobState{}, e
		}
		// An If-Match no ETag can satisfy is refused before the source is read (412
		// SourceConditionNotMet, azblob's live TestPutBlobFromUrlSourceIfMatchFalse); the
		// read of the source then answers the others 412, which leaves the source unverified
		// (Python SDK recordings: Put Blob From URL's unmet x-ms-source-if-unmodified-since,
		// Append Block From URL's unmet x-ms-source-if-match).
		if !noETagOfOurs(c.IfMatch) {
			if err := (Conditions{IfMatch: c.IfMatch, IfUnmodifiedSince: c.IfUnmodifiedSince}).checkWrite(true, etagOf(st.b.ETag), time.Unix(0, st.b.Modified), nil, modify, azerr.ConditionNotMet); err != nil {
				e := azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: its conditions answered 412 Precondition Failed.")
				e.Status = http.StatusPreconditionFailed
				e.Header = http.Header{"x-ms-copy-source-status-code": {"412"}, "x-ms-copy-source-error-code": {string(azerr.ConditionNotMet)}}
				return blobState{}, e
			}
		}
	}
	// x-ms-source-if-tags unmet is ConditionNotMet, as the JS SDK's live conditional tags
	// test sees Azure answer; the other source conditions are SourceConditionNotMet.
	if err := o.Conditions.checkTags(st.b.Tags); err != nil {
		return blobState{}, err
	}
	tagless := o.Conditions
	tagless.IfTags = ""
	if err := tagless.checkWrite(true, etagOf(st.b.ETag), time.Unix(0, st.b.Modified), nil, modify, azerr.SourceConditionNotMet); err != nil {
		return blobState{}, err
	}
	// AzCopy's users see Azure answer this to Put Blob From URL and Put Block From URL of
	// an archived source (azure-storage-azcopy#1663, #2382).
	if !o.rehydrates && st.b.archived(s.Now()) {
		return blobState{}, azerr.Newf(azerr.BlobArchived, "This operation is not permitted on an archived blob. The copy source is in the Archive tier: only Copy Blob (asynchronous) into an online tier reads it, rehydrating it.")
	}
	return st, nil
}

// checkCopyDestination applies a copy's destination lease and conditions: unmet ones are
// 412 ConditionNotMet, an unmet x-ms-if-tags judged first (the JS SDK's live conditional tags
// tests).
func (s *Service) checkCopyDestination(st *blobState, leaseID string, cond Conditions, now time.Time) error {
	var tags Tags
	if st.exists() {
		tags = st.b.Tags
	}
	if err := cond.checkTags(tags); err != nil {
		return err
	}
	cond.IfTags = ""
	return s.checkWriteAccess(st, leaseID, cond, create, now)
}

// noETagOfOurs tells an If-Match that no ETag this service hands out can satisfy: values
// given, none of them * or of the 0x… form.
func noETagOfOurs(tags []ETag) bool {
	for _, t := range tags {
		if t == AnyETag || strings.HasPrefix(strings.Trim(string(t), `"`), "0x") {
			return false
		}
	}
	return len(tags) > 0
}

// CopyOptions is one Copy Blob request besides its source.
type CopyOptions struct {
	// SourceURL is x-ms-copy-source as sent, reported back as x-ms-copy-source.
	SourceURL string
	Source    SourceOptions
	// Metadata, when not nil, replaces the source's.
	Metadata   Metadata
	Tags       Tags
	Tier       string
	LeaseID    string
	Conditions Conditions
	// Seal (x-ms-seal-blob), when not nil, says whether a copied append blob is sealed;
	// without it the copy is sealed as its source is.
	Seal *bool
	// SourceMD5 (x-ms-source-content-md5), when not nil, must be the MD5 of the source's
	// content (400 Md5Mismatch).
	SourceMD5 []byte
	// CopyTags (x-ms-copy-source-tag-option: COPY, Copy Blob From URL) gives the copy the
	// source's tags instead of Tags (none, for a source on another server).
	CopyTags bool
	// EncryptionScope is the scope the request names (x-ms-encryption-scope, or its SAS's
	// ses), "" for none: the container's default then applies (scopes.go).
	EncryptionScope string
	// Protection is the immutability policy and legal hold the copy takes; the source's
	// are not copied.
	Protection Protection
	// Sync is Copy Blob From URL (x-ms-requires-sync): a source over MaxSyncCopySize is 409
	// CannotVerifyCopySource.
	Sync bool
	// RehydratePriority is x-ms-rehydrate-priority, Standard or High (any case, "" for
	// Standard): how fast the copy of an archived source rehydrates, which here changes
	// nothing but what the destination reports.
	RehydratePriority string
}

// CopyBlob copies src (a blob or snapshot of dst's account, or the source o.Source.Fetch
// reads) over dst: type, bytes, content properties and metadata (o.Metadata instead when not
// nil). A copy of a source on another server is a block blob unless the source says it is an
// Azure page or append blob, whose type it then takes, its bytes one extent (every page then
// counts as written; an append blob keeps the source's committed block count). It completes
// before returning (the result's Copy says success) unless the source is on another server
// and slow (pending.go) or archived (rehydratingCopy). dst keeps its creation time and held
// lease (whose id the request must carry); If-None-Match: * on an existing dst is 409
// BlobAlreadyExists.
func (s *Service) CopyBlob(ctx context.Context, dst, src Path, o CopyOptions) (Blob, error) {
	if err := notSnapshot(dst); err != nil {
		return Blob{}, err
	}
	if o.Metadata != nil {
		if err := o.Metadata.Validate(); err != nil {
			return Blob{}, err
		}
	}
	if err := ValidateTags(o.Tags); err != nil {
		return Blob{}, err
	}
	tier, err := canonicalTier(o.Tier)
	diskTier, _, isPageTier := pageTier(o.Tier)
	if err != nil && isPageTier && s.premium(dst.Account) {
		// A premium account's page blob copy may name its disk tier (the Python SDK's
		// recorded test_blob_tier_copy_blob).
		tier, err = diskTier, nil
	}
	if err != nil {
		return Blob{}, err
	}
	priority, err := rehydratePriority(o.RehydratePriority)
	if err != nil {
		return Blob{}, err
	}
	// finish gives the copy of a source with tags srcTags what the request asks.
	finish := func(next *blobRecord, srcTags Tags, now time.Time) error {
		if o.Metadata != nil {
			next.Metadata = o.Metadata
		}
		next.Tags, next.Tier, next.TierChanged = o.Tags, tier, tierChangedAt(tier, now)
		if o.CopyTags {
			next.Tags = srcTags
		}
		if o.Seal != nil {
			next.Sealed = *o.Seal
		}
		next.Sealed = next.Sealed && next.Type == AppendBlob
		switch {
		case isPageTier && next.Type == PageBlob:
			if err := checkPageTier(tier, next.Size); err != nil {
				return err
			}
		case isPageTier:
			return azerr.Newf(azerr.AccessTierNotSupportedForBlobType, "The access tier is not supported for this blob type. %s is a tier of page blobs; the source is a %s.", tier, next.Type)
		case next.Type != BlockBlob:
			next.Tier = ""
		}
		next.Copy = &CopyState{
			ID:             uuid.New(),
			Source:         o.SourceURL,
			Status:         copySuccess,
			Progress:       fmt.Sprintf("%d/%d", next.Size, next.Size),
			CompletionTime: now.UTC(),
		}
		return nil
	}
	if o.Source.Fetch != nil {
		limit, tooLarge := int64(maxBlockBlobSize), func(n int64) error {
			return azerr.Newf(azerr.CannotVerifyCopySource, "The copy source is larger than a blob can be (%d bytes).", int64(maxBlockBlobSize))
		}
		var srcTags Tags
		fetch := o.Source.withTags(o.CopyTags, &srcTags)
		build := func(src *RemoteSource, u *upload, next *blobRecord, now time.Time) error {
			next.Type, next.Props, next.Metadata = remoteType(src, u.Len), remoteProperties(src, u), src.Metadata
			if next.Type == AppendBlob {
				next.Sealed = src.Sealed
				if u.Len > 0 {
					next.Blocks = min(max(src.Blocks, 1), MaxAppendBlocks)
				}
			}
			return finish(next, srcTags, now)
		}
		sums := Checksums{MD5: o.SourceMD5}
		if o.Sync {
			return s.replaceFromRemote(ctx, dst, fetch, MaxSyncCopySize, errSyncCopyTooLarge, sums, o.LeaseID, o.Conditions, o.EncryptionScope, o.Protection, build)
		}
		return s.copyFromRemote(ctx, dst, fetch, limit, tooLarge, sums, o.LeaseID, o.Conditions, o.EncryptionScope, o.Protection, build)
	}
	so := o.Source
	so.rehydrates = !o.Sync
	return s.copyInto(ctx, dst, src, so, o.LeaseID, o.Conditions, o.EncryptionScope, o.Protection, nil, func(ctx context.Context, srcSt, _ *blobState, b *batch, now time.Time) (blobRecord, error) {
		archived := srcSt.b.archived(now)
		if archived {
			if err := canRehydrateInto(tier); err != nil {
				return blobRecord{}, err
			}
		}
		if o.Sync && srcSt.b.Size > MaxSyncCopySize {
			return blobRecord{}, errSyncCopyTooLarge(srcSt.b.Size)
		}
		if o.SourceMD5 != nil {
			if err := s.checkSourceMD5(ctx, &srcSt.b, 0, srcSt.b.Size, o.SourceMD5); err != nil {
				return blobRecord{}, err
			}
		}
		next, err := s.duplicate(ctx, &srcSt.b, true, b)
		if err != nil {
			return next, err
		}
		if err := finish(&next, srcSt.b.Tags, now); err != nil {
			return next, err
		}
		if archived && s.RehydrateAfter > 0 {
			s.rehydratingCopy(&next, priority, now)
		}
		return next, nil
	})
}

// Copies of archived sources. An archived blob's bytes are offline: the only copy that reads
// them is an asynchronous Copy Blob into an online tier under another name (Azure's "Blob
// rehydration from the Archive tier"), which rehydrates them. Its destination is at once a
// blob with the source's bytes, properties and metadata, but in the Archive tier, rehydrating
// to the tier asked for (x-ms-archive-status rehydrate-pending-to-…, x-ms-rehydrate-priority)
// and its copy pending; its bytes can be neither read nor written until the rehydration is
// done, RehydrateAfter later, when the blob is in its tier and the copy succeeded. No process
// does anything meanwhile: the blob's record says when it is done (blobRecord.settle). Abort
// Copy Blob ends the copy and the rehydration, and leaves the blob without bytes. Every other
// copy of an archived source (Copy Blob From URL, the *From URL operations) is 409
// BlobArchived (loadSource).

// canRehydrateInto refuses the copies of an archived source that Azure does not make: into
// Archive or no tier (the Python SDK's users see 409 "This operation is not permitted on an
// archived blob." for a copy without one, azure-sdk-for-python#29838). One onto the source
// itself is refused before, as every write over an archived blob is (checkWriteAccess).
func canRehydrateInto(tier string) error {
	if tier == "" || tier == "Archive" {
		return azerr.Newf(azerr.BlobArchived, "This operation is not permitted on an archived blob. A copy of an archived blob rehydrates it, and needs an online tier: x-ms-access-tier Hot, Cool or Cold.")
	}
	return nil
}

// rehydratingCopy makes next, the copy of an archived source, rehydrate to the tier it was
// given: it stays in Archive, its copy pending, until RehydrateAfter from now.
func (s *Service) rehydratingCopy(next *blobRecord, priority string, now time.Time) {
	next.Rehydrate = &rehydration{To: next.Tier, Priority: priority, Done: now.Add(s.RehydrateAfter).UnixNano(), CopyID: next.Copy.ID}
	next.Tier = "Archive"
	c := *next.Copy
	c.Status, c.Progress, c.CompletionTime, c.Rehydrating = copyPending, fmt.Sprintf("0/%d", next.Size), time.Time{}, true
	next.Copy = &c
}

func canonicalTier(tier string) (string, error) {
	if tier == "" {
		return "", nil
	}
	t, ok := accessTiers[lower(tier)]
	if !ok {
		return "", azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-access-tier %q is not Hot, Cool, Cold or Archive.", tier)
	}
	return t, nil
}

// copyInto replaces dst with what build makes of the source (build sees the destination as
// read, st), as Put Blob replaces a blob; then, when not nil, adds what else the copy writes
// once next is final. The destination's lease and conditions are judged before the source
// is read.
func (s *Service) copyInto(ctx context.Context, dst, src Path, so SourceOptions, leaseID string, cond Conditions, scope string, pr Protection,
	then func(st *blobState, next *blobRecord, b *batch) error,
	build func(ctx context.Context, srcSt, st *blobState, b *batch, now time.Time) (blobRecord, error)) (Blob, error) {
	var out Blob
	err := s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadBlob(ctx, dst)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if err := s.checkCopyDestination(&st, leaseID, cond, now); err != nil {
			return nil, err
		}
		if so.Refused != nil {
			return nil, so.Refused
		}
		srcSt, err := s.loadSource(ctx, dst, src, so)
		if err != nil {
			return nil, err
		}
		var b batch
		b.add(unchanged(srcSt.key, srcSt.rec))
		next, err := build(ctx, &srcSt, &st, &b, now)
		if err != nil {
			return nil, err
		}
		// A copy onto itself replaces the source condition with this write.
		if err := s.replaceWith(ctx, dst, &st, &next, cond, scope, pr, now, &b); err != nil {
			return nil, err
		}
		if then != nil {
			if err := then(&st, &next, &b); err != nil {
				return nil, err
			}
		}
		st.b = next
		out = st.public(dst, now)
		return b.m, nil
	})
	return out, err
}

// replaceWith adds to b the mutations replacing st's blob (dst) with next, as a copy does:
// its uncommitted blocks go, it keeps its creation time, held lease and ETag sequence, and
// next takes the request's customer key and encryption scope. next is final afterwards.
func (s *Service) replaceWith(ctx context.Context, dst Path, st *blobState, next *blobRecord, cond Conditions, scope string, pr Protection, now time.Time, b *batch) error {
	srec, staging, err := s.loadStaging(ctx, st)
	if err != nil {
		return err
	}
	s.retireStaging(st, srec, staging, b)
	next.Created, next.Lease, next.ETag, next.KeySHA = now.UnixNano(), lease{}, 0, cond.customerKey()
	if r := next.Rehydrate; r == nil || next.Copy == nil || r.CopyID != next.Copy.ID {
		// The source's rehydration is not the copy's; only a copy's own is kept.
		next.Rehydrate = nil
	}
	if next.Scope, err = st.scopeFor(scope); err != nil {
		return err
	}
	if err := s.keepReplaced(ctx, dst, st, next, pr, now, b); err != nil {
		return err
	}
	if st.exists() {
		next.Created = st.b.Created
		next.Lease = st.b.Lease.afterWrite(now)
		next.ETag = st.b.ETag
	}
	s.touchBlob(next)
	m, err := s.put(st, next)
	if err != nil {
		return err
	}
	b.add(m...)
	return nil
}

// AbortCopy aborts the pending copy copyID into p (pending.go): the blob keeps no bytes and
// says aborted. A destination with an infinite lease needs its id; one with a fixed lease is
// 412 InfiniteLeaseDurationRequired. No copy pending (copies of this server's blobs complete
// before they are answered) is 409 NoPendingCopyOperation, another one pending 409
// CopyIdMismatch. copyID must be a GUID (400 InvalidQueryParameterValue).
func (s *Service) AbortCopy(ctx context.Context, p Path, copyID, leaseID string) error {
	if !validLeaseID(copyID) {
		return azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. copyid needs to be valid Guid.")
	}
	if err := notSnapshot(p); err != nil {
		return err
	}
	var aborted string
	err := s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if err := st.b.Lease.checkAccess(now, leaseID, true, blobLease); err != nil {
			return nil, err
		}
		if l := st.b.Lease.at(now); l.held() && l.Seconds != InfiniteLease {
			return nil, azerr.New(azerr.InfiniteLeaseDurationRequired)
		}
		c := st.b.Copy
		switch {
		case !c.pending(now):
			return nil, azerr.New(azerr.NoPendingCopyOperation)
		case !strings.EqualFold(c.ID, copyID):
			return nil, azerr.New(azerr.CopyIDMismatch)
		}
		done := *c
		done.Status, done.CompletionTime, done.Beat = copyAborted, now.UTC(), time.Time{}
		st.b.Copy, aborted = &done, c.ID
		var b batch
		if r := st.b.Rehydrate; c.Rehydrating && r != nil {
			// The rehydrating copy of an archived source had its bytes all along: they go,
			// with the rehydration.
			retireContent(&st.b, &b, s.nextTicks(0))
			st.b.Content, st.b.data, st.b.Size, st.b.Pieces, st.b.Blocks, st.b.IDLen = "", nil, 0, 0, 0, 0
			st.b.Props.ContentMD5, st.b.Rehydrate = nil, nil
			st.b.Tier, st.b.TierChanged = r.To, now.UnixNano()
			s.touchBlob(&st.b)
		}
		m, err := s.put(&st, &st.b)
		b.add(m...)
		return b.m, err
	})
	if err == nil {
		s.copies.cancel(aborted)
	}
	return err
}

// PutBlobFromURLOptions is one Put Blob From URL request besides its source.
type PutBlobFromURLOptions struct {
	Source SourceOptions
	// SourceMD5 (x-ms-source-content-md5), when set, must be the MD5 of the source's bytes.
	SourceMD5 []byte
	// Properties, when not nil, are stored instead of the source's content properties
	// (x-ms-copy-source-blob-properties: false, or explicit x-ms-blob-* headers). With
	// KeepSourceProperties, only those set replace the source's: the JS SDK's live test
	// sends two of five headers and reads the source's other three back.
	Properties           *ContentProperties
	KeepSourceProperties bool
	Metadata             Metadata
	Tags                 Tags
	// CopyTags (x-ms-copy-source-tag-option: COPY) gives the blob the source's tags instead
	// of Tags.
	CopyTags   bool
	Tier       string
	LeaseID    string
	Conditions Conditions
	// EncryptionScope is the scope the request names (x-ms-encryption-scope, or its SAS's
	// ses), "" for none: the container's default then applies (scopes.go).
	EncryptionScope string
	// Protection is the immutability policy and legal hold the copy takes; the source's
	// are not copied.
	Protection Protection
}

// PutBlobFromURL replaces dst with a block blob holding the bytes of src (a blob or snapshot
// of the same account, of any kind, or the source o.Source.Fetch reads; at most 5,000 MiB),
// as Put Blob would with those bytes as its body: no committed blocks, metadata from the
// request, content properties from the source unless given.
func (s *Service) PutBlobFromURL(ctx context.Context, dst, src Path, o PutBlobFromURLOptions) (Blob, error) {
	put := PutBlobOptions{Type: BlockBlob, Metadata: o.Metadata, Tags: o.Tags, Tier: o.Tier}
	if o.Properties != nil {
		put.Properties = *o.Properties
	}
	if err := s.validatePut(dst, 0, &put); err != nil {
		return Blob{}, err
	}
	if o.SourceMD5 != nil && len(o.SourceMD5) != md5.Size {
		return Blob{}, azerr.New(azerr.InvalidMD5)
	}
	if noETagOfOurs(o.Conditions.IfMatch) {
		// UNSURE: such an If-Match (the JS SDK's live test sends "invalidetag") is
		// TargetConditionNotMet here, while a stale ETag or a date is ConditionNotMet
		// (azblob v1.8.3's live TestPutBlobFromUrlDest*False, the Python SDK's recordings);
		// this reading satisfies all three.
		return Blob{}, azerr.New(azerr.TargetConditionNotMet)
	}
	tooLarge := func(n int64) error {
		return azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. The copy source has %d bytes; Put Blob From URL takes at most %d.", n, int64(MaxPutBlobSize))
	}
	// finish makes next, a copy of a source with properties props and tags srcTags, the block
	// blob the request asks for.
	finish := func(next *blobRecord, props ContentProperties, srcTags Tags, now time.Time) {
		next.Type, next.Sequence, next.Sealed, next.Copy = BlockBlob, 0, false, nil
		tags := put.Tags
		if o.CopyTags {
			tags = srcTags
		}
		next.Metadata, next.Tags, next.Tier, next.TierChanged = put.Metadata, tags, put.Tier, tierChangedAt(put.Tier, now)
		next.Props = props
		switch {
		case o.Properties != nil && o.KeepSourceProperties:
			next.Props = mergeProperties(props, *o.Properties)
		case o.Properties != nil:
			next.Props = put.Properties
		}
	}
	sums := Checksums{MD5: o.SourceMD5, CRC64: o.Source.CRC64}
	if o.Source.Fetch != nil {
		var srcTags Tags
		return s.replaceFromRemote(ctx, dst, o.Source.withTags(o.CopyTags, &srcTags), MaxPutBlobSize, tooLarge, sums, o.LeaseID, o.Conditions, o.EncryptionScope, o.Protection,
			func(src *RemoteSource, u *upload, next *blobRecord, now time.Time) error {
				finish(next, remoteProperties(src, u), srcTags, now)
				return nil
			})
	}
	return s.copyInto(ctx, dst, src, o.Source, o.LeaseID, o.Conditions, o.EncryptionScope, o.Protection, nil, func(ctx context.Context, srcSt, _ *blobState, b *batch, now time.Time) (blobRecord, error) {
		if srcSt.b.Size > MaxPutBlobSize {
			return blobRecord{}, tooLarge(srcSt.b.Size)
		}
		if o.SourceMD5 != nil || o.Source.CRC64 != nil {
			if err := s.checkSourceSums(ctx, &srcSt.b, 0, srcSt.b.Size, sums); err != nil {
				return blobRecord{}, err
			}
		}
		next, err := s.duplicate(ctx, &srcSt.b, false, b)
		if err != nil {
			return next, err
		}
		finish(&next, srcSt.b.Props, srcSt.b.Tags, now)
		return next, nil
	})
}

// mergeProperties is base with the properties set in over replacing its own.
func mergeProperties(base, over ContentProperties) ContentProperties {
	for _, f := range []struct{ to, from *string }{
		{&base.ContentType, &over.ContentType}, {&base.ContentEncoding, &over.ContentEncoding},
		{&base.ContentLanguage, &over.ContentLanguage}, {&base.ContentDisposition, &over.ContentDisposition},
		{&base.CacheControl, &over.CacheControl},
	} {
		if *f.from != "" {
			*f.to = *f.from
		}
	}
	if over.ContentMD5 != nil {
		base.ContentMD5 = over.ContentMD5
	}
	return base
}

// checkSourceMD5 reads n bytes of b from off and compares their MD5 with want.
func (s *Service) checkSourceMD5(ctx context.Context, b *blobRecord, off, n int64, want []byte) error {
	return s.checkSourceSums(ctx, b, off, n, Checksums{MD5: want})
}

// checkSourceSums reads n bytes of b from off and compares their MD5 and CRC-64 with those of
// want that are set (x-ms-source-content-md5, x-ms-source-content-crc64).
func (s *Service) checkSourceSums(ctx context.Context, b *blobRecord, off, n int64, want Checksums) error {
	body := s.contentBody(ctx, b, off, n)
	defer body.Close()
	sum := newSummer(want.MD5 != nil)
	if _, err := io.Copy(sum, body); err != nil {
		return err
	}
	return compareSourceSums(sum.sums(), want)
}

// compareSourceSums compares the checksums of a copy source's bytes (got) with those of want
// that are set: 400 Md5Mismatch or Crc64Mismatch.
func compareSourceSums(got, want Checksums) error {
	if want.MD5 != nil && !bytes.Equal(got.MD5, want.MD5) {
		return azerr.Newf(azerr.MD5Mismatch, "The MD5 value specified in the request did not match with the MD5 value calculated by the server. (x-ms-source-content-md5 is not the MD5 of the source range.)")
	}
	if want.CRC64 != nil && !bytes.Equal(got.CRC64, want.CRC64) {
		return azerr.Newf(azerr.CRC64Mismatch, "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server. (x-ms-source-content-crc64 is not the CRC-64 of the source range.)")
	}
	return nil
}

// sourceRange resolves a *From URL operation's x-ms-source-range (nil: the whole source)
// against the source's size: 416 InvalidRange when it starts beyond it.
func sourceRange(r *ByteRange, size int64) (off, n int64, err error) {
	if r == nil {
		return 0, size, nil
	}
	if r.Start >= size {
		return 0, 0, azerr.Newf(azerr.InvalidRange, "The range specified is invalid for the current size of the resource. The source range starts at %d; the source has %d bytes.", r.Start, size)
	}
	end := size
	if r.End >= 0 {
		end = min(end, r.End+1)
	}
	return r.Start, end - r.Start, nil
}

// errSourceChanged says the source changed between reading its bytes and committing.
var errSourceChanged = errors.New("blob: copy source changed")

// fromURL runs a *From URL operation on n bytes of src from off: it reads the source's pieces
// (a small source's inline bytes become a new object), then commit builds the destination's
// mutations from them; the commit is conditioned on the source as read, and starts over
// should the source change in between. A source on another server (so.Fetch) is fetched once
// judge has passed the destination, and must have at most limit bytes; its bytes are one
// piece, an upload commit refers to.
func (s *Service) fromURL(ctx context.Context, dst, src Path, so SourceOptions, r *ByteRange, sourceMD5 []byte, limit int64, judge func() error,
	commit func(pieces []piece, u *upload, guard func(*batch) error) error) error {
	if so.Fetch != nil {
		tooLarge := func(n int64) error {
			if n < 0 {
				return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. The source range has more than %d bytes, which this operation takes at most.", limit)
			}
			return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. The source range has %d bytes; this operation takes at most %d.", n, limit)
		}
		never := func(*RemoteSource) bool { return false }
		_, u, err := s.fetchUpload(ctx, so.Fetch, r, limit, tooLarge, Checksums{MD5: sourceMD5, CRC64: so.CRC64}, false, never, judge)
		if err != nil {
			return err
		}
		var pieces []piece
		if u.Len > 0 {
			pieces = []piece{u.piece}
		}
		err = commit(pieces, &u, func(*batch) error { return nil })
		s.discardUnless(err, &u)
		return err
	}
	for range maxCommitAttempts {
		srcSt, err := s.loadSource(ctx, dst, src, so)
		if err != nil {
			return err
		}
		off, n, err := sourceRange(r, srcSt.b.Size)
		if err != nil {
			return err
		}
		if sourceMD5 != nil || so.CRC64 != nil {
			if err := s.checkSourceSums(ctx, &srcSt.b, off, n, Checksums{MD5: sourceMD5, CRC64: so.CRC64}); err != nil {
				return err
			}
		}
		var pieces []piece
		var u *upload
		if srcSt.b.Content == "" {
			if n > 0 {
				got, err := s.receive(ctx, bytes.NewReader(srcSt.b.data[off:off+n]), n, Checksums{}, false, false)
				if err != nil {
					return err
				}
				u = &got
				pieces = []piece{got.piece}
			}
		} else if pieces, err = s.contentPieces(ctx, &srcSt.b, off, n); err != nil {
			return err
		}
		guard := func(b *batch) error {
			cur, err := s.get(ctx, srcSt.key)
			if err != nil {
				return err
			}
			if cur == nil || cur.Version != srcSt.rec.Version {
				return errSourceChanged
			}
			b.add(unchanged(srcSt.key, cur))
			return nil
		}
		err = commit(pieces, u, guard)
		if u != nil {
			if errors.Is(err, errSourceChanged) {
				s.discard(u)
			} else {
				s.discardUnless(err, u)
			}
		}
		if !errors.Is(err, errSourceChanged) {
			return err
		}
	}
	return azerr.Newf(azerr.ServerBusy, "The copy source is being written by too many clients at once. Please retry your request.")
}

// BlockFromURLOptions is one Put Block From URL request besides its source.
type BlockFromURLOptions struct {
	Source    SourceOptions
	SourceMD5 []byte
	LeaseID   string
}

// PutBlockFromURL stages block id of dst with the bytes of src in r (nil: all of it), as Put
// Block would with those bytes as its body, and returns the block's size.
func (s *Service) PutBlockFromURL(ctx context.Context, dst Path, id []byte, src Path, r *ByteRange, o BlockFromURLOptions) (int64, error) {
	if err := notSnapshot(dst); err != nil {
		return 0, err
	}
	if err := validateBlockID(id); err != nil {
		return 0, err
	}
	var size int64
	judge := func() error {
		_, err := s.stageBlock(ctx, dst, id, nil, o.LeaseID)
		return err
	}
	err := s.fromURL(ctx, dst, src, o.Source, r, o.SourceMD5, MaxBlockSize, judge, func(pieces []piece, u *upload, guard func(*batch) error) error {
		if size = piecesLen(pieces); size == 0 || size > MaxBlockSize {
			return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. A block is 1 to %d bytes; the source range has %d.", int64(MaxBlockSize), size)
		}
		return s.update(ctx, func() ([]store.Mutation, error) {
			var b batch
			if err := guard(&b); err != nil {
				return nil, err
			}
			m, err := s.stageBlock(ctx, dst, id, pieces, o.LeaseID)
			if err != nil {
				return nil, err
			}
			b.add(m...)
			return b.m, nil
		})
	})
	return size, err
}

// AppendBlockFromURL appends the bytes of src in r (nil: all of it) to dst, as Append Block
// would with those bytes as its body.
func (s *Service) AppendBlockFromURL(ctx context.Context, dst, src Path, r *ByteRange, so SourceOptions, sourceMD5 []byte, o AppendBlockOptions) (AppendResult, error) {
	if err := notSnapshot(dst); err != nil {
		return AppendResult{}, err
	}
	var out AppendResult
	judge := func() error {
		st, err := s.loadExisting(ctx, dst)
		if err != nil {
			return err
		}
		return s.checkAppend(&st, &o, s.Now())
	}
	err := s.fromURL(ctx, dst, src, so, r, sourceMD5, MaxAppendBlockSize, judge, func(pieces []piece, u *upload, guard func(*batch) error) error {
		if n := piecesLen(pieces); n == 0 || n > MaxAppendBlockSize {
			return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. An appended block is 1 to %d bytes; the source range has %d.", MaxAppendBlockSize, n)
		}
		var err error
		out, err = s.appendPieces(ctx, dst, pieces, u, &o, guard)
		return err
	})
	return out, err
}

// PutPagesFromURL writes the pages of r in dst with the bytes of src in sr, which must have
// the same length, as Put Page would with those bytes as its body.
func (s *Service) PutPagesFromURL(ctx context.Context, dst Path, r ByteRange, src Path, sr ByteRange, so SourceOptions, sourceMD5 []byte, o PageWriteOptions) (Blob, error) {
	if err := notSnapshot(dst); err != nil {
		return Blob{}, err
	}
	if err := validatePageRange(r); err != nil {
		return Blob{}, err
	}
	if r.End-r.Start+1 > MaxPutPageSize {
		return Blob{}, azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. Put Page takes at most %d bytes.", MaxPutPageSize)
	}
	var out Blob
	judge := func() error {
		st, err := s.loadExisting(ctx, dst)
		if err != nil {
			return err
		}
		return s.checkPageWrite(&st, r, &o, s.Now())
	}
	err := s.fromURL(ctx, dst, src, so, &sr, sourceMD5, r.End-r.Start+1, judge, func(pieces []piece, u *upload, guard func(*batch) error) error {
		if n := piecesLen(pieces); n != r.End-r.Start+1 {
			return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. The source range has %d bytes; the page range %d.", n, r.End-r.Start+1)
		}
		var err error
		out, err = s.writePages(ctx, dst, r, pieces, u, &o, guard)
		return err
	})
	return out, err
}
