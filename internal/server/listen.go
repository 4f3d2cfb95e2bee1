package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/faults"
)

// Limits bound what clients can hold of a server. The zero value of a field means its
// default (DefaultLimits); a negative duration or count disables that limit.
type Limits struct {
	// HeaderTimeout bounds the time to receive a request's line and header block.
	HeaderTimeout time.Duration
	// BodyStallTimeout bounds the pause between two pieces of a request body: a body may take
	// as long as it needs (a blob of gigabytes) but not stop arriving.
	BodyStallTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that carries no request for this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and header block.
	MaxHeaderBytes int
	// MaxConnections bounds the connections open at once over every endpoint. A client that
	// arrives when all are taken waits until one frees; idle keep-alive connections are closed
	// first to make room, so idle clients cannot starve active ones.
	MaxConnections int
	// ShutdownGrace is how long Serve lets in-flight requests finish once asked to stop,
	// before it closes the connections that remain.
	ShutdownGrace time.Duration
}

// DefaultLimits are chosen to let any legitimate Azure client through and to shed the rest:
// Azure accepts 8 KiB of metadata and URLs of a few KiB, so a 32 KiB header block holds any
// real request; Go's own HTTP client keeps idle connections 90 s, so closing them at 120 s
// leaves that to the client.
func DefaultLimits() Limits {
	return Limits{
		HeaderTimeout:    10 * time.Second,
		BodyStallTimeout: 30 * time.Second,
		IdleTimeout:      120 * time.Second,
		MaxHeaderBytes:   32 << 10,
		MaxConnections:   defaultMaxConnections(),
		ShutdownGrace:    10 * time.Second,
	}
}

// defaultMaxConnections leaves a quarter of the process's file descriptors (Go raises the soft
// limit to the hard one at start) to the store and everything else, within [64, 10000].
func defaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	return int(min(max(rl.Cur-rl.Cur/4, 64), 10000))
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.HeaderTimeout == 0 {
		l.HeaderTimeout = d.HeaderTimeout
	}
	if l.BodyStallTimeout == 0 {
		l.BodyStallTimeout = d.BodyStallTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = d.MaxConnections
	}
	if l.ShutdownGrace == 0 {
		l.ShutdownGrace = d.ShutdownGrace
	}
	return l
}

// Endpoint is one service endpoint to serve.
type Endpoint struct {
	Name    string // "table", "blob", "queue": for messages
	Addr    string // HOST:PORT to listen on
	Handler http.Handler
	// ErrorBody renders a refusal net/http makes before any handler runs (a header block too
	// large, a malformed request line) in the service's own error format, so that even those
	// carry an Azure error code. nil leaves net/http's plain-text answer.
	ErrorBody func(e *azerr.Error, requestID string) (contentType string, body []byte)
}

// Group is a set of endpoints bound to their addresses, ready to serve.
type Group struct {
	// TLS, when set before Serve, makes every endpoint serve HTTPS beside HTTP on the same
	// address: a connection that opens with a TLS handshake gets TLS, any other plain HTTP.
	TLS *tls.Config
	// Log, when set before Serve, says which requests get a log line.
	Log *RequestLog
	// Faults, when set before Serve, are rules that fail chosen requests on purpose.
	Faults *faults.Set

	limits    Limits
	log       *slog.Logger
	endpoints []Endpoint
	listeners []net.Listener
	conns     *connTracker
}

// Listen binds every endpoint's address, so that a caller can report each one before serving,
// and fails naming the endpoint whose address cannot be bound (nothing stays bound then).
func Listen(limits Limits, log *slog.Logger, endpoints ...Endpoint) (*Group, error) {
	limits = limits.withDefaults()
	g := &Group{limits: limits, log: log, endpoints: endpoints}
	for _, e := range endpoints {
		ln, err := net.Listen("tcp", e.Addr)
		if err != nil {
			for _, l := range g.listeners {
				l.Close()
			}
			return nil, fmt.Errorf("the %s endpoint cannot listen on %q: %w", e.Name, e.Addr, err)
		}
		g.listeners = append(g.listeners, ln)
	}
	g.conns = newConnTracker(limits.MaxConnections)
	return g, nil
}

// Addr returns the address the named endpoint listens on, nil if there is none.
func (g *Group) Addr(name string) net.Addr {
	for i, e := range g.endpoints {
		if e.Name == name {
			return g.listeners[i].Addr()
		}
	}
	return nil
}

// Serve serves every endpoint until ctx is done or one fails. Then it stops accepting, lets
// in-flight requests finish for up to ShutdownGrace, and closes the connections that remain.
// It returns nil after a shutdown asked for by ctx, whatever was still in flight.
func (g *Group) Serve(ctx context.Context) error {
	servers := make([]*http.Server, len(g.endpoints))
	failed := make(chan error, len(g.endpoints))
	for i, e := range g.endpoints {
		srv := &http.Server{
			Handler:           observe(e, guardBody(e.Handler, g.limits.BodyStallTimeout), g.Log, g.Faults),
			ReadHeaderTimeout: positive(g.limits.HeaderTimeout),
			IdleTimeout:       positive(g.limits.IdleTimeout),
			MaxHeaderBytes:    g.limits.MaxHeaderBytes,
			ConnState:         g.conns.track,
			ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
		}
		srv.ConnContext = connContext(g.TLS != nil)
		servers[i] = srv
		ln := &limitedListener{Listener: g.listeners[i], conns: g.conns, errorBody: e.ErrorBody,
			tls: g.TLS, sniffTimeout: positive(g.limits.HeaderTimeout), closed: make(chan struct{})}
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("the %s endpoint: %w", e.Name, err)
			}
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-failed:
	}
	g.conns.stop()
	grace, cancel := context.WithTimeout(context.Background(), g.limits.ShutdownGrace)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(grace); err != nil {
				// The grace is over: cut what is still in flight.
				srv.Close()
			}
		}()
	}
	wg.Wait()
	if grace.Err() != nil {
		g.log.Warn("shutdown grace over; closed the connections still in flight", "grace", g.limits.ShutdownGrace)
	}
	return serveErr
}

func positive(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// limitedListener admits a connection only when the group is under its connection limit and
// wraps it so that net/http's own refusals speak Azure. With TLS it also tells HTTPS from HTTP
// by the first byte of each connection.
type limitedListener struct {
	net.Listener
	conns     *connTracker
	errorBody func(*azerr.Error, string) (string, []byte)

	tls          *tls.Config
	sniffTimeout time.Duration
	startSniffer sync.Once
	sniffed      chan net.Conn // connections whose protocol is known
	failed       chan error    // the accept loop's last error
	closed       chan struct{} // closed by Close
	closeOnce    sync.Once
}

func (l *limitedListener) Accept() (net.Conn, error) {
	if l.tls != nil {
		return l.acceptSniffed()
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// The client is waiting in our accept queue now: make room for it.
	if !l.conns.acquire() {
		c.Close()
		return nil, net.ErrClosed
	}
	return &azureConn{Conn: c, errorBody: l.errorBody}, nil
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// acceptSniffed hands out connections once their first byte is known: a TLS handshake record
// (0x16) gets the TLS server side, anything else is plain HTTP. Sniffing happens off the
// accept path, so a client that connects and says nothing delays no one.
func (l *limitedListener) acceptSniffed() (net.Conn, error) {
	l.startSniffer.Do(func() {
		l.sniffed, l.failed = make(chan net.Conn), make(chan error, 1)
		go l.acceptLoop()
	})
	select {
	case c := <-l.sniffed:
		return c, nil
	case err := <-l.failed:
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *limitedListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.failed <- err
			return
		}
		if !l.conns.acquire() {
			c.Close()
			l.failed <- net.ErrClosed
			return
		}
		go l.sniff(c)
	}
}

// tlsHandshakeRecord is the first byte of every TLS connection.
const tlsHandshakeRecord = 0x16

func (l *limitedListener) sniff(c net.Conn) {
	if l.sniffTimeout > 0 {
		_ = c.SetReadDeadline(time.Now().Add(l.sniffTimeout))
	}
	var first [1]byte
	_, err := io.ReadFull(c, first[:])
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		l.conns.release()
		return
	}
	peeked := &peekedConn{Conn: c, first: first[:]}
	var out net.Conn
	if first[0] == tlsHandshakeRecord {
		// Wrapped too, so that net/http's own refusals speak Azure over HTTPS as well: the
		// wrapper sees the plain bytes before the TLS connection encrypts them. net/http
		// then no longer knows the connection for TLS (the handshake happens on its first
		// read), so observe gives requests their r.TLS (azureConn.tlsState).
		out = &azureConn{Conn: tls.Server(peeked, l.tls), errorBody: l.errorBody}
	} else {
		out = &azureConn{Conn: peeked, errorBody: l.errorBody}
	}
	select {
	case l.sniffed <- out:
	case <-l.closed:
		c.Close()
		l.conns.release()
	}
}

// peekedConn gives back the bytes read to sniff it before reading on.
type peekedConn struct {
	net.Conn
	first []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// ReadFrom keeps the zero-copy path of the connection underneath.
func (c *peekedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// connTracker counts the connections of a group and knows which are idle, so that it can
// close idle ones when the limit is reached.
type connTracker struct {
	mu      sync.Mutex
	limit   int // < 0: none
	open    int
	idle    map[net.Conn]time.Time // idle keep-alive connections, since when
	freed   chan struct{}          // a slot may have been freed
	stopped chan struct{}
}

func newConnTracker(limit int) *connTracker {
	return &connTracker{limit: limit, idle: map[net.Conn]time.Time{}, freed: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// acquire takes a connection slot, closing the longest-idle connection when none is free and
// waiting while none is idle either. It returns false once the group stops.
func (t *connTracker) acquire() bool {
	for {
		t.mu.Lock()
		if t.limit < 0 || t.open < t.limit {
			t.open++
			t.mu.Unlock()
			return true
		}
		var oldest net.Conn
		var since time.Time
		for c, s := range t.idle {
			if oldest == nil || s.Before(since) {
				oldest, since = c, s
			}
		}
		if oldest != nil {
			delete(t.idle, oldest)
		}
		t.mu.Unlock()
		if oldest != nil {
			// Closing an idle keep-alive connection is allowed at any time (RFC 9112 §9.6);
			// net/http then reports it closed, which frees its slot.
			oldest.Close()
		}
		select {
		case <-t.freed:
		case <-t.stopped:
			return false
		}
	}
}

// track follows net/http's view of each connection (http.Server.ConnState).
func (t *connTracker) track(c net.Conn, state http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch state {
	case http.StateIdle:
		t.idle[c] = time.Now()
	case http.StateActive:
		delete(t.idle, c)
	case http.StateClosed, http.StateHijacked:
		delete(t.idle, c)
		t.releaseLocked()
	}
}

// release frees the slot of a connection closed before net/http saw it.
func (t *connTracker) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked()
}

func (t *connTracker) releaseLocked() {
	t.open--
	select {
	case t.freed <- struct{}{}:
	default:
	}
}

func (t *connTracker) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.stopped:
	default:
		close(t.stopped)
	}
}

// connContext returns the http.Server.ConnContext of an endpoint: requests on a plain
// connection know it (responseRecorder.writeWhole), and, when tlsOffered, that the server
// serves HTTPS too.
func connContext(tlsOffered bool) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		if ac, ok := c.(*azureConn); ok {
			ctx = context.WithValue(ctx, azureConnKey{}, ac)
		}
		if tlsOffered {
			ctx = context.WithValue(ctx, tlsOfferedKey{}, true)
		}
		return ctx
	}
}
