// Package queue is the Queue service itself — queues, their metadata and stored access
// policies, and messages with Azure's visibility, pop receipt and expiry semantics — written
// against the store contract and free of HTTP. The HTTP layer (queuehttp) decodes requests
// into calls on Service and encodes what it returns.
//
// What a worker can rely on, whatever the store and however many Services share it:
//
//   - A message is handed to at most one Get Messages per visibility window: a dequeue
//     moves the message's record, conditioned on the version it read, so of two dequeues
//     of the same message only one commits.
//   - A message dequeued and not deleted comes back when its window ends, with its
//     DequeueCount one higher.
//   - Delete and Update take only the latest pop receipt: a receipt names one version of the
//     message, and every dequeue and update makes a new one.
//   - An expired message is never returned, and its records are removed: by the Get Messages
//     that meets it, by SweepExpiredMessages, by Delete Message with a receipt.
//   - Puts and deletes are acknowledged once committed, so they are as durable as the store.
//
// Order: messages leave in order of TimeNextVisible (microseconds), then of insertion. That
// is FIFO among messages put without a visibility timeout and never dequeued, and, like
// Azure's own order, only approximately FIFO otherwise: a message that comes back after its
// window or was put invisible takes its place by the time it became visible, and Services
// sharing a store order by their own clocks. Azure promises no order at all.
package queue

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/serviceprops"
	"github.com/tabula-dev/tabula/internal/store"
)

// Service serves the queues of every account Tabula hosts from one store. Several Services
// (front-ends) may share a store; each then keeps in memory only hints that make it faster,
// never state that others' changes could make wrong. Over a store.Exclusive store it also
// caches queue metadata, counts messages in memory and remembers where each queue's first
// message is (see messageState); there it must be the store's only Service.
type Service struct {
	store store.Store
	now   func() time.Time
	// exclusive is set over a store.Exclusive store.
	exclusive bool
	// queues caches queue metadata over an exclusive store; nil otherwise.
	queues *queueCache
	// messages holds the in-memory state of recently used queues.
	messages *messageStates
	// props keeps each account's Queue service properties.
	props *serviceprops.Store
	// lastInserted makes the insertion times (microseconds) this Service gives strictly
	// increasing, so that messages it puts in the same microsecond still leave in order.
	lastInserted atomic.Int64
}

// Options configures a Service. The zero value is ready to use.
type Options struct {
	// Now is the clock (time.Now when nil); tests set it to control visibility and expiry.
	Now func() time.Time
}

// New returns a Service over st.
func New(st store.Store, opts Options) *Service {
	s := &Service{store: st, now: opts.Now, messages: newMessageStates(), props: serviceprops.NewStore(st, auth.Queue)}
	if s.now == nil {
		s.now = time.Now
	}
	if _, ok := st.(store.Exclusive); ok {
		s.exclusive = true
		s.queues = newQueueCache()
	}
	return s
}

// insertionTime returns the insertion time of a message put at now: now to the microsecond,
// later than every one this Service gave before.
func (s *Service) insertionTime(now time.Time) time.Time {
	for {
		last := s.lastInserted.Load()
		next := max(now.UnixMicro(), last+1)
		if s.lastInserted.CompareAndSwap(last, next) {
			return time.UnixMicro(next).UTC()
		}
	}
}

// ServiceProperties returns the account's Queue service settings (Get Queue Service
// Properties).
func (s *Service) ServiceProperties(ctx context.Context, account string) (serviceprops.Properties, error) {
	return s.props.Get(ctx, account)
}

// SetServiceProperties replaces the account's Queue service settings with what update makes
// of the current ones (Set Queue Service Properties: elements the request omits are kept).
func (s *Service) SetServiceProperties(ctx context.Context, account string, update func(*serviceprops.Properties)) error {
	return s.props.Update(ctx, account, func(p *serviceprops.Properties) error {
		update(p)
		return nil
	})
}
