package blob

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/serviceprops"
	"github.com/tabula-dev/tabula/internal/store"
)

// Soft delete (blob.md §9.7; Azure's blob soft delete on an account without versioning, the
// only kind an SDK can configure: DeleteRetentionPolicy of the service properties). While it
// is enabled:
//
//   - Delete Blob marks the blob or snapshot soft-deleted instead of removing it, to be kept
//     for the policy's Days as they were at the deletion (a later change of the policy keeps
//     that expiry, as Azure does). A base blob with snapshots still needs
//     x-ms-delete-snapshots, but soft-deleted snapshots do not count.
//   - A write replacing a blob (Put Blob, Put Block List, Copy Blob, Put Blob From URL) keeps
//     what it replaces as a soft-deleted snapshot. A soft-deleted blob is replaced the same
//     way even after the policy is turned off, being retained already. A blob of another type
//     is not kept (Azure expires it).
//
// Soft-deleted records stay in their rows, marked (blobRecord.Deleted, Expires): invisible to
// every operation but List Blobs with include=deleted and Undelete Blob, which restores the
// blob and its soft-deleted snapshots. Each has a record in softDeletedSpace, keyed by its
// expiry, by which Collect finds those due without reading the others. With the policy off, a
// base blob's soft-deleted snapshots count as snapshots again (409 SnapshotsPresent without
// x-ms-delete-snapshots), and deleting them removes them for good.

// softDeletedKey is the expiry record of the soft-deleted record at space, name, row.
func softDeletedKey(expires int64, space, name, row string) store.Key {
	var at [8]byte
	binary.BigEndian.PutUint64(at[:], uint64(expires))
	return store.Key{Space: softDeletedSpace, Row: string(at[:]) + space + "\x00" + name + "\x00" + row}
}

// retentionTTL is how long a front-end goes by the DeleteRetentionPolicy it read before it
// reads it again, sparing every delete and overwrite a read of the service properties. A
// change made through this front-end applies at once, one made through another front-end
// within retentionTTL (Azure itself takes up to 30 seconds to apply service properties).
const retentionTTL = time.Second

type cachedRetention struct {
	policy serviceprops.DeleteRetention
	read   time.Time
}

// retention returns the account's DeleteRetentionPolicy.
func (s *Service) retention(ctx context.Context, account string) (serviceprops.DeleteRetention, error) {
	now := s.Now()
	if c, ok := s.retentions.Load(account); ok {
		if c := c.(cachedRetention); now.Sub(c.read) < retentionTTL && !now.Before(c.read) {
			return c.policy, nil
		}
	}
	p, err := s.props.Get(ctx, account)
	if err != nil {
		return serviceprops.DeleteRetention{}, err
	}
	s.retentions.Store(account, cachedRetention{policy: p.DeleteRetentionPolicy, read: now})
	return p.DeleteRetentionPolicy, nil
}

// DeletesSoftly reports whether the account's deletions are soft (its delete retention policy
// is on), which Delete Blob's x-ms-delete-type-permanent answers.
func (s *Service) DeletesSoftly(ctx context.Context, account string) (bool, error) {
	r, err := s.retention(ctx, account)
	return r.Enabled, err
}

// retained reports whether b is a soft-deleted record still within its retention at now.
func (b *blobRecord) retained(now time.Time) bool {
	return b.Deleted != 0 && now.UnixNano() < b.Expires
}

// softDelete marks b, stored at key, deleted at now and kept for days, and returns the
// mutation of its expiry record. A soft-deleted blob holds no lease.
func softDelete(b *blobRecord, key store.Key, now time.Time, days int) store.Mutation {
	b.Deleted = now.UnixNano()
	b.Expires = now.Add(time.Duration(days) * 24 * time.Hour).UnixNano()
	b.Lease = lease{}
	return store.Mutation{Key: softDeletedKey(b.Expires, key.Space, key.Partition, key.Row), Value: []byte{}, Version: 1}
}

// forgetExpiry returns the mutation deleting the expiry record of soft-deleted b at key.
func forgetExpiry(b *blobRecord, key store.Key) store.Mutation {
	return store.Mutation{Key: softDeletedKey(b.Expires, key.Space, key.Partition, key.Row), Delete: true}
}

// keepReplaced disposes of what a write replacing st's blob with next replaces, in out: on a
// versioned account a previous version of it (versions.go), which also gives next its
// version id; else a soft-deleted snapshot of it (see above), or its content handed to the
// collector.
func (s *Service) keepReplaced(ctx context.Context, p Path, st *blobState, next *blobRecord, pr Protection, now time.Time, out *batch) error {
	if err := s.protect(p, next, pr, now); err != nil {
		return err
	}
	next.Version = ""
	if s.versioned(st.account) {
		next.Version = s.newVersionID()
		if st.exists() {
			return s.keepAsVersion(st, st.b, out)
		}
	}
	if st.exists() {
		// Without versions, nothing would keep a protected blob replaced.
		if err := st.b.checkMutable(now); err != nil {
			return err
		}
	}
	if st.rec == nil {
		return nil
	}
	old := st.b
	keep, days := false, 0
	switch {
	case old.Deleted != 0:
		out.add(forgetExpiry(&old, st.key))
		keep = old.Type == next.Type && old.retained(now)
	case old.Type == next.Type:
		r, err := s.retention(ctx, st.account)
		if err != nil {
			return err
		}
		keep, days = r.Enabled, r.Days
	}
	if !keep {
		retireContent(&old, out, s.nextTicks(0))
		return nil
	}
	// The snapshot takes over the content as it is: nothing is copied.
	snapshot := timeOfTicks(s.nextTicks(0)).Format(snapshotLayout)
	ss := blobState{space: st.space, key: snapshotKey(st.space, st.key.Partition, snapshot)}
	if old.Deleted != 0 {
		out.add(store.Mutation{Key: softDeletedKey(old.Expires, ss.key.Space, ss.key.Partition, ss.key.Row), Value: []byte{}, Version: 1})
	} else {
		out.add(softDelete(&old, ss.key, now, days))
	}
	old.Lease = lease{}
	m, err := s.put(&ss, &old)
	out.add(m...)
	return err
}

// UndeleteBlob restores a soft-deleted blob and its soft-deleted snapshots and previous
// versions, or those of a live blob, within their retention (Undelete Blob). A live blob
// without any is left as it is, and so is a deleted blob that has previous versions (the
// JS SDK's live undelete test, on a versioned account); a name with neither a blob nor a
// soft-deleted snapshot or a version is 404 BlobNotFound.
func (s *Service) UndeleteBlob(ctx context.Context, p Path) error {
	if err := notSnapshot(p); err != nil {
		return err
	}
	return s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadBlob(ctx, p)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		var b batch
		found := st.exists()
		if st.rec != nil && st.b.retained(now) {
			found = true
			b.add(forgetExpiry(&st.b, st.key))
			st.b.Deleted, st.b.Expires = 0, 0
			m, err := s.put(&st, &st.b)
			if err != nil {
				return nil, err
			}
			b.add(m...)
		} else {
			b.add(unchanged(st.key, st.rec))
		}
		err = s.store.Scan(ctx, historyRange(st.space, p.Name), func(rec store.Record) (bool, error) {
			snap, err := decodeBlob(&rec)
			if err == nil && snap.Deleted == 0 && isVersionRow(rec.Key.Row) {
				// A deleted blob of a versioned account lives on as its versions:
				// there is nothing to restore, and nothing missing either.
				found = true
			}
			if err != nil || !snap.retained(now) {
				return err == nil, err
			}
			found = true
			b.add(forgetExpiry(&snap, rec.Key))
			snap.Deleted, snap.Expires = 0, 0
			ss := blobState{space: st.space, key: rec.Key, rec: &rec}
			m, err := s.put(&ss, &snap)
			b.add(m...)
			return err == nil, err
		})
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, azerr.New(azerr.BlobNotFound)
		}
		return b.m, nil
	})
}

// expireSoftDeleted removes for good the soft-deleted blobs and snapshots whose retention
// ended by now, handing their contents to the collector.
func (s *Service) expireSoftDeleted(ctx context.Context, now time.Time) (int, error) {
	var at [8]byte
	binary.BigEndian.PutUint64(at[:], uint64(now.UnixNano()))
	r := store.Range{Space: softDeletedSpace, Start: store.Key{Space: softDeletedSpace}, End: store.Key{Space: softDeletedSpace, Row: string(at[:])}}
	var due []store.Key
	err := s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
		due = append(due, rec.Key)
		return len(due) < collectChunk, nil
	})
	if err != nil {
		return 0, err
	}
	expired := 0
	for _, ik := range due {
		space, rest, _ := strings.Cut(ik.Row[8:], "\x00")
		name, row, _ := strings.Cut(rest, "\x00")
		k := store.Key{Space: space, Partition: name, Row: row}
		rec, err := s.get(ctx, k)
		if err != nil {
			return expired, err
		}
		m := []store.Mutation{{Key: ik, Delete: true}}
		if rec != nil {
			b, err := decodeBlob(rec)
			if err != nil {
				return expired, err
			}
			if b.Deleted != 0 && softDeletedKey(b.Expires, space, name, row) == ik {
				var out batch
				out.add(m[0], store.Mutation{Key: k, Expect: expectRead(rec), Delete: true})
				retireContent(&b, &out, s.nextTicks(0))
				m = out.m
				expired++
			}
		}
		var cf *store.ConditionFailedError
		if err := s.commit(ctx, m); err != nil && !errors.As(err, &cf) {
			return expired, err
		}
	}
	return expired, nil
}

// PermanentlyDeleteBlob removes for good the soft-deleted snapshot or previous version p
// names (Delete Blob with deletetype=permanent), on an account whose DeleteRetentionPolicy
// allows it. As the REST reference has it, the refusals are 409s: the account does not
// allow it, p names neither a snapshot nor a version, or what it names is not soft-deleted
// (codes UNSURE: the reference names none).
func (s *Service) PermanentlyDeleteBlob(ctx context.Context, p Path) error {
	retention, err := s.retention(ctx, p.Account)
	if err != nil {
		return err
	}
	if !retention.Enabled || !retention.AllowPermanentDelete {
		return azerr.Newf(azerr.PermanentDeleteNotAllowed, "Permanent delete is not allowed on this account: its DeleteRetentionPolicy needs Enabled and AllowPermanentDelete.")
	}
	if p.Snapshot == "" && p.VersionID == "" {
		return azerr.Newf(azerr.BlobSnapshotNotSoftDeleted, "deletetype=permanent removes a soft-deleted snapshot or version: give snapshot or versionid.")
	}
	return s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadBlob(ctx, p)
		if err != nil {
			return nil, err
		}
		if st.rec == nil {
			return nil, azerr.New(azerr.BlobNotFound)
		}
		if st.b.Deleted == 0 || st.key.Row == rowBase {
			return nil, azerr.New(azerr.BlobSnapshotNotSoftDeleted)
		}
		var b batch
		b.add(forgetExpiry(&st.b, st.key))
		b.add(st.remove()...)
		retireContent(&st.b, &b, s.nextTicks(0))
		return b.m, nil
	})
}
