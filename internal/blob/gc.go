package blob

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

// Reclamation. Writes never delete bytes a reader might still be streaming: they hand what
// they made unreachable to the collector — a deleted container's space (deletedSpace), a
// content or staging no blob reaches (deadSpace), an object that lost a reference
// (garbageSpace) — each stamped with the time. Collect reclaims what has waited Grace, in
// that order, so that one pass follows a deletion all the way down to its objects. Every
// step is idempotent, so a pass interrupted by a crash, or run by two front-ends at once,
// only repeats work.

// collectChunk bounds the mutations of one reclamation commit.
const collectChunk = 1000

// CollectStats counts what one Collect reclaimed.
type CollectStats struct {
	Containers  int // deleted containers whose blobs were handed on
	Expired     int // stagings of uncommitted blocks expired after a week
	SoftDeleted int // soft-deleted blobs and snapshots whose retention ended
	Contents    int // contents and stagings whose extents and blocks were removed
	Objects     int // objects deleted
}

// Collect reclaims everything that has waited Grace: deleted containers' blobs, uncommitted
// blocks a week after their last Put Block, soft-deleted blobs and snapshots at the end of
// their retention, the extents of contents no blob reaches, and the objects left without a
// reference.
func (s *Service) Collect(ctx context.Context) (CollectStats, error) {
	var stats CollectStats
	now := s.Now()
	cutoff := ticksOf(now.Add(-s.Grace))
	var err error
	if stats.Containers, err = s.sweepDeletedContainers(ctx, cutoff); err != nil {
		return stats, err
	}
	if stats.Expired, err = s.expireStagings(ctx, now); err != nil {
		return stats, err
	}
	if stats.SoftDeleted, err = s.expireSoftDeleted(ctx, now); err != nil {
		return stats, err
	}
	if stats.Contents, err = s.reclaimDead(ctx, cutoff); err != nil {
		return stats, err
	}
	stats.Objects, err = s.deleteGarbage(ctx, cutoff)
	return stats, err
}

// RunCollector calls Collect every interval until ctx is done, reporting failures to onError
// (which may be nil).
func (s *Service) RunCollector(ctx context.Context, interval time.Duration, onError func(error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if _, err := s.Collect(ctx); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// due returns the records of space (one partition, "") stamped at or before cutoff.
func (s *Service) due(ctx context.Context, space string, cutoff int64) ([]store.Record, error) {
	var out []store.Record
	err := s.store.Scan(ctx, store.SpaceRange(space), func(rec store.Record) (bool, error) {
		if rec.Version <= cutoff {
			out = append(out, store.Record{Key: rec.Key, Version: rec.Version, Value: append([]byte(nil), rec.Value...)})
		}
		return true, nil
	})
	return out, err
}

// chunked commits mutations collectChunk at a time.
func (s *Service) chunked(ctx context.Context, mutations []store.Mutation) error {
	for len(mutations) > 0 {
		n := min(len(mutations), collectChunk)
		if err := s.commit(ctx, mutations[:n]); err != nil {
			return err
		}
		mutations = mutations[n:]
	}
	return nil
}

// sweepDeletedContainers hands the contents and stagings of every container deleted before
// cutoff to reclaimDead, then removes its space. Writes that read the container just before
// its deletion have landed by then (Grace), so nothing lands in the space afterwards.
func (s *Service) sweepDeletedContainers(ctx context.Context, cutoff int64) (int, error) {
	deleted, err := s.due(ctx, deletedSpace, cutoff)
	if err != nil {
		return 0, err
	}
	for i, d := range deleted {
		space := d.Key.Row
		var b batch
		flush := func() error {
			err := s.chunked(ctx, b.m)
			b = batch{}
			return err
		}
		err := s.store.Scan(ctx, store.SpaceRange(space), func(rec store.Record) (bool, error) {
			switch {
			case rec.Key.Row == rowStaging:
				st, err := decodeStaging(&rec)
				if err != nil {
					return false, err
				}
				b.add(deadStaging(st.ID), store.Mutation{Key: stagedIndexKey(space, rec.Key.Partition), Delete: true})
			default:
				blob, err := decodeBlob(&rec)
				if err != nil {
					return false, err
				}
				retireContent(&blob, &b, d.Version)
				if rec.Key.Row == rowBase && blob.Deleted == 0 {
					b.add(tagIndexRemovals(space, rec.Key.Partition, blob.Tags)...)
				}
			}
			if len(b.m) >= collectChunk {
				return true, flush()
			}
			return true, nil
		})
		if err == nil {
			err = flush()
		}
		if err == nil {
			err = s.store.DeleteSpace(ctx, space)
		}
		if err == nil {
			m := []store.Mutation{{Key: d.Key, Delete: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: d.Version}}}
			if account, row, ok := strings.Cut(string(d.Value), "\x00"); ok {
				// A soft-deleted container whose retention is over: its record goes too.
				m = append(m, store.Mutation{Key: store.Key{Space: deletedContainersSpace, Partition: account, Row: row}, Delete: true})
			}
			err = s.commit(ctx, m)
		}
		var cf *store.ConditionFailedError
		if err != nil && !errors.As(err, &cf) { // a failed condition: another front-end swept it
			return i, err
		}
	}
	return len(deleted), nil
}

// expireStagings discards the uncommitted blocks of blobs whose last Put Block is a week old,
// as Azure does.
func (s *Service) expireStagings(ctx context.Context, now time.Time) (int, error) {
	var index []store.Key
	err := s.store.Scan(ctx, store.SpaceRange(stagedSpace), func(rec store.Record) (bool, error) {
		index = append(index, rec.Key)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	expired := 0
	for _, ik := range index {
		space, name, _ := strings.Cut(ik.Row, "\x00")
		k := stagingKey(space, name)
		rec, err := s.get(ctx, k)
		if err != nil {
			return expired, err
		}
		var m []store.Mutation
		switch {
		case rec == nil: // committed, deleted or swept since the index was read
			m = []store.Mutation{{Key: ik, Delete: true, Expect: store.Expect{Kind: store.ExpectPresent}}}
		default:
			st, err := decodeStaging(rec)
			if err != nil {
				return expired, err
			}
			if now.Sub(time.Unix(0, st.LastPut)) < uncommittedBlockExpiry {
				continue
			}
			m = []store.Mutation{
				{Key: k, Delete: true, Expect: expectRead(rec)},
				{Key: ik, Delete: true},
				deadStaging(st.ID),
			}
			expired++
		}
		var cf *store.ConditionFailedError
		if err := s.commit(ctx, m); err != nil && !errors.As(err, &cf) {
			return expired, err
		}
	}
	return expired, nil
}

// reclaimDead removes the extents of dead contents and the blocks of dead stagings stamped
// at or before cutoff, dropping their references.
func (s *Service) reclaimDead(ctx context.Context, cutoff int64) (int, error) {
	dead, err := s.due(ctx, deadSpace, cutoff)
	if err != nil {
		return 0, err
	}
	for i, d := range dead {
		id := d.Key.Row[1:]
		var b batch
		var err error
		if d.Key.Row[0] == 'c' {
			err = s.scanExtents(ctx, id, -1, func(e extent) (bool, error) {
				b.add(deleteExtent(id, e, d.Version)...)
				return true, nil
			})
		} else {
			err = s.store.Scan(ctx, store.PartitionRange(blocksSpace, id), func(rec store.Record) (bool, error) {
				pieces, err := decodeBlock(rec)
				if err != nil {
					return false, err
				}
				b.add(store.Mutation{Key: rec.Key, Delete: true})
				for j, pc := range pieces {
					if pc.Obj != "" {
						b.add(dropRef(pc.Obj, blockHolder(id, []byte(rec.Key.Row), j), d.Version)...)
					}
				}
				return true, nil
			})
		}
		// Deleting the extents before the dead record keeps a crash in between harmless:
		// the next pass finds the record and nothing left to delete.
		if err == nil {
			err = s.chunked(ctx, b.m)
		}
		if err == nil {
			err = s.commit(ctx, []store.Mutation{{Key: d.Key, Delete: true}})
		}
		if err != nil {
			return i, err
		}
	}
	return len(dead), nil
}

// deleteGarbage deletes the objects that lost a reference at or before cutoff and have none
// left.
func (s *Service) deleteGarbage(ctx context.Context, cutoff int64) (int, error) {
	garbage, err := s.due(ctx, garbageSpace, cutoff)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for len(garbage) > 0 {
		chunk := garbage[:min(len(garbage), collectChunk)]
		garbage = garbage[len(chunk):]
		var unreferenced []string
		var forget []store.Mutation
		for _, g := range chunk {
			obj := g.Key.Row
			referenced, err := s.referenced(ctx, obj)
			if err != nil {
				return deleted, err
			}
			if referenced {
				// Kept, unless it lost another reference since it was read.
				forget = append(forget, store.Mutation{Key: g.Key, Delete: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: g.Version}})
				continue
			}
			// No reference can appear on an object that has none (refs.go), so whatever
			// stamp the record has by now, the object can go.
			unreferenced = append(unreferenced, obj)
			forget = append(forget, store.Mutation{Key: g.Key, Delete: true})
		}
		if len(unreferenced) > 0 {
			if err := s.objects.DeleteObjects(ctx, unreferenced); err != nil {
				return deleted, err
			}
			deleted += len(unreferenced)
		}
		if err := s.commitEach(ctx, forget); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// commitEach commits mutations, dropping those whose condition fails.
func (s *Service) commitEach(ctx context.Context, mutations []store.Mutation) error {
	for len(mutations) > 0 {
		err := s.commit(ctx, mutations)
		var cf *store.ConditionFailedError
		if !errors.As(err, &cf) {
			return err
		}
		mutations = append(mutations[:cf.Index:cf.Index], mutations[cf.Index+1:]...)
	}
	return nil
}

// referenced reports whether obj has a reference.
func (s *Service) referenced(ctx context.Context, obj string) (bool, error) {
	found := false
	err := s.store.Scan(ctx, store.PartitionRange(refsSpace, obj), func(store.Record) (bool, error) {
		found = true
		return false, nil
	})
	return found, err
}

// SweepOrphans deletes the objects that began more than OrphanGrace ago and that nothing
// refers to: what uploads left when the process stopped between storing a body and
// committing the write that refers to it, or when that commit failed in a way whose outcome
// could not be known. It returns how many it deleted. It reads every object's references, so
// it is meant for occasional runs (at startup, daily).
func (s *Service) SweepOrphans(ctx context.Context) (int, error) {
	before := s.Now().Add(-s.OrphanGrace)
	var orphans []string
	err := s.objects.ScanObjects(ctx, before, func(id string, _ int64) (bool, error) {
		referenced, err := s.referenced(ctx, id)
		if err != nil || referenced {
			return err == nil, err
		}
		// An object that lost its references recently is deleteGarbage's, after Grace: a
		// download may still be reading it.
		g, err := s.get(ctx, store.Key{Space: garbageSpace, Row: id})
		if err == nil && g == nil {
			orphans = append(orphans, id)
		}
		return err == nil, err
	})
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(orphans); i += collectChunk {
		if err := s.objects.DeleteObjects(ctx, orphans[i:min(len(orphans), i+collectChunk)]); err != nil {
			return i, err
		}
	}
	return len(orphans), nil
}
