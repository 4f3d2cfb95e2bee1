package pebble

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestObjectsContractOnDisk(t *testing.T) {
	storetest.RunObjects(t, storetest.ObjectsBackend{Open: func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		dir := t.TempDir()
		return mustOpen(t, dir, Options{}), func() storetest.ObjectStore { return mustOpen(t, dir, Options{}) }
	}})
}

func TestObjectsContractInMemory(t *testing.T) {
	storetest.RunObjects(t, storetest.ObjectsBackend{Open: func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		fs := vfs.NewMem()
		return mustOpenFS(t, "db", fs), func() storetest.ObjectStore { return mustOpenFS(t, "db", fs) }
	}, BytesInMemory: true})
}

// TestObjectsContractOfAnInMemoryStore runs the suite on a store opened in memory, whose
// object files are kept as chunks (memobjects.go), files only as in TestObjectsContractAsFilesOnly.
func TestObjectsContractOfAnInMemoryStore(t *testing.T) {
	storetest.RunObjects(t, storetest.ObjectsBackend{Open: func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		s := mustOpen(t, "", Options{InMemory: true, MemoryLimit: 1 << 30})
		s.objects.inlineMax = -1
		return s, nil
	}, BytesInMemory: true})
}

// TestObjectsContractAsFilesOnly runs the suite with every object a file, the empty and
// small ones included, which otherwise are records.
func TestObjectsContractAsFilesOnly(t *testing.T) {
	storetest.RunObjects(t, storetest.ObjectsBackend{Open: func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		fs := vfs.NewMem()
		open := func() storetest.ObjectStore {
			s := mustOpenFS(t, "db", fs)
			s.objects.inlineMax = -1
			return s
		}
		return open(), open
	}, BytesInMemory: true})
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
// what was not). After recovery every object PutObject acknowledged before the crash, and
// not asked to be deleted since, reads back whole, every deletion acknowledged stays, and
// whatever else remains is a leftover that ScanObjects reports, ReadObject does not find
// (unless it was whole: acknowledged after the crash, or its deletion in flight), and
// DeleteObjects removes.
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
					// Once asked, the deletion may be durable before it is acknowledged: a
					// crash meanwhile may keep the object or not.
					mu.Lock()
					delete(acked, id)
					mu.Unlock()
					if err := s.DeleteObjects(ctx, []string{id}); err != nil {
						t.Errorf("DeleteObjects: %v", err)
						return
					}
					mu.Lock()
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

// sourceRecorder is an io.ReaderFrom, as net/http's response is, that records what it was
// handed.
type sourceRecorder struct {
	src io.Reader
	got bytes.Buffer
}

func (w *sourceRecorder) Write(p []byte) (int, error) { return w.got.Write(p) }

func (w *sourceRecorder) ReadFrom(src io.Reader) (int64, error) {
	w.src = src
	return w.got.ReadFrom(src)
}

// TestReadersOfFilesOnDiskOfferTheFileForSendfile checks that io.Copy of a file object's
// reader hands the writer an io.LimitedReader of the file itself, a syscall.Conn: what
// net.TCPConn sends with sendfile(2). Then it downloads a range over loopback HTTP that way.
func TestReadersOfFilesOnDiskOfferTheFileForSendfile(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	defer s.Close()
	data := make([]byte, 3<<20)
	rand.NewChaCha8([32]byte{9}).Read(data)
	id, _, err := s.PutObject(t.Context(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	const off, n = 1000, 2 << 20
	r, err := s.ReadObject(t.Context(), id, off, n)
	if err != nil {
		t.Fatal(err)
	}
	var w sourceRecorder
	if _, err := io.Copy(&w, r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	lr, ok := w.src.(*io.LimitedReader)
	if !ok {
		t.Fatalf("io.Copy handed the writer a %T, want an *io.LimitedReader", w.src)
	}
	if _, ok := lr.R.(syscall.Conn); !ok {
		t.Fatalf("the io.LimitedReader reads a %T, not a syscall.Conn", lr.R)
	}
	if !bytes.Equal(w.got.Bytes(), data[off:off+n]) {
		t.Fatal("io.Copy of the reader yielded other bytes")
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r, err := s.ReadObject(req.Context(), id, off, n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer r.Close()
		w.Header().Set("Content-Length", strconv.Itoa(n))
		io.Copy(w, r)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(body, data[off:off+n]) {
		t.Fatalf("download over HTTP: %d bytes (%v), want %d of the object from %d", len(body), err, n, off)
	}
}
