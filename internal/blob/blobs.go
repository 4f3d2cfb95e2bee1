package blob

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// BlobType is x-ms-blob-type.
type BlobType string

const (
	BlockBlob  BlobType = "BlockBlob"
	PageBlob   BlobType = "PageBlob"
	AppendBlob BlobType = "AppendBlob"
)

// Path names a blob, or one of its snapshots when Snapshot is set (a timestamp as Snapshot
// Blob returns it), or one of its versions when VersionID is set (versions.go).
type Path struct {
	Account, Container, Name string
	Snapshot                 string
	VersionID                string
}

// ContentProperties are the properties a client sets with the x-ms-blob-* headers and reads
// back as the standard content headers. ContentMD5 is the 16-byte MD5 of the whole blob, or
// nil.
type ContentProperties struct {
	ContentType        string `json:"type,omitempty"`
	ContentEncoding    string `json:"encoding,omitempty"`
	ContentLanguage    string `json:"language,omitempty"`
	ContentDisposition string `json:"disposition,omitempty"`
	CacheControl       string `json:"cache,omitempty"`
	ContentMD5         []byte `json:"md5,omitempty"`
}

// defaultContentType is what a blob created without a content type reports.
const defaultContentType = "application/octet-stream"

// CopyState is what a blob that was the destination of a copy reports (x-ms-copy-*).
type CopyState struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	// Status is success, or for a copy from another server that outlasted its answer
	// (pending.go) pending, then success, failed or aborted.
	Status   string `json:"status"`
	Progress string `json:"progress"`
	// CompletionTime is zero while the copy is pending.
	CompletionTime time.Time `json:"completed"`
	// Description says why a copy failed (x-ms-copy-status-description).
	Description string `json:"description,omitempty"`
	// Beat is when the process doing a pending copy last said it was at it: a pending copy
	// whose beat is older than copyStale has lost its process, and reports failed.
	Beat time.Time `json:"beat,omitzero"`
	// Rehydrating marks the copy of an archived source, which no process does: it is pending
	// until its blob's rehydration is done (blobRecord.settle), and has no beat.
	Rehydrating bool `json:"rehydrating,omitempty"`
	// Process names the process doing a pending copy (thisProcess): over a store no other
	// process can have open, a pending copy of another process lost it (Service.orphan).
	Process string `json:"process,omitempty"`
}

// Tags are a blob's index tags, key to value.
type Tags map[string]string

// Blob is a blob (or snapshot) as Get Blob Properties and List Blobs report it.
type Blob struct {
	Name     string
	Snapshot string // set for a snapshot
	// VersionID is the version's id (x-ms-version-id) on an account with versioning, and
	// IsCurrentVersion tells the blob itself from its previous versions. HasVersionsOnly
	// marks a listing entry for a deleted blob that has previous versions.
	VersionID        string
	IsCurrentVersion bool
	HasVersionsOnly  bool
	Type             BlobType
	// Created is x-ms-creation-time; LastModified and ETag change with every write to the
	// blob's bytes, properties or metadata, never with a lease operation.
	Created      time.Time
	LastModified time.Time
	ETag         ETag
	Size         int64
	Properties   ContentProperties
	Metadata     Metadata
	Lease        LeaseInfo // zero for snapshots, which cannot be leased
	// SequenceNumber is x-ms-blob-sequence-number (page blobs).
	SequenceNumber int64
	// CommittedBlockCount is x-ms-blob-committed-block-count (append blobs).
	CommittedBlockCount int
	Sealed              bool // append blobs
	Copy                *CopyState
	// IncrementalCopy marks an incremental copy blob and its snapshots (incremental.go);
	// CopyDestinationSnapshot is the destination snapshot its last copy made.
	IncrementalCopy         bool
	CopyDestinationSnapshot string
	// AccessTier is x-ms-access-tier; AccessTierInferred tells that it was never set (block
	// blobs are then Hot).
	AccessTier         string
	AccessTierInferred bool
	// AccessTierChanged is when the tier was last set: by Set Blob Tier, a rehydration, or
	// a write that gave one (zero: never).
	AccessTierChanged time.Time
	// EncryptionKeySHA256 is the SHA-256 of the customer-provided key the blob was written
	// with, "" for none.
	EncryptionKeySHA256 string
	// EncryptionScope is the encryption scope the blob was written in, "" for the account's.
	EncryptionScope string
	// ArchiveStatus (rehydrate-pending-to-hot, -cool or -cold) and RehydratePriority
	// (Standard or High) describe an Archive blob on its way back to an online tier.
	ArchiveStatus     string
	RehydratePriority string
	Tags              Tags
	// Uncommitted marks a listing entry for a blob that has only uncommitted blocks.
	Uncommitted bool
	// Deleted marks a soft-deleted blob or snapshot (listings with include=deleted): deleted
	// at DeletedTime, kept RemainingRetentionDays more whole days.
	Deleted                bool
	DeletedTime            time.Time
	RemainingRetentionDays int
	// Immutability is the version's immutability policy, nil for none; LegalHold its legal
	// hold, nil when none was ever set (immutability.go).
	Immutability *ImmutabilityPolicy
	LegalHold    *bool
}

// blobRecord is a blob or snapshot as stored: JSON, then the inline bytes (data) if any.
type blobRecord struct {
	Type     BlobType          `json:"type"`
	Created  int64             `json:"created"`  // Unix nanoseconds
	Modified int64             `json:"modified"` // Unix nanoseconds
	ETag     int64             `json:"etag"`
	Size     int64             `json:"size"`
	Props    ContentProperties `json:"props,omitzero"`
	Metadata Metadata          `json:"md,omitempty"`
	Lease    lease             `json:"lease,omitzero"`
	// Content names the blob's extents; empty when the bytes are data (block blobs written
	// by a Put Blob of at most inlineLimit bytes).
	Content string `json:"content,omitempty"`
	// Pieces is the index the next extent of a block or append blob's content gets.
	Pieces uint32 `json:"pieces,omitempty"`
	// Blocks counts committed blocks (block blobs written by Put Block List, append blobs);
	// IDLen is the length of a block blob's committed block ids.
	Blocks   int   `json:"blocks,omitempty"`
	IDLen    int   `json:"idlen,omitempty"`
	Sequence int64 `json:"seq,omitempty"`
	// Clears are a page blob's cleared ranges and when each was cleared (pages.go,
	// clearedPages): what a page range diff reports as cleared since a snapshot.
	Clears []clearedPages `json:"clears,omitempty"`
	Sealed bool           `json:"sealed,omitempty"`
	Copy   *CopyState     `json:"copy,omitempty"`
	// Incremental is set on an incremental copy blob and its snapshots (incremental.go).
	Incremental *incrementalState `json:"inc,omitempty"`
	Tier        string            `json:"tier,omitempty"`
	// TierChanged (Unix nanoseconds) is when Tier was last set (AccessTierChanged).
	TierChanged int64 `json:"tierChanged,omitempty"`
	// KeySHA is the SHA-256 (base64) of the customer-provided key the content was written
	// with, "" for none. Nothing is encrypted: the key only decides who may read and write.
	KeySHA string `json:"cpk,omitempty"`
	// Scope is the encryption scope the blob was written in, "" for the account's (scopes.go).
	Scope string `json:"scope,omitempty"`
	// Rehydrate is an Archive blob's pending move to an online tier (settle completes it).
	Rehydrate *rehydration `json:"rehydrate,omitempty"`
	Tags      Tags         `json:"tags,omitempty"`
	// Version is the blob's version id, "" when it was written without versioning
	// (versions.go). A previous version's id is its row's.
	Version string `json:"vid,omitempty"`
	// Deleted (Unix nanoseconds) marks a soft-deleted blob or snapshot, kept until Expires
	// (softdelete.go).
	Deleted int64 `json:"deleted,omitempty"`
	Expires int64 `json:"expires,omitempty"`
	// Immutability and LegalHold protect this version (immutability.go); LegalHold is nil
	// until a hold is first set or cleared.
	Immutability *immutabilityPolicy `json:"imm,omitempty"`
	LegalHold    *bool               `json:"hold,omitempty"`

	data []byte
}

// tierChangedAt is a new record's TierChanged: a tier given when the blob is written counts
// as a change (azblob's recorded TestBlobDeleteAccessTier* read x-ms-access-tier-change-time
// after a Put Blob with x-ms-access-tier).
func tierChangedAt(tier string, now time.Time) int64 {
	if tier == "" {
		return 0
	}
	return now.UnixNano()
}

// inlineLimit is the largest Put Blob whose bytes stay in the blob's record. Below it a
// write is one commit (one WAL sync, or one transaction) and a read one point lookup, where
// an object costs a file or large-object write with its own sync, plus a record; 4 KiB blobs
// are the Table-like workload where that doubles the cost. Above it the bytes would be
// rewritten by every metadata or lease change and by the store's compactions, and a request
// would buffer them: 256 KiB keeps both small (16 concurrent inline uploads hold 4 MiB).
const inlineLimit = 256 << 10

func encodeBlob(b *blobRecord) ([]byte, error) {
	js, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(js)+len(b.data)), uint64(len(js)))
	out = append(out, js...)
	return append(out, b.data...), nil
}

func decodeBlob(rec *store.Record) (blobRecord, error) {
	var b blobRecord
	n, k := binary.Uvarint(rec.Value)
	if k <= 0 || n > uint64(len(rec.Value)-k) {
		return b, fmt.Errorf("blob record %s is corrupt", rec.Key)
	}
	if err := json.Unmarshal(rec.Value[k:k+int(n)], &b); err != nil {
		return b, fmt.Errorf("blob record %s is corrupt: %w", rec.Key, err)
	}
	if data := rec.Value[k+int(n):]; len(data) > 0 {
		b.data = data
	}
	return b, nil
}

// rehydration is an Archive blob's move to an online tier: asked for by Set Blob Tier, or by
// a Copy Blob of an archived source (copy.go), done at Done (Service.RehydrateAfter later).
// Until then the blob stays in Archive.
type rehydration struct {
	To       string `json:"to"`
	Priority string `json:"priority"`
	Done     int64  `json:"done"` // Unix nanoseconds
	// CopyID names the copy that rehydrates the blob, "" for Set Blob Tier: that copy stays
	// pending until Done, and completes with the rehydration.
	CopyID string `json:"copy,omitempty"`
}

// settle completes a rehydration whose time has come: the blob is then in its new tier,
// changed at the time the rehydration was done, and the copy that rehydrated it succeeded
// then. Blobs are settled as they are read, so a write stores the settled blob.
func (b *blobRecord) settle(now time.Time) {
	r := b.Rehydrate
	if r == nil || now.UnixNano() < r.Done {
		return
	}
	b.Tier, b.TierChanged, b.Rehydrate = r.To, r.Done, nil
	if c := b.Copy; c != nil && c.Status == copyPending && c.ID == r.CopyID {
		done := *c
		done.Status, done.CompletionTime, done.Progress = copySuccess, time.Unix(0, r.Done).UTC(), fmt.Sprintf("%d/%d", b.Size, b.Size)
		b.Copy = &done
	}
}

// archived reports whether the blob's content cannot be read or changed now: it is in the
// Archive tier, or still on its way out of it.
func (b *blobRecord) archived(now time.Time) bool {
	r := *b
	r.settle(now)
	return r.Tier == "Archive"
}

func (b *blobRecord) public(name, snapshot string, now time.Time) Blob {
	settled := *b
	settled.settle(now)
	b = &settled
	out := Blob{
		Name:                name,
		Snapshot:            snapshot,
		Type:                b.Type,
		Created:             time.Unix(0, b.Created).UTC(),
		LastModified:        time.Unix(0, b.Modified).UTC(),
		ETag:                etagOf(b.ETag),
		Size:                b.Size,
		Properties:          b.Props,
		Metadata:            b.Metadata,
		SequenceNumber:      b.Sequence,
		Sealed:              b.Sealed,
		Copy:                b.Copy.at(now),
		EncryptionKeySHA256: b.KeySHA,
		EncryptionScope:     b.Scope,
		AccessTier:          b.Tier,
		Tags:                b.Tags,
		CommittedBlockCount: 0,
	}
	if b.Type == AppendBlob {
		out.CommittedBlockCount = b.Blocks
	}
	if b.Immutability != nil {
		policy := b.Immutability.public()
		out.Immutability = &policy
	}
	out.LegalHold = b.LegalHold
	if inc := b.Incremental; inc != nil {
		out.IncrementalCopy, out.CopyDestinationSnapshot = true, inc.Destination
	}
	if snapshot == "" {
		out.Lease = b.Lease.info(now)
	}
	if b.Type == BlockBlob && b.Tier == "" {
		out.AccessTier, out.AccessTierInferred = "Hot", true
	}
	if b.TierChanged != 0 {
		out.AccessTierChanged = time.Unix(0, b.TierChanged).UTC()
	}
	if r := b.Rehydrate; r != nil {
		out.ArchiveStatus, out.RehydratePriority = "rehydrate-pending-to-"+strings.ToLower(r.To), r.Priority
	}
	if b.Deleted != 0 {
		out.Lease = LeaseInfo{}
		out.Deleted, out.DeletedTime = true, time.Unix(0, b.Deleted).UTC()
		out.RemainingRetentionDays = max(0, int(time.Unix(0, b.Expires).Sub(now)/(24*time.Hour)))
	}
	return out
}

// stagingRecord is the header of a blob's uncommitted blocks (row rowStaging). The blocks
// themselves are Key{blocksSpace, ID, block id}; every staging gets a fresh ID, so blocks of
// a discarded staging can be reclaimed at leisure without meeting a newer one's.
type stagingRecord struct {
	ID      string `json:"id"`
	Count   int    `json:"count"`
	IDLen   int    `json:"idlen"`
	Created int64  `json:"created"` // Unix nanoseconds
	LastPut int64  `json:"lastput"` // Unix nanoseconds, for the week-long expiry
}

func decodeStaging(rec *store.Record) (stagingRecord, error) {
	var st stagingRecord
	if err := json.Unmarshal(rec.Value, &st); err != nil {
		return st, fmt.Errorf("staging record %s is corrupt: %w", rec.Key, err)
	}
	return st, nil
}

func baseKey(space, name string) store.Key {
	return store.Key{Space: space, Partition: name, Row: rowBase}
}

func snapshotKey(space, name, snapshot string) store.Key {
	return store.Key{Space: space, Partition: name, Row: rowSnapshot + snapshot}
}

func stagingKey(space, name string) store.Key {
	return store.Key{Space: space, Partition: name, Row: rowStaging}
}

func stagedIndexKey(space, name string) store.Key {
	return store.Key{Space: stagedSpace, Row: space + "\x00" + name}
}

func deadContentKey(content string) store.Key { return store.Key{Space: deadSpace, Row: "c" + content} }

func deadStagingKey(staging string) store.Key { return store.Key{Space: deadSpace, Row: "s" + staging} }

// snapshotLayout is how snapshot timestamps are written: UTC with seven fractional digits, so
// that their text order is their time order.
const snapshotLayout = "2006-01-02T15:04:05.0000000Z"

// canonicalSnapshot reads a snapshot query value: 400 InvalidQueryParameterValue when it is
// not a timestamp.
func canonicalSnapshot(v string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return "", azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. snapshot %q is not a timestamp.", v)
	}
	return t.UTC().Format(snapshotLayout), nil
}

// blobState is what a blob request read: the container, and the blob (or snapshot) record,
// nil when there is none. A soft-deleted record is read too (a write replacing it keeps it as
// a snapshot), but does not exist for the request.
type blobState struct {
	account, container string
	space              string
	key                store.Key
	rec                *store.Record
	b                  blobRecord
	// readTags are the index tags of the live base blob as read (nil for anything else): what
	// the tag index holds for it, which put brings up to date.
	readTags Tags
	// scope is the container's encryption scope policy (scopes.go).
	scope ScopePolicy
	// premium says the account is a premium one (premium.go).
	premium bool
}

func (st *blobState) exists() bool { return st.rec != nil && st.b.Deleted == 0 }

// loadBlob reads the container (404 ContainerNotFound) and the blob or snapshot p names.
func (s *Service) loadBlob(ctx context.Context, p Path) (blobState, error) {
	if err := ValidateBlobName(p.Name); err != nil {
		return blobState{}, err
	}
	ref, err := s.containerOf(ctx, p.Account, p.Container)
	if err != nil {
		return blobState{}, err
	}
	space := ref.space
	st := blobState{account: p.Account, container: p.Container, space: space, key: baseKey(space, p.Name), scope: ref.scope, premium: s.premium(p.Account)}
	switch {
	case p.VersionID != "":
		return st, s.loadVersion(ctx, &st, p.VersionID)
	case p.Snapshot != "":
		snap, err := canonicalSnapshot(p.Snapshot)
		if err != nil {
			return blobState{}, err
		}
		st.key = snapshotKey(space, p.Name, snap)
	}
	if st.rec, err = s.get(ctx, st.key); err != nil || st.rec == nil {
		return st, err
	}
	if st.b, err = s.readRecord(st.rec, s.Now()); err != nil {
		return st, err
	}
	if st.b.Deleted == 0 && st.key.Row == rowBase {
		st.readTags = st.b.Tags
	}
	return st, nil
}

// readRecord is the blob record rec as the service reads it at now: its rehydration settled
// if done, and a pending copy of a process gone failed (Service.orphan). Every read that
// serves or judges a blob goes through it, so a write stores what was read.
func (s *Service) readRecord(rec *store.Record, now time.Time) (blobRecord, error) {
	b, err := decodeBlob(rec)
	if err != nil {
		return b, err
	}
	b.settle(now)
	s.orphan(&b)
	return b, nil
}

// loadExisting is loadBlob for operations on an existing blob: 404 BlobNotFound otherwise.
func (s *Service) loadExisting(ctx context.Context, p Path) (blobState, error) {
	st, err := s.loadBlob(ctx, p)
	if err == nil && !st.exists() {
		err = azerr.New(azerr.BlobNotFound)
	}
	return st, err
}

// notSnapshot refuses writes addressed to a snapshot or a version, which are read-only.
func notSnapshot(p Path) error {
	if p.Snapshot != "" || p.VersionID != "" {
		return azerr.Newf(azerr.InvalidOperation, "This operation is not permitted on a blob snapshot or version.")
	}
	return nil
}

// put returns the mutations storing b where st's record was read (conditioned on that read),
// with a new version, and bringing the tag index up to date with a base blob's tags.
func (s *Service) put(st *blobState, b *blobRecord) ([]store.Mutation, error) {
	value, err := encodeBlob(b)
	if err != nil {
		return nil, err
	}
	var after int64
	if st.rec != nil {
		after = st.rec.Version
	}
	m := []store.Mutation{{Key: st.key, Expect: expectRead(st.rec), Value: value, Version: s.nextTicks(after)}}
	if st.key.Row == rowBase {
		var tags Tags
		if b.Deleted == 0 {
			tags = b.Tags
		}
		m = append(m, st.tagIndexChanges(tags)...)
	}
	return m, nil
}

// remove returns the mutations deleting st's record (conditioned on the read) and its entries
// in the tag index.
func (st *blobState) remove() []store.Mutation {
	m := []store.Mutation{{Key: st.key, Expect: expectRead(st.rec), Delete: true}}
	if st.key.Row == rowBase {
		m = append(m, st.tagIndexChanges(nil)...)
	}
	return m
}

// touch gives b a new ETag and Last-Modified: every write to a blob's bytes, properties or
// metadata does.
func (s *Service) touchBlob(b *blobRecord) { s.touch(&b.ETag, &b.Modified) }

// checkWriteAccess applies a write's lease and conditions to an existing blob (st) and
// returns the lease the blob keeps. A missing blob has no lease: a lease id then is 412
// LeaseNotPresentWithBlobOperation. Existence is judged first, then the lease, then the
// conditions.
func (s *Service) checkWriteAccess(st *blobState, leaseID string, cond Conditions, kind writeKind, now time.Time) error {
	if !st.exists() {
		if leaseID != "" {
			return azerr.New(azerr.LeaseNotPresentWithBlobOperation)
		}
		return cond.checkWrite(false, "", time.Time{}, nil, kind, azerr.ConditionNotMet)
	}
	if cond.NoOverwrite {
		return azerr.New(azerr.UnauthorizedBlobOverwrite)
	}
	if err := st.b.Lease.checkAccess(now, leaseID, true, blobLease); err != nil {
		return err
	}
	if kind != remove && st.b.Copy.pending(now) {
		return azerr.New(azerr.PendingCopyOperation)
	}
	if kind == create && leaseID != "" && anyTag(cond.IfNoneMatch) {
		// The holder of the blob's lease replaces it even with If-None-Match: *, which the
		// Python SDK sends with its lease for overwrite=False (its recordings: 201).
		cond.IfNoneMatch = nil
	}
	if err := cond.checkWrite(true, etagOf(st.b.ETag), time.Unix(0, st.b.Modified), st.b.Tags, kind, azerr.ConditionNotMet); err != nil {
		return err
	}
	// Content written without a key may be replaced by content written with one (azblob's
	// recorded TestPutBlobFromUrlWithCPK).
	if kind != create || st.b.KeySHA != "" {
		if err := cond.checkCustomerKey(st.b.KeySHA); err != nil {
			return err
		}
	}
	if kind != remove && st.b.archived(now) {
		// Neither changed nor replaced: rclone's users see Azure answer a Put Blob over an
		// archived blob so (rclone#3982), and AzCopy's a Put Block.
		return azerr.New(azerr.BlobArchived)
	}
	return nil
}

// checkReadAccess applies a read's optional lease id and conditions to an existing blob or
// snapshot.
func checkReadAccess(st *blobState, leaseID string, cond Conditions, now time.Time) error {
	if st.key.Row == rowBase {
		if err := st.b.Lease.checkAccess(now, leaseID, false, blobLease); err != nil {
			return err
		}
	} else if leaseID != "" {
		return azerr.New(azerr.LeaseNotPresentWithBlobOperation)
	}
	if err := cond.checkRead(etagOf(st.b.ETag), time.Unix(0, st.b.Modified), st.b.Tags); err != nil {
		return err
	}
	return cond.checkCustomerKey(st.b.KeySHA)
}

func (st *blobState) public(p Path, now time.Time) Blob {
	out := st.b.publicAt(p.Name, st.key.Row, now)
	if st.premium {
		inferTier(&out)
	}
	return out
}

// publicAt is public for b as stored at row of blob name's partition: the blob itself, a
// snapshot or a previous version.
func (b *blobRecord) publicAt(name, row string, now time.Time) Blob {
	switch {
	case row == rowBase:
		out := b.public(name, "", now)
		if b.Version != "" {
			out.VersionID, out.IsCurrentVersion = b.Version, true
		}
		return out
	case isVersionRow(row):
		out := b.public(name, "", now)
		out.VersionID, out.Lease = row[len(rowVersion):], LeaseInfo{}
		return out
	}
	return b.public(name, strings.TrimPrefix(row, rowSnapshot), now)
}

// GetBlobProperties returns a blob's or snapshot's properties and metadata (Get Blob
// Properties, Get Blob Metadata): 404 BlobNotFound for a blob that has only uncommitted
// blocks. leaseID, when given, must be the blob's active lease; conditions are judged as for
// reads (304 or 412).
func (s *Service) GetBlobProperties(ctx context.Context, p Path, leaseID string, cond Conditions) (Blob, error) {
	st, err := s.loadExisting(ctx, p)
	if err != nil {
		return Blob{}, err
	}
	now := s.Now()
	if err := checkReadAccess(&st, leaseID, cond, now); err != nil {
		return Blob{}, err
	}
	return st.public(p, now), nil
}

// changeBlob applies change to an existing blob (not a snapshot) once its lease (required)
// and conditions are checked, with a new ETag unless keepETag.
func (s *Service) changeBlob(ctx context.Context, p Path, leaseID string, cond Conditions, keepETag bool, change func(st *blobState, b *batch) error) (Blob, error) {
	if err := notSnapshot(p); err != nil {
		return Blob{}, err
	}
	var out Blob
	err := s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if err := s.checkWriteAccess(&st, leaseID, cond, modify, now); err != nil {
			return nil, err
		}
		if err := notIncrementalBase(&st); err != nil {
			return nil, err
		}
		if err := st.b.checkMutable(now); err != nil {
			return nil, err
		}
		var b batch
		if err := change(&st, &b); err != nil {
			return nil, err
		}
		st.b.Lease = st.b.Lease.afterWrite(now)
		if !keepETag {
			s.touchBlob(&st.b)
		}
		m, err := s.put(&st, &st.b)
		if err != nil {
			return nil, err
		}
		b.add(m...)
		out = st.public(p, now)
		return b.m, nil
	})
	return out, err
}

// SetBlobMetadata replaces a blob's metadata, which makes a new version on a versioned
// account.
func (s *Service) SetBlobMetadata(ctx context.Context, p Path, md Metadata, leaseID string, cond Conditions) (Blob, error) {
	if err := md.Validate(); err != nil {
		return Blob{}, err
	}
	return s.changeBlob(ctx, p, leaseID, cond, false, func(st *blobState, b *batch) error {
		if err := st.checkScope(cond); err != nil {
			return err
		}
		if err := s.versionWrite(ctx, st, &st.b, b); err != nil {
			return err
		}
		st.b.Metadata = md
		return nil
	})
}

// SequenceAction is x-ms-sequence-number-action.
type SequenceAction string

const (
	SequenceMax       SequenceAction = "max"
	SequenceUpdate    SequenceAction = "update"
	SequenceIncrement SequenceAction = "increment"
)

// SetBlobPropertiesOptions is one Set Blob Properties request. Properties, when set,
// replaces all content properties (a header not sent is cleared); nil leaves them, for a
// request that only resizes a page blob or changes its sequence number.
type SetBlobPropertiesOptions struct {
	Properties *ContentProperties
	// Size resizes a page blob (x-ms-blob-content-length): a multiple of 512; shrinking
	// discards the pages beyond.
	Size *int64
	// SequenceAction with SequenceNumber (required for max and update, refused for
	// increment) changes a page blob's sequence number.
	SequenceAction SequenceAction
	SequenceNumber *int64
	LeaseID        string
	Conditions     Conditions
}

// SetBlobProperties sets a blob's content properties, resizes a page blob or changes its
// sequence number. A blob that was a copy's destination stops reporting the copy. The
// ContentMD5 given is stored as it is, of any length (the JS SDK's recorded setHTTPHeaders
// test sets four bytes and reads them back).
func (s *Service) SetBlobProperties(ctx context.Context, p Path, o SetBlobPropertiesOptions) (Blob, error) {
	if o.Size != nil {
		if err := validatePageBlobSize(*o.Size); err != nil {
			return Blob{}, err
		}
	}
	switch o.SequenceAction {
	case "":
	case SequenceMax, SequenceUpdate:
		if o.SequenceNumber == nil {
			return Blob{}, azerr.Newf(azerr.MissingRequiredHeader, "A required HTTP header was not specified: x-ms-blob-sequence-number is required by x-ms-sequence-number-action %s.", o.SequenceAction)
		}
		if *o.SequenceNumber < 0 {
			return Blob{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-blob-sequence-number must be 0 to 2^63-1.")
		}
	case SequenceIncrement:
		if o.SequenceNumber != nil {
			return Blob{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-blob-sequence-number must not be given with x-ms-sequence-number-action increment.")
		}
	default:
		return Blob{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-sequence-number-action %q is not max, update or increment.", o.SequenceAction)
	}
	return s.changeBlob(ctx, p, o.LeaseID, o.Conditions, false, func(st *blobState, b *batch) error {
		if (o.Size != nil || o.SequenceAction != "") && st.b.Type != PageBlob {
			return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-blob-content-length and x-ms-sequence-number-action apply to page blobs only.")
		}
		if o.Properties != nil {
			st.b.Props = *o.Properties
		}
		st.b.Copy = nil
		switch o.SequenceAction {
		case SequenceMax:
			st.b.Sequence = max(st.b.Sequence, *o.SequenceNumber)
		case SequenceUpdate:
			st.b.Sequence = *o.SequenceNumber
		case SequenceIncrement:
			if st.b.Sequence == 1<<63-1 {
				return azerr.New(azerr.SequenceNumberIncrementTooLarge)
			}
			st.b.Sequence++
		}
		if o.Size != nil && *o.Size != st.b.Size {
			if *o.Size < st.b.Size {
				if err := s.clearPages(ctx, st, *o.Size, st.b.Size, b); err != nil {
					return err
				}
			}
			st.b.Size = *o.Size
		}
		return nil
	})
}

// LeaseBlob runs a lease action on a blob (not a snapshot: 400 InvalidOperation). It changes
// neither ETag nor Last-Modified. Conditions apply as for writes.
func (s *Service) LeaseBlob(ctx context.Context, p Path, req LeaseRequest, cond Conditions) (LeaseResult, error) {
	if err := notSnapshot(p); err != nil {
		return LeaseResult{}, err
	}
	if err := req.validate(); err != nil {
		return LeaseResult{}, err
	}
	var out LeaseResult
	err := s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		if err := cond.checkWrite(true, etagOf(st.b.ETag), time.Unix(0, st.b.Modified), st.b.Tags, modify, azerr.ConditionNotMet); err != nil {
			return nil, err
		}
		next, result, err := st.b.Lease.apply(req, s.Now(), blobLease)
		if err != nil {
			return nil, err
		}
		st.b.Lease = next
		result.ETag, result.LastModified = etagOf(st.b.ETag), time.Unix(0, st.b.Modified).UTC()
		out = result
		m, err := s.put(&st, &st.b)
		return m, err
	})
	return out, err
}

// accessTiers are the tiers of a standard account's block blobs.
var accessTiers = map[string]string{"hot": "Hot", "cool": "Cool", "cold": "Cold", "archive": "Archive"}

// SetTierOptions is one Set Blob Tier request.
type SetTierOptions struct {
	// Tier is x-ms-access-tier: Hot, Cool, Cold or Archive, in any case.
	Tier    string
	LeaseID string
	// Priority is x-ms-rehydrate-priority for a move out of Archive: Standard (the
	// default) or High.
	Priority string
	// IfTags is x-ms-if-tags: the blob's tags must match it (412 ConditionNotMet).
	IfTags string
}

// SetBlobTier sets a block blob's (or snapshot's) access tier: Hot, Cool, Cold or Archive
// (another name is a malformed x-ms-access-tier, 400 InvalidHeaderValue, as the real service
// answers; other blob kinds: 409 InvalidBlobType). The tier is kept and reported; it changes
// neither ETag nor Last-Modified. An Archive blob's content can be neither read nor changed
// (409 BlobArchived); moving it to an online tier is a rehydration, which leaves it in Archive
// (archive status rehydrate-pending-to-…) for RehydrateAfter, and reports rehydrating: the
// real service answers 202 Accepted. A blob being rehydrated cannot be sent to another
// online tier (409 BlobBeingRehydrated); asking again for its tier may raise the priority to
// High; sending it back to Archive ends a rehydration Set Blob Tier began (one a copy began
// is 409 BlobBeingRehydrated).
func (s *Service) SetBlobTier(ctx context.Context, p Path, o SetTierOptions) (rehydrating bool, err error) {
	canonical, ok := accessTiers[strings.ToLower(o.Tier)]
	premiumTier, _, isPageTier := pageTier(o.Tier)
	if isPageTier && s.premium(p.Account) {
		ok, canonical = true, premiumTier
	}
	if !ok {
		e := azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-access-tier %q is not Hot, Cool, Cold or Archive.", o.Tier)
		e.Details = []azerr.Detail{{Name: "HeaderName", Value: "x-ms-access-tier"}, {Name: "HeaderValue", Value: o.Tier}}
		return false, e
	}
	priority, err := rehydratePriority(o.Priority)
	if err != nil {
		return false, err
	}
	err = s.update(ctx, func() ([]store.Mutation, error) {
		rehydrating = false
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		if st.key.Row == rowBase {
			if err := st.b.Lease.checkAccess(s.Now(), o.LeaseID, true, blobLease); err != nil {
				return nil, err
			}
		}
		if err := (Conditions{IfTags: o.IfTags}).checkTags(st.b.Tags); err != nil {
			return nil, err
		}
		now := s.Now()
		if st.b.Type == PageBlob && st.premium {
			if !isPageTier {
				return nil, azerr.Newf(azerr.InvalidBlobTier, "The specified blob tier is invalid: a page blob of a premium account takes P4 to P80, not %s.", o.Tier)
			}
			if err := checkPageTier(canonical, st.b.Size); err != nil {
				return nil, err
			}
			if st.b.Tier != canonical {
				st.b.Tier, st.b.TierChanged = canonical, now.UnixNano()
			}
			return s.put(&st, &st.b)
		}
		if st.b.Type != BlockBlob || isPageTier {
			return nil, azerr.Newf(azerr.InvalidBlobType, "The blob type is invalid for this operation. Access tiers apply to block blobs, and to the page blobs of premium accounts.")
		}
		switch r := st.b.Rehydrate; {
		case r != nil && canonical == r.To:
			// Asking again for the same tier may raise the priority, never lower it (Azure's
			// "Rehydrate an archived blob to an online tier": Standard to High while pending).
			if priority == "High" && r.Priority != "High" {
				raised := *r
				raised.Priority = priority
				st.b.Rehydrate = &raised
			}
			rehydrating = true
		case r != nil && (canonical != "Archive" || r.CopyID != ""):
			// A copy's rehydration ends only with its copy (Abort Copy Blob).
			return nil, azerr.New(azerr.BlobBeingRehydrated)
		case r != nil:
			st.b.Rehydrate = nil
		case st.b.Tier == "Archive" && canonical != "Archive" && st.key.Row != rowBase:
			// A snapshot in Archive stays there (the REST reference's Set Blob Tier;
			// azblob's recorded TestBlockBlobSetTierOnSnapshots).
			return nil, azerr.Newf(azerr.BlobArchived, "This operation is not permitted on an archived blob: an archived snapshot cannot be rehydrated.")
		case st.b.Tier == "Archive" && canonical != "Archive":
			st.b.Rehydrate = &rehydration{To: canonical, Priority: priority, Done: now.Add(s.RehydrateAfter).UnixNano()}
			rehydrating = true
		case st.b.Tier != canonical:
			st.b.Tier, st.b.TierChanged = canonical, now.UnixNano()
		}
		m, err := s.put(&st, &st.b)
		return m, err
	})
	return rehydrating, err
}

// rehydratePriority is the canonical x-ms-rehydrate-priority of a move out of Archive:
// Standard (also when none is given) or High, in any case.
func rehydratePriority(v string) (string, error) {
	switch strings.ToLower(v) {
	case "", "standard":
		return "Standard", nil
	case "high":
		return "High", nil
	}
	e := azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-rehydrate-priority %q is not Standard or High.", v)
	e.Details = []azerr.Detail{{Name: "HeaderName", Value: "x-ms-rehydrate-priority"}, {Name: "HeaderValue", Value: v}}
	return "", e
}

// ValidateTags applies Azure's index tag rules: at most 10 tags, keys of 1–128 and values of
// 0–256 characters from a–z, A–Z, 0–9, space and + - . / : = _ (400 InvalidTag).
func ValidateTags(tags Tags) error {
	if len(tags) > MaxTags {
		return azerr.Newf(azerr.InvalidTag, "The tags specified are invalid. A blob has at most %d tags; %d were given.", MaxTags, len(tags))
	}
	for k, v := range tags {
		if len(k) < 1 || len(k) > MaxTagKeyLength || !tagText(k) {
			return azerr.Newf(azerr.InvalidTag, "The tags specified are invalid. Tag keys are 1 to %d characters from a-z, A-Z, 0-9, space and +-./:=_; %q is not.", MaxTagKeyLength, k)
		}
		if len(v) > MaxTagValueLength || !tagText(v) {
			return azerr.Newf(azerr.InvalidTag, "The tags specified are invalid. Tag values are 0 to %d characters from a-z, A-Z, 0-9, space and +-./:=_; %q is not.", MaxTagValueLength, v)
		}
	}
	return nil
}

func tagText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" +-./:=_", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// SetBlobTags replaces a blob's index tags. Tags change neither ETag nor Last-Modified. A
// leased blob needs its lease id (412 LeaseIdMissing, as azblob's recorded tests see the real
// service answer); cond (x-ms-if-tags against the tags the blob has, and the ETag and time
// conditions) must hold: 412 ConditionNotMet.
func (s *Service) SetBlobTags(ctx context.Context, p Path, tags Tags, leaseID string, cond Conditions) error {
	if err := ValidateTags(tags); err != nil {
		return err
	}
	return s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		if st.key.Row == rowBase {
			if err := st.b.Lease.checkAccess(s.Now(), leaseID, true, blobLease); err != nil {
				return nil, err
			}
		}
		if err := cond.checkWrite(true, etagOf(st.b.ETag), time.Unix(0, st.b.Modified), st.b.Tags, modify, azerr.ConditionNotMet); err != nil {
			return nil, err
		}
		st.b.Tags = tags
		m, err := s.put(&st, &st.b)
		return m, err
	})
}
