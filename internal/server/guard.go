package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/uuid"
)

// guardBody cuts request bodies that stop arriving: a read of the body waits at most stall
// for the next bytes. The deadline is renewed while the handler reads, so a body may take
// as long as it needs in all, and is cleared once the body is read, so that a long response
// after it is not cut (net/http's background read of the connection would otherwise time out
// and cancel the request).
func guardBody(h http.Handler, stall time.Duration) http.Handler {
	if stall <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			r.Body = &stallGuardedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), stall: stall}
		}
		h.ServeHTTP(w, r)
	})
}

type stallGuardedBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	stall   time.Duration
	renewAt time.Time // when the deadline is next pushed back
	done    bool
}

func (b *stallGuardedBody) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	// The deadline runs only while the handler waits for bytes: a handler busy elsewhere
	// between reads (writing what it read to disk) does not count against the client.
	if now := time.Now(); now.After(b.renewAt) {
		if b.rc.SetReadDeadline(now.Add(b.stall)) != nil {
			b.done = true // not a connection that takes deadlines (a test recorder): no guard
		}
		b.renewAt = now.Add(b.stall / 4)
	}
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.done = true
		// 408 rather than OperationTimedOut's usual 500: the client stalled, not the server,
		// and every SDK retries a 408.
		e := azerr.Newf(azerr.OperationTimedOut, "The operation could not be completed within the permitted time: no byte of the request body arrived for %s.", b.stall)
		e.Status = http.StatusRequestTimeout
		return n, e
	}
	return n, err
}

// azureConn rewrites the plain-text refusals net/http writes on its own, before any handler
// runs, into the service's Azure error response: a header block too large (431), a malformed
// request (400), an unsupported transfer coding (501). net/http writes each as one Write of
// "HTTP/1.1 <status>" + a fixed text/plain, Connection: close header + text; nothing else
// Tabula writes has that shape.
type azureConn struct {
	net.Conn
	errorBody func(*azerr.Error, string) (string, []byte)

	// While holding, writes are kept in held and sent as one by release (see
	// responseRecorder.writeWhole). Only the goroutine serving the connection's current
	// request writes to it, so these need no lock.
	holding bool
	held    *[]byte // from heldBuffers while holding, so that idle connections keep none
	// tls caches tlsState (the serving goroutine alone reads and sets it).
	tls *tls.ConnectionState
	// names follows what is read, for the metadata names' case (rawnames.go).
	names metaNameScanner
	// reason, when set, replaces net/http's reason phrase in the next status line written
	// (setReason).
	reason string
}

// setReason makes the status line of the response about to be written say reason instead
// of net/http's standard phrase, as Azure's Blob and Queue services answer their errors
// ("HTTP/1.1 404 The specified blob does not exist."): the .NET SDK puts that phrase in its
// exceptions' "Status: 404 (…)" line and the Python SDK in "Operation returned an invalid
// status '…'". Only the visible ASCII of its first line is kept.
func (c *azureConn) setReason(reason string) {
	reason, _, _ = strings.Cut(reason, "\n")
	b := make([]byte, 0, min(len(reason), maxReason))
	for i := 0; i < len(reason) && len(b) < maxReason; i++ {
		switch ch := reason[i]; {
		case ch == ' ' || ch == '\t' || ch > ' ' && ch < 0x7f:
			b = append(b, ch)
		default:
			b = append(b, '?')
		}
	}
	c.reason = strings.TrimSpace(string(b))
}

// maxReason bounds a reason phrase: Azure's messages are a sentence.
const maxReason = 512

// withReason is p, the start of a response, with reason as its status line's phrase; false
// when p does not start with a whole HTTP/1.1 status line.
func withReason(p []byte, reason string) ([]byte, bool) {
	const codeEnd = len("HTTP/1.1 200")
	if len(p) <= codeEnd || string(p[:len("HTTP/1.1 ")]) != "HTTP/1.1 " || p[codeEnd] != ' ' {
		return nil, false
	}
	end := bytes.Index(p, []byte("\r\n"))
	if end < 0 {
		return nil, false
	}
	q := make([]byte, 0, len(p)-end+codeEnd+1+len(reason))
	q = append(q, p[:codeEnd+1]...)
	q = append(q, reason...)
	return append(q, p[end:]...), true
}

func (c *azureConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.names.feed(p[:n])
	}
	return n, err
}

// maxHeld bounds what a connection holds back; a response larger than this is written as
// net/http hands it over.
const maxHeld = 64 << 10

var heldBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// tlsState is the TLS connection's state, for a connection that came with a TLS handshake:
// read once, after the handshake its first request completed, and shared by its requests as
// net/http shares its own.
func (c *azureConn) tlsState() (*tls.ConnectionState, bool) {
	if c.tls != nil {
		return c.tls, true
	}
	tc, ok := c.Conn.(*tls.Conn)
	if !ok {
		return nil, false
	}
	st := tc.ConnectionState()
	c.tls = &st
	return c.tls, true
}

// hold makes the connection keep what is written to it until release.
func (c *azureConn) hold() { c.holding = true }

// drop ends holding and forgets what was held.
func (c *azureConn) drop() {
	c.holding, c.reason = false, ""
	c.returnHeld()
}

// release ends holding and writes what was held, in one write.
func (c *azureConn) release() error {
	c.holding = false
	if c.held == nil {
		return nil
	}
	_, err := c.Conn.Write(*c.held)
	c.returnHeld()
	return err
}

// returnHeld gives the held buffer back to the pool (unless it grew past maxHeld).
func (c *azureConn) returnHeld() {
	if c.held == nil {
		return
	}
	if cap(*c.held) <= maxHeld {
		*c.held = (*c.held)[:0]
		heldBuffers.Put(c.held)
	}
	c.held = nil
}

const plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *azureConn) Write(p []byte) (int, error) {
	if c.reason != "" {
		q, ok := withReason(p, c.reason)
		c.reason = ""
		if ok {
			if _, err := c.write(q); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.write(p)
}

func (c *azureConn) write(p []byte) (int, error) {
	if c.holding {
		if c.held == nil {
			c.held = heldBuffers.Get().(*[]byte)
		}
		if len(*c.held)+len(p) <= maxHeld {
			*c.held = append(*c.held, p...) // the caller reuses p
			return len(p), nil
		}
		if err := c.release(); err != nil {
			return 0, err
		}
	}
	if c.errorBody != nil && mayBePlainError(p) {
		if resp, ok := c.azureResponse(p); ok {
			if _, err := c.Conn.Write(resp); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// mayBePlainError tells, cheaply, whether p may be one of net/http's own refusals: it
// starts with a 4xx or 5xx status line and holds their fixed header block. Every response
// passes here, most of them successes, so the answer for those must cost next to nothing.
func mayBePlainError(p []byte) bool {
	const prefix = "HTTP/1.1 "
	if len(p) < len(prefix)+3 || string(p[:len(prefix)]) != prefix || p[len(prefix)] < '4' {
		return false
	}
	return bytes.Contains(p, []byte(plainErrorHeaders))
}

// ReadFrom keeps net/http's zero-copy path (sendfile, splice) for bodies copied from files.
func (c *azureConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

func (c *azureConn) azureResponse(p []byte) ([]byte, bool) {
	statusLine, rest, ok := strings.Cut(string(p), plainErrorHeaders)
	if !ok || strings.Contains(statusLine, "\r\n") {
		return nil, false
	}
	status, err := strconv.Atoi(strings.TrimPrefix(statusLine, "HTTP/1.1 ")[:3])
	if err != nil {
		return nil, false
	}
	var e *azerr.Error
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		// Azure's front end answers an oversized header block 400; no Azure code names it, and
		// InvalidHeaderValue is the one clients know for a header problem.
		e = azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format: the request's header block is larger than this server accepts.")
	case http.StatusNotImplemented:
		e = azerr.Newf(azerr.NotImplemented, "The requested operation is not implemented on the specified resource: %s.", rest)
	default:
		if status/100 != 4 {
			return nil, false
		}
		e = azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format: %s.", rest)
		e.Status = status
	}
	id := uuid.New()
	contentType, body := c.errorBody(e, id)
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status) + "\r\n")
	b.WriteString("Content-Type: " + contentType + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	b.WriteString("x-ms-error-code: " + string(e.Code) + "\r\n")
	b.WriteString("x-ms-request-id: " + id + "\r\n")
	b.WriteString("Date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes(), true
}
