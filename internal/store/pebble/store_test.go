package pebble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestContractOnDisk(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t, t.TempDir(), Options{}) })
}

func TestContractInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t, "", Options{InMemory: true}) })
}

// TestContractWithRecordsInSSTables runs the suite with the memtable flushed after every
// write, so that reads, condition checks and range deletions go through sstables (with
// their bloom filters) rather than only the memtable.
func TestContractWithRecordsInSSTables(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return flushingStore{mustOpen(t, "", Options{InMemory: true}), t}
	})
}

type flushingStore struct {
	*Store
	t *testing.T
}

func (s flushingStore) Commit(ctx context.Context, ms []store.Mutation) error {
	err := s.Store.Commit(ctx, ms)
	s.flush()
	return err
}

func (s flushingStore) DeleteSpace(ctx context.Context, space string) error {
	err := s.Store.DeleteSpace(ctx, space)
	s.flush()
	return err
}

func (s flushingStore) flush() {
	if err := s.guard.Enter(context.Background()); err != nil {
		return // closed: nothing to flush
	}
	defer s.guard.Exit()
	if err := s.db.Flush(); err != nil {
		s.t.Errorf("Flush: %v", err)
	}
}

func mustOpen(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestRecordsSurviveCloseAndReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	kept := store.Key{Space: "t", Partition: "p", Row: "kept"}
	gone := store.Key{Space: "t", Partition: "p", Row: "deleted"}
	otherSpace := store.Key{Space: "u", Partition: "p", Row: "r"}

	s := mustOpen(t, dir, Options{})
	for _, k := range []store.Key{kept, gone, otherSpace} {
		if err := s.Commit(ctx, []store.Mutation{{Key: k, Version: 7, Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, []store.Mutation{{Key: gone, Delete: true}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSpace(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, dir, Options{})
	defer s.Close()
	if rec, err := s.Get(ctx, kept); err != nil || rec.Version != 7 || string(rec.Value) != "v" {
		t.Errorf("after reopen, Get(%v) = %+v, %v", kept, rec, err)
	}
	for _, k := range []store.Key{gone, otherSpace} {
		if _, err := s.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after reopen, Get(%v) = %v, want ErrNotFound", k, err)
		}
	}
}

func TestOpenOnDiskRequiresADirectory(t *testing.T) {
	if s, err := Open("", Options{}); err == nil {
		s.Close()
		t.Fatal("Open with no directory succeeded")
	}
}

func TestOpenRefusesADirectoryAlreadyOpen(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	defer s.Close()
	if s2, err := Open(dir, Options{}); err == nil {
		s2.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
}

func TestInMemoryStoresAreIndependentAndLeaveNoFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	a := mustOpen(t, dir, Options{InMemory: true})
	defer a.Close()
	b := mustOpen(t, dir, Options{InMemory: true})
	defer b.Close()
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	if err := a.Commit(t.Context(), []store.Mutation{{Key: k, Version: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second in-memory store sees the first one's record: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("in-memory store touched the disk: Stat(%q) = %v", dir, err)
	}
}

func TestCommitRejectsMutationsSharingAKey(t *testing.T) {
	s := mustOpen(t, "", Options{InMemory: true})
	defer s.Close()
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	err := s.Commit(t.Context(), []store.Mutation{
		{Key: k, Version: 1},
		{Key: store.Key{Space: "t", Partition: "p", Row: "other"}, Version: 1},
		{Key: k, Delete: true},
	})
	var cf *store.ConditionFailedError
	if err == nil || errors.As(err, &cf) {
		t.Fatalf("Commit with a repeated key: %v, want a plain error", err)
	}
	if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rejected commit was applied: %v", err)
	}
}

func TestScanRejectsBoundsOutsideItsSpace(t *testing.T) {
	s := mustOpen(t, "", Options{InMemory: true})
	defer s.Close()
	r := store.Range{Space: "t", Start: store.Key{Partition: "p"}, EndUnbounded: true}
	if err := s.Scan(t.Context(), r, func(store.Record) (bool, error) { return true, nil }); err == nil {
		t.Fatal("Scan accepted a Start outside its space")
	}
}

// TestAcknowledgedCommitsSurviveCrash simulates power loss: a crash clone of the filesystem
// keeps only what was fsynced (and, in the second case, a random half of what was not).
// Writers run chains of dependent commits, each conditioned on the previous one, while the
// memtable is flushed and the WAL rotated underneath them. After recovery every commit
// acknowledged before the crash must be there, and each chain must be an unbroken prefix:
// no commit survives without the commits it read from, and none survives in part.
func TestAcknowledgedCommitsSurviveCrash(t *testing.T) {
	for _, unsyncedPercent := range []int{0, 50} {
		t.Run(fmt.Sprintf("unsynced%d", unsyncedPercent), func(t *testing.T) {
			testCrash(t, vfs.CrashCloneCfg{UnsyncedDataPercent: unsyncedPercent, RNG: rand.New(rand.NewPCG(3, 4))})
		})
	}
}

func testCrash(t *testing.T, crash vfs.CrashCloneCfg) {
	const dir = "db"
	// Chains 0-3 each have one writer; chain 4 is shared by four writers racing on it.
	const chains, sharedChain, writersPerChain = 5, 4, 4
	fs := vfs.NewCrashableMem()
	s, err := open(dir, fs)
	if err != nil {
		t.Fatal(err)
	}
	var acked [chains]atomic.Int64 // highest link of each chain whose Commit returned nil

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range chains - 1 + writersPerChain {
		chain := min(w, sharedChain)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				n, err := appendLink(t.Context(), s, chain)
				var cf *store.ConditionFailedError
				switch {
				case errors.As(err, &cf):
					continue // another writer of the shared chain won
				case err != nil:
					t.Errorf("chain %d: %v", chain, err)
					return
				}
				for {
					cur := acked[chain].Load()
					if n <= cur || acked[chain].CompareAndSwap(cur, n) {
						break
					}
				}
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.db.Flush(); err != nil {
				t.Errorf("Flush: %v", err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	// Crash once every chain has some acknowledged links.
	for i := 0; i < chains && !t.Failed(); {
		if acked[i].Load() >= 20 {
			i++
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	var ackedBeforeCrash [chains]int64
	for i := range ackedBeforeCrash {
		ackedBeforeCrash[i] = acked[i].Load()
	}
	crashed := fs.CrashClone(crash)
	close(stop)
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = open(dir, crashed)
	if err != nil {
		t.Fatalf("Open after crash: %v", err)
	}
	defer s.Close()
	for chain := range chains {
		head, err := s.Get(t.Context(), chainHead(chain))
		if err != nil {
			t.Fatalf("chain %d: head: %v", chain, err)
		}
		if head.Version < ackedBeforeCrash[chain] {
			t.Errorf("chain %d: recovered up to link %d, but link %d was acknowledged before the crash",
				chain, head.Version, ackedBeforeCrash[chain])
		}
		var links int64
		err = s.Scan(t.Context(), store.PartitionRange("chains", chainPartition(chain)), func(rec store.Record) (bool, error) {
			if rec.Key.Row == "" {
				return true, nil // the head
			}
			links++
			if rec.Version != links {
				return false, fmt.Errorf("link %d missing (next link found: %d)", links, rec.Version)
			}
			return true, nil
		})
		if err != nil {
			t.Errorf("chain %d: %v", chain, err)
		} else if links != head.Version {
			t.Errorf("chain %d: head says %d links, found %d", chain, head.Version, links)
		}
		t.Logf("chain %d: %d links acknowledged before the crash, %d recovered", chain, ackedBeforeCrash[chain], head.Version)
	}
}

func chainPartition(chain int) string { return fmt.Sprintf("chain%d", chain) }

// chainHead is the key holding a chain's length as its version.
func chainHead(chain int) store.Key {
	return store.Key{Space: "chains", Partition: chainPartition(chain), Row: ""}
}

// appendLink adds link n to chain and moves the head to n in one commit, conditioned on the
// head read just before; it returns n.
func appendLink(ctx context.Context, s *Store, chain int) (int64, error) {
	head := chainHead(chain)
	cur, err := s.Get(ctx, head)
	expect := store.Expect{Kind: store.ExpectVersion, Version: cur.Version}
	if errors.Is(err, store.ErrNotFound) {
		expect = store.Expect{Kind: store.ExpectAbsent}
	} else if err != nil {
		return 0, err
	}
	n := cur.Version + 1
	link := store.Key{Space: "chains", Partition: head.Partition, Row: fmt.Sprintf("%08d", n)}
	return n, s.Commit(ctx, []store.Mutation{
		{Key: head, Expect: expect, Version: n},
		{Key: link, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: n, Value: []byte("link")},
	})
}

// TestWALReplaysFromCopyOfOpenStore copies the directory of a store that is still open,
// as a crash would leave it, and opens the copy: every acknowledged commit is in the WAL.
func TestWALReplaysFromCopyOfOpenStore(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := mustOpen(t, dir, Options{})
	defer s.Close()
	const n = 50
	for i := range n {
		k := store.Key{Space: "t", Partition: "p", Row: fmt.Sprintf("%03d", i)}
		if err := s.Commit(ctx, []store.Mutation{{Key: k, Version: int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}

	// The records are few enough to stay in the memtable, so no flush or compaction
	// changes the directory while it is copied.
	cp := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue // the objects directory: this test is about records
		}
		if err := copyFile(filepath.Join(dir, e.Name()), filepath.Join(cp, e.Name())); err != nil {
			t.Fatal(err)
		}
	}

	c := mustOpen(t, cp, Options{})
	defer c.Close()
	count := 0
	err = c.Scan(ctx, store.PartitionRange("t", "p"), func(rec store.Record) (bool, error) {
		if rec.Version != int64(count) {
			return false, fmt.Errorf("record %d has version %d", count, rec.Version)
		}
		count++
		return true, nil
	})
	if err != nil || count != n {
		t.Fatalf("copy holds %d of %d records (%v)", count, n, err)
	}
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
