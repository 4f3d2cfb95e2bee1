package blob

import (
	"github.com/tabula-dev/tabula/internal/store"
)

// References. An object may be shared: by the snapshots and copies of a blob, by a block
// blob's blocks that a new block list commits again, by the pieces a page write leaves of an
// older one. Each holder of a piece of an object (an extent, a piece of an uncommitted block)
// has one reference record, Key{refsSpace, object, holder}, written and deleted in the same
// commit as the holder. So the object is unreferenced exactly when its partition of refsSpace
// is empty.
//
// A commit that drops a reference also writes Key{garbageSpace, "", object} with the time as
// version; the collector deletes the object once that time is Grace old and the object has no
// reference left. No reference can appear between that check and the deletion: every commit
// that adds a reference to an existing object is conditioned on a record (a blob, a staging
// header) whose version guarantees that another reference to it exists at that moment — it
// copies pieces from something it read — so an object without references never gains one.
// The first reference to a new object is written by the upload that created it, which the
// collector never sees as garbage (SweepOrphans waits OrphanGrace for those).

func refKey(obj, holder string) store.Key {
	return store.Key{Space: refsSpace, Partition: obj, Row: holder}
}

func putRef(obj, holder string, version int64) store.Mutation {
	return store.Mutation{Key: refKey(obj, holder), Value: []byte{}, Version: version}
}

func dropRef(obj, holder string, version int64) []store.Mutation {
	return []store.Mutation{
		{Key: refKey(obj, holder), Delete: true},
		{Key: store.Key{Space: garbageSpace, Row: obj}, Value: []byte{}, Version: version},
	}
}

// batch gathers the mutations of one commit. A key may be written several times (an extent
// trimmed and re-placed, an object losing two references): the last write wins and the
// first write's condition stays, so the commit never holds two mutations of one key.
type batch struct {
	m     []store.Mutation
	index map[store.Key]int
}

func (b *batch) add(ms ...store.Mutation) {
	if b.index == nil {
		b.index = make(map[store.Key]int)
	}
	for _, m := range ms {
		if i, ok := b.index[m.Key]; ok {
			m.Expect = b.m[i].Expect
			b.m[i] = m
			continue
		}
		b.index[m.Key] = len(b.m)
		b.m = append(b.m, m)
	}
}
