package pebble

import (
	"bytes"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestContractInMemoryWithAMemoryLimit(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return mustOpen(t, "", Options{InMemory: true, MemoryLimit: 1 << 30})
	})
}

// TestInMemoryStoreKeepsWithinItsMemoryLimit fills an in-memory store with a 64 MiB budget:
// records and objects are refused with store.ErrFull before the budget is spent, never by
// failing the store; reads and deletions go on, and deleting frees the budget.
func TestInMemoryStoreKeepsWithinItsMemoryLimit(t *testing.T) {
	const limit = 64 << 20
	s := mustOpen(t, "", Options{InMemory: true, MemoryLimit: limit})
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()

	var err error
	written := 0
	for ; written < 10_000; written++ {
		if err = s.Commit(ctx, put("t", fmt.Sprintf("%05d", written), 1, 64<<10)); err != nil {
			break
		}
		time.Sleep(time.Millisecond) // lets the monitor measure, as traffic would
	}
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("after %d commits of 64 KiB: %v, want store.ErrFull", written, err)
	}
	held := s.MemoryHeld()
	t.Logf("refused after %d commits of 64 KiB (%.1f MiB); %.1f MiB held", written, float64(written)/16, float64(held)/(1<<20))
	if written < 8*16 {
		t.Errorf("a 64 MiB budget took only %d commits of 64 KiB", written)
	}
	if held > limit || held < limit/2 {
		t.Errorf("%d bytes held at refusal, want between half the limit and the limit (%d)", held, limit)
	}

	// An object is refused too, and the store has not failed: reads and deletions work.
	payload := make([]byte, 8<<20)
	cryptorand.Read(payload)
	if _, _, err := s.PutObject(ctx, bytes.NewReader(payload)); !errors.Is(err, store.ErrFull) {
		t.Errorf("PutObject of 8 MiB at the budget: %v, want store.ErrFull", err)
	}
	if _, err := s.Get(ctx, store.Key{Space: "t", Partition: "p", Row: "00000"}); err != nil {
		t.Fatalf("Get at the budget: %v", err)
	}
	if err := s.DeleteSpace(ctx, "t"); err != nil {
		t.Fatalf("DeleteSpace at the budget: %v", err)
	}
	eventually(t, "writes accepted again after DeleteSpace", 20*time.Second, func() bool {
		return s.Commit(ctx, put("u", "after", 2, 1024)) == nil
	})
	if _, _, err := s.PutObject(ctx, bytes.NewReader(payload)); err != nil {
		t.Errorf("PutObject once memory was freed: %v", err)
	}
}

// TestMemoryHeldCountsWhatTheFilesHold checks the count the process's memory limit follows
// (cmd/tabula): it grows with objects and shrinks when they are deleted; a store on disk
// holds nothing in memory.
func TestMemoryHeldCountsWhatTheFilesHold(t *testing.T) {
	s := mustOpen(t, "", Options{InMemory: true})
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	before := s.MemoryHeld()
	id, _, err := s.PutObject(ctx, bytes.NewReader(make([]byte, 16<<20)))
	if err != nil {
		t.Fatal(err)
	}
	if grew := s.MemoryHeld() - before; grew < 16<<20 || grew > 17<<20 {
		t.Errorf("a 16 MiB object grew the count by %d bytes", grew)
	}
	if err := s.DeleteObjects(ctx, []string{id}); err != nil {
		t.Fatal(err)
	}
	if left := s.MemoryHeld() - before; left > 1<<20 {
		t.Errorf("%d bytes still counted after deleting the object", left)
	}

	disk := mustOpen(t, t.TempDir(), Options{})
	t.Cleanup(func() { disk.Close() })
	if n := disk.MemoryHeld(); n != 0 {
		t.Errorf("a store on disk holds %d bytes in memory, want 0", n)
	}
}

// TestMemoryHeldStaysTheSizeOfTheFiles churns an in-memory store through memtable flushes,
// compactions, WAL recycling and object deletions: the running count the budget and the
// memory limit go by stays the total size of the files the filesystem holds.
func TestMemoryHeldStaysTheSizeOfTheFiles(t *testing.T) {
	s := mustOpen(t, "", Options{InMemory: true, MemoryLimit: 1 << 30})
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	var objects []string
	for round := range 6 {
		for i := range 200 {
			if err := s.Commit(ctx, put("t", fmt.Sprintf("%d-%03d", round%2, i), int64(round+1), 16<<10)); err != nil {
				t.Fatal(err)
			}
		}
		id, _, err := s.PutObject(ctx, bytes.NewReader(make([]byte, 3<<20)))
		if err != nil {
			t.Fatal(err)
		}
		objects = append(objects, id)
		if round%2 == 1 {
			if err := s.DeleteObjects(ctx, objects[:1]); err != nil {
				t.Fatal(err)
			}
			objects = objects[1:]
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSpace(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	// Pebble deletes the files a compaction made obsolete in the background, after Compact
	// returns: a deletion between the two readings would tell them apart, so they are read
	// again until the store is still (or 10 s have passed).
	var held, files int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		held, files = s.MemoryHeld(), s.mem.memFSSizeUnder("")+objectBytes(s.mem)
		if held == files && s.MemoryHeld() == held || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%.1f MiB held", float64(held)/(1<<20))
	if held != files || held < 9<<20 {
		t.Errorf("MemoryHeld says %d bytes, the files hold %d", held, files)
	}
}

// objectBytes returns the bytes of d's object files.
func objectBytes(d *memDisk) int64 {
	d.objectsMu.Lock()
	defer d.objectsMu.Unlock()
	var total int64
	for _, c := range d.objects {
		total += c.length()
	}
	return total
}
