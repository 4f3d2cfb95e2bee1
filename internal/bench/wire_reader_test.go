package bench

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The client's own HTTP/1.1 reader takes every response framing a server may use.
func TestReadResponseFramings(t *testing.T) {
	tests := []struct {
		name, method, raw string
		status            int
		body              string
		close             bool
		errorCode         string
	}{
		{"content length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Ms-Error-Code: None\r\n\r\nhello", 200, "hello", false, "None"},
		{"lower-case headers", "GET", "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\nx-ms-error-code: TableNotFound\r\n\r\n{}", 404, "{}", false, "TableNotFound"},
		{"chunked", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n", 200, "hello, world", false, ""},
		{"LF line ends", "GET", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 200, "ok", false, ""},
		{"no content", "POST", "HTTP/1.1 204 No Content\r\nETag: x\r\n\r\n", 204, "", false, ""},
		{"head", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 200, "", false, ""},
		{"interim response first", "POST", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", 201, "x", false, ""},
		{"connection close", "GET", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", 200, "x", true, ""},
		{"body to the end of the connection", "GET", "HTTP/1.1 200 OK\r\n\r\nall of it", 200, "all of it", true, ""},
		{"HTTP/1.0", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, "x", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{"X-Ms-Error-Code": {"from an earlier response"}}
			var body bytes.Buffer
			status, close, err := readResponse(bufio.NewReader(strings.NewReader(tc.raw)), tc.method, hdr, &body)
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || body.String() != tc.body || close != tc.close || hdr.Get("X-Ms-Error-Code") != tc.errorCode {
				t.Errorf("got %d %q close=%v code %q, want %d %q close=%v code %q",
					status, body.String(), close, hdr.Get("X-Ms-Error-Code"), tc.status, tc.body, tc.close, tc.errorCode)
			}
		})
	}
}

func TestReadResponseRejectsMalformedResponses(t *testing.T) {
	for name, raw := range map[string]string{
		"nothing":              "",
		"not HTTP":             "SSH-2.0-OpenSSH\r\n\r\n",
		"bad status":           "HTTP/1.1 2x0 OK\r\n\r\n",
		"header without colon": "HTTP/1.1 200 OK\r\nbroken\r\n\r\n",
		"bad length":           "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"short body":           "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"bad chunk size":       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"cut in the headers":   "HTTP/1.1 200 OK\r\nContent-Le",
	} {
		var body bytes.Buffer
		if _, _, err := readResponse(bufio.NewReader(strings.NewReader(raw)), "GET", http.Header{}, &body); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A read sent on a connection the server has since closed is sent again on a new one; the
// connection is reused while the server keeps it open.
func TestClientReusesConnectionsAndResendsReadsOnClosedOnes(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cn := testConn(t, srv.URL)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if r, err := cn.do(ctx, http.MethodGet, "/Tables", "", nil, nil); err != nil || r.status != 200 || string(r.body) != "ok" {
			t.Fatalf("request %d: %v %+v", i, err, r)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 requests used %d connections, want 1", n)
	}
	srv.CloseClientConnections() // as a server closing idle connections does
	if r, err := cn.do(ctx, http.MethodGet, "/Tables", "", nil, nil); err != nil || r.status != 200 {
		t.Fatalf("read after the server closed the connection: %v %+v", err, r)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}
