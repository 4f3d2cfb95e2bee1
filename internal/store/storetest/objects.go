package storetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

// ObjectStore is a backend as the Objects suite sees it.
type ObjectStore interface {
	store.Objects
	Close() error
}

// ObjectsBackend is what the Objects suite needs of a backend.
type ObjectsBackend struct {
	// Open returns a new, empty store, and a function opening the same store again if the
	// backend can (else nil: the durability case is skipped). The suite closes the store
	// before it calls reopen, and calls reopen at most once.
	Open func(t *testing.T) (s ObjectStore, reopen func() ObjectStore)
	// BytesInMemory says that the store keeps object bytes in the process's memory (an
	// in-memory filesystem): the case bounding memory use is skipped.
	BytesInMemory bool
}

// RunObjects runs the Objects contract suite, one subtest per behaviour. Every store it opens
// is closed when the subtest ends.
func RunObjects(t *testing.T, backend ObjectsBackend) {
	type testFunc = func(t *testing.T, s ObjectStore, reopen func() ObjectStore)
	onDisk := func(test testFunc) testFunc {
		return func(t *testing.T, s ObjectStore, reopen func() ObjectStore) {
			if backend.BytesInMemory {
				t.Skip("the store keeps object bytes in memory")
			}
			test(t, s, reopen)
		}
	}
	tests := []struct {
		name string
		test testFunc
	}{
		{"ObjectsOfEverySizeRoundTrip", testObjectsOfEverySizeRoundTrip},
		{"EveryRangeReadsItsBytes", testEveryRangeReadsItsBytes},
		{"RangesOutsideTheObjectAreRejected", testRangesOutsideTheObjectAreRejected},
		{"UnknownIDsAreNotFound", testUnknownIDsAreNotFound},
		{"IDsAreNeverReused", testIDsAreNeverReused},
		{"DeleteRemovesOnlyTheGivenObjects", testDeleteRemovesOnlyTheGivenObjects},
		{"ConcurrentPutsAndReadsKeepTheirBytes", testConcurrentPutsAndReadsKeepTheirBytes},
		{"DeleteWhileReadingNeverYieldsOtherBytes", testDeleteWhileReadingNeverYieldsOtherBytes},
		{"FailedPutLeavesNothingReadable", testFailedPutLeavesNothingReadable},
		{"ScanObjectsReportsWhatBeganBefore", testScanObjectsReportsWhatBeganBefore},
		{"ScanObjectsReportsPutsInProgress", testScanObjectsReportsPutsInProgress},
		{"ScanObjectsStopsAndReturnsFnError", testScanObjectsStopsAndReturnsFnError},
		{"LargeObjectsTakeBoundedMemory", onDisk(testLargeObjectsTakeBoundedMemory)},
		{"ObjectsSurviveReopen", testObjectsSurviveReopen},
		{"ObjectCallsAfterCloseReturnErrClosed", testObjectCallsAfterCloseReturnErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reopen := backend.Open(t)
			current := s
			t.Cleanup(func() {
				if err := current.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			var reopenTracked func() ObjectStore
			if reopen != nil {
				reopenTracked = func() ObjectStore {
					current = reopen()
					return current
				}
			}
			tc.test(t, s, reopenTracked)
		})
	}
}

const mib = 1 << 20

// content returns size pseudo-random bytes determined by seed.
func content(seed uint64, size int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, size)
	rand.NewChaCha8(key).Read(b)
	return b
}

// unevenReader yields data in reads of random lengths, the last one together with io.EOF,
// as a network body does.
type unevenReader struct {
	data []byte
	rng  *rand.Rand
}

func newUnevenReader(data []byte, seed uint64) *unevenReader {
	return &unevenReader{data: data, rng: rand.New(rand.NewPCG(seed, 1))}
}

func (r *unevenReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[:min(len(r.data), 1+r.rng.IntN(300<<10))])
	r.data = r.data[n:]
	if len(r.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// putObject stores data and returns its id, failing t if PutObject fails or misreports the
// size.
func putObject(t *testing.T, s store.Objects, data []byte) string {
	t.Helper()
	id, size, err := s.PutObject(t.Context(), newUnevenReader(data, uint64(len(data))))
	if err != nil {
		t.Fatalf("PutObject of %d bytes: %v", len(data), err)
	}
	if size != int64(len(data)) {
		t.Fatalf("PutObject of %d bytes reported size %d", len(data), size)
	}
	if len(id) == 0 || len(id) > 64 {
		t.Fatalf("PutObject returned id %q", id)
	}
	return id
}

// readObject returns the n bytes of id at off.
func readObject(t *testing.T, s store.Objects, id string, off, n int64) ([]byte, error) {
	t.Helper()
	r, err := s.ReadObject(t.Context(), id, off, n)
	if err != nil {
		return nil, err
	}
	got, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return got, err
}

// requireBytes fails t unless got equals want.
func requireBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	t.Fatalf("%s: got %d bytes, want %d; first difference at byte %d", what, len(got), len(want), i)
}

// scanObjects returns what ScanObjects reports for before.
func scanObjects(t *testing.T, s store.Objects, before time.Time) map[string]int64 {
	t.Helper()
	found := map[string]int64{}
	err := s.ScanObjects(t.Context(), before, func(id string, size int64) (bool, error) {
		if _, dup := found[id]; dup {
			return false, fmt.Errorf("id %q reported twice", id)
		}
		found[id] = size
		return true, nil
	})
	if err != nil {
		t.Fatalf("ScanObjects: %v", err)
	}
	return found
}

func testObjectsOfEverySizeRoundTrip(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	for i, size := range []int{0, 1, 100, 64 << 10, mib - 1, mib, mib + 1, 5*mib + 123} {
		data := content(uint64(i), size)
		id := putObject(t, s, data)
		got, err := readObject(t, s, id, 0, int64(size))
		if err != nil {
			t.Fatalf("ReadObject of the whole %d-byte object: %v", size, err)
		}
		requireBytes(t, fmt.Sprintf("object of %d bytes", size), got, data)
		if got, err := readObject(t, s, id, int64(size), 0); err != nil || len(got) != 0 {
			t.Fatalf("empty read at the end of a %d-byte object: %d bytes, %v", size, len(got), err)
		}
	}
}

func testEveryRangeReadsItsBytes(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	const size = 3*mib + 5
	data := content(7, size)
	id := putObject(t, s, data)
	// Around every power-of-two boundary a backend might cut objects at.
	var bounds []int64
	for _, b := range []int64{0, 4 << 10, 64 << 10, 256 << 10, mib, 2 * mib, 3 * mib, size} {
		for _, d := range []int64{-1, 0, 1} {
			if b+d >= 0 && b+d <= size {
				bounds = append(bounds, b+d)
			}
		}
	}
	// Every boundary as the start of short and long ranges, and as the end of one from 0.
	read := func(off, end int64) {
		if end > size {
			return
		}
		got, err := readObject(t, s, id, off, end-off)
		if err != nil {
			t.Fatalf("ReadObject(%d, %d): %v", off, end-off, err)
		}
		requireBytes(t, fmt.Sprintf("ReadObject(%d, %d)", off, end-off), got, data[off:end])
	}
	for _, b := range bounds {
		for _, n := range []int64{0, 1, 2, 70000} {
			read(b, b+n)
		}
		read(b, size)
		read(0, b)
	}
}

func testRangesOutsideTheObjectAreRejected(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	const size = 1000
	id := putObject(t, s, content(1, size))
	for _, r := range [][2]int64{{-1, 1}, {0, -1}, {size, 1}, {0, size + 1}, {size + 1, 0}, {size - 10, 11}} {
		rc, err := s.ReadObject(t.Context(), id, r[0], r[1])
		if err == nil {
			rc.Close()
			t.Fatalf("ReadObject(%d, %d) of a %d-byte object succeeded", r[0], r[1], size)
		}
		if errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ReadObject(%d, %d) of a %d-byte object = %v, want an error other than ErrNotFound", r[0], r[1], size, err)
		}
	}
}

func testUnknownIDsAreNotFound(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	id := putObject(t, s, content(1, 10))
	deleted := putObject(t, s, content(2, 10))
	if err := s.DeleteObjects(t.Context(), []string{deleted}); err != nil {
		t.Fatal(err)
	}
	for _, unknown := range []string{"", "x", "../" + id, id + "/", id[:len(id)-1], id + "0", deleted, "\x00", string(bytes.Repeat([]byte("f"), 64))} {
		if _, err := readObject(t, s, unknown, 0, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ReadObject(%q) = %v, want ErrNotFound", unknown, err)
		}
	}
}

func testIDsAreNeverReused(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	seen := map[string]bool{}
	for round := range 3 {
		var ids []string
		for range 20 {
			id := putObject(t, s, nil)
			if seen[id] {
				t.Fatalf("id %q returned twice", id)
			}
			seen[id] = true
			ids = append(ids, id)
		}
		if round < 2 {
			if err := s.DeleteObjects(t.Context(), ids); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func testDeleteRemovesOnlyTheGivenObjects(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	var datas [][]byte
	var ids []string
	for i := range 6 {
		data := content(uint64(i), 1000*i+mib*(i%2))
		ids = append(ids, putObject(t, s, data))
		datas = append(datas, data)
	}
	gone := []string{ids[1], ids[2], ids[5], "unknown"}
	if err := s.DeleteObjects(t.Context(), gone); err != nil {
		t.Fatalf("DeleteObjects: %v", err)
	}
	if err := s.DeleteObjects(t.Context(), gone); err != nil {
		t.Fatalf("DeleteObjects again: %v", err)
	}
	if err := s.DeleteObjects(t.Context(), nil); err != nil {
		t.Fatalf("DeleteObjects of nothing: %v", err)
	}
	for i, id := range ids {
		got, err := readObject(t, s, id, 0, int64(len(datas[i])))
		switch i {
		case 1, 2, 5:
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("deleted object %d: ReadObject = %v, want ErrNotFound", i, err)
			}
		default:
			if err != nil {
				t.Fatalf("kept object %d: %v", i, err)
			}
			requireBytes(t, fmt.Sprintf("kept object %d", i), got, datas[i])
		}
	}
	found := scanObjects(t, s, time.Now().Add(time.Hour))
	if len(found) != 3 {
		t.Errorf("ScanObjects after the deletion reports %d objects, want 3: %v", len(found), found)
	}
}

func testConcurrentPutsAndReadsKeepTheirBytes(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	const writers, perWriter = 8, 4
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				seed := uint64(w*perWriter + i)
				data := content(seed, 100<<10+int(seed)*37<<10)
				id, size, err := s.PutObject(t.Context(), newUnevenReader(data, seed))
				if err != nil || size != int64(len(data)) {
					t.Errorf("writer %d: PutObject = %d, %v", w, size, err)
					return
				}
				// Several readers of one object at once, each at its own offset.
				var rg sync.WaitGroup
				for k := range 3 {
					rg.Go(func() {
						off := int64(k) * size / 4
						got, err := readObject(t, s, id, off, size-off)
						if err != nil {
							t.Errorf("writer %d: ReadObject: %v", w, err)
						} else if !bytes.Equal(got, data[off:]) {
							t.Errorf("writer %d: object %d read back different bytes at %d", w, i, off)
						}
					})
				}
				rg.Wait()
			}
		})
	}
	wg.Wait()
}

func testDeleteWhileReadingNeverYieldsOtherBytes(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	const size = 3 * mib
	data := content(3, size)
	id := putObject(t, s, data)
	// Another object, so that a backend reusing what the deletion freed has bytes to show.
	other := content(4, size)
	r, err := s.ReadObject(t.Context(), id, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, 100<<10)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteObjects(t.Context(), []string{id}); err != nil {
		t.Fatal(err)
	}
	putObject(t, s, other)
	rest, err := io.ReadAll(r)
	got := append(head, rest...)
	if err == nil {
		requireBytes(t, "object read across its deletion", got, data)
	} else if !bytes.Equal(got, data[:len(got)]) {
		t.Fatalf("object read across its deletion failed (%v) after yielding other bytes", err)
	}
	if _, err := readObject(t, s, id, 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReadObject after the deletion = %v, want ErrNotFound", err)
	}
}

// failingReader yields n bytes, then fails with err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

var errReaderBroke = errors.New("storetest: reader broke")

func testFailedPutLeavesNothingReadable(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	data := content(5, 3*mib/2)
	for _, n := range []int{0, 1000, len(data)} {
		_, _, err := s.PutObject(t.Context(), &failingReader{newUnevenReader(data[:n], 1), errReaderBroke})
		if !errors.Is(err, errReaderBroke) {
			t.Fatalf("PutObject from a reader failing after %d bytes = %v, want its error", n, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancelling := readerFunc(func(p []byte) (int, error) {
		cancel()
		return copy(p, data[:min(len(p), 1000)]), nil
	})
	if _, _, err := s.PutObject(ctx, io.MultiReader(bytes.NewReader(data), cancelling, bytes.NewReader(data))); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutObject whose context ended = %v, want context.Canceled", err)
	}
	// Whatever the attempts left must be unreadable.
	for id := range scanObjects(t, s, time.Now().Add(time.Hour)) {
		if _, err := readObject(t, s, id, 0, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("leftover %q of a failed PutObject: ReadObject = %v, want ErrNotFound", id, err)
		}
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func testScanObjectsReportsWhatBeganBefore(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	start := time.Now().Add(-time.Millisecond)
	want := map[string]int64{}
	for i, size := range []int{0, 10, 2*mib + 1} {
		want[putObject(t, s, content(uint64(i), size))] = int64(size)
	}
	got := scanObjects(t, s, time.Now().Add(time.Millisecond))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ScanObjects reports %v, want %v", got, want)
	}
	if got := scanObjects(t, s, start.Add(-time.Hour)); len(got) != 0 {
		t.Fatalf("ScanObjects before every PutObject began reports %v", got)
	}
}

// blockingReader yields data, then blocks until release is closed and fails.
type blockingReader struct {
	data    []byte
	drained chan struct{} // closed once data has been read
	release chan struct{}
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if len(b.data) > 0 {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	select {
	case <-b.drained:
	default:
		close(b.drained)
	}
	<-b.release
	return 0, errReaderBroke
}

func testScanObjectsReportsPutsInProgress(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	kept := putObject(t, s, content(1, 100))
	r := &blockingReader{data: content(2, 5*mib/2), drained: make(chan struct{}), release: make(chan struct{})}
	failed := make(chan error, 1)
	go func() {
		_, _, err := s.PutObject(t.Context(), r)
		failed <- err
	}()
	<-r.drained
	// What the put in progress stored may take a moment to be reported: the backend may be
	// writing it while it reads on.
	var inProgress string
	for deadline := time.Now().Add(10 * time.Second); inProgress == "" && time.Now().Before(deadline); {
		for id, size := range scanObjects(t, s, time.Now()) {
			if id != kept && size > 0 {
				inProgress = id
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := readObject(t, s, inProgress, 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ReadObject of a PutObject in progress = %v, want ErrNotFound", err)
	}
	close(r.release)
	if err := <-failed; !errors.Is(err, errReaderBroke) {
		t.Fatalf("PutObject = %v, want its reader's error", err)
	}
	if inProgress == "" {
		t.Fatal("ScanObjects never reported the 2.5 MiB a PutObject in progress had read")
	}
	// A sweeper deletes it.
	if err := s.DeleteObjects(t.Context(), []string{inProgress}); err != nil {
		t.Fatal(err)
	}
	if got := scanObjects(t, s, time.Now()); len(got) != 1 || got[kept] != 100 {
		t.Fatalf("after sweeping, ScanObjects reports %v, want only %q", got, kept)
	}
}

func testScanObjectsStopsAndReturnsFnError(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	for i := range 5 {
		putObject(t, s, content(uint64(i), 10))
	}
	calls := 0
	err := s.ScanObjects(t.Context(), time.Now(), func(string, int64) (bool, error) {
		calls++
		return false, nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("ScanObjects with fn returning false: %d calls, %v", calls, err)
	}
	boom := errors.New("boom")
	calls = 0
	err = s.ScanObjects(t.Context(), time.Now(), func(string, int64) (bool, error) {
		calls++
		return true, boom
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("ScanObjects with fn failing: %d calls, %v", calls, err)
	}
}

// patternBlock repeats through the large objects: its length is no power of two, so that
// the bytes at any offset differ from those a chunk or page size away.
var patternBlock = content(99, mib+12345)

// patternReader yields n bytes of the pattern, and records the largest heap seen every few
// MiB.
type patternReader struct {
	off, n   int64
	maxHeap  *uint64
	nextPeek int64
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off == r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.off)]
	for done := 0; done < len(p); {
		done += copy(p[done:], patternBlock[(r.off+int64(done))%int64(len(patternBlock)):])
	}
	r.off += int64(len(p))
	if r.off >= r.nextPeek {
		r.nextPeek += 4 * mib
		peekHeap(r.maxHeap)
	}
	return len(p), nil
}

func peekHeap(highest *uint64) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	*highest = max(*highest, m.HeapAlloc)
}

// patternChecker checks that what is written is the pattern from off, peeking at the heap
// as patternReader does.
type patternChecker struct {
	off      int64
	maxHeap  *uint64
	nextPeek int64
	bad      bool
}

func (w *patternChecker) Write(p []byte) (int, error) {
	for done := 0; done < len(p); {
		want := patternBlock[(w.off+int64(done))%int64(len(patternBlock)):]
		want = want[:min(len(want), len(p)-done)]
		if !bytes.Equal(p[done:done+len(want)], want) {
			w.bad = true
		}
		done += len(want)
	}
	w.off += int64(len(p))
	if w.off >= w.nextPeek {
		w.nextPeek += 4 * mib
		peekHeap(w.maxHeap)
	}
	return len(p), nil
}

func testLargeObjectsTakeBoundedMemory(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	const size, bound = 64 * mib, 32 * mib
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var maxPut, maxRead uint64
	id, n, err := s.PutObject(t.Context(), &patternReader{n: size, maxHeap: &maxPut})
	if err != nil || n != size {
		t.Fatalf("PutObject of %d bytes: %d, %v", size, n, err)
	}
	r, err := s.ReadObject(t.Context(), id, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	w := &patternChecker{maxHeap: &maxRead}
	// Not io.Copy: a reader may hand io.Copy to something else than Write (a file to
	// sendfile), which is what it should do, but not what this test measures.
	if _, err := io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if w.bad || w.off != size {
		t.Fatalf("the %d-byte object read back %d bytes, mismatched: %v", size, w.off, w.bad)
	}
	t.Logf("heap above the start: %d MiB at most while putting, %d MiB while reading", (maxPut-min(maxPut, base))>>20, (maxRead-min(maxRead, base))>>20)
	if maxPut > base+bound || maxRead > base+bound {
		t.Fatalf("a %d MiB object took the heap %d MiB above its start while putting, %d MiB while reading; want under %d MiB",
			size>>20, (maxPut-min(maxPut, base))>>20, (maxRead-min(maxRead, base))>>20, bound>>20)
	}
}

func testObjectsSurviveReopen(t *testing.T, s ObjectStore, reopen func() ObjectStore) {
	if reopen == nil {
		t.Skip("the backend cannot reopen this store")
	}
	var ids []string
	var datas [][]byte
	for i, size := range []int{0, 1000, 3*mib + 7} {
		datas = append(datas, content(uint64(i), size))
		ids = append(ids, putObject(t, s, datas[i]))
	}
	if err := s.DeleteObjects(t.Context(), ids[1:2]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = reopen()
	for i, id := range ids {
		got, err := readObject(t, s, id, 0, int64(len(datas[i])))
		if i == 1 {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleted object after reopen: %v, want ErrNotFound", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("object %d after reopen: %v", i, err)
		}
		requireBytes(t, fmt.Sprintf("object %d after reopen", i), got, datas[i])
	}
	want := map[string]int64{ids[0]: 0, ids[2]: int64(len(datas[2]))}
	if got := scanObjects(t, s, time.Now()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen ScanObjects reports %v, want %v", got, want)
	}
}

func testObjectCallsAfterCloseReturnErrClosed(t *testing.T, s ObjectStore, _ func() ObjectStore) {
	id := putObject(t, s, content(1, 10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"PutObject": func() error { _, _, err := s.PutObject(ctx, bytes.NewReader(nil)); return err },
		"ReadObject": func() error {
			r, err := s.ReadObject(ctx, id, 0, 10)
			if err == nil {
				r.Close()
			}
			return err
		},
		"DeleteObjects": func() error { return s.DeleteObjects(ctx, []string{id}) },
		"ScanObjects": func() error {
			return s.ScanObjects(ctx, time.Now(), func(string, int64) (bool, error) { return true, nil })
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}
