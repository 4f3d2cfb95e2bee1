package pebble

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tabula-dev/tabula/internal/store"
)

// smallDisk is an in-memory filesystem of a fixed capacity, as a small partition is: a write
// that does not fit in the free space fails with ENOSPC having written nothing, removing a
// file frees its bytes, and GetDiskUsage reports the space (as statfs would).
type smallDisk = memDisk

func newSmallDisk(capacity int64) *smallDisk {
	return &memDisk{MemFS: vfs.NewMem(), capacity: capacity, strict: true}
}

// fill writes a file of the size that leaves only free bytes free (as another program
// would, without regard for what the store writes meanwhile).
func (d *smallDisk) fill(t *testing.T, name string, free int64) {
	t.Helper()
	f, err := d.MemFS.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := d.free() - free; n > 0 {
		if _, err := f.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		d.used.Add(n)
	}
}

// hasReserve reports whether s's reserve file is whole and the store counts on it (its
// writer may still be closing the file once it has its size).
func hasReserve(disk *smallDisk, s *Store) bool {
	fi, err := disk.Stat("db/" + reserveName)
	s.space.mu.Lock()
	counted := s.space.haveReserve
	s.space.mu.Unlock()
	return err == nil && fi.Size() == s.space.reserveBytes && counted
}

// openOn opens a store in "db" on fs, closed when t ends.
func openOn(t *testing.T, fs vfs.FS) *Store {
	t.Helper()
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// timed runs fn and fails t if it takes longer than limit.
func timed(t *testing.T, what string, limit time.Duration, fn func() error) error {
	t.Helper()
	start := time.Now()
	err := fn()
	if d := time.Since(start); d > limit {
		t.Errorf("%s took %v, more than %v", what, d.Round(time.Millisecond), limit)
	}
	return err
}

// eventually polls cond every 50 ms until it holds, failing t after limit.
func eventually(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
	}
}

// put returns a commit of one record with a value of size random (incompressible) bytes.
func put(space, row string, version int64, size int) []store.Mutation {
	value := make([]byte, size)
	cryptorand.Read(value)
	return []store.Mutation{{Key: store.Key{Space: space, Partition: "p", Row: row}, Version: version, Value: value}}
}

func TestFullDiskRefusesWritesThatAddDataAndStillDeletes(t *testing.T) {
	disk := newSmallDisk(32 << 20)
	s := openOn(t, disk)
	ctx := t.Context()

	// Fill: every commit is answered at once, and the refusal says the disk is full.
	var written int
	var err error
	for ; written < 10_000; written++ {
		err = timed(t, "a commit on a filling disk", 5*time.Second, func() error {
			return s.Commit(ctx, put("t", fmt.Sprintf("%05d", written), 1, 64<<10))
		})
		if err != nil {
			break
		}
	}
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("after %d commits of 64 KiB: %v, want store.ErrFull", written, err)
	}
	t.Logf("refused after %d commits of 64 KiB (%.1f MiB); %.1f MiB free", written, float64(written)/16, float64(disk.free())/(1<<20))
	if written < 16*16 {
		t.Errorf("a 32 MiB disk took only %d commits of 64 KiB", written)
	}

	// Reads go on; so do deletions, of entities and of a whole space.
	if _, err := s.Get(ctx, store.Key{Space: "t", Partition: "p", Row: "00000"}); err != nil {
		t.Fatalf("Get on a full disk: %v", err)
	}
	if err := s.Commit(ctx, []store.Mutation{{Key: store.Key{Space: "t", Partition: "p", Row: "00001"}, Delete: true}}); err != nil {
		t.Fatalf("deleting a record on a full disk: %v", err)
	}
	// A delete paired with one write (as Delete Table's commit is) is accepted too.
	err = s.Commit(ctx, []store.Mutation{
		{Key: store.Key{Space: "t", Partition: "p", Row: "00002"}, Delete: true},
		{Key: store.Key{Space: "\x00deleted", Row: "t"}, Version: 1},
	})
	if err != nil {
		t.Fatalf("a commit deleting as much as it writes, on a full disk: %v", err)
	}
	if err := timed(t, "DeleteSpace on a full disk", 5*time.Second, func() error { return s.DeleteSpace(ctx, "t") }); err != nil {
		t.Fatalf("DeleteSpace on a full disk: %v", err)
	}

	// The deleted space's files are dropped and writes resume, without a restart.
	eventually(t, "writes accepted again after DeleteSpace", 20*time.Second, func() bool {
		return s.Commit(ctx, put("u", "after", 2, 1024)) == nil
	})
	eventually(t, "the reserve file made again", 10*time.Second, func() bool { return hasReserve(disk, s) })
	t.Logf("%.1f MiB free after DeleteSpace", float64(disk.free())/(1<<20))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openOn(t, disk)
	if _, err := s.Get(ctx, store.Key{Space: "t", Partition: "p", Row: "00000"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after reopen, a record of the deleted space: %v", err)
	}
	if rec, err := s.Get(ctx, store.Key{Space: "u", Partition: "p", Row: "after"}); err != nil || rec.Version != 2 {
		t.Errorf("after reopen, the record written once space was back: %+v, %v", rec, err)
	}
}

func TestNoSpaceForTheWALReleasesTheReserve(t *testing.T) {
	disk := newSmallDisk(16 << 20)
	s := openOn(t, disk)
	ctx := t.Context()
	eventually(t, "the reserve file made", 5*time.Second, func() bool { return hasReserve(disk, s) })
	if err := s.Commit(ctx, put("t", "kept", 1, 100)); err != nil {
		t.Fatal(err)
	}
	// Another program fills the disk to the last byte.
	disk.fill(t, "filler", 0)

	// The deletion's WAL write meets ENOSPC; the reserve is released and the write retried.
	if err := timed(t, "a deletion on a disk filled by another program", 5*time.Second, func() error {
		return s.Commit(ctx, []store.Mutation{{Key: store.Key{Space: "t", Partition: "p", Row: "gone"}, Delete: true}})
	}); err != nil {
		t.Fatalf("deletion: %v", err)
	}
	if err := s.failure.get(); err != nil {
		t.Fatalf("the store failed: %v", err)
	}
	if _, err := disk.Stat("db/" + reserveName); err == nil {
		t.Error("the reserve file is still there")
	}
	if err := s.Commit(ctx, put("t", "more", 1, 100)); !errors.Is(err, store.ErrFull) {
		t.Errorf("a write with the reserve spent: %v, want store.ErrFull", err)
	}
	if rec, err := s.Get(ctx, store.Key{Space: "t", Partition: "p", Row: "kept"}); err != nil || rec.Version != 1 {
		t.Errorf("Get: %+v, %v", rec, err)
	}

	// The other program's file goes: writes resume, and the reserve is made again.
	if err := disk.Remove("filler"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "writes accepted again", 5*time.Second, func() bool {
		return s.Commit(ctx, put("t", "more", 1, 100)) == nil
	})
	eventually(t, "the reserve file made again", 5*time.Second, func() bool { return hasReserve(disk, s) })
}

// injectEIO returns an injector failing, with EIO, the writes and syncs of files whose name
// matches, while it is on.
func injectEIO(matches func(path string) bool) (*errorfs.Toggle, *atomic.Int64) {
	var count atomic.Int64
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpCreate:
			if matches(op.Path) {
				count.Add(1)
				return &os.PathError{Op: "write", Path: op.Path, Err: syscall.EIO}
			}
		}
		return nil
	})
	return &errorfs.Toggle{Injector: inj}, &count
}

func TestFailedWALWriteFailsTheStoreWithoutHangingAnything(t *testing.T) {
	mem := vfs.NewCrashableMem()
	toggle, _ := injectEIO(func(p string) bool { return strings.HasSuffix(p, ".log") })
	s := openOn(t, errorfs.Wrap(mem, toggle))
	ctx := t.Context()
	kept := store.Key{Space: "t", Partition: "p", Row: "kept"}
	if err := s.Commit(ctx, []store.Mutation{{Key: kept, Version: 1, Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}

	toggle.On()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			errs[i] = timed(t, "a commit as the WAL fails", 3*time.Second, func() error {
				return s.Commit(ctx, put("t", fmt.Sprint(i), 2, 100))
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("commit %d succeeded on a failed WAL", i)
		}
	}
	if s.CanWrite() == nil {
		t.Fatal("the store did not fail, or does not say so")
	}
	// Once failed, writes are refused at once, and not as in doubt: nothing was tried.
	err := timed(t, "a commit on a failed store", 500*time.Millisecond, func() error {
		return s.Commit(ctx, put("t", "later", 3, 100))
	})
	if err == nil || errors.Is(err, store.ErrInDoubt) {
		t.Errorf("commit on a failed store: %v", err)
	}
	if err := timed(t, "DeleteSpace on a failed store", 500*time.Millisecond, func() error { return s.DeleteSpace(ctx, "t") }); err == nil {
		t.Error("DeleteSpace on a failed store succeeded")
	}
	// Reads go on.
	if rec, err := s.Get(ctx, kept); err != nil || string(rec.Value) != "v" {
		t.Errorf("Get on a failed store: %+v, %v", rec, err)
	}
	if err := s.Scan(ctx, store.SpaceRange("t"), func(store.Record) (bool, error) { return true, nil }); err != nil {
		t.Errorf("Scan on a failed store: %v", err)
	}
	if err := timed(t, "Close of a failed store", 3*time.Second, s.Close); err == nil {
		t.Error("Close of a failed store reported no error")
	}

	// A restart (here: what the disk holds, opened afresh) has every acknowledged write.
	s = openOn(t, mem.CrashClone(vfs.CrashCloneCfg{}))
	if rec, err := s.Get(ctx, kept); err != nil || string(rec.Value) != "v" {
		t.Errorf("after restart, Get: %+v, %v", rec, err)
	}
}

func TestFailedMANIFESTWriteFailsTheStoreWithoutCrashingTheProcess(t *testing.T) {
	toggle, count := injectEIO(func(p string) bool { return strings.Contains(p, "MANIFEST") })
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), toggle))
	ctx := t.Context()
	if err := s.Commit(ctx, put("t", "kept", 1, 100)); err != nil {
		t.Fatal(err)
	}
	toggle.On()
	// A flush ends with a MANIFEST write, which Pebble would answer with Fatalf on its
	// background goroutine, ending the process.
	if _, err := s.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.failure.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the store did not fail (%d faults injected)", count.Load())
	}
	if err := s.Commit(ctx, put("t", "later", 2, 100)); err == nil {
		t.Error("commit on a failed store succeeded")
	}
	if _, err := s.Get(ctx, store.Key{Space: "t", Partition: "p", Row: "kept"}); err != nil {
		t.Errorf("Get on a failed store: %v", err)
	}
	timed(t, "Close of a failed store", 3*time.Second, s.Close)
}

func TestFailedSSTableWritesAreRetriedWithoutFailingTheStore(t *testing.T) {
	toggle, count := injectEIO(func(p string) bool { return strings.HasSuffix(p, ".sst") })
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), toggle))
	ctx := t.Context()
	if err := s.Commit(ctx, put("t", "first", 1, 1000)); err != nil {
		t.Fatal(err)
	}
	toggle.On()
	if _, err := s.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := s.Commit(ctx, put("t", fmt.Sprint(i), 1, 1000)); err != nil {
			t.Fatalf("commit %d while flushes fail: %v", i, err)
		}
	}
	eventually(t, "a flush attempted", 5*time.Second, func() bool { return count.Load() > 0 })
	toggle.Off()
	if err := s.db.Flush(); err != nil {
		t.Fatalf("Flush once the disk is back: %v", err)
	}
	if err := s.failure.get(); err != nil {
		t.Fatalf("the store failed: %v", err)
	}
	if n := count.Load(); n > 10 {
		t.Errorf("%d failed sstable writes: Pebble's retries are not paced", n)
	}
}

func TestOpenOnAFullDiskFailsAtOnceAndWritesNothing(t *testing.T) {
	disk := newSmallDisk(16 << 20)
	s := openOn(t, disk)
	ctx := t.Context()
	for i := range 16 { // stays in the memtable: the WAL must be replayed
		if err := s.Commit(ctx, put("t", fmt.Sprint(i), 1, 32<<10)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the reserve file made", 5*time.Second, func() bool { return hasReserve(disk, s) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	disk.fill(t, "filler", 0)

	listing := func() string {
		names, _ := disk.List("db")
		slices.Sort(names)
		var sb strings.Builder
		for _, n := range names {
			if fi, err := disk.Stat("db/" + n); err == nil {
				fmt.Fprintf(&sb, "%s:%d ", n, fi.Size())
			}
		}
		return sb.String()
	}
	var prev string
	for attempt := range 3 {
		var st *Store
		err := timed(t, "Open on a full disk", 3*time.Second, func() (err error) {
			st, err = Open("db", Options{FS: disk})
			return err
		})
		if err == nil {
			st.Close()
			t.Fatal("Open on a full disk succeeded")
		}
		if !strings.Contains(err.Error(), "not enough free disk space") {
			t.Errorf("Open on a full disk: %v", err)
		}
		now := listing()
		if attempt > 0 && now != prev {
			t.Errorf("a failed Open changed the directory:\n%s\n%s", prev, now)
		}
		prev = now
		t.Logf("attempt %d: %v", attempt, err)
	}
	if _, err := disk.Stat("db/" + reserveName); err != nil {
		t.Errorf("the reserve file was released although that could not make room: %v", err)
	}

	// Room made: it opens, with every record.
	if err := disk.Remove("filler"); err != nil {
		t.Fatal(err)
	}
	s = openOn(t, disk)
	for i := range 16 {
		if _, err := s.Get(ctx, store.Key{Space: "t", Partition: "p", Row: fmt.Sprint(i)}); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
}

func TestOpenReleasesTheReserveWhenThatMakesRoom(t *testing.T) {
	disk := newSmallDisk(16 << 20)
	s := openOn(t, disk)
	eventually(t, "the reserve file made", 5*time.Second, func() bool { return hasReserve(disk, s) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	disk.fill(t, "filler", 2<<20) // less than opening needs (2 memtables, 1 MiB each, and the WAL)
	s = openOn(t, disk)
	if _, err := disk.Stat("db/" + reserveName); err == nil {
		t.Error("the reserve file is still there")
	}
	if err := s.Commit(t.Context(), put("t", "x", 1, 10)); !errors.Is(err, store.ErrFull) {
		t.Errorf("a write on a store opened on a full disk: %v, want store.ErrFull", err)
	}
	if err := s.Commit(t.Context(), []store.Mutation{{Key: store.Key{Space: "t", Row: "x"}, Delete: true}}); err != nil {
		t.Errorf("a deletion on a store opened on a full disk: %v", err)
	}
}

func TestOpenOnAFailingDiskFailsAtOnce(t *testing.T) {
	mem := vfs.NewMem()
	s := openOn(t, mem)
	if err := s.Commit(t.Context(), put("t", "x", 1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	toggle, _ := injectEIO(func(string) bool { return true })
	toggle.On()
	err := timed(t, "Open on a failing disk", 5*time.Second, func() error {
		st, err := Open("db", Options{FS: errorfs.Wrap(mem, toggle)})
		if err == nil {
			st.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("Open on a failing disk: %v", err)
	}
}

func TestStalledDiskAnswersWritesAndCloseInTime(t *testing.T) {
	release := make(chan struct{})
	var stalled atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if stalled.Load() && strings.HasSuffix(op.Path, ".log") && op.Kind == errorfs.OpFileSyncData {
			<-release // a disk that stops answering
		}
		return nil
	})
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), inj))
	defer close(release)
	s.writeTimeout, s.closeTimeout = 200*time.Millisecond, 300*time.Millisecond
	stalled.Store(true)
	err := timed(t, "a commit on a stalled disk", 3*time.Second, func() error {
		return s.Commit(t.Context(), put("t", "x", 1, 10))
	})
	if !errors.Is(err, store.ErrInDoubt) {
		t.Errorf("commit on a stalled disk: %v, want store.ErrInDoubt", err)
	}
	if err := timed(t, "Close on a stalled disk", 4*time.Second, s.Close); err == nil {
		t.Error("Close on a stalled disk reported no error")
	}
}

func TestPanicInACommitFailsTheStore(t *testing.T) {
	s := mustOpen(t, "", Options{InMemory: true})
	defer s.Close()
	err := s.write(func() error { panic("pebble: fatal commit error") })
	if !errors.Is(err, store.ErrInDoubt) {
		t.Errorf("write that panicked: %v, want store.ErrInDoubt", err)
	}
	if err := s.Commit(context.Background(), put("t", "x", 1, 10)); err == nil || s.failure.get() == nil {
		t.Errorf("commit after a panic: %v; failure %v", err, s.failure.get())
	}
}

// TestAppendOnlyWritesFillTheDiskToTheFloor writes as a log-like workload does (rising keys,
// one space after another) until the store refuses: the refusal must come near the floor,
// not at half the disk. Pebble's estimate of its compaction debt counts every byte in L0,
// even when no compaction is due (rising keys make L0 files that never overlap), so
// counting that estimate as taken refused writes with a third of the disk free, for good.
func TestAppendOnlyWritesFillTheDiskToTheFloor(t *testing.T) {
	disk := newSmallDisk(64 << 20)
	s := openOn(t, disk)
	ctx := t.Context()
	var written int64
	write := func(space string, limit int) error {
		for i := range limit {
			if err := s.Commit(ctx, put(space, fmt.Sprintf("%06d", i), 1, 16<<10)); err != nil {
				return err
			}
			written += 16 << 10
		}
		return nil
	}
	// Something already compacted to the bottom (a table's record, say), as in any store
	// that has run for a while.
	if err := s.Commit(ctx, put("0", "old", 1, 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	if err := write("b", 1500); err != nil { // 24 MiB
		t.Fatalf("the first 24 MiB: %v", err)
	}
	// Then the other space until refused, waiting out refusals that clear within a few
	// measurements.
	var refusedAt time.Time
	for i := 0; ; {
		err := s.Commit(ctx, put("a", fmt.Sprintf("%06d", i), 1, 16<<10))
		if err == nil {
			written += 16 << 10
			i++
			refusedAt = time.Time{}
			continue
		}
		if !errors.Is(err, store.ErrFull) {
			t.Fatalf("after %.1f MiB: %v", float64(written)/(1<<20), err)
		}
		if refusedAt.IsZero() {
			refusedAt = time.Now()
		} else if time.Since(refusedAt) > 3*measureEvery {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	free := disk.free()
	m := s.db.Metrics()
	t.Logf("debt %.1f MiB, L0 %d files in %d sublevels, %d compactions, scores %v", float64(m.Compact.EstimatedDebt)/(1<<20), m.Levels[0].TablesCount, m.Levels[0].Sublevels, m.Compact.Count, []float64{m.Levels[0].Score, m.Levels[1].Score, m.Levels[5].Score, m.Levels[6].Score})
	t.Logf("refused after %.1f MiB of values, %.1f MiB free, floor %.1f MiB", float64(written)/(1<<20), float64(free)/(1<<20), float64(s.space.floor)/(1<<20))
	if limit := s.space.floor + s.space.floor/2 + s.space.reserveBytes + 2*s.space.memTableBytes; free > limit {
		t.Errorf("writes refused with %.1f MiB free, more than %.1f MiB", float64(free)/(1<<20), float64(limit)/(1<<20))
	}
}
