package pebble

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestObjectsContractOnDisk(t *testing.T) {
	storetest.RunObjects(t, func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		dir := t.TempDir()
		return mustOpen(t, dir, Options{}), func() storetest.ObjectStore { return mustOpen(t, dir, Options{}) }
	})
}

func TestObjectsContractInMemory(t *testing.T) {
	storetest.RunObjects(t, func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		fs := vfs.NewMem()
		return mustOpenFS(t, "db", fs), func() storetest.ObjectStore { return mustOpenFS(t, "db", fs) }
	})
}

func mustOpenFS(t testing.TB, dir string, fs vfs.FS) *Store {
	t.Helper()
	s, err := open(dir, fs)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// TestAcknowledgedObjectsSurviveCrash simulates power loss while writers put and delete
// objects: the crash clone keeps what was fsynced (and in the second case a random half of
// what was not). After recovery every object PutObject acknowledged before the crash reads
// back whole, every deletion acknowledged stays, and whatever else remains is a leftover that
// ScanObjects reports, ReadObject does not find, and DeleteObjects removes.
func TestAcknowledgedObjectsSurviveCrash(t *testing.T) {
	for _, unsyncedPercent := range []int{0, 50} {
		t.Run(fmt.Sprintf("unsynced%d", unsyncedPercent), func(t *testing.T) {
			testObjectsCrash(t, vfs.CrashCloneCfg{UnsyncedDataPercent: unsyncedPercent, RNG: rand.New(rand.NewPCG(5, 6))})
		})
	}
}

func testObjectsCrash(t *testing.T, crash vfs.CrashCloneCfg) {
	const writers = 6
	fs := vfs.NewCrashableMem()
	s := mustOpenFS(t, "db", fs)
	ctx := t.Context()

	var mu sync.Mutex
	acked := map[string][]byte{} // acknowledged and not deleted
	deleted := map[string]bool{} // acknowledged deletions
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				data := make([]byte, rng.IntN(300<<10))
				for k := range data {
					data[k] = byte(w*31 + i + k)
				}
				id, _, err := s.PutObject(ctx, bytes.NewReader(data))
				if err != nil {
					t.Errorf("PutObject: %v", err)
					return
				}
				mu.Lock()
				acked[id] = data
				mu.Unlock()
				if i%3 == 2 {
					if err := s.DeleteObjects(ctx, []string{id}); err != nil {
						t.Errorf("DeleteObjects: %v", err)
						return
					}
					mu.Lock()
					delete(acked, id)
					deleted[id] = true
					mu.Unlock()
				}
			}
		})
	}
	for {
		mu.Lock()
		n := len(acked) + len(deleted)
		mu.Unlock()
		if n >= 60 || t.Failed() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	wantKept, wantDeleted := maps.Clone(acked), maps.Clone(deleted)
	crashed := fs.CrashClone(crash)
	mu.Unlock()
	close(stop)
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpenFS(t, "db", crashed)
	defer s.Close()
	for id, data := range wantKept {
		r, err := s.ReadObject(ctx, id, 0, int64(len(data)))
		if err != nil {
			t.Fatalf("object acknowledged before the crash: ReadObject = %v", err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("object acknowledged before the crash reads back %d bytes (%v), want its %d", len(got), err, len(data))
		}
	}
	var leftovers []string
	err := s.ScanObjects(ctx, time.Now(), func(id string, size int64) (bool, error) {
		if wantDeleted[id] {
			return false, fmt.Errorf("object %s deleted before the crash is back", id)
		}
		if _, ok := wantKept[id]; !ok {
			leftovers = append(leftovers, id)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range leftovers {
		// An object acknowledged after the clone was taken may have made it whole.
		r, err := s.ReadObject(ctx, id, 0, 0)
		if err == nil {
			r.Close()
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("leftover %s: ReadObject = %v", id, err)
		}
	}
	if err := s.DeleteObjects(ctx, leftovers); err != nil {
		t.Fatal(err)
	}
	left := 0
	s.ScanObjects(ctx, time.Now(), func(string, int64) (bool, error) { left++; return true, nil })
	if left != len(wantKept) {
		t.Fatalf("after sweeping %d leftovers, %d objects remain, want the %d kept", len(leftovers), left, len(wantKept))
	}
	t.Logf("%d objects kept, %d deleted before the crash; %d leftovers swept", len(wantKept), len(wantDeleted), len(leftovers))
}
