//go:build linux

package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store"
)

// BenchmarkObjectLayouts measures the layouts of object bytes that issue 12 asks to choose
// between, in one process, on the disk holding the test's temporary directory (set TMPDIR to
// measure another):
//
//   - disk: the disk's own synced sequential write rate, one writer appending 4 MiB writes
//     to one file, each followed by fdatasync; and the same with 8 writers, each to its own
//     file.
//   - upload: 1 GiB as 256 objects of 4 MiB, 8 writers at once, each object durable before
//     its writer starts the next, into each layout: files (one per object, this package's
//     layout), chunks (1 MiB records in Pebble, the last write of an object synced), and
//     chunks with Pebble's value separation (the chunks go to blob files when flushed).
//   - download: the objects one after another over loopback HTTP, the handler copying
//     ReadObject's reader into the response, against net/http's FileServer sending the
//     file layout's files (a plain Go file server with the same bytes on disk); once with
//     the files evicted from the page cache (fadvise DONTNEED, after reopening the store)
//     and once warm.
//
// It reports every rate in MB/s and, as *_ratio, what the issue sets bars on: upload rate
// over the disk's synced sequential rate (bar: ≥ 0.5), download time over the file
// server's (bar: ≤ 2). It writes 6 GiB; run it alone:
//
//	go test -run '^$' -bench '^BenchmarkObjectLayouts$' -benchtime 1x ./internal/store/pebble/
func BenchmarkObjectLayouts(b *testing.B) {
	const (
		objects     = 256
		objectBytes = 4 << 20
		writers     = 8
		total       = objects * objectBytes
	)
	payload := make([]byte, objectBytes)
	rand.NewChaCha8([32]byte{1}).Read(payload) // incompressible, as most blob bytes are
	mbps := func(bytes int64, d time.Duration) float64 { return float64(bytes) / 1e6 / d.Seconds() }

	for b.Loop() {
		root := b.TempDir()
		disk := measureSyncedWrites(b, root, payload, total, 1)
		disk8 := measureSyncedWrites(b, root, payload, total, writers)

		layouts := []struct {
			name string
			open func(dir string) (benchObjects, error)
		}{
			{"files", openFileBenchObjects},
			{"chunks", func(dir string) (benchObjects, error) { return openChunkObjects(dir, false) }},
			{"valuesep", func(dir string) (benchObjects, error) { return openChunkObjects(dir, true) }},
		}
		temps := []string{"cold", "warm"}
		up := map[string]time.Duration{}
		down := map[string][2]time.Duration{}
		for _, l := range layouts {
			dir := filepath.Join(root, l.name)
			o, err := l.open(dir)
			if err != nil {
				b.Fatal(err)
			}
			ids, d := uploadObjects(b, o, payload, objects, writers)
			up[l.name] = d
			if err := o.Close(); err != nil {
				b.Fatal(err)
			}
			var times [2]time.Duration
			for i, temp := range temps {
				// Reopened, so that no cache of the store's own holds the objects; evicted
				// while closed, so that no file changes meanwhile.
				if temp == "cold" {
					evictPageCache(b, dir)
				}
				o, err := l.open(dir)
				if err != nil {
					b.Fatal(err)
				}
				times[i] = downloadObjects(b, objectHandler(o, objectBytes), ids, objectBytes, temp == "warm")
				if err := o.Close(); err != nil {
					b.Fatal(err)
				}
			}
			down[l.name] = times
			if l.name == "files" {
				// The plain file server reads the same files second, so that if the cold
				// reads of the first left anything in a cache below the page cache (the
				// host's, on a virtual disk), the file server gains by it.
				plainDir := filepath.Join(dir, objectsDirName)
				for i, temp := range temps {
					if temp == "cold" {
						evictPageCache(b, plainDir)
					}
					times[i] = downloadObjects(b, http.StripPrefix("/o/", http.FileServer(http.Dir(plainDir))), ids, objectBytes, temp == "warm")
				}
				down["fileserver"] = times
			}
		}

		b.ReportMetric(mbps(total, disk), "disk_MB/s")
		b.ReportMetric(mbps(total, disk8), "disk_8writers_MB/s")
		b.Logf("disk, synced 4 MiB writes: one writer %.0f MB/s, 8 writers %.0f MB/s", mbps(total, disk), mbps(total, disk8))
		b.Logf("download by net/http's FileServer: cold %.0f MB/s, warm %.0f MB/s",
			mbps(total, down["fileserver"][0]), mbps(total, down["fileserver"][1]))
		for _, l := range layouts {
			upRatio := float64(disk) / float64(up[l.name])
			b.ReportMetric(mbps(total, up[l.name]), l.name+"_up_MB/s")
			b.ReportMetric(upRatio, l.name+"_up_ratio")
			line := fmt.Sprintf("%-8s upload %4.0f MB/s = %.2f × disk", l.name, mbps(total, up[l.name]), upRatio)
			for i, temp := range temps {
				d, plain := down[l.name][i], down["fileserver"][i]
				b.ReportMetric(mbps(total, d), l.name+"_down_"+temp+"_MB/s")
				b.ReportMetric(float64(d)/float64(plain), l.name+"_down_"+temp+"_ratio")
				line += fmt.Sprintf("; download %s %4.0f MB/s, time %.2f × file server", temp, mbps(total, d), float64(d)/float64(plain))
			}
			b.Log(line)
		}
	}
}

// measureSyncedWrites writes total bytes as chunk-sized writes, each followed by fdatasync,
// from writers writers, each to its own file, and returns how long that took.
func measureSyncedWrites(b *testing.B, dir string, chunk []byte, total, writers int) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("disk-%d-%d", writers, w)))
			if err != nil {
				b.Error(err)
				return
			}
			defer f.Close()
			for range total / len(chunk) / writers {
				if _, err := f.Write(chunk); err != nil {
					b.Error(err)
					return
				}
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	for w := range writers {
		os.Remove(filepath.Join(dir, fmt.Sprintf("disk-%d-%d", writers, w)))
	}
	return d
}

// benchObjects is a layout under measurement.
type benchObjects interface {
	PutObject(ctx context.Context, r io.Reader) (string, int64, error)
	ReadObject(ctx context.Context, id string, off, n int64) (io.ReadCloser, error)
	Close() error
}

func openFileBenchObjects(dir string) (benchObjects, error) { return Open(dir, Options{}) }

// uploadObjects puts n copies of payload (each made distinct by its first bytes) from
// writers goroutines, and returns their ids and the time taken.
func uploadObjects(b *testing.B, o benchObjects, payload []byte, n, writers int) ([]string, time.Duration) {
	ids := make([]string, n)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			data := bytes.Clone(payload)
			for i := w; i < n; i += writers {
				binary.BigEndian.PutUint64(data, uint64(i))
				id, _, err := o.PutObject(context.Background(), bytes.NewReader(data))
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return ids, time.Since(start)
}

// objectHandler serves GET /o/<id> from o, as the blob service's download will.
func objectHandler(o benchObjects, size int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc, err := o.ReadObject(r.Context(), r.URL.Path[len("/o/"):], 0, size)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(size))
		io.Copy(w, rc)
	})
}

// downloadObjects serves h on loopback and fetches every object, one after another (all of
// them once beforehand if warm); it returns the time taken by the fetches.
func downloadObjects(b *testing.B, h http.Handler, ids []string, size int64, warm bool) time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	base := "http://" + ln.Addr().String() + "/o/"
	fetch := func(id string) {
		resp, err := client.Get(base + id)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s, %d bytes, %v", id, resp.Status, n, err)
		}
	}
	if warm {
		for _, id := range ids {
			fetch(id)
		}
	}
	start := time.Now()
	for _, id := range ids {
		fetch(id)
	}
	return time.Since(start)
}

// evictPageCache drops the (clean) pages of every file under dir from the page cache.
func evictPageCache(b *testing.B, dir string) {
	const fadvDontNeed = 4
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
			return errno
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// chunkObjects is the layout measured against files: an object is records of up to
// chunkObjectBytes in Pebble, keyed by id and offset, written without sync, then a record
// of its size written with sync (the WAL is one file, so that sync makes the chunks durable
// too). With value separation, flushes move the chunks to blob files, which compactions then
// leave in place.
type chunkObjects struct {
	db *pebble.DB
}

const chunkObjectBytes = 1 << 20

func openChunkObjects(dir string, valueSeparation bool) (*chunkObjects, error) {
	cache := pebble.NewCache(blockCacheBytes)
	defer cache.Unref()
	opts := pebbleOptions(vfs.Default, cache, memTableBytes)
	if valueSeparation {
		opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
			return pebble.ValueSeparationPolicy{
				Enabled:               true,
				MinimumSize:           4 << 10,
				MaxBlobReferenceDepth: 10,
				RewriteMinimumAge:     5 * time.Minute,
				TargetGarbageRatio:    0.2,
			}
		}
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &chunkObjects{db: db}, nil
}

func chunkKey(id string, off int64) []byte {
	return binary.BigEndian.AppendUint64([]byte("c"+id), uint64(off))
}

func sizeKey(id string) []byte { return []byte("s" + id) }

func (c *chunkObjects) PutObject(ctx context.Context, r io.Reader) (string, int64, error) {
	id := store.NewObjectID(time.Now())
	buf := make([]byte, chunkObjectBytes)
	var size int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if err := c.db.Set(chunkKey(id, size), buf[:n], pebble.NoSync); err != nil {
				return "", 0, err
			}
			size += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return "", 0, err
		}
	}
	if err := c.db.Set(sizeKey(id), binary.BigEndian.AppendUint64(nil, uint64(size)), pebble.Sync); err != nil {
		return "", 0, err
	}
	return id, size, nil
}

func (c *chunkObjects) ReadObject(ctx context.Context, id string, off, n int64) (io.ReadCloser, error) {
	if _, closer, err := c.db.Get(sizeKey(id)); errors.Is(err, pebble.ErrNotFound) {
		return nil, store.ErrNotFound
	} else if err != nil {
		return nil, err
	} else {
		closer.Close()
	}
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: chunkKey(id, 0), UpperBound: chunkKey(id, off+n)})
	if err != nil {
		return nil, err
	}
	first := off / chunkObjectBytes * chunkObjectBytes
	it.SeekGE(chunkKey(id, first))
	return &chunkReader{it: it, skip: off - first, remaining: n}, nil
}

// chunkReader reads remaining bytes from the chunk the iterator is on, skipping skip first.
// The chunk's value is valid until the iterator moves, which it does only once the value
// has been read.
type chunkReader struct {
	it        *pebble.Iterator
	moved     bool // past the first chunk
	skip      int64
	pending   []byte
	remaining int64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.remaining == 0 {
		return 0, io.EOF
	}
	for len(r.pending) == 0 {
		if r.moved {
			r.it.Next()
		}
		r.moved = true
		if !r.it.Valid() {
			return 0, io.ErrUnexpectedEOF
		}
		v, err := r.it.ValueAndErr()
		if err != nil {
			return 0, err
		}
		r.pending = v[min(r.skip, int64(len(v))):]
		r.skip = 0
	}
	n := copy(p[:min(int64(len(p)), r.remaining)], r.pending)
	r.pending = r.pending[n:]
	r.remaining -= int64(n)
	return n, nil
}

func (r *chunkReader) Close() error { return r.it.Close() }

func (c *chunkObjects) Close() error { return c.db.Close() }

// BenchmarkSmallObjectLayouts measures durable puts of small objects from 16 writers (the
// issue's small-blob workload is 4 KiB) in each of this package's two layouts, forced: files,
// and records. inlineObjectBytes is where records stop being faster.
func BenchmarkSmallObjectLayouts(b *testing.B) {
	for _, size := range []int{4 << 10, 32 << 10, 128 << 10} {
		payload := make([]byte, size)
		rand.NewChaCha8([32]byte{2}).Read(payload)
		for _, layout := range []struct {
			name      string
			inlineMax int
		}{{"files", -1}, {"records", putBufferBytes}} {
			b.Run(fmt.Sprintf("%s/%dKiB", layout.name, size>>10), func(b *testing.B) {
				s := mustOpen(b, b.TempDir(), Options{})
				defer s.Close()
				s.objects.inlineMax = layout.inlineMax
				b.SetParallelism(8) // writers per GOMAXPROCS: 16 on the 2 cores measured
				b.SetBytes(int64(len(payload)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, _, err := s.PutObject(context.Background(), bytes.NewReader(payload)); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
			})
		}
	}
}
