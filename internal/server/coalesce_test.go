package server

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// countingConn counts the writes made to a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// countingListener hands out plain connections as Listen does, counting their writes.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &azureConn{Conn: countingConn{c, &l.writes}}, nil
}

// TestABodyOfDeclaredLengthGoesOutWithItsHeaderInOneWrite serves bodies around net/http's 4
// KiB connection buffer: one written whole under a declared Content-Length goes out in one
// write with its header; the others (written in pieces, or with no length declared) go out
// as before, and every one arrives intact over one keep-alive connection.
func TestABodyOfDeclaredLengthGoesOutWithItsHeaderInOneWrite(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 5*1024) // 80 KiB
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		switch r.URL.Query().Get("how") {
		case "whole":
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write(body[:n])
		case "pieces":
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write(body[:n/2])
			w.Write(body[n/2 : n])
		case "undeclared":
			w.Write(body[:n])
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := &http.Server{Handler: observe(Endpoint{Name: "test"}, h, &RequestLog{}, nil), ConnContext: connContext(false)}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}

	for _, tc := range []struct {
		how      string
		n        int
		oneWrite bool
	}{
		{"whole", 4096, true},
		{"whole", 16 << 10, true},
		{"whole", 100, true},
		{"whole", maxHeld, false},     // with its header, more than a connection holds
		{"whole", maxHeld + 1, false}, // written as net/http hands it over
		{"pieces", 4096, false},
		{"undeclared", 4096, false},
		{"undeclared", 100, true},
	} {
		before := cl.writes.Load()
		resp, err := client.Get("http://" + ln.Addr().String() + "/?how=" + tc.how + "&n=" + strconv.Itoa(tc.n))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, body[:tc.n]) {
			t.Fatalf("%s %d: %d bytes, %v", tc.how, tc.n, len(got), err)
		}
		writes := cl.writes.Load() - before
		if tc.oneWrite && writes != 1 {
			t.Errorf("%s %d: %d writes, want 1", tc.how, tc.n, writes)
		}
		t.Logf("%s %d bytes: %d writes", tc.how, tc.n, writes)
	}
}
