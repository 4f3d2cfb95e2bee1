package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testHandler reads the body and answers 200 with its length; an error reading it is answered
// as the Blob and Queue services answer errors. ?sleep=D makes it wait D after reading;
// ?refuse answers 413 without reading it.
func testHandler(w http.ResponseWriter, r *http.Request) {
	rq := &Request{}
	Begin(rq, w, r, "2021-08-06")
	if r.URL.Query().Has("refuse") {
		// Refused from the headers alone, the body never read.
		WriteXMLError(rq, azerr.New(azerr.RequestBodyTooLarge), quiet)
		return
	}
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		WriteXMLError(rq, err, quiet)
		return
	}
	if d, err := time.ParseDuration(r.URL.Query().Get("sleep")); err == nil {
		time.Sleep(d)
	}
	fmt.Fprintf(w, "read %d", n)
}

func xmlErrorBody(e *azerr.Error, id string) (string, []byte) {
	return "application/xml", AppendXMLErrorBody(nil, e, id, time.Now())
}

// serve runs a group with one endpoint of testHandler under limits until the test ends, and
// returns its address and a function that stops it and returns what Serve returned.
func serve(t *testing.T, limits Limits) (addr string, stop func() error) {
	t.Helper()
	g, err := Listen(limits, quiet, Endpoint{Name: "test", Addr: "127.0.0.1:0", Handler: http.HandlerFunc(testHandler), ErrorBody: xmlErrorBody})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx) }()
	var stopped bool
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { stop() })
	return g.Addr("test").String(), stop
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readResponse reads one response from c, failing the test after timeout.
func readResponse(t *testing.T, c net.Conn, timeout time.Duration) *http.Response {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(timeout))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return resp
}

// closedWithin reports whether the server closes c within d (reads until EOF or error).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func TestAHeaderTrickledSlowlyIsCutAtTheHeaderTimeout(t *testing.T) {
	addr, _ := serve(t, Limits{HeaderTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	start := time.Now()
	go func() {
		for _, b := range []byte("GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: ") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if !closedWithin(c, 5*time.Second) {
		t.Fatal("the connection was still open 5 s into a trickled header")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cut after %v, want about the 300 ms header timeout", d)
	}
}

func TestAStalledBodyIsAnswered408(t *testing.T) {
	addr, _ := serve(t, Limits{BodyStallTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nfirst part")
	start := time.Now()
	resp := readResponse(t, c, 5*time.Second)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || resp.Header.Get("x-ms-error-code") != "OperationTimedOut" {
		t.Fatalf("got %d %s %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"), body)
	}
	if !strings.Contains(string(body), "<Code>OperationTimedOut</Code>") || !strings.Contains(string(body), "no byte of the request body arrived") {
		t.Fatalf("body %s", body)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("answered after %v, want about the 300 ms stall timeout", d)
	}
}

func TestASlowButSteadyBodyIsAccepted(t *testing.T) {
	addr, _ := serve(t, Limits{BodyStallTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n")
	for i := 0; i < 10; i++ { // 1 s in all, never 300 ms without a byte
		time.Sleep(100 * time.Millisecond)
		c.Write([]byte{'x'})
	}
	resp := readResponse(t, c, 5*time.Second)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "read 10" {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
}

// Once the body is in, the stall deadline must not cut a response that takes longer.
func TestAResponseAfterTheBodyIsNotCutByTheStallTimeout(t *testing.T) {
	addr, _ := serve(t, Limits{BodyStallTimeout: 200 * time.Millisecond})
	resp, err := http.Post("http://"+addr+"/x?sleep=600ms", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "read 7" {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
}

func TestIdleKeepAliveConnectionsAreClosed(t *testing.T) {
	addr, _ := serve(t, Limits{IdleTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadByte(); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("idle connection still open after %v (err %v)", time.Since(start), err)
	}
}

// At the connection limit, idle keep-alive connections make way for a new client, and a new
// client waits while every connection is busy.
func TestTheConnectionLimitClosesIdleConnectionsFirst(t *testing.T) {
	addr, _ := serve(t, Limits{MaxConnections: 2, BodyStallTimeout: 5 * time.Second})
	var idle []net.Conn
	for i := 0; i < 2; i++ {
		c := dial(t, addr)
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
		readResponse(t, c, 5*time.Second).Body.Close()
		idle = append(idle, c)
	}
	// A third client is served, at the cost of an idle connection.
	third := dial(t, addr)
	fmt.Fprintf(third, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp := readResponse(t, third, 5*time.Second); resp.StatusCode != 200 {
		t.Fatalf("third client got %d", resp.StatusCode)
	}
	closed := 0
	for _, c := range idle {
		if closedWithin(c, 200*time.Millisecond) {
			closed++
		}
	}
	if closed != 1 {
		t.Fatalf("%d idle connections closed to make room, want 1", closed)
	}
	third.Close()

	// Two uploads in progress hold both slots: a new client waits until one ends.
	var busy []net.Conn
	for i := 0; i < 2; i++ {
		c := dial(t, addr)
		fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nx")
		busy = append(busy, c)
	}
	time.Sleep(200 * time.Millisecond) // let the closed connections' slots be reused
	waiting := dial(t, addr)
	fmt.Fprintf(waiting, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
	waiting.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := waiting.Read(make([]byte, 1)); err == nil {
		t.Fatal("a client beyond the limit was served while every connection was busy")
	}
	busy[0].Write([]byte("y")) // the first upload completes and its client leaves
	readResponse(t, busy[0], 5*time.Second).Body.Close()
	busy[0].Close()
	if resp := readResponse(t, waiting, 5*time.Second); resp.StatusCode != 200 {
		t.Fatalf("waiting client got %d", resp.StatusCode)
	}
}

func TestNetHTTPRefusalsCarryAzureErrors(t *testing.T) {
	addr, _ := serve(t, Limits{MaxHeaderBytes: 4 << 10})
	for _, tc := range []struct {
		name    string
		request string
		status  int
	}{
		{"header block too large", "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", 400},
		{"malformed header line", "GET /x HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n", 400},
		{"unknown transfer coding", "PUT /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			go c.Write([]byte(tc.request))
			resp := readResponse(t, c, 5*time.Second)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || resp.Header.Get("x-ms-error-code") == "" || resp.Header.Get("x-ms-request-id") == "" {
				t.Fatalf("got %d, headers %v", resp.StatusCode, resp.Header)
			}
			if !strings.Contains(string(body), "<Code>"+resp.Header.Get("x-ms-error-code")+"</Code>") {
				t.Fatalf("body %q", body)
			}
		})
	}
	// A header block within the limit is served.
	req, _ := http.NewRequest("GET", "http://"+addr+"/x", nil)
	req.Header.Set("X-Fine", strings.Repeat("a", 2<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a 2 KiB header got %d", resp.StatusCode)
	}
}

// A shutdown waits for requests in flight up to the grace, then closes what remains and
// still reports a clean stop.
func TestShutdownIsBoundedByTheGrace(t *testing.T) {
	addr, stop := serve(t, Limits{ShutdownGrace: 300 * time.Millisecond, BodyStallTimeout: time.Minute})
	c := dial(t, addr)
	fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\nslow")
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v after a requested stop", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %v with a 300 ms grace", d)
	}
	if !closedWithin(c, time.Second) {
		t.Fatal("the upload's connection survived the shutdown")
	}
}

func TestListenNamesTheEndpointThatCannotBind(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, err = Listen(Limits{}, quiet,
		Endpoint{Name: "table", Addr: "127.0.0.1:0", Handler: http.NotFoundHandler()},
		Endpoint{Name: "blob", Addr: taken.Addr().String(), Handler: http.NotFoundHandler()})
	if err == nil || !strings.Contains(err.Error(), "blob endpoint") {
		t.Fatalf("got %v", err)
	}
}

// A client that sends its whole body before reading the answer gets the answer, even when the
// server refused the request without reading the body (Python's requests, sending a 13 MB
// $batch that the Table service refuses from its Content-Length).
func TestRefusedBodyIsReadSoTheClientGetsTheAnswer(t *testing.T) {
	addr, _ := serve(t, Limits{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 12 << 20
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(conn, "PUT /devstoreaccount1/c/b?refuse HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < size; sent += len(chunk) {
		if _, err := conn.Write(chunk); err != nil {
			t.Fatalf("sending the body, %d bytes in: %v", sent, err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
