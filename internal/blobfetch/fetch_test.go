package blobfetch

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
)

func parse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func wantCode(t *testing.T, err error, status int, code azerr.Code) *azerr.Error {
	t.Helper()
	var e *azerr.Error
	if !errors.As(err, &e) || e.Status != status || e.Code != code {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
	return e
}

// A range is what the source answers for it: a server that ignores Range is read from the
// range's start for its length; a 206 for another range fails the fetch.
func TestFetchReadsTheRangeAskedFor(t *testing.T) {
	const content = "0123456789abcdef"
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/norange":
			io.WriteString(w, content)
		case "/wrongrange":
			w.Header().Set("Content-Range", "bytes 0-3/16")
			w.WriteHeader(http.StatusPartialContent)
			io.WriteString(w, content[:4])
		default:
			http.ServeContent(w, r, "x", time.Time{}, strings.NewReader(content))
		}
	}))
	defer web.Close()
	c := New(0, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		path string
		r    blob.ByteRange
		want string
	}{
		{"/ranges", blob.ByteRange{Start: 4, End: 7}, "4567"},
		{"/ranges", blob.ByteRange{Start: 10, End: -1}, "abcdef"},
		{"/ranges", blob.ByteRange{Start: 12, End: 100}, "cdef"},
		{"/norange", blob.ByteRange{Start: 4, End: 7}, "4567"},
		{"/norange", blob.ByteRange{Start: 10, End: -1}, "abcdef"},
	} {
		src, err := c.Fetch(ctx, Request{URL: parse(t, web.URL+tc.path), Range: &tc.r})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.path, tc.r, err)
		}
		got, err := io.ReadAll(src.Body)
		src.Body.Close()
		if err != nil || string(got) != tc.want || src.Size != int64(len(tc.want)) {
			t.Fatalf("%s %v: read %q (size %d), %v; want %q", tc.path, tc.r, got, src.Size, err, tc.want)
		}
	}
	_, err := c.Fetch(ctx, Request{URL: parse(t, web.URL+"/wrongrange"), Range: &blob.ByteRange{Start: 4, End: 7}})
	wantCode(t, err, 500, azerr.CannotVerifyCopySource)
	for _, path := range []string{"/ranges", "/norange"} {
		_, err = c.Fetch(ctx, Request{URL: parse(t, web.URL+path), Range: &blob.ByteRange{Start: 100, End: 200}})
		wantCode(t, err, 416, azerr.CannotVerifyCopySource)
	}
}

// A source that stops sending fails the fetch after the idle timeout, not after the whole
// transfer's time; a source that cannot be reached fails it at once. Neither error shows the
// URL's query, which may hold a SAS.
func TestFetchFailures(t *testing.T) {
	stall := make(chan struct{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "some")
		w.(http.Flusher).Flush()
		<-stall
	}))
	defer web.Close()
	defer close(stall)
	c := New(200*time.Millisecond, nil)
	ctx := context.Background()
	src, err := c.Fetch(ctx, Request{URL: parse(t, web.URL+"/x?sig=secret")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = io.ReadAll(src.Body)
	src.Body.Close()
	e := wantCode(t, err, 500, azerr.CannotVerifyCopySource)
	if time.Since(start) > 5*time.Second || !strings.Contains(e.Message, "after 4 bytes") || strings.Contains(e.Message, "secret") {
		t.Fatalf("stalled source: %v after %v", e.Message, time.Since(start))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = c.Fetch(ctx, Request{URL: parse(t, "http://"+addr+"/x?sig=secret")})
	e = wantCode(t, err, 500, azerr.CannotVerifyCopySource)
	if !strings.Contains(e.Message, addr) || strings.Contains(e.Message, "secret") {
		t.Fatalf("unreachable source: %s", e.Message)
	}
}

// A refusal reports the source's status and, when it sent one, its error code and message.
func TestFetchRefused(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/azure" {
			w.Header().Set("x-ms-error-code", "BlobNotFound")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>BlobNotFound</Code><Message>The specified blob does not exist.
RequestId:1</Message></Error>`)
			return
		}
		if r.Header.Get("If-Match") == `"stale"` {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer web.Close()
	c := New(0, nil)
	ctx := context.Background()
	_, err := c.Fetch(ctx, Request{URL: parse(t, web.URL+"/azure")})
	e := wantCode(t, err, 404, azerr.CannotVerifyCopySource)
	if e.Header["x-ms-copy-source-error-code"][0] != "BlobNotFound" || e.Header["x-ms-copy-source-status-code"][0] != "404" ||
		!strings.HasSuffix(e.Message, "The specified blob does not exist.") {
		t.Fatalf("Azure source's refusal: %+v", e)
	}
	_, err = c.Fetch(ctx, Request{URL: parse(t, web.URL+"/web")})
	e = wantCode(t, err, 403, azerr.CannotVerifyCopySource)
	if _, ok := e.Header["x-ms-copy-source-error-code"]; ok || !strings.HasSuffix(e.Message, "Forbidden") {
		t.Fatalf("web server's refusal: %+v", e)
	}
	h := http.Header{"If-Match": {`"stale"`}}
	_, err = c.Fetch(ctx, Request{URL: parse(t, web.URL+"/web"), Header: h})
	wantCode(t, err, 412, azerr.CannotVerifyCopySource)
}
