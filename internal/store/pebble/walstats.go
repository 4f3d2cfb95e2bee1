package pebble

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walStats counts what reaching the disk costs the store's commits: the commits applied, the
// records they wrote or deleted, and the write and sync calls Pebble made on its write-ahead
// log to make them durable. Commits over syncs is how well concurrent commits share a sync
// (group commit); it is what issue 17 asked to see.
type walStats struct {
	commits, mutations atomic.Uint64 // commits acknowledged, and their records
	writes, syncs      atomic.Uint64 // write(2) and fdatasync(2) calls on WAL files
}

// Group commit is Pebble's own: a WAL sync starts as soon as a commit asks for one and the
// previous sync is over, and covers every commit that asked meanwhile. Holding the next
// sync back after a sync of several commits (WALMinSyncInterval, 500 µs, 2026-11-27) merged
// more commits per sync (16 HTTP writers: ~6 -> ~9) and so cost less CPU per commit, but made
// fewer writers wait for nobody: end to end, Insert Entity from 2, 4 and 8 clients ran up to
// 45% slower with it (BENCHMARKS.md, "No hold-back before a WAL sync"), and from 16 no
// faster. A sync now never waits.

// walCategory is what Pebble (v2.1.7) creates and recycles its WAL files with.
const walCategory vfs.DiskWriteCategory = "pebble-wal"

// walStatsFor returns stats if a file created with category is a WAL file, else nil.
func walStatsFor(stats *walStats, category vfs.DiskWriteCategory) *walStats {
	if category == walCategory {
		return stats
	}
	return nil
}
