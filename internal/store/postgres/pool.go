package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pool hands out connections to one database. It is this small pool rather than pgxpool for
// the one thing pgxpool cannot do that the store contract needs: a Scan holds its connection
// (and snapshot) while its callback runs, and the contract lets that callback call the store,
// so connections parked in a Scan callback must not count against the limit (see park) —
// with pgxpool, as many concurrent Scans as connections would deadlock their callbacks.
//
// At most max connections are busy at once, not counting parked ones. Idle connections are
// reused newest first; one idle for longer than pingIdle is pinged before reuse, so that a
// database restart costs a reconnect rather than a failed call.
type pool struct {
	config *pgx.ConnConfig
	max    int

	mu      sync.Mutex
	busy    int // connections handed out, parked ones included
	parked  int
	idle    []idleConn
	changed chan struct{} // closed and replaced whenever busy or parked decreases
	closed  bool
}

type idleConn struct {
	conn  *pgx.Conn
	since time.Time
}

// pingIdle is how long a connection may sit idle before it is checked on reuse. pgxpool
// uses the same second.
const pingIdle = time.Second

func newPool(config *pgx.ConnConfig, max int) *pool {
	return &pool{config: config, max: max, changed: make(chan struct{})}
}

// acquire returns a connection outside any transaction, waiting while max connections are
// busy. An error from dialing is returned as is (a *pgconn.ConnectError); ctx bounds the wait,
// the ping and the dial. The connection must be given back with release.
func (p *pool) acquire(ctx context.Context) (*pgx.Conn, error) {
	for {
		p.mu.Lock()
		if p.busy-p.parked < p.max {
			break
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.busy++
	for len(p.idle) > 0 {
		ic := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		p.mu.Unlock()
		if time.Since(ic.since) < pingIdle || ic.conn.Ping(ctx) == nil {
			return ic.conn, nil
		}
		closeConn(ic.conn)
		if err := ctx.Err(); err != nil {
			p.done()
			return nil, err
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
	conn, err := pgx.ConnectConfig(ctx, p.config)
	if err != nil {
		p.done()
		return nil, err
	}
	return conn, nil
}

// release gives back a connection from acquire. One left inside a transaction is rolled back
// first; one that is broken, or that cannot be rolled back, is closed.
func (p *pool) release(conn *pgx.Conn) {
	if !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			closeConn(conn)
		}
		cancel()
	}
	p.mu.Lock()
	keep := !p.closed && !conn.IsClosed() && len(p.idle) < p.max
	if keep {
		p.idle = append(p.idle, idleConn{conn, time.Now()})
	}
	p.mu.Unlock()
	if !keep {
		closeConn(conn)
	}
	p.done()
}

// done ends one busy connection's turn and wakes the waiters.
func (p *pool) done() {
	p.mu.Lock()
	p.busy--
	p.signal()
	p.mu.Unlock()
}

// park marks one busy connection as held by a Scan while its callback runs, so that it no
// longer counts against max. The callback may call the store, which then acquires other
// connections: without parking, max concurrent Scans whose callbacks call the store would
// wait for each other forever. unpark ends the parking; it never waits, so the busy count may
// exceed max until the Scan releases its connection.
func (p *pool) park() {
	p.mu.Lock()
	p.parked++
	p.signal()
	p.mu.Unlock()
}

func (p *pool) unpark() {
	p.mu.Lock()
	p.parked--
	p.mu.Unlock()
}

// signal wakes every goroutine waiting in acquire. p.mu must be held.
func (p *pool) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// discardIdle closes every idle connection. After one connection was found dead the others,
// opened to the same server, most likely are too.
func (p *pool) discardIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ic := range idle {
		closeConn(ic.conn)
	}
}

// close closes the idle connections, and makes release close the busy ones as they return.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.discardIdle()
}

// closeConn closes conn, waiting at most a second for the server to take its Terminate
// message: a dead server must not hold up the caller.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Close(ctx)
}
