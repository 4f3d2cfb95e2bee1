package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/store/postgres"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// backend opens a fresh store for one test.
type backend struct {
	name string
	open func(t testing.TB) store.Store
}

// sharedOnly hides a store's store.Exclusive marker, so that a Service over it keeps no state
// that only an exclusive store allows: the Pebble store then stands in for a shared one.
type sharedOnly struct{ store.Store }

// backends are the stores every behaviour is checked on: Pebble as the exclusive store it
// is, Pebble seen as a shared store, and PostgreSQL (skipped, loudly, without its binaries;
// never in CI).
var backends = []backend{
	{"pebble", openPebble},
	{"pebble-as-shared", func(t testing.TB) store.Store { return sharedOnly{openPebble(t)} }},
	{"postgres", openPostgres},
}

func openPebble(t testing.TB) store.Store {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openPostgres(t testing.TB) store.Store {
	return openPostgresAt(t, pgtest.Start(t))
}

func openPostgresAt(t testing.TB, dsn string) store.Store {
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// forEachBackend runs test once per backend, each with a Service of its own on a fresh
// store and a test clock.
func forEachBackend(t *testing.T, test func(t *testing.T, s *Service, c *clock)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			test(t, New(b.open(t), Options{Now: c.Now}), c)
		})
	}
}

// newQueue creates a queue and returns it.
func newQueue(t testing.TB, s *Service, name string) Queue {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateQueue(ctx, "acct", name, nil); err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
	q, err := s.Queue(ctx, "acct", name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// wantCode fails t unless err is an Azure error with the given status and code.
func wantCode(t testing.TB, err error, status int, code azerr.Code) {
	t.Helper()
	var e *azerr.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", e.Status, e.Code, e.Message, status, code)
	}
}

func isCode(err error, code azerr.Code) bool {
	var e *azerr.Error
	return errors.As(err, &e) && e.Code == code
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func put(t testing.TB, s *Service, q Queue, text string) Message {
	t.Helper()
	m, err := s.PutMessage(context.Background(), q, text, 0, DefaultTimeToLive)
	if err != nil {
		t.Fatalf("PutMessage(%q): %v", text, err)
	}
	return m
}

func get(t testing.TB, s *Service, q Queue, n int, visibility time.Duration) []Message {
	t.Helper()
	ms, err := s.GetMessages(context.Background(), q, n, visibility)
	if err != nil {
		t.Fatalf("GetMessages: %v", err)
	}
	return ms
}

func peek(t testing.TB, s *Service, q Queue, n int) []Message {
	t.Helper()
	ms, err := s.PeekMessages(context.Background(), q, n)
	if err != nil {
		t.Fatalf("PeekMessages: %v", err)
	}
	return ms
}

func texts(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

func count(t testing.TB, s *Service, q Queue) int64 {
	t.Helper()
	n, err := s.ApproximateMessageCount(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// records counts the records of q's space, by partition: what storage its messages hold.
func records(t testing.TB, s *Service, q Queue) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := s.store.Scan(context.Background(), store.SpaceRange(q.Space), func(rec store.Record) (bool, error) {
		out[rec.Key.Partition]++
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// putMutations are the records of one message put into space at now, written behind the
// Service's back.
func putMutations(space string, now time.Time) []store.Mutation {
	id := newMessageID(now)
	expiration := now.Truncate(time.Second).Add(time.Hour)
	version := makeVersion(expiration, 1)
	return []store.Mutation{
		{Key: visibleKey(space, now, id), Value: messageValue{text: "stray"}.encode(), Version: version},
		{Key: expiryKey(space, expiration, id), Value: expiryValue(now), Version: version},
	}
}
