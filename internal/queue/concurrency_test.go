package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

// frontEnds returns n Services sharing one store, as n processes would: over one PostgreSQL
// database (each with its own connections), or over one Pebble store seen as shared.
type frontEndsBackend struct {
	name string
	open func(t *testing.T, n int, c *clock) []*Service
}

var frontEndsBackends = []frontEndsBackend{
	{"pebble-as-shared", func(t *testing.T, n int, c *clock) []*Service {
		st := sharedOnly{openPebble(t)}
		var out []*Service
		for range n {
			out = append(out, New(st, Options{Now: c.Now}))
		}
		return out
	}},
	{"postgres", func(t *testing.T, n int, c *clock) []*Service {
		dsn := pgtest.Start(t)
		var out []*Service
		for range n {
			out = append(out, New(openPostgresAt(t, dsn), Options{Now: c.Now}))
		}
		return out
	}},
}

// lease is the time one consumer held one message: from the Get Messages that handed it
// out to the end of its visibility window, as Update Message extended it.
type lease struct{ start, end time.Time }

// deliveryLog collects leases from concurrent consumers and checks them.
type deliveryLog struct {
	mu   sync.Mutex
	byID map[string][]*lease
}

// add records the messages a Get Messages with the given visibility timeout returned, and
// returns their leases.
func (l *deliveryLog) add(ms []Message, timeout time.Duration) []*lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID == nil {
		l.byID = map[string][]*lease{}
	}
	var out []*lease
	for _, m := range ms {
		ls := &lease{start: m.TimeNextVisible.Add(-timeout), end: m.TimeNextVisible}
		l.byID[m.ID] = append(l.byID[m.ID], ls)
		out = append(out, ls)
	}
	return out
}

// extend records that Update Message moved the end of ls.
func (l *deliveryLog) extend(ls *lease, end time.Time) {
	l.mu.Lock()
	ls.end = end
	l.mu.Unlock()
}

// checkWindows fails t if two leases of one message overlap.
func (l *deliveryLog) checkWindows(t *testing.T) {
	t.Helper()
	for id, leases := range l.byID {
		slices.SortFunc(leases, func(a, b *lease) int { return a.start.Compare(b.start) })
		for i := 1; i < len(leases); i++ {
			if leases[i].start.Before(leases[i-1].end) {
				t.Errorf("message %s handed out at %v while the window from %v to %v lasted", id, leases[i].start, leases[i-1].start, leases[i-1].end)
			}
		}
	}
}

// consumeAll runs consumers that get (n at a time) and delete until the queue has been empty
// for them all, and returns what they received.
func consumeAll(t *testing.T, services []*Service, q Queue, consumers, n int, timeout time.Duration) *deliveryLog {
	t.Helper()
	log := &deliveryLog{}
	var wg sync.WaitGroup
	for i := range consumers {
		s := services[i%len(services)]
		wg.Go(func() {
			ctx := context.Background()
			for {
				ms, err := s.GetMessages(ctx, q, n, timeout)
				if err != nil {
					t.Errorf("GetMessages: %v", err)
					return
				}
				if len(ms) == 0 {
					return
				}
				log.add(ms, timeout)
				for _, m := range ms {
					if err := s.DeleteMessage(ctx, q, m.ID, m.PopReceipt); err != nil {
						t.Errorf("DeleteMessage: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	return log
}

// Many consumers on one queue, one Service: every message is received exactly once while
// the windows last, and nothing is left.
func TestConcurrentConsumersReceiveEachMessageOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, _ *clock) {
		q := newQueue(t, s, "jobs")
		const messages = 600
		for i := range messages {
			put(t, s, q, fmt.Sprint(i))
		}
		log := consumeAll(t, []*Service{s}, q, 16, 7, time.Hour)
		if len(log.byID) != messages {
			t.Fatalf("%d distinct messages received, want %d", len(log.byID), messages)
		}
		for id, times := range log.byID {
			if len(times) != 1 {
				t.Fatalf("message %s received %d times within its window", id, len(times))
			}
		}
		if n := count(t, s, q); n != 0 {
			t.Fatalf("count %d after consuming everything", n)
		}
	})
}

// The same across front-ends: Services sharing a store coordinate through it alone.
func TestConsumersOnSeveralFrontEndsReceiveEachMessageOnce(t *testing.T) {
	for _, b := range frontEndsBackends {
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			services := b.open(t, 3, c)
			q := newQueue(t, services[0], "jobs")
			const messages = 400
			var wg sync.WaitGroup
			for p := range 4 { // producers on every front-end, while consumers run
				s := services[p%len(services)]
				wg.Go(func() {
					for i := range messages / 4 {
						put(t, s, q, fmt.Sprint(p, "-", i))
					}
				})
			}
			wg.Wait()
			log := consumeAll(t, services, q, 12, 5, time.Hour)
			if len(log.byID) != messages {
				t.Fatalf("%d distinct messages received, want %d", len(log.byID), messages)
			}
			for id, times := range log.byID {
				if len(times) != 1 {
					t.Fatalf("message %s received %d times within its window", id, len(times))
				}
			}
		})
	}
}

// Producers and consumers run together while time passes: consumers abandon some messages
// (which must come back after their window), extend others with Update Message, and delete
// the rest; some messages are put invisible. Every message must in the end be deleted exactly
// once, no window may be shared, and the in-memory head of the queue (over Pebble) must never
// hide a message.
func TestWorkersUnderChurnLoseNothingAndNeverShareAWindow(t *testing.T) {
	const timeout = 10 * time.Second
	run := func(t *testing.T, services []*Service, c *clock) {
		q := newQueue(t, services[0], "churn")
		const producers, perProducer, consumers = 4, 150, 8
		total := producers * perProducer
		var deleted sync.Map // id → true
		var deletedCount atomic.Int64
		log := &deliveryLog{}
		ctx := context.Background()
		stop := make(chan struct{})
		var clockWG sync.WaitGroup
		clockWG.Go(func() { // time passes: a second every few milliseconds
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
					c.Advance(time.Second)
				}
			}
		})
		var wg sync.WaitGroup
		for p := range producers {
			s := services[p%len(services)]
			wg.Go(func() {
				for i := range perProducer {
					v := time.Duration(0)
					if i%5 == 0 {
						v = time.Duration(1+i%7) * time.Second
					}
					if _, err := s.PutMessage(ctx, q, fmt.Sprint(p, "-", i), v, NeverExpires); err != nil {
						t.Errorf("PutMessage: %v", err)
					}
				}
			})
		}
		for w := range consumers {
			s := services[w%len(services)]
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			wg.Go(func() {
				for deletedCount.Load() < int64(total) {
					if t.Failed() {
						return
					}
					ms, err := s.GetMessages(ctx, q, 1+rng.IntN(8), timeout)
					if err != nil {
						t.Errorf("GetMessages: %v", err)
						return
					}
					leases := log.add(ms, timeout)
					for i, m := range ms {
						receipt := m.PopReceipt
						switch rng.IntN(4) {
						case 0: // abandoned: it must come back after its window
							continue
						case 1: // extended, then deleted with the new receipt
							u, err := s.UpdateMessage(ctx, q, m.ID, receipt, nil, timeout)
							if err != nil {
								// The clock runs: the window may have ended and another
								// consumer taken the message, making the receipt stale.
								if !isCode(err, azerr.MessageNotFound) {
									t.Errorf("UpdateMessage: %v", err)
								}
								continue
							}
							log.extend(leases[i], u.TimeNextVisible)
							receipt = u.PopReceipt
						}
						err := s.DeleteMessage(ctx, q, m.ID, receipt)
						if err != nil {
							if !isCode(err, azerr.MessageNotFound) {
								t.Errorf("DeleteMessage: %v", err)
							}
							continue // stale, as above
						}
						if _, again := deleted.LoadOrStore(m.ID, true); again {
							t.Errorf("message %s deleted twice", m.ID)
						}
						deletedCount.Add(1)
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			close(stop)
			t.Fatalf("workers stuck with %d of %d messages deleted: messages were lost", deletedCount.Load(), total)
		}
		close(stop)
		clockWG.Wait()
		log.checkWindows(t)
		returned := 0
		for _, leases := range log.byID {
			if len(leases) > 1 {
				returned++
			}
		}
		if returned == 0 {
			t.Error("no abandoned message came back: the test did not exercise visibility windows")
		}
		if n := count(t, services[0], q); n != 0 {
			t.Fatalf("count %d after every message was deleted", n)
		}
		if got := records(t, services[0], q); len(got) != 0 {
			t.Fatalf("records left: %v", got)
		}
	}
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) { run(t, []*Service{s}, c) })
	for _, b := range frontEndsBackends {
		t.Run("frontends-"+b.name, func(t *testing.T) {
			c := newClock()
			run(t, b.open(t, 2, c), c)
		})
	}
}

// Clear Messages racing puts and gets removes every message that was there before it began
// and leaves the queue consistent: records, count and dequeues agree.
func TestClearRacingWorkersLeavesAConsistentQueue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Service, c *clock) {
		ctx := context.Background()
		q := newQueue(t, s, "jobs")
		for range 300 {
			put(t, s, q, "before")
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 100 {
				put(t, s, q, "during")
			}
		})
		wg.Go(func() {
			for range 20 {
				get(t, s, q, 5, time.Hour)
			}
		})
		must(t, s.ClearMessages(ctx, q))
		wg.Wait()
		c.Advance(2 * time.Hour)
		var left []Message
		for {
			ms := get(t, s, q, 32, time.Hour)
			if len(ms) == 0 {
				break
			}
			left = append(left, ms...)
		}
		for _, m := range left {
			if m.Text != "during" {
				t.Fatalf("a message put before Clear survived it: %+v", m)
			}
		}
		if n := count(t, s, q); n != int64(len(left)) {
			t.Fatalf("count %d, but %d messages left", n, len(left))
		}
		if got := records(t, s, q); got[visiblePartition] != len(left) || got[expiryPartition] != len(left) {
			t.Fatalf("records %v for %d messages", got, len(left))
		}
	})
}

// hookedStore runs afterScan once a Scan of the visible partition has read its snapshot and
// before it returns, and beforeCommit before a Commit, as concurrent calls would.
type hookedStore struct {
	store.Exclusive
	afterScan    func()
	beforeCommit func()
}

func (h *hookedStore) Commit(ctx context.Context, ms []store.Mutation) error {
	if f := h.beforeCommit; f != nil {
		h.beforeCommit = nil
		f()
	}
	return h.Exclusive.Commit(ctx, ms)
}

func (h *hookedStore) Scan(ctx context.Context, r store.Range, fn func(store.Record) (bool, error)) error {
	err := h.Exclusive.Scan(ctx, r, fn)
	if f := h.afterScan; f != nil && r.Start.Partition == visiblePartition {
		h.afterScan = nil
		f()
	}
	return err
}

// The head a Get Messages leaves behind may not pass a message whose put committed after
// the Get's scan read its snapshot: the scan found nothing up to now, but the put is there.
func TestHeadNeverPassesAMessagePutDuringAScan(t *testing.T) {
	c := newClock()
	st := &hookedStore{Exclusive: openPebble(t).(store.Exclusive)}
	s := New(st, Options{Now: c.Now})
	q := newQueue(t, s, "jobs")
	if _, err := s.PutMessage(context.Background(), q, "later", time.Hour, NeverExpires); err != nil {
		t.Fatal(err)
	}
	st.afterScan = func() { put(t, s, q, "racer") }
	if got := get(t, s, q, 1, time.Minute); len(got) != 0 {
		t.Fatalf("the first Get saw %q", texts(got))
	}
	if got := texts(get(t, s, q, 1, time.Minute)); !slices.Equal(got, []string{"racer"}) {
		t.Fatalf("after the race: %q, want the message put during the first Get's scan", got)
	}
}

// Nor may it pass a message whose put had begun before the scan and committed after it.
func TestHeadNeverPassesAMessagePutAcrossAScan(t *testing.T) {
	c := newClock()
	st := &hookedStore{Exclusive: openPebble(t).(store.Exclusive)}
	s := New(st, Options{Now: c.Now})
	q := newQueue(t, s, "jobs")
	if _, err := s.PutMessage(context.Background(), q, "later", time.Hour, NeverExpires); err != nil {
		t.Fatal(err)
	}
	committing, release := make(chan struct{}), make(chan struct{})
	st.beforeCommit = func() { close(committing); <-release }
	putDone := make(chan struct{})
	go func() { defer close(putDone); put(t, s, q, "racer") }()
	<-committing // the put has announced its row and waits to commit
	if got := get(t, s, q, 1, time.Minute); len(got) != 0 {
		t.Fatalf("the first Get saw %q", texts(got))
	}
	close(release)
	<-putDone
	if got := texts(get(t, s, q, 1, time.Minute)); !slices.Equal(got, []string{"racer"}) {
		t.Fatalf("after the race: %q, want the message whose put spanned the first Get's scan", got)
	}
}
