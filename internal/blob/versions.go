package blob

import (
	"context"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Blob versioning (an account setting of Azure's management plane; here Service.Versioning).
// On an account with versioning on, every blob written by Put Blob, Put Block List, a copy,
// Set Blob Metadata or Snapshot Blob gets a new version id (x-ms-version-id), and the blob it
// replaces is kept as a previous version, read-only, at rowVersion + its version id. Deleting
// the blob keeps it as a previous version too, and leaves no current one. Previous versions
// are read, tiered, tagged, copied from and deleted with ?versionid=; writes that change a
// blob in place (Put Page, Append Block, Set Blob Properties, tags, tiers, leases) make no
// version, as on Azure. Versions stay when versioning is turned off; writes then make none.

// rowVersion prefixes the rows of a blob's previous versions. It sorts after every snapshot
// row (rowSnapshot + a timestamp, which starts with a digit) and before rowBase, so a blob's
// partition lists snapshots, then previous versions (oldest first), then the blob.
const rowVersion = rowSnapshot + "\xff"

func versionKey(space, name, versionID string) store.Key {
	return store.Key{Space: space, Partition: name, Row: rowVersion + versionID}
}

// versionRange is the range of a blob's previous versions, oldest first.
func versionRange(space, name string) store.Range {
	return store.Range{
		Space: space,
		Start: store.Key{Space: space, Partition: name, Row: rowVersion},
		End:   store.Key{Space: space, Partition: name, Row: rowBase},
	}
}

// historyRange is the range of a blob's snapshots and previous versions.
func historyRange(space, name string) store.Range {
	return store.Range{
		Space: space,
		Start: store.Key{Space: space, Partition: name, Row: rowSnapshot},
		End:   store.Key{Space: space, Partition: name, Row: rowBase},
	}
}

// isVersionRow tells a previous version's row; it must be asked before a snapshot's, whose
// prefix it shares.
func isVersionRow(row string) bool {
	return len(row) >= len(rowVersion) && row[:len(rowVersion)] == rowVersion
}

// versioned reports whether writes to account's blobs make versions.
func (s *Service) versioned(account string) bool {
	return s.Versioning != nil && s.Versioning(account)
}

// newVersionID is a version id: the time of the write, in the snapshot timestamps' layout,
// unique in this process (another front-end making the same one fails its commit's
// condition and tries again).
func (s *Service) newVersionID() string {
	return timeOfTicks(s.nextTicks(0)).Format(snapshotLayout)
}

// versionID is the id b is kept under when it becomes a previous version: its own, or, for a
// blob written before versioning was on, the time it was last modified.
func (b *blobRecord) versionID() string {
	if b.Version != "" {
		return b.Version
	}
	return time.Unix(0, b.Modified).UTC().Format(snapshotLayout)
}

// keepAsVersion stores old, the blob st read, as a previous version: its content moves with
// it (the caller must neither retire nor keep using it), its lease ends.
func (s *Service) keepAsVersion(st *blobState, old blobRecord, out *batch) error {
	old.Lease = lease{}
	vs := blobState{account: st.account, space: st.space, key: versionKey(st.space, st.key.Partition, old.versionID())}
	m, err := s.put(&vs, &old)
	out.add(m...)
	return err
}

// keepVersionCopy is keepAsVersion for a write that goes on using the blob's content (Set
// Blob Metadata, Snapshot Blob): the previous version gets its own copy of the content.
func (s *Service) keepVersionCopy(ctx context.Context, st *blobState, out *batch) error {
	old, err := s.duplicate(ctx, &st.b, true, out)
	if err != nil {
		return err
	}
	return s.keepAsVersion(st, old, out)
}

// versionWrite is what a write that makes a new version does first on a versioned account:
// st's live blob is kept as a previous version with a copy of its content, and b (the blob
// as it will be written) gets the new version's id. Elsewhere it does nothing.
func (s *Service) versionWrite(ctx context.Context, st *blobState, b *blobRecord, out *batch) error {
	if !s.versioned(st.account) {
		return nil
	}
	if st.exists() {
		if err := s.keepVersionCopy(ctx, st, out); err != nil {
			return err
		}
	}
	b.Version = s.newVersionID()
	return nil
}

// loadVersion resolves a ?versionid= path into st: the previous version of that id, else the
// blob itself when it is the current version, else nothing (404 for loadExisting).
func (s *Service) loadVersion(ctx context.Context, st *blobState, id string) error {
	vid, err := canonicalSnapshot(id)
	if err != nil {
		return azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. versionid %q is not a version id.", id)
	}
	st.key = versionKey(st.space, st.key.Partition, vid)
	if st.rec, err = s.get(ctx, st.key); err != nil {
		return err
	}
	if st.rec == nil {
		base := baseKey(st.space, st.key.Partition)
		rec, err := s.get(ctx, base)
		if err != nil || rec == nil {
			st.key = base
			return err
		}
		b, err := s.readRecord(rec, s.Now())
		if err != nil {
			return err
		}
		if b.Version != vid || b.Deleted != 0 {
			return nil // st.rec stays nil: no such version
		}
		st.key, st.rec, st.b, st.readTags = base, rec, b, b.Tags
		return nil
	}
	st.b, err = s.readRecord(st.rec, s.Now())
	return err
}

// latestVersion returns the newest previous version of a blob that is not soft-deleted, and
// whether there is one.
func (s *Service) latestVersion(ctx context.Context, space, name string) (blobRecord, bool, error) {
	var latest blobRecord
	found := false
	err := s.store.Scan(ctx, versionRange(space, name), func(rec store.Record) (bool, error) {
		b, err := decodeBlob(&rec)
		if err != nil {
			return false, err
		}
		if b.Deleted == 0 {
			latest, found = b, true
		}
		return true, nil
	})
	return latest, found, err
}
