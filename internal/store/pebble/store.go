// Package pebble is Tabula's embedded storage backend: the store.Store contract on a local
// Pebble LSM (github.com/cockroachdb/pebble).
//
// Keys are encoded so that Pebble's bytewise order is the contract's order (keys.go). Reads
// go straight to Pebble. Commits serialise per partition on striped locks, check their
// conditions with point reads, apply one Pebble batch, release the locks and only then wait
// for the WAL fsync, so commits to one partition queue only for each other's memtable
// inserts and every waiting commit shares the next fsync (group commit).
package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
)

// Options configures Open. The zero value opens a durable store on disk.
type Options struct {
	// InMemory keeps every file in memory (Pebble's vfs.NewMem): nothing touches disk, nothing
	// survives Close, and Commit's durability promise does not apply.
	InMemory bool
	// MemoryLimit, with InMemory, is the memory budget of the store's files (records and
	// objects) in bytes: near it, writes that add data are refused with store.ErrFull as on a
	// full disk, deletions go on. 0 sets no budget.
	MemoryLimit int64
	// FS, if set, is the filesystem the store lives on instead of the operating system's:
	// tests pass Pebble's in-memory, crashable and error-injecting filesystems. dir is a path
	// in it.
	FS vfs.FS
}

// Store is a store.Store backed by Pebble. It is safe for concurrent use.
//
// Faults (disk.go, space.go): a commit that would add data to a nearly full disk is refused
// with store.ErrFull, deletions are not; a write of the WAL or MANIFEST that fails for good
// fails the store, which then refuses every write at once and keeps serving reads; Pebble is
// only ever waited on with a way out (Store.write), so no call, and not Close, hangs on a
// failed or stalled disk.
type Store struct {
	db      *pebble.DB
	failure *failure
	space   *space
	// writeTimeout bounds how long a commit waits for Pebble; closeTimeout how long Close
	// waits for Pebble to close.
	writeTimeout, closeTimeout time.Duration

	// Commits lock the stripes of all partitions they touch, in ascending stripe order so
	// that two multi-partition commits cannot deadlock. A stripe is held from the condition
	// check until the batch is visible in the memtable, never across the WAL fsync.
	seed    maphash.Seed
	stripes [numStripes]sync.Mutex

	flushedAt atomic.Int64 // when flushSoon last flushed, in Unix nanoseconds
	// closing is cancelled when Close begins, ending the background work that holds guard.
	closing     context.Context
	stopClosing context.CancelFunc

	guard store.CloseGuard

	objects objectFiles // objects.go

	wal walStats // walstats.go

	workers *workers // run writes (workers.go)

	mem *memDisk // the in-memory filesystem of an in-memory store, nil on disk
}

var (
	_ store.Exclusive = (*Store)(nil)
	_ store.Objects   = (*Store)(nil)
)

// ExclusiveToProcess implements store.Exclusive: Pebble locks the directory it opens.
func (s *Store) ExclusiveToProcess() {}

// numStripes bounds how many commits to distinct partitions can hold their locks at once;
// two partitions sharing a stripe only queue for each other's (short) critical section.
const numStripes = 256

// Open opens (creating if needed) the store in directory dir. With opts.InMemory, dir only
// names the directory inside the in-memory filesystem and may be empty. Two Stores cannot
// have the same directory open: Pebble locks it.
//
// Open fails at once, writing nothing, when the disk has too little free space for what
// opening writes (see space.prepareOpen), and with the first fault when the disk fails while
// opening.
func Open(dir string, opts Options) (*Store, error) {
	fs := opts.FS
	switch {
	case opts.InMemory:
		mem := newMemBudget(opts.MemoryLimit, dir)
		s, err := openStore(dir, mem, false) // in memory, nothing to journal: zeros would only cost
		if err == nil {
			s.mem = mem
		}
		return s, err
	case fs == nil && dir == "":
		return nil, errors.New("pebble store: no directory given")
	case fs == nil:
		fs = vfs.Default
	}
	return openStore(dir, fs, true)
}

// MemoryHeld returns the bytes an in-memory store's files hold (records, objects, and what
// Pebble keeps of them); 0 for a store on disk. The process's memory limit has room for them
// (cmd/tabula), so that the garbage collector does not run for want of memory it cannot free.
func (s *Store) MemoryHeld() int64 {
	if s.mem == nil {
		return 0
	}
	return s.mem.held()
}

// Waiting on Pebble is bounded: a write that has not finished after writeTimeout is answered
// as in doubt (store.ErrInDoubt), and Close gives up on Pebble after closeTimeout (a second
// once the disk has failed, since Pebble cannot close then).
const (
	writeTimeout       = 10 * time.Second
	closeTimeout       = 10 * time.Second
	failedCloseTimeout = time.Second
)

// open is Open on any filesystem.
func open(dir string, fs vfs.FS) (*Store, error) { return openStore(dir, fs, true) }

// openStore is open, with the WAL written over zeros (walzero.go) if zeroWAL.
func openStore(dir string, fs vfs.FS, zeroWAL bool) (*Store, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebble store: open %q: %w", dir, err)
	}
	s := &Store{
		failure: newFailure(dir), space: newSpace(fs, dir), seed: maphash.MakeSeed(),
		writeTimeout: writeTimeout, closeTimeout: closeTimeout, workers: newWorkers(),
	}
	s.closing, s.stopClosing = context.WithCancel(context.Background())
	if err := s.space.prepareOpen(); err != nil {
		s.stopClosing()
		return nil, fmt.Errorf("pebble store: open %q: %w", dir, err)
	}
	cache := pebble.NewCache(blockCacheBytes)
	defer cache.Unref() // the DB holds its own reference
	d := &disk{FS: fs, failure: s.failure, space: s.space, wal: &s.wal}
	if zeroWAL {
		d.walZeroAhead = walZeroAheadFor(s.space.memTableBytes)
	}
	o := pebbleOptions(d, cache, s.space.memTableBytes)
	o.Logger = slogLogger{s.failure}
	o.EventListener = s.eventListener()

	// Pebble opens in a goroutine of its own, which a fault may park (see disk).
	type opened struct {
		db  *pebble.DB
		err error
	}
	result := make(chan opened, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				result <- opened{err: fmt.Errorf("%v", r)}
			}
		}()
		db, err := pebble.Open(dir, o)
		result <- opened{db, err}
	}()
	var r opened
	select {
	case r = <-result:
	case <-s.failure.done:
		r.err = s.failure.err
		go func() { // should Pebble open after all, it is not wanted
			if late := <-result; late.db != nil {
				late.db.Close()
			}
		}()
	}
	if r.err == nil {
		r.err = s.failure.get()
	}
	if r.err != nil {
		if r.db != nil {
			r.db.Close()
		}
		s.stopClosing()
		return nil, fmt.Errorf("pebble store: open %q: %w", dir, r.err)
	}
	s.db = r.db
	objects, err := openObjectFiles(fs, dir)
	if err != nil {
		s.db.Close()
		s.stopClosing()
		return nil, err
	}
	s.objects = objects
	s.space.owed = func() int64 {
		if s.guard.Enter(s.closing) != nil {
			return 0 // closing
		}
		defer s.guard.Exit()
		return owedBy(s.db.Metrics())
	}
	s.failure.serving.Store(true)
	s.space.start()
	return s, nil
}

// owedBy returns the bytes that Pebble, in the state m describes, is about to write: its
// memtables, and its compaction debt only while a compaction runs or is due (a level scores
// 1 or more). Pebble's debt estimate counts every byte in L0 once the base level holds data,
// even when no compaction is due: rising keys (logs, queues, time-ordered tables) make L0
// files that never overlap and stay there until the file-count threshold; counting them as
// owed refused writes with half the disk free, and with no write coming to trigger the
// compaction, went on refusing them.
func owedBy(m *pebble.Metrics) int64 {
	owed := int64(m.WAL.Size)
	due := m.Compact.NumInProgress > 0
	for _, l := range m.Levels {
		due = due || l.Score >= 1
	}
	if due {
		owed += int64(m.Compact.EstimatedDebt)
	}
	return owed
}

// Memory is two fixed shares, so it stays flat as the data grows: the block cache, which
// also holds the sstables' index and filter blocks, and the memtables, at most
// memTableBytes × memTableStopWritesThreshold (writes stall beyond that until a flush ends).
const (
	blockCacheBytes             = 256 << 20
	memTableBytes               = 32 << 20
	memTableStopWritesThreshold = 4
)

// pebbleOptions returns the options the store opens Pebble with; memTable is the memtable
// size (memTableBytes except on small disks, see sizesFor).
func pebbleOptions(fs vfs.FS, cache *pebble.Cache, memTable int64) *pebble.Options {
	o := &pebble.Options{
		FS:     fs,
		Cache:  cache,
		Logger: slogLogger{},
		// Pinned rather than FormatNewest so that upgrading the Pebble module never silently
		// ratchets an existing store to a format the previous binary cannot open.
		FormatMajorVersion:          pebble.FormatValueSeparation,
		MemTableSize:                uint64(memTable),
		MemTableStopWritesThreshold: memTableStopWritesThreshold,
		// Pebble's default L0 compaction threshold: compacting at 2 files (as tried first)
		// rewrote the base level twice as often and cost a sixth of sustained batch-insert
		// throughput, while bloom filters keep point reads from feeling the extra L0 files
		// (measured: no difference in point gets). Writers stall well before L0 grows
		// unbounded: Tabula has no admission control above us.
		L0CompactionThreshold: 4,
		L0StopWritesThreshold: 20,
		// Flushes cut their output at L0's split keys, which bound about this many bytes of
		// each sublevel (Pebble's default: 4 MiB). Keys that rise within each of several
		// partitions (batch inserts, logs, queues) make every flush span every partition;
		// a finer cut lets an L0 compaction take only the files that overlap one stretch of
		// the base level instead of rewriting most of it. Measured with 16 writers appending
		// batches of 100 1.2 KB records to 16 partitions (BenchmarkAppendingPartitions, 1.2M
		// records, 2-4 runs each): sstable bytes written per byte ingested 2.7-3.1 (4 MiB) ->
		// 2.4-2.7 (2 MiB) -> 2.0 (1 MiB), CPU per record 7.8-10.4 -> 7.3-9.0 -> 7.5-7.9 µs.
		// But every file of L0 is one more for a scan to open and merge: table scans over
		// freshly written data ran 20% slower at 1 MiB, and no slower at 2 MiB.
		FlushSplitBytes: 2 << 20,
		// A deleted table's space is one range deletion; once it is flushed, Pebble drops
		// the sstables it covers in lower levels without writing anything (a delete-only
		// compaction). Left in the memtable it would wait for the memtable to fill, which
		// on a quiet store may take long.
		FlushDelayDeleteRange: 2 * time.Second,
		CompactionConcurrencyRange: func() (int, int) {
			return 1, max(1, min(4, runtime.GOMAXPROCS(0)/2))
		},
	}
	// Whole-key bloom filters (1% false positives) let Get and the condition checks of
	// inserts, which mostly probe keys that do not exist, skip sstables. Not on L6: Pebble's
	// point reads never consult L6 filters (file_cache.go, unless IterOptions.UseL6Filters),
	// and there they would cost ~10 bits for most keys of the store.
	for i := range len(o.Levels) - 1 {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].FilterType = pebble.TableFilter
	}
	// Entities are typically around a kilobyte, so Pebble's default 4 KiB blocks would hold
	// three or four each and every few records of a scan would cost a block-cache lookup.
	// 32 KiB blocks make partition and table scans several times cheaper; a point read
	// still binary-searches one cached block.
	for i := range o.Levels {
		o.Levels[i].BlockSize = 32 << 10
	}
	return o
}

// slogLogger sends Pebble's log lines to the process's default slog logger: routine progress
// (every WAL replay, every ingestion) at Debug, failures at Error.
type slogLogger struct {
	failure *failure // set by Fatalf, if not nil
}

func (slogLogger) Infof(format string, args ...any) {
	if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		slog.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (slogLogger) Errorf(format string, args ...any) {
	slog.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is called for states Pebble cannot continue from; like Pebble's default logger it
// does not return. The failures of the disk that lead here are kept from Pebble (see disk),
// so what remains are broken invariants, and a commit that meets one (Store.write recovers
// the panic) fails the store.
func (l slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	slog.Error(msg, "component", "pebble")
	if l.failure != nil {
		l.failure.set(errors.New(msg))
	}
	panic("pebble: " + msg)
}

// eventListener reports Pebble's background errors, which it retries, without flooding the
// log: the first one, then at most one line every backgroundErrorEvery with the count of
// those not logged. A "no space" among them tells the space monitor. Data corruption found
// by a read fails that read (Pebble's default would be Fatalf, taking the process down).
func (s *Store) eventListener() *pebble.EventListener {
	var mu sync.Mutex
	var last time.Time
	var unlogged int
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			if diskSaysNoSpace(err) {
				s.space.noSpace()
			}
			mu.Lock()
			if time.Since(last) < backgroundErrorEvery {
				unlogged++
				mu.Unlock()
				return
			}
			n := unlogged
			last, unlogged = time.Now(), 0
			mu.Unlock()
			slog.Error("pebble background error, retrying", "component", "pebble", "err", err.Error(), "not_logged_since_last", n)
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			slog.Error("pebble found corrupt data", "component", "pebble", "path", info.Path, "err", info.Details.Error())
		},
	}
}

const backgroundErrorEvery = 30 * time.Second

// Get implements store.Store. A ctx already done returns ctx.Err().
func (s *Store) Get(ctx context.Context, key store.Key) (store.Record, error) {
	if err := s.guard.Enter(ctx); err != nil {
		return store.Record{}, err
	}
	defer s.guard.Exit()
	raw, closer, err := s.db.Get(appendKey(nil, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return store.Record{}, store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, fmt.Errorf("pebble store: get %v: %w", key, err)
	}
	defer closer.Close()
	version, value, err := decodeValue(raw)
	if err != nil {
		return store.Record{}, fmt.Errorf("pebble store: get %v: %w", key, err)
	}
	return store.Record{Key: key, Version: version, Value: bytes.Clone(value)}, nil
}

// Scan implements store.Store. The snapshot is that of a Pebble iterator, which reads at the
// sequence number visible when it is created. Close waits for a Scan in progress, so fn must
// not call Close. A range whose Start or End lies in another space is rejected with an
// error.
func (s *Store) Scan(ctx context.Context, r store.Range, fn func(store.Record) (bool, error)) (err error) {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	lower, upper, err := rangeBounds(r)
	if err != nil {
		return err
	}
	if bytes.Compare(lower, upper) >= 0 {
		return nil
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebble store: scan %q: %w", r.Space, err)
	}
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("pebble store: scan %q: %w", r.Space, cerr)
		}
	}()

	spacePrefix := len(appendComponent(nil, r.Space))
	done := ctx.Done()
	// Consecutive records mostly share a partition: keep its decoded string rather than
	// allocate it again for every record. The zero values agree: "" is encoded as nothing.
	var lastPartition []byte
	var partition string
	for ok := it.First(); ok; ok = it.Next() {
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		escPartition, rest, err := nextComponent(it.Key()[spacePrefix:])
		if err != nil {
			return err
		}
		if !bytes.Equal(escPartition, lastPartition) {
			lastPartition = append(lastPartition[:0], escPartition...)
			partition = unescape(escPartition)
		}
		escRow, rest, err := nextComponent(rest)
		if err != nil {
			return err
		}
		if len(rest) != 0 {
			return errCorruptKey
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("pebble store: scan %q: %w", r.Space, err)
		}
		version, value, err := decodeValue(raw)
		if err != nil {
			return err
		}
		more, err := fn(store.Record{
			Key:     store.Key{Space: r.Space, Partition: partition, Row: unescape(escRow)},
			Version: version,
			Value:   value, // lent: valid until the iterator moves, which is after fn returns
		})
		if err != nil || !more {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("pebble store: scan %q: %w", r.Space, err)
	}
	return nil
}

// rangeBounds returns the encoded [lower, upper) of r.
func rangeBounds(r store.Range) (lower, upper []byte, err error) {
	if r.Start.Space != r.Space || (!r.EndUnbounded && r.End.Space != r.Space) {
		return nil, nil, fmt.Errorf("pebble store: range bounds %v, %v outside space %q", r.Start, r.End, r.Space)
	}
	if r.EndUnbounded {
		_, upper = spaceBounds(r.Space)
	} else {
		upper = appendKey(nil, r.End)
	}
	return appendKey(nil, r.Start), upper, nil
}

// Commit implements store.Store. When several Expects fail, the ConditionFailedError names
// the lowest index. Mutations sharing a key are rejected with a plain error. A ctx already
// done returns ctx.Err(); once the batch is applied, Commit waits for the fsync regardless
// of ctx.
//
// On a nearly full disk a commit that writes more records than it deletes is refused with
// store.ErrFull. Once the store has failed every commit is refused with the failure. A commit
// that does not finish within writeTimeout, or that is in flight when the store fails,
// returns an error wrapping store.ErrInDoubt: its mutations may be visible to readers, and
// may or may not survive a restart.
func (s *Store) Commit(ctx context.Context, mutations []store.Mutation) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	if len(mutations) == 0 {
		return nil
	}
	keys := make([][]byte, len(mutations))
	stripes := make([]int, len(mutations))
	for i, m := range mutations {
		if m.Expect.Kind > store.ExpectVersion {
			return fmt.Errorf("pebble store: mutation %d: unknown expect kind %d", i, m.Expect.Kind)
		}
		k := appendPartitionPrefix(nil, m.Key.Space, m.Key.Partition)
		stripes[i] = int(maphash.Bytes(s.seed, k) % numStripes)
		keys[i] = appendComponent(k, m.Key.Row)
	}
	if i, j, dup := duplicateKey(keys); dup {
		return fmt.Errorf("pebble store: mutations %d and %d share key %v", i, j, mutations[i].Key)
	}
	if err := s.admit(mutations, keys); err != nil {
		return err
	}
	err := s.write(func() error {
		batch, err := s.applyLocked(stripes, func() (*pebble.Batch, error) {
			return s.checkAndBuild(mutations, keys)
		})
		if err != nil {
			return err
		}
		return s.syncWait(batch)
	})
	if err == nil {
		s.wal.commits.Add(1)
		s.wal.mutations.Add(uint64(len(mutations)))
		if s.space.full.Load() {
			s.flushSoon()
		}
	}
	return err
}

// flushSoon starts flushing the memtable, unless it did less than a second ago: on a nearly
// full disk, deleted entities free space only once their deletions are flushed and
// compacted, and the memtable, which only deletions reach then, would take long to fill.
func (s *Store) flushSoon() {
	now := time.Now().UnixNano()
	last := s.flushedAt.Load()
	if now-last < int64(time.Second) || !s.flushedAt.CompareAndSwap(last, now) {
		return
	}
	go func() { // AsyncFlush takes the commit pipeline's lock, which a stall may hold
		if s.guard.Enter(context.Background()) != nil {
			return // closed
		}
		defer s.guard.Exit()
		_, _ = s.db.AsyncFlush()
	}()
}

// admit decides whether a commit of mutations (whose encoded keys are keys) may go ahead:
// not once the store has failed; and, while the disk is nearly full, only if it deletes at
// least as many records as it writes, which keeps deleting entities and tables (whose commit
// deletes the table's record and writes a note of the deletion) possible.
func (s *Store) admit(mutations []store.Mutation, keys [][]byte) error {
	if err := s.failure.get(); err != nil {
		return fmt.Errorf("pebble store: the disk failed, writes are refused until restart: %w", err)
	}
	var puts, deletes int
	var size int64
	for i, m := range mutations {
		size += int64(len(keys[i]))
		if m.Delete {
			deletes++
		} else {
			puts++
			size += versionLen + int64(len(m.Value))
		}
	}
	if puts <= deletes {
		return nil
	}
	return s.space.admit(size)
}

// admitGrowth is admit for a write of n bytes that adds data (an object).
func (s *Store) admitGrowth(n int64) error {
	if err := s.failure.get(); err != nil {
		return fmt.Errorf("pebble store: the disk failed, writes are refused until restart: %w", err)
	}
	return s.space.admit(n)
}

// write runs fn, which applies a batch and waits for its fsync, on another goroutine (a
// worker, workers.go), and waits for it at most writeTimeout and no longer than the store
// stays healthy. Pebble
// can hold a commit forever (a stall behind flushes that cannot be written, a parked WAL
// write, its commit pipeline wedged by a panic), and only a waiter that can walk away keeps
// the caller from hanging with it. A panic in fn fails the store: Pebble panics in its commit
// pipeline when it cannot go on.
func (s *Store) write(fn func() error) error {
	done := make(chan error, 1)
	s.workers.run(func() {
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("pebble panicked in a commit: %v", r)
				s.failure.set(err)
				done <- fmt.Errorf("pebble store: %w: %w", store.ErrInDoubt, err)
			}
		}()
		done <- fn()
	})
	timer := time.NewTimer(s.writeTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-s.failure.done:
	case <-timer.C:
	}
	select {
	case err := <-done: // finished after all
		return err
	default:
	}
	if err := s.failure.get(); err != nil {
		return fmt.Errorf("pebble store: %w: the disk failed while the write was in flight: %w", store.ErrInDoubt, err)
	}
	return fmt.Errorf("pebble store: %w: the write did not finish within %v", store.ErrInDoubt, s.writeTimeout)
}

// applyLocked locks the given stripes, builds a batch with build and applies it to the
// memtable without waiting for the WAL fsync, then unlocks. The returned batch is visible to
// every reader and every later condition check; the caller must pass it to syncWait.
//
// Releasing the stripes before the fsync cannot lose a commit that others depended on.
// Pebble (v2.1.7) assigns sequence numbers and writes batches to the WAL in one critical
// section (commitPipeline.prepare), and makes a batch visible only after that write
// (commitPipeline.publish). The WAL is one append-only file whose fsync covers every byte
// written before it (LogWriter.flushLoop), and when the memtable rotates, the old WAL is
// closed and synced before the new one is created, still inside that critical section
// (DB.rotateWAL). So whatever a commit (or the reader it serves) has seen was earlier in
// the WAL than the commit's own batch, and the fsync that acknowledges the commit makes it
// durable too: a crash keeps a prefix of the WAL, never a later commit without an earlier
// one. This would need revisiting if WAL failover (Options.WALFailover) were enabled.
func (s *Store) applyLocked(stripes []int, build func() (*pebble.Batch, error)) (*pebble.Batch, error) {
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		s.stripes[i].Lock()
	}
	defer func() {
		for _, i := range stripes {
			s.stripes[i].Unlock()
		}
	}()
	batch, err := build()
	if err != nil {
		return nil, err
	}
	if err := s.db.ApplyNoSyncWait(batch, pebble.Sync); err != nil {
		batch.Close()
		return nil, fmt.Errorf("pebble store: apply: %w", err)
	}
	return batch, nil
}

// syncWait waits until batch, applied by applyLocked, is durable in the WAL, and releases it.
func (s *Store) syncWait(batch *pebble.Batch) error {
	err := batch.SyncWait()
	if cerr := batch.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Applied, so visible to readers, but maybe not durable.
		return fmt.Errorf("pebble store: WAL sync: %w: %w", store.ErrInDoubt, err)
	}
	return nil
}

// duplicateKey reports two indexes of equal keys, if any.
func duplicateKey(keys [][]byte) (i, j int, dup bool) {
	if len(keys) < 2 {
		return 0, 0, false
	}
	order := make([]int, len(keys))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	for k := 1; k < len(order); k++ {
		if bytes.Equal(keys[order[k-1]], keys[order[k]]) {
			return min(order[k-1], order[k]), max(order[k-1], order[k]), true
		}
	}
	return 0, 0, false
}

// checkAndBuild checks every mutation's Expect against the current state and returns the
// batch applying them all. The caller holds the stripes of every mutation's partition, so
// nothing can change the checked keys before the batch is applied.
func (s *Store) checkAndBuild(mutations []store.Mutation, keys [][]byte) (*pebble.Batch, error) {
	if err := s.checkAll(mutations, keys); err != nil {
		return nil, err
	}
	batch := s.db.NewBatch()
	for i, m := range mutations {
		var err error
		if m.Delete {
			err = batch.Delete(keys[i], nil)
		} else {
			op := batch.SetDeferred(len(keys[i]), versionLen+len(m.Value))
			copy(op.Key, keys[i])
			putValue(op.Value, m.Version, m.Value)
			err = op.Finish()
		}
		if err != nil {
			batch.Close()
			return nil, fmt.Errorf("pebble store: build batch: %w", err)
		}
	}
	return batch, nil
}

// checkAll returns nil if every mutation's Expect holds, or a *store.ConditionFailedError for
// the lowest failing one. One condition is a point read; several (an entity group
// transaction) share one iterator, visiting the keys in ascending order, which saves setting
// up a read per key and lets each seek start from the previous one.
func (s *Store) checkAll(mutations []store.Mutation, keys [][]byte) error {
	var conditioned []int
	for i, m := range mutations {
		if m.Expect.Kind != store.ExpectAnything {
			conditioned = append(conditioned, i)
		}
	}
	switch len(conditioned) {
	case 0:
		return nil
	case 1:
		i := conditioned[0]
		raw, closer, err := s.db.Get(keys[i])
		if errors.Is(err, pebble.ErrNotFound) {
			return judged(judge(i, mutations[i], nil))
		}
		if err != nil {
			return fmt.Errorf("pebble store: check %v: %w", mutations[i].Key, err)
		}
		defer closer.Close()
		return judged(judge(i, mutations[i], raw))
	}
	slices.SortFunc(conditioned, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	last := keys[conditioned[len(conditioned)-1]]
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: keys[conditioned[0]],
		UpperBound: append(slices.Clip(last), 0), // the smallest key after last
	})
	if err != nil {
		return fmt.Errorf("pebble store: check: %w", err)
	}
	defer it.Close()
	var first *store.ConditionFailedError
	for _, i := range conditioned {
		var raw []byte
		if it.SeekPrefixGE(keys[i]) && bytes.Equal(it.Key(), keys[i]) {
			if raw, err = it.ValueAndErr(); err != nil {
				return fmt.Errorf("pebble store: check %v: %w", mutations[i].Key, err)
			}
		} else if err := it.Error(); err != nil {
			return fmt.Errorf("pebble store: check %v: %w", mutations[i].Key, err)
		}
		failed, err := judge(i, mutations[i], raw)
		if err != nil {
			return err
		}
		if failed != nil && (first == nil || failed.Index < first.Index) {
			first = failed
		}
	}
	return judged(first, nil)
}

// judge reports whether m.Expect holds for the stored value raw (nil when the key is absent),
// mutations[i] being m: failed is nil if it does, else it describes what is there instead.
func judge(i int, m store.Mutation, raw []byte) (failed *store.ConditionFailedError, err error) {
	var version int64
	var value []byte
	if raw != nil {
		if version, value, err = decodeValue(raw); err != nil {
			return nil, fmt.Errorf("pebble store: check %v: %w", m.Key, err)
		}
	}
	if m.Expect.Holds(raw != nil, version) {
		return nil, nil
	}
	failed = &store.ConditionFailedError{Index: i}
	if raw != nil {
		failed.Found = &store.Record{Key: m.Key, Version: version, Value: bytes.Clone(value)}
	}
	return failed, nil
}

// judged turns judge's results into one error, without a typed nil in the interface.
func judged(failed *store.ConditionFailedError, err error) error {
	if failed != nil {
		return failed
	}
	return err
}

// DeleteSpace implements store.Store with one range deletion. It takes every stripe, so it
// is also atomic with respect to commits: none has checked its conditions before the
// deletion and applied after it. A ctx already done returns ctx.Err(). It is accepted on a
// nearly full disk (it is how space comes back: once the deletion is flushed, Pebble drops
// the files it covers without writing), and fails like Commit otherwise.
func (s *Store) DeleteSpace(ctx context.Context, space string) error {
	if err := s.guard.Enter(ctx); err != nil {
		return err
	}
	defer s.guard.Exit()
	if err := s.admit(nil, nil); err != nil {
		return err
	}
	all := make([]int, numStripes)
	for i := range all {
		all[i] = i
	}
	err := s.write(func() error {
		batch, err := s.applyLocked(all, func() (*pebble.Batch, error) {
			lower, upper := spaceBounds(space)
			batch := s.db.NewBatch()
			if err := batch.DeleteRange(lower, upper, nil); err != nil {
				batch.Close()
				return nil, fmt.Errorf("pebble store: delete space %q: %w", space, err)
			}
			return batch, nil
		})
		if err != nil {
			return err
		}
		return s.syncWait(batch)
	})
	if err == nil {
		s.wal.commits.Add(1)
	}
	if err == nil && s.space.full.Load() {
		s.exciseSoon(space)
	}
	return err
}

// exciseSoon removes, in the background, the files holding a deleted space, so that its
// space comes back at once on a nearly full disk. Left to Pebble, the deletion frees space
// only through compactions, and not soon: records still in L0 beside the range deletion
// (recent writes) wait for a compaction of all of L0, which may not fit, and Pebble runs
// that compaction before any other. An excise drops the files in the range, and splits the
// few that straddle its bounds, writing nothing but the MANIFEST.
func (s *Store) exciseSoon(space string) {
	if s.guard.Enter(s.closing) != nil {
		return
	}
	go func() {
		defer s.guard.Exit()
		lower, upper := spaceBounds(space)
		if err := s.db.Excise(s.closing, pebble.KeyRange{Start: lower, End: upper}); err != nil && s.closing.Err() == nil {
			slog.Warn("dropping the files of a deleted space to free disk space", "component", "pebble", "err", err.Error())
		}
	}()
}

// Close waits for in-flight calls to return (commits return within writeTimeout), then
// closes Pebble, which syncs the WAL and waits for a compaction in progress. Calls made once
// Close has begun, including Close, return store.ErrClosed. If all that takes more than
// closeTimeout (a second once the disk has failed: Pebble cannot close then), Close returns
// an error and leaves Pebble as it is: every acknowledged write is in the WAL already, and
// the next open recovers as after a crash.
func (s *Store) Close() error {
	wait := s.closeTimeout
	if s.failure.get() != nil {
		wait = failedCloseTimeout
	}
	deadline := time.Now().Add(wait)
	s.stopClosing()
	if err := s.guard.CloseWithin(wait); errors.Is(err, store.ErrClosed) {
		return err
	} else if err != nil {
		s.space.close()
		s.workers.stop()
		return s.gaveUp(wait, err)
	}
	s.space.close()
	s.workers.stop()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("pebble panicked: %v", r)
			}
		}()
		done <- s.db.Close()
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("pebble store: close: %w", err)
		}
		return nil
	case <-time.After(time.Until(deadline)):
		return s.gaveUp(wait, errors.New("Pebble did not close"))
	}
}

// gaveUp is Close's error when it stops waiting after wait.
func (s *Store) gaveUp(wait time.Duration, err error) error {
	if failed := s.failure.get(); failed != nil {
		err = fmt.Errorf("%w, the disk having failed (%w)", err, failed)
	}
	return fmt.Errorf("pebble store: close: gave up after %v: %w; the next start recovers every acknowledged write", wait, err)
}
