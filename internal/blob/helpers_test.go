package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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

// backendStore is what a backend offers the service: records and objects.
type backendStore interface {
	store.Store
	store.Objects
}

// backends are the stores every semantic test runs on: the embedded one and PostgreSQL (a
// fresh database of a throw-away cluster; skipped loudly where PostgreSQL is not installed,
// never in CI). open returns the store and what a second front-end uses: for PostgreSQL a
// second Store on the same database, for Pebble (one process only) the same store.
var backends = []struct {
	name string
	open func(t *testing.T) (st, second backendStore)
}{
	{"pebble", func(t *testing.T) (backendStore, backendStore) {
		st, err := pebble.Open("", pebble.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, st
	}},
	{"postgres", func(t *testing.T) (backendStore, backendStore) {
		dsn := pgtest.Start(t)
		return openPostgres(t, dsn), openPostgres(t, dsn)
	}},
}

func openPostgres(t *testing.T, dsn string) backendStore {
	st, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// clock is a settable clock for the time-driven rules.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a Service on one backend, with its clock and a container "ctr" of account "acct";
// other is a second front-end's Service on the same data, with the same clock.
type env struct {
	*testing.T
	s     *Service
	other *Service
	st    backendStore
	clock *clock
	ctx   context.Context
}

// forEachBackend runs test on every backend.
func forEachBackend(t *testing.T, test func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			test(t, newEnv(t, b.open))
		})
	}
}

func newEnv(t *testing.T, open func(t *testing.T) (st, second backendStore)) *env {
	st, second := open(t)
	c := &clock{now: time.Now().UTC().Truncate(time.Second)}
	s := New(st, st)
	s.Now = c.Now
	other := New(second, second)
	other.Now = c.Now
	e := &env{T: t, s: s, other: other, st: st, clock: c, ctx: t.Context()}
	if _, err := s.CreateContainer(e.ctx, "acct", "ctr", nil, PrivateAccess); err != nil {
		t.Fatal(err)
	}
	return e
}

func path(name string) Path { return Path{Account: "acct", Container: "ctr", Name: name} }

// data returns n deterministic pseudo-random bytes.
func data(n int, seed uint64) []byte {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	rand.NewChaCha8(s).Read(b)
	return b
}

// putBlock creates a block blob with body.
func (e *env) putBlob(name string, body []byte) Blob {
	e.Helper()
	b, _, err := e.s.PutBlob(e.ctx, path(name), bytes.NewReader(body), int64(len(body)), PutBlobOptions{Type: BlockBlob})
	if err != nil {
		e.Fatalf("PutBlob %s: %v", name, err)
	}
	return b
}

// read returns a blob's bytes.
func (e *env) read(p Path) []byte {
	e.Helper()
	d, err := e.s.GetBlob(e.ctx, p, GetBlobOptions{})
	if err != nil {
		e.Fatalf("GetBlob %v: %v", p, err)
	}
	defer d.Body.Close()
	got, err := io.ReadAll(d.Body)
	if err != nil {
		e.Fatalf("reading %v: %v", p, err)
	}
	return got
}

// objects returns the ids of the stored objects.
func (e *env) objects() []string {
	e.Helper()
	var ids []string
	err := e.st.ScanObjects(e.ctx, time.Now().Add(time.Hour), func(id string, _ int64) (bool, error) {
		ids = append(ids, id)
		return true, nil
	})
	if err != nil {
		e.Fatal(err)
	}
	return ids
}

// collect runs the collector as if Grace had passed.
func (e *env) collect() CollectStats {
	e.Helper()
	e.clock.Advance(e.s.Grace + time.Second)
	stats, err := e.s.Collect(e.ctx)
	if err != nil {
		e.Fatalf("Collect: %v", err)
	}
	return stats
}

// wantCode fails unless err is the Azure error with status and code.
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

// codeOf describes err as "status code", "ok" for nil.
func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	var e *azerr.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%d %s", e.Status, e.Code)
	}
	return err.Error()
}

func ptr[T any](v T) *T { return &v }
