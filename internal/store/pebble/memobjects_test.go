package pebble

import (
	"bytes"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestChunkFilesReadWhatWasWrittenAcrossChunks writes pieces of every size, small ones into
// one chunk and large ones over several, and reads back every range.
func TestChunkFilesReadWhatWasWrittenAcrossChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var want []byte
	c := &chunkFile{}
	for _, n := range []int{1, 100, minObjectChunkBytes - 101, 5, objectChunkBytes, 3*objectChunkBytes + 7, 0, 12345} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		c.write(p)
		want = append(want, p...)
	}
	if c.length() != int64(len(want)) {
		t.Fatalf("length %d, want %d", c.length(), len(want))
	}
	for range 200 {
		off := rng.Int64N(int64(len(want)))
		n := rng.IntN(2*objectChunkBytes + 1)
		got := make([]byte, n)
		k, err := c.readAt(got, off)
		end := min(off+int64(n), int64(len(want)))
		if !bytes.Equal(got[:k], want[off:end]) || int64(k) != end-off {
			t.Fatalf("readAt(%d bytes, %d): %d bytes, not what was written", n, off, k)
		}
		if (err == io.EOF) != (off+int64(n) > int64(len(want))) {
			t.Fatalf("readAt(%d bytes, %d) = %v at size %d", n, off, err, len(want))
		}
	}
	if _, err := c.readAt(make([]byte, 1), int64(len(want))); err != io.EOF {
		t.Errorf("a read at the end: %v, want io.EOF", err)
	}
}

// TestALargeObjectInMemoryIsWrittenWithoutCopies: putting a 64 MiB object in an in-memory
// store allocates about its size, where a file grown by append (MemFS) allocates several
// times it, holding two copies at each growth.
func TestALargeObjectInMemoryIsWrittenWithoutCopies(t *testing.T) {
	s := mustOpen(t, "", Options{InMemory: true})
	t.Cleanup(func() { s.Close() })
	const size = 64 << 20
	body := bytes.NewReader(make([]byte, size))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	id, n, err := s.PutObject(t.Context(), body)
	runtime.ReadMemStats(&after)
	if err != nil || n != size {
		t.Fatalf("PutObject: %d bytes, %v", n, err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > size*5/4 {
		t.Errorf("putting %d MiB allocated %d MiB", size>>20, allocated>>20)
	}
	rc, err := s.ReadObject(t.Context(), id, size-10, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || len(got) != 10 {
		t.Errorf("reading the last 10 bytes: %d, %v", len(got), err)
	}
}
