package blob

import (
	"bytes"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// sendfileRecorder is a writer like net/http's response: an io.ReaderFrom, which records the
// sources it is handed, and can act once when handed the first.
type sendfileRecorder struct {
	got     bytes.Buffer
	sources []io.Reader
	onFirst func()
}

func (w *sendfileRecorder) Write(p []byte) (int, error) { return w.got.Write(p) }

func (w *sendfileRecorder) ReadFrom(src io.Reader) (int64, error) {
	w.sources = append(w.sources, src)
	if w.onFirst != nil {
		w.onFirst()
		w.onFirst = nil
	}
	return w.got.ReadFrom(src)
}

// files counts the sources that are a range of a file the kernel can send: an
// io.LimitedReader of a syscall.Conn, what net.TCPConn turns into sendfile(2).
func (w *sendfileRecorder) files() int {
	n := 0
	for _, src := range w.sources {
		if lr, ok := src.(*io.LimitedReader); ok {
			if _, ok := lr.R.(syscall.Conn); ok {
				n++
			}
		}
	}
	return n
}

// A download copied with io.Copy hands each object file of the blob, as a range of the file
// itself, to a writer that can take it (net/http's response then uses sendfile), for whole
// blobs and ranges alike, while a range checksum still comes from the bytes; and a blob deleted
// and collected during the copy still arrives whole (within Grace).
func TestDownloadsHandObjectFilesToTheWriter(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, func(*testing.T) (backendStore, backendStore) { return st, st })
	const block = 64 << 10 // objects above the embedded store's 32 KiB are files
	body := data(3*block, 21)
	e.stage("b", "1", body[:block])
	e.stage("b", "2", body[block:2*block])
	e.stage("b", "3", body[2*block:])
	e.commit("b", latest("1", "2", "3")...)

	cases := []struct {
		name        string
		o           GetBlobOptions
		want        []byte
		files       int
		deleteFirst bool
	}{
		{"whole blob", GetBlobOptions{}, body, 3, false},
		{"range across two blocks", GetBlobOptions{Range: &ByteRange{Start: block - 10, End: 2*block - 1}}, body[block-10 : 2*block], 2, false},
		{"range to the end", GetBlobOptions{Range: &ByteRange{Start: 2*block + 1, End: -1}}, body[2*block+1:], 1, false},
		{"range with its MD5", GetBlobOptions{Range: &ByteRange{Start: 5, End: 4000}, RangeMD5: true}, body[5:4001], 0, false},
		{"deleted while copied", GetBlobOptions{}, body, 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := e.s.GetBlob(e.ctx, path("b"), c.o)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Body.Close()
			w := &sendfileRecorder{}
			if c.deleteFirst {
				w.onFirst = func() {
					if err := e.s.DeleteBlob(e.ctx, path("b"), DeleteBlobOnly, "", Conditions{}); err != nil {
						t.Error(err)
					}
					e.clock.Advance(e.s.Grace / 2)
					if _, err := e.s.Collect(e.ctx); err != nil {
						t.Error(err)
					}
				}
			}
			n, err := io.Copy(w, d.Body)
			if err != nil || n != int64(len(c.want)) || !bytes.Equal(w.got.Bytes(), c.want) {
				t.Fatalf("copied %d bytes (%v), want %d: same bytes %v", n, err, len(c.want), bytes.Equal(w.got.Bytes(), c.want))
			}
			if got := w.files(); got != c.files {
				t.Errorf("the writer was handed %d file ranges (of %d sources), want %d", got, len(w.sources), c.files)
			}
		})
	}
	e.clock.Advance(time.Hour)
	e.collect()
	if n := len(e.objects()); n != 0 {
		t.Errorf("%d objects left after the deletion and Grace", n)
	}
}
