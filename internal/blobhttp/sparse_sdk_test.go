package blobhttp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
)

// countingProxy forwards to target and counts the body bytes of its answers.
func countingProxy(t *testing.T, target string) (*httptest.Server, *atomic.Int64) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &countedReader{ReadCloser: resp.Body, n: &n}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv, &n
}

type countedReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r *countedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

// Copy Blob of a page blob on another server reads only its written pages, as Azure copies a
// mostly empty disk: the copy has the source's bytes and its page ranges, and the bytes
// fetched are about those pages, not the blob's size.
func TestAPageBlobFromAnotherServerIsCopiedSparsely(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		srcEnv := sourceServer(t)
		const size = 64 << 20
		src := srcEnv.container("disks").NewPageBlobClient("disk.vhd")
		if _, err := src.Create(ctx, size, nil); err != nil {
			t.Fatal(err)
		}
		written := map[int64][]byte{0: bytes.Repeat([]byte("boot"), 256), 8 << 20: bytes.Repeat([]byte("data"), 2048), size - 512: bytes.Repeat([]byte("end."), 128)}
		for off, b := range written {
			if _, err := src.UploadPages(ctx, streaming.NopCloser(bytes.NewReader(b)), blob.HTTPRange{Offset: off, Count: int64(len(b))}, nil); err != nil {
				t.Fatal(err)
			}
		}
		proxy, fetched := countingProxy(t, srcEnv.url)
		srcURL := strings.Replace(readableURL(t, src), strings.TrimSuffix(srcEnv.url, "/devstoreaccount1"), proxy.URL, 1)

		dst := e.container("copies").NewPageBlobClient("disk.vhd")
		started, err := dst.StartCopyFromURL(ctx, srcURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := settle(t, dst.BlobClient())
		if *started.CopyStatus != blob.CopyStatusTypeSuccess || *p.CopyStatus != blob.CopyStatusTypeSuccess || *p.BlobType != blob.BlobTypePageBlob || *p.ContentLength != size {
			t.Fatalf("the copy: %v %v %v", *p.CopyStatus, *p.BlobType, *p.ContentLength)
		}
		// The first answer, a whole GET, is closed as soon as it says page blob: what was on
		// its way by then (some socket buffers' worth) is all that is read of the empty pages.
		t.Logf("%d bytes fetched for a page blob of %d with %d written", fetched.Load(), size, 1024+8192+512)
		if n := fetched.Load(); n > size/4 {
			t.Errorf("%d bytes fetched for %d written of %d", n, 1024+8192+512, size)
		}
		want := make([]byte, size)
		for off, b := range written {
			copy(want[off:], b)
		}
		if !bytes.Equal(read(t, dst), want) {
			t.Fatal("the copy reads other bytes")
		}
		ranges := func(c *pageblob.Client) string {
			var out []string
			pager := c.NewGetPageRangesPager(nil)
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range page.PageRange {
					out = append(out, rangeString(*r.Start, *r.End))
				}
			}
			return strings.Join(out, " ")
		}
		if got, want := ranges(dst), ranges(src); got != want {
			t.Fatalf("page ranges of the copy %q, of the source %q", got, want)
		}
	})
}

func rangeString(start, end int64) string {
	return strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(end, 10)
}
