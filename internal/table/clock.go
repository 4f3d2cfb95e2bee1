package table

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/store"
)

// Over a store.Exclusive store an Insert Or Replace is written without reading the entity it
// replaces (ExecuteBatch): its new Timestamp, which is its ETag, must then be later than the
// replaced entity's without looking, or a client's stale ETag could match again. Within a
// process every Timestamp is later than the ones before (lastTicks). Across restarts, with a
// system clock that may have been set back in between, a floor kept in the store carries
// that promise: no entity is written with a Timestamp above the stored floor, and a process
// hands out Timestamps only above the floor it finds. The floor is moved a minute of
// Timestamps ahead at a time, so keeping it costs one small commit a minute.

// clockSpace holds the floor: one record whose Version is the floor.
const clockSpace = "\x00tableclock"

// clockLease is how far ahead of the Timestamp that needs it the floor is moved.
const clockLease = edm.Ticks(60 * 10_000_000) // a minute of 100 ns ticks

var clockKey = store.Key{Space: clockSpace}

// clockFloor is the floor as last read or written; only over an exclusive store.
type clockFloor struct {
	loaded atomic.Bool
	floor  atomic.Int64
	mu     sync.Mutex // serialises loading and moving the floor
}

// entityTimestamp is nextTimestamp for an entity write: over an exclusive store it returns
// only once the floor covers the Timestamp.
func (s *Service) entityTimestamp(ctx context.Context, after edm.Ticks) (edm.Ticks, error) {
	c := s.clock
	if c == nil {
		return s.nextTimestamp(after), nil
	}
	if !c.loaded.Load() {
		if err := s.loadClockFloor(ctx); err != nil {
			return 0, err
		}
	}
	ts := s.nextTimestamp(after)
	if int64(ts) <= c.floor.Load() {
		return ts, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(ts) <= c.floor.Load() {
		return ts, nil
	}
	floor := int64(ts + clockLease)
	if err := s.store.Commit(ctx, []store.Mutation{{Key: clockKey, Value: []byte{}, Version: floor}}); err != nil {
		return 0, fmt.Errorf("moving the table service's Timestamp floor: %w", err)
	}
	c.floor.Store(floor)
	return ts, nil
}

// loadClockFloor reads the floor and makes every Timestamp handed out from now on later than
// it.
func (s *Service) loadClockFloor(ctx context.Context) error {
	c := s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded.Load() {
		return nil
	}
	rec, err := s.store.Get(ctx, clockKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("reading the table service's Timestamp floor: %w", err)
	default:
		c.floor.Store(rec.Version)
		for last := s.lastTicks.Load(); last < rec.Version && !s.lastTicks.CompareAndSwap(last, rec.Version); last = s.lastTicks.Load() {
		}
	}
	c.loaded.Store(true)
	return nil
}
