package pebble

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walStats counts what reaching the disk costs the store's commits: the commits applied, the
// records they wrote or deleted, and the write and sync calls Pebble made on its write-ahead
// log to make them durable. Commits over syncs is how well concurrent commits share a sync
// (group commit); it is what issue 17 asked to see.
type walStats struct {
	commits, mutations atomic.Uint64 // commits acknowledged, and their records
	writes, syncs      atomic.Uint64 // write(2) and fdatasync(2) calls on WAL files

	// applied counts the batches applied to wait for a sync (applyLocked); appliedAtSync is
	// what applied was when the last sync ended (nextSyncDelay).
	applied, appliedAtSync atomic.Uint64
	// syncDelay is groupSyncDelay, in nanoseconds; benchmarks change it.
	syncDelay atomic.Int64
}

// Group commit. Pebble syncs the WAL as soon as a commit asks for it and the previous sync
// is over, for every commit that asked meanwhile. When syncs follow each other back to back
// (the disk's sync latency, not the CPU, paces the writers), that splits concurrent writers
// into two groups taking turns: while one group's sync runs, the other group's commits
// arrive and make the next sync. A sync costs the machine as much CPU as serving several
// writes (a quarter to a third of a millisecond of system time per fdatasync on the
// project's 2-core VM), so two half-full syncs cost nearly twice one full one.
//
// So after a sync that covered several commits, the next one is held back by
// groupSyncDelay: long enough for the writers just acknowledged to come back with their next
// commits and join it, short next to a sync. Measured with 16 writers each spending about
// 100 µs of CPU between commits (the store's BenchmarkCommitWithThinkTime, 2 cores): 7.4 ->
// 14.1 commits per sync, CPU per commit 106 -> 76 µs, commits/s 2,180 -> 2,800; a 1 ms delay
// did no better and 2 ms cost a quarter of the commit rate. After a sync of one commit there
// is no delay, so a lone writer is never slowed. Acknowledged still means synced: the delay
// only decides when the sync starts.
const groupSyncDelay = 500 * time.Microsecond

// nextSyncDelay is Pebble's Options.WALMinSyncInterval: Pebble calls it after each sync,
// from its WAL writer's goroutine, and holds the next sync back by what it returns (the
// commits' writes to the WAL go on meanwhile).
func (w *walStats) nextSyncDelay() time.Duration {
	applied := w.applied.Load()
	if applied-w.appliedAtSync.Swap(applied) < 2 {
		return 0
	}
	return time.Duration(w.syncDelay.Load())
}

// walCategory is what Pebble (v2.1.7) creates and recycles its WAL files with.
const walCategory vfs.DiskWriteCategory = "pebble-wal"

// walStatsFor returns stats if a file created with category is a WAL file, else nil.
func walStatsFor(stats *walStats, category vfs.DiskWriteCategory) *walStats {
	if category == walCategory {
		return stats
	}
	return nil
}
