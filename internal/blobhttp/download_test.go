package blobhttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// fileRecorder is an http.ResponseWriter that, like net/http's own, is an io.ReaderFrom, and
// counts the sources it is handed that the kernel could send: ranges of files.
type fileRecorder struct {
	*httptest.ResponseRecorder
	files int
}

func (w *fileRecorder) ReadFrom(src io.Reader) (int64, error) {
	if lr, ok := src.(*io.LimitedReader); ok {
		if _, ok := lr.R.(syscall.Conn); ok {
			w.files++
		}
	}
	return w.Body.ReadFrom(src)
}

// Get Blob hands the blob's files on disk to the response writer as they are, so net/http
// sends them with sendfile(2): whole blobs and ranges.
func TestGetBlobHandsFilesToTheResponse(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, st)
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	bb := e.container("files").NewBlockBlobClient("big.bin")
	ids := blockIDs(4)
	for i, id := range ids {
		if _, err := bb.StageBlock(t.Context(), id, streaming.NopCloser(bytes.NewReader(data[i<<18:(i+1)<<18])), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bb.CommitBlockList(t.Context(), ids, nil); err != nil {
		t.Fatal(err)
	}
	sas := newRaw(e).sas
	for _, c := range []struct {
		rng   string
		want  []byte
		files int
	}{
		{"", data, 4},
		{"bytes=1000-300000", data[1000:300001], 2},
	} {
		req := httptest.NewRequest(http.MethodGet, "/devstoreaccount1/files/big.bin?"+sas, nil)
		req.Header.Set("x-ms-version", "2025-01-05")
		if c.rng != "" {
			req.Header.Set("x-ms-range", c.rng)
		}
		w := &fileRecorder{ResponseRecorder: httptest.NewRecorder()}
		e.handler.ServeHTTP(w, req)
		if w.Code/100 != 2 || !bytes.Equal(w.Body.Bytes(), c.want) {
			t.Fatalf("range %q: %d, %d bytes: %s", c.rng, w.Code, w.Body.Len(), w.Body.Bytes()[:min(200, w.Body.Len())])
		}
		if w.files != c.files {
			t.Errorf("range %q: %d files handed to the response, want %d", c.rng, w.files, c.files)
		}
	}
}
