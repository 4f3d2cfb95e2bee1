package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// CloseGuard gives a backend the contract's Close behaviour: Close waits for the calls in
// flight, and every call made once Close has begun returns ErrClosed. The zero value is open.
type CloseGuard struct {
	// mu guards closed and orders every inflight.Add before Close's Wait. Calls enter under
	// the read lock, so that concurrent calls do not queue for each other.
	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
}

// Enter admits a call, or returns ErrClosed once Close has begun, or ctx.Err() if ctx is
// already done. An admitted call must end with Exit.
func (g *CloseGuard) Enter(ctx context.Context) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.inflight.Add(1)
	return nil
}

// Exit ends a call admitted by Enter.
func (g *CloseGuard) Exit() { g.inflight.Done() }

// Close refuses new calls and waits for the admitted ones to Exit. It returns ErrClosed if
// Close had already begun, in which case the caller must not release anything.
func (g *CloseGuard) Close() error {
	if err := g.refuse(); err != nil {
		return err
	}
	g.inflight.Wait()
	return nil
}

// ErrCallsInFlight is returned by CloseWithin when admitted calls did not all exit in time.
var ErrCallsInFlight = errors.New("store: calls still in flight")

// CloseWithin is Close waiting at most timeout for the admitted calls: it returns
// ErrCallsInFlight if some have not exited by then (new calls are refused all the same), in
// which case the caller must not release what they may still use.
func (g *CloseGuard) CloseWithin(timeout time.Duration) error {
	if err := g.refuse(); err != nil {
		return err
	}
	drained := make(chan struct{})
	go func() {
		g.inflight.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		return nil
	case <-time.After(timeout):
		return ErrCallsInFlight
	}
}

// refuse makes every later Enter fail, or returns ErrClosed if that was done already.
func (g *CloseGuard) refuse() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	g.closed = true
	return nil
}
