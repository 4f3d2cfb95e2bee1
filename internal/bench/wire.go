package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The client speaks HTTP/1.1 itself, on one keep-alive connection per worker, instead of
// through net/http's Transport: a request is written and its response read by the worker's
// own goroutine, without the Transport's per-connection reader and writer goroutines and the
// hand-offs between them. On the shared cores of a benchmark host that halves the client's
// cost per request, and whatever the client does not spend is left to the server measured.

// wire is one HTTP/1.1 connection, used by one worker at a time.
type wire struct {
	nc   net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	used bool // a response was read on it: the server may since have closed it as idle
}

// wires dials the endpoint and keeps track of the open connections, so that Close can close
// them all.
type wires struct {
	dial    func(ctx context.Context) (net.Conn, error)
	timeout time.Duration

	mu   sync.Mutex
	open map[*wire]struct{}
}

func newWires(scheme, host string, timeout time.Duration) *wires {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	ws := &wires{timeout: timeout, open: map[*wire]struct{}{}}
	ws.dial = func(ctx context.Context) (net.Conn, error) { return dialer.DialContext(ctx, "tcp", host) }
	if scheme == "https" {
		name, _, err := net.SplitHostPort(host)
		if err != nil {
			name = host
		}
		td := &tls.Dialer{NetDialer: dialer, Config: &tls.Config{ServerName: name}}
		ws.dial = func(ctx context.Context) (net.Conn, error) { return td.DialContext(ctx, "tcp", host) }
	}
	return ws
}

func (ws *wires) get(ctx context.Context) (*wire, error) {
	nc, err := ws.dial(ctx)
	if err != nil {
		return nil, err
	}
	w := &wire{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10)}
	ws.mu.Lock()
	ws.open[w] = struct{}{}
	ws.mu.Unlock()
	return w, nil
}

func (ws *wires) drop(w *wire) {
	ws.mu.Lock()
	delete(ws.open, w)
	ws.mu.Unlock()
	w.nc.Close()
}

func (ws *wires) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.open {
		w.nc.Close()
		delete(ws.open, w)
	}
}

// errNothingReceived is a connection that ended before the first byte of a response: on a
// connection used before, the server closed it as idle, and the request can be sent again.
var errNothingReceived = fmt.Errorf("connection closed before the response began: %w", io.EOF)

// roundTrip writes head (the request line and headers, ending in the empty line) and body,
// and reads the response into hdr (only the headers the client looks at, see keptHeaders)
// and body, or sink (see conn.sink). close reports that the server will not take another
// request on the connection.
func (w *wire) roundTrip(ctx context.Context, timeout time.Duration, method string, head, body []byte, hdr http.Header, respBody *bytes.Buffer, sink io.Writer) (status int, close bool, err error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	w.nc.SetDeadline(deadline)
	if ctx.Done() != nil {
		// An interrupted run abandons the request at once rather than at the deadline.
		stop := context.AfterFunc(ctx, func() { w.nc.SetDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	w.w.Write(head)
	w.w.Write(body)
	if err := w.w.Flush(); err != nil {
		return 0, true, err
	}
	return readResponseTo(w.r, method, hdr, respBody, sink)
}

// keptHeaders are the response headers the client reads, in lower case and in the canonical
// form they are stored under; the others are skipped without being stored.
var keptHeaders = []struct{ lower, canonical string }{
	{"x-ms-error-code", "X-Ms-Error-Code"},
	{"x-ms-continuation-nextpartitionkey", "X-Ms-Continuation-Nextpartitionkey"},
	{"x-ms-continuation-nextrowkey", "X-Ms-Continuation-Nextrowkey"},
}

// readResponse reads one HTTP/1.1 response: the status line, the headers, and the body, of
// Content-Length bytes, chunked, or up to the end of the connection.
func readResponse(r *bufio.Reader, method string, hdr http.Header, body *bytes.Buffer) (status int, close bool, err error) {
	return readResponseTo(r, method, hdr, body, nil)
}

// readResponseTo is readResponse with the body of a 200 or 206 response written to sink
// instead, when sink is not nil.
func readResponseTo(r *bufio.Reader, method string, hdr http.Header, body *bytes.Buffer, sink io.Writer) (status int, close bool, err error) {
	for {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				return 0, true, errNothingReceived
			}
			return 0, true, err
		}
		// HTTP/1.1 200 OK
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return 0, true, fmt.Errorf("malformed status line %q", truncate(string(line), 60))
		}
		status, err = strconv.Atoi(string(line[9:12]))
		if err != nil {
			return 0, true, fmt.Errorf("malformed status line %q", truncate(string(line), 60))
		}
		close = bytes.HasPrefix(line, []byte("HTTP/1.0"))
		length, chunked := int64(-1), false
		clear(hdr)
		for {
			line, err := readLine(r)
			if err != nil {
				return 0, true, err
			}
			if len(line) == 0 {
				break
			}
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				return 0, true, fmt.Errorf("malformed header line %q", truncate(string(line), 60))
			}
			value = bytes.TrimSpace(value)
			switch {
			case asciiEqualFold(name, "content-length"):
				if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
					return 0, true, fmt.Errorf("malformed Content-Length %q", value)
				}
			case asciiEqualFold(name, "transfer-encoding"):
				chunked = asciiEqualFold(value, "chunked")
			case asciiEqualFold(name, "connection"):
				close = close || asciiEqualFold(value, "close")
			default:
				for _, k := range keptHeaders {
					if asciiEqualFold(name, k.lower) {
						hdr[k.canonical] = append(hdr[k.canonical], string(value))
					}
				}
			}
		}
		if status >= 100 && status < 200 {
			continue // an interim response (100 Continue): the real one follows
		}
		body.Reset()
		var dst io.Writer = body
		if sink != nil && (status == http.StatusOK || status == http.StatusPartialContent) {
			dst = sink
		}
		switch {
		case method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified:
		case chunked:
			err = readChunked(r, dst)
		case length >= 0:
			_, err = io.CopyN(dst, r, length)
		default:
			_, err = io.Copy(dst, r) // the body runs to the end of the connection
			close = true
		}
		if err != nil {
			return 0, true, err
		}
		return status, close, nil
	}
}

// readChunked reads a chunked body (RFC 9112 §7.1), ignoring chunk extensions and trailers.
func readChunked(r *bufio.Reader, body io.Writer) error {
	for {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("malformed chunk size %q", truncate(string(line), 60))
		}
		if n == 0 {
			for { // trailers, up to the empty line
				line, err := readLine(r)
				if err != nil {
					return err
				}
				if len(line) == 0 {
					return nil
				}
			}
		}
		if _, err := io.CopyN(body, r, n); err != nil {
			return err
		}
		if line, err := readLine(r); err != nil || len(line) != 0 {
			return fmt.Errorf("chunk of %d bytes not followed by a line end", n)
		}
	}
}

// readLine reads a line without its CRLF or LF. The slice is only valid until the next read.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, errors.New("response line longer than 64 KiB")
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
