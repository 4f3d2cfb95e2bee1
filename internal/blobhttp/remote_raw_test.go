package blobhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/tabula-dev/tabula/internal/blobhttp"
)

// A public object on a plain HTTP server, which is no Azure server: Put Blob From URL and Copy
// Blob make it a block blob of its bytes, with its Content-Type and the MD5 of its bytes. An
// x-ms-meta-* header it sends is metadata of a copy, named as sent, unless no blob could have
// that name.
func TestCopiesFromAPlainHTTPServer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		page := []byte("<html>not a blob</html>")
		mux := http.NewServeMux()
		mux.HandleFunc("/index.html", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["x-ms-meta-MixedCase"] = []string{"kept"}
			w.Header()["x-ms-meta-no-identifier"] = []string{"left out"}
			http.ServeContent(w, r, "index.html", time.Unix(1700000000, 0), bytes.NewReader(page))
		})
		mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/index.html", http.StatusFound)
		})
		mux.HandleFunc("/chunked", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush() // no Content-Length: chunked
			w.Write(page)
		})
		web := httptest.NewServer(mux)
		t.Cleanup(web.Close)
		dc := e.container("dest")

		put := dc.NewBlockBlobClient("put")
		if _, err := put.UploadBlobFromURL(ctx, web.URL+"/index.html", nil); err != nil {
			t.Fatal(err)
		}
		p, err := put.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.BlobType != blob.BlobTypeBlockBlob || *p.ContentType != "text/html; charset=utf-8" || len(p.ContentMD5) != 16 || !bytes.Equal(read(t, put), page) {
			t.Fatalf("Put Blob From URL of a web page: %v %v", *p.ContentType, p.ContentMD5)
		}

		copied := dc.NewBlobClient("copied")
		if _, err := copied.StartCopyFromURL(ctx, web.URL+"/index.html", nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(read(t, copied), page) {
			t.Fatal("Copy Blob of a web page reads other bytes")
		}
		// The names as sent show in a listing's XML (azblob lowercases them there).
		resp := newRaw(e).do("GET", "/dest?restype=container&comp=list&include=metadata&prefix=copied", nil, nil)
		listing, _ := io.ReadAll(resp.Body)
		if !bytes.Contains(listing, []byte("<Metadata><MixedCase>kept</MixedCase></Metadata>")) {
			t.Fatalf("metadata of the copy: %s", listing)
		}

		chunked := dc.NewBlockBlobClient("chunked")
		if _, err := chunked.UploadBlobFromURL(ctx, web.URL+"/chunked", nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(read(t, chunked), page) {
			t.Fatal("a source of unknown length reads other bytes")
		}

		// Azure follows no redirect of a copy source.
		_, err = dc.NewBlockBlobClient("moved").UploadBlobFromURL(ctx, web.URL+"/moved", nil)
		wantStatus(t, err, 400, "CannotVerifyCopySource")
		_, err = dc.NewBlockBlobClient("missing").UploadBlobFromURL(ctx, web.URL+"/missing", nil)
		wantSourceRefused(t, err, 404, "")
	})
}

// A source that closes its connection mid-body fails the copy (500 CannotVerifyCopySource,
// which SDKs retry) and leaves the destination as it was: no half blob, no block staged, no
// bytes appended.
func TestACopySourceCutShortLeavesTheDestination(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		const size, sent = 1 << 20, 300 << 10
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
						return
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n\r\n", size)
					c.Write(bytes.Repeat([]byte("x"), sent))
				}()
			}
		}()
		cut := "http://" + ln.Addr().String() + "/object"

		dc := e.container("dest")
		dst := dc.NewBlockBlobClient("dst")
		before, err := dst.UploadBuffer(ctx, []byte("before"), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dst.UploadBlobFromURL(ctx, cut, nil)
		wantStatus(t, err, 500, "CannotVerifyCopySource")
		if !strings.Contains(err.Error(), "broke off") {
			t.Errorf("the error does not say the source broke off: %v", err)
		}
		_, err = dst.StartCopyFromURL(ctx, cut, nil)
		wantStatus(t, err, 500, "CannotVerifyCopySource")
		_, err = dst.StageBlockFromURL(ctx, blockIDs(1)[0], cut, nil)
		wantStatus(t, err, 500, "CannotVerifyCopySource")
		p, err := dst.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.ETag != *before.ETag || p.CopyStatus != nil || string(read(t, dst)) != "before" {
			t.Fatal("a copy cut short changed the destination")
		}
		if bl, err := dst.GetBlockList(ctx, blockblob.BlockListTypeAll, nil); err != nil || len(bl.UncommittedBlocks) != 0 {
			t.Fatalf("a block cut short was staged: %v (%v)", bl.UncommittedBlocks, err)
		}

		log := dc.NewAppendBlobClient("log")
		if _, err := log.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = log.AppendBlockFromURL(ctx, cut, nil)
		wantStatus(t, err, 500, "CannotVerifyCopySource")
		if got := read(t, log); len(got) != 0 {
			t.Fatalf("a block cut short was appended: %d bytes", len(got))
		}
	})
}

// With fetching off (--fetch-copy-sources=0) a source on another server is refused as one this
// server cannot read, 404 CannotVerifyCopySource, and no request leaves the server.
func TestCopiesWithoutFetching(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		asked := false
		web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			asked = true
			io.WriteString(w, "fetched")
		}))
		t.Cleanup(web.Close)
		e.handler.(*blobhttp.Server).Fetcher = nil
		dst := e.container("dest").NewBlockBlobClient("dst")
		_, err := dst.UploadBlobFromURL(ctx, web.URL+"/x", nil)
		wantStatus(t, err, 404, "CannotVerifyCopySource")
		_, err = dst.StartCopyFromURL(ctx, web.URL+"/x", nil)
		wantStatus(t, err, 404, "CannotVerifyCopySource")
		if asked {
			t.Fatal("the source was fetched")
		}
	})
}
