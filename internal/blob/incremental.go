package blob

import (
	"context"
	"fmt"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/uuid"
)

// Incremental Copy Blob copies a snapshot of a page blob into a destination page blob, which
// becomes an incremental copy blob: each copy leaves a snapshot of the destination holding
// what was copied (x-ms-copy-destination-snapshot), which is read as any snapshot, while the
// destination itself is only listed, looked at (Get Blob Properties) and deleted, never read
// or changed (409 OperationNotAllowedOnIncrementalCopyBlob). Later copies must be of later
// snapshots of the same source. Azure transfers only the pages changed since the last copy;
// here every copy shares the snapshot's content, which costs the same.

// IncrementalCopyOptions is one Incremental Copy Blob request besides its source.
type IncrementalCopyOptions struct {
	// SourceURL is x-ms-copy-source as sent, reported back as x-ms-copy-source.
	SourceURL  string
	Conditions Conditions
}

// incrementalSource names the source of an incremental copy blob: its account, container
// and blob, which every later copy into it must share.
func incrementalSource(p Path) string { return p.Account + "/" + p.Container + "/" + p.Name }

// notIncrementalBase refuses reads and writes of an incremental copy blob itself (its
// snapshots are ordinary).
func notIncrementalBase(st *blobState) error {
	if st.key.Row == rowBase && st.b.Incremental != nil {
		return azerr.New(azerr.OperationNotAllowedOnIncrementalCopyBlob)
	}
	return nil
}

// incrementalState is what an incremental copy blob and its destination snapshots keep.
type incrementalState struct {
	Source   string `json:"source"`   // incrementalSource of the copied blob
	Snapshot string `json:"snapshot"` // the source snapshot last copied
	// Destination is the snapshot of the destination the last copy made.
	Destination string `json:"dst"`
}

// IncrementalCopy copies the page blob snapshot src into dst (Incremental Copy Blob) and
// returns dst, whose Copy holds the copy's id.
func (s *Service) IncrementalCopy(ctx context.Context, dst, src Path, o IncrementalCopyOptions) (Blob, error) {
	if err := notSnapshot(dst); err != nil {
		return Blob{}, err
	}
	if src.Snapshot == "" {
		return Blob{}, azerr.New(azerr.IncrementalCopySourceMustBeSnapshot)
	}
	var copied blobRecord // the destination's snapshot of this copy
	build := func(ctx context.Context, srcSt, st *blobState, b *batch, now time.Time) (blobRecord, error) {
		if srcSt.b.Type != PageBlob {
			return blobRecord{}, azerr.Newf(azerr.InvalidSourceBlobType, "The copy source blob type is invalid for this operation: incremental copies are of page blob snapshots, and this is a %s.", srcSt.b.Type)
		}
		snapshot, _ := canonicalSnapshot(src.Snapshot) // loadSource read it
		if st.exists() {
			inc := st.b.Incremental
			if inc == nil || inc.Source != incrementalSource(src) {
				return blobRecord{}, azerr.New(azerr.IncrementalCopyBlobMismatch)
			}
			if snapshot <= inc.Snapshot {
				return blobRecord{}, azerr.New(azerr.IncrementalCopyOfEarlierSnapshotNotAllowed)
			}
		}
		next, err := s.duplicate(ctx, &srcSt.b, true, b)
		if err != nil {
			return next, err
		}
		// The destination's snapshot has content of its own, duplicated from the source as
		// well: what the batch puts is not readable before it commits.
		if copied, err = s.duplicate(ctx, &srcSt.b, true, b); err != nil {
			return next, err
		}
		destination := timeOfTicks(s.nextTicks(0)).Format(snapshotLayout)
		next.Incremental = &incrementalState{Source: incrementalSource(src), Snapshot: snapshot, Destination: destination}
		next.Tags = nil
		next.Copy = &CopyState{
			ID: uuid.New(), Source: o.SourceURL, Status: copySuccess,
			Progress: fmt.Sprintf("%d/%d", srcSt.b.Size, srcSt.b.Size), CompletionTime: now.UTC(),
		}
		return next, nil
	}
	then := func(st *blobState, next *blobRecord, b *batch) error {
		copied.Incremental, copied.Copy, copied.Created, copied.ETag, copied.Modified = next.Incremental, next.Copy, next.Created, next.ETag, next.Modified
		copied.Lease, copied.Tags, copied.Version, copied.Rehydrate, copied.Scope = lease{}, nil, "", nil, next.Scope
		ss := blobState{space: st.space, key: snapshotKey(st.space, dst.Name, next.Incremental.Destination)}
		m, err := s.put(&ss, &copied)
		b.add(m...)
		return err
	}
	return s.copyInto(ctx, dst, src, SourceOptions{Fetched: true}, "", o.Conditions, "", Protection{}, then, build)
}
