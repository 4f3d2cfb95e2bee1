package blobfetch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
)

// fakePageBlob answers as an Azure page blob of 4 pages whose pages 1 and 3 are written;
// etag is its ETag, which changed makes the next range reads fail If-Match.
type fakePageBlob struct {
	etag    string
	content []byte
	listed  int
}

func (f *fakePageBlob) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("x-ms-blob-type", "PageBlob")
	w.Header().Set("x-ms-request-id", "1")
	if r.URL.Query().Get("comp") == "pagelist" {
		f.listed++
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?><PageList><PageRange><Start>512</Start><End>1023</End></PageRange><PageRange><Start>1536</Start><End>2047</End></PageRange></PageList>`)
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != f.etag {
		w.Header().Set("x-ms-error-code", "ConditionNotMet")
		w.WriteHeader(http.StatusPreconditionFailed)
		return
	}
	w.Header().Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.content))
}

// A whole Copy Blob source that is an Azure page blob is read as its written ranges, each
// read on the condition of the first answer's ETag; a source changed between two reads fails
// the copy with the source's 412.
func TestAPageBlobIsFetchedAsItsWrittenRanges(t *testing.T) {
	content := make([]byte, 2048)
	copy(content[512:], strings.Repeat("a", 512))
	copy(content[1536:], strings.Repeat("b", 512))
	f := &fakePageBlob{etag: `"1"`, content: content}
	web := httptest.NewServer(f)
	t.Cleanup(web.Close)
	c := New(time.Minute, nil)
	ctx := context.Background()

	src, err := c.Fetch(ctx, Request{URL: parse(t, web.URL+"/c/disk"), Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(src.Body)
	src.Body.Close()
	if err != nil || string(got) != strings.Repeat("a", 512)+strings.Repeat("b", 512) || src.Size != 1024 || src.BlobSize != 2048 ||
		len(src.Pages) != 2 || src.Pages[1] != (blob.ByteRange{Start: 1536, End: 2047}) {
		t.Fatalf("sparse fetch: %d bytes, size %d of %d, pages %v, %v", len(got), src.Size, src.BlobSize, src.Pages, err)
	}

	src, err = c.Fetch(ctx, Request{URL: parse(t, web.URL+"/c/disk"), Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	f.etag = `"2"` // written to after the first range was read
	_, err = io.ReadAll(src.Body)
	src.Body.Close()
	wantCode(t, err, http.StatusPreconditionFailed, azerr.CannotVerifyCopySource)

	// Without Sparse (Put Blob From URL, a range), every byte is read.
	src, err = c.Fetch(ctx, Request{URL: parse(t, web.URL+"/c/disk")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(src.Body)
	src.Body.Close()
	if len(got) != 2048 || src.Pages != nil || f.listed != 2 {
		t.Fatalf("whole fetch: %d bytes, pages %v, listed %d times", len(got), src.Pages, f.listed)
	}
}
