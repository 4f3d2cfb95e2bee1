// Package table is the Table service itself — tables, entities, ETags, entity group
// transactions, queries and paging — written against the store contract and free of HTTP.
// The HTTP layer decodes requests into calls on Service and encodes what it returns.
package table

import (
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/serviceprops"
	"github.com/tabula-dev/tabula/internal/store"
)

// Service serves every account Tabula hosts from one store. Over a store shared by several
// processes it keeps no per-table state in memory, so several Services (front-ends) may share
// the store; there, a write in flight while another front-end deletes its table can leave
// its entity in the deleted table's space, unreachable, until SweepDeletedTables removes
// it. Over a store.Exclusive store it caches table metadata, which only its own changes
// invalidate, and orders writes and table deletions: there it must be the store's only
// Service.
type Service struct {
	store store.Store
	now   func() time.Time
	// lastTicks makes Timestamps handed out by this process strictly increasing, so that two
	// writes in the same 100 ns tick still produce different ETags.
	lastTicks atomic.Int64
	// PageBudget bounds the time one query page may spend scanning, as Azure's 5-second limit
	// does; a page that runs out returns what it has with a continuation.
	PageBudget time.Duration
	// tables caches table metadata over an exclusive store; nil otherwise.
	tables *tableCache
	// clock keeps Timestamps later than every stored one across restarts (clock.go), over an
	// exclusive store.
	clock *clockFloor
	props *serviceprops.Store
}

// New returns a Service over st.
func New(st store.Store) *Service {
	s := &Service{store: st, now: time.Now, PageBudget: 5 * time.Second, props: serviceprops.NewStore(st, auth.Table)}
	if _, exclusive := st.(store.Exclusive); exclusive {
		s.tables = newTableCache()
		s.clock = &clockFloor{}
	}
	return s
}

// nextTimestamp returns a Timestamp later than every one this process handed out before and
// later than after (the newest Timestamp among the entities about to be overwritten).
func (s *Service) nextTimestamp(after edm.Ticks) edm.Ticks {
	for {
		last := s.lastTicks.Load()
		next := int64(edm.TicksOf(s.now()))
		if next <= last {
			next = last + 1
		}
		if next <= int64(after) {
			next = int64(after) + 1
		}
		if s.lastTicks.CompareAndSwap(last, next) {
			return edm.Ticks(next)
		}
	}
}
