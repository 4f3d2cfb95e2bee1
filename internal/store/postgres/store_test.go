package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func mustOpen(t testing.TB, dsn string, opts Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t, pgtest.Start(t), Options{}) })
}

// TestContractWithSmallPages runs the suite with three rows per Scan page and one
// connection, so that nearly every Scan spans pages of one snapshot and its callback's calls
// to the store need a connection beyond the one the Scan holds.
func TestContractWithSmallPagesAndOneConnection(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := mustOpen(t, pgtest.Start(t), Options{MaxConns: 1})
		s.pageRows = 3
		return s
	})
}

// TestStoresSharingADatabaseKeepConditionalCommitsExact runs writers through two Stores, as
// two Tabula processes would, on one counter and on inserts of one key: each conditional
// commit sees and is checked against the other Store's commits.
func TestStoresSharingADatabaseKeepConditionalCommitsExact(t *testing.T) {
	dsn := pgtest.Start(t)
	stores := []*Store{mustOpen(t, dsn, Options{}), mustOpen(t, dsn, Options{})}
	ctx := t.Context()
	counter := store.Key{Space: "t", Partition: "p", Row: "counter"}
	if err := stores[0].Commit(ctx, []store.Mutation{{Key: counter, Version: 0, Value: []byte("0")}}); err != nil {
		t.Fatal(err)
	}

	const writers, increments = 12, 15
	var wg sync.WaitGroup
	for w := range writers {
		s := stores[w%len(stores)]
		wg.Go(func() {
			for done, attempt := 0, 0; done < increments; attempt++ {
				cur, err := s.Get(ctx, counter)
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				n, _ := strconv.Atoi(string(cur.Value))
				// Each attempt also writes a row of its own, which must exist exactly when the
				// increment succeeded: a commit is all or nothing.
				err = s.Commit(ctx, []store.Mutation{
					{Key: store.Key{Space: "t", Partition: "p", Row: fmt.Sprintf("w%02d-%04d", w, attempt)}, Version: 1},
					{Key: counter, Expect: store.Expect{Kind: store.ExpectVersion, Version: cur.Version}, Version: cur.Version + 1, Value: []byte(strconv.Itoa(n + 1))},
				})
				var cf *store.ConditionFailedError
				switch {
				case err == nil:
					done++
				case errors.As(err, &cf):
				default:
					t.Errorf("Commit: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	const want = writers * increments
	got, err := stores[1].Get(ctx, counter)
	if err != nil || got.Version != want || string(got.Value) != strconv.Itoa(want) {
		t.Fatalf("counter = version %d value %q (%v), want %d", got.Version, got.Value, err, want)
	}
	rows := 0
	err = stores[0].Scan(ctx, store.PartitionRange("t", "p"), func(rec store.Record) (bool, error) {
		if rec.Key != counter {
			rows++
		}
		return true, nil
	})
	if err != nil || rows != want {
		t.Fatalf("%d increment rows (%v), want %d", rows, err, want)
	}
}

func TestExactlyOneInsertWinsAcrossStores(t *testing.T) {
	dsn := pgtest.Start(t)
	stores := []*Store{mustOpen(t, dsn, Options{}), mustOpen(t, dsn, Options{})}
	for round := range 20 {
		k := store.Key{Space: "t", Partition: "p", Row: strconv.Itoa(round)}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 6 {
			wg.Go(func() {
				err := stores[i%2].Commit(t.Context(), []store.Mutation{{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: int64(i)}})
				var cf *store.ConditionFailedError
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case errors.As(err, &cf) && cf.Index == 0 && cf.Found != nil:
				default:
					t.Errorf("Commit: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d inserts of one key succeeded", round, wins)
		}
	}
}

// TestScanCallbacksMayUseTheStoreWhenEveryConnectionIsHeld runs more multi-page Scans at
// once than the Store has connections, each calling Get and Commit from its callback: every
// connection is held by a Scan, and the callbacks must still get connections.
func TestScanCallbacksMayUseTheStoreWhenEveryConnectionIsHeld(t *testing.T) {
	s := mustOpen(t, pgtest.Start(t), Options{MaxConns: 2})
	s.pageRows = 5
	ctx := t.Context()
	var ms []store.Mutation
	for i := range 20 {
		ms = append(ms, store.Mutation{Key: store.Key{Space: "t", Partition: "p", Row: fmt.Sprintf("%02d", i)}, Version: 1})
	}
	if err := s.Commit(ctx, ms); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			err := s.Scan(ctx, store.PartitionRange("t", "p"), func(rec store.Record) (bool, error) {
				if _, err := s.Get(ctx, rec.Key); err != nil {
					return false, err
				}
				k := store.Key{Space: "u", Partition: strconv.Itoa(w), Row: rec.Key.Row}
				return true, s.Commit(ctx, []store.Mutation{{Key: k, Version: 1}})
			})
			if err != nil {
				t.Errorf("Scan: %v", err)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Scans whose callbacks use the store are still running after 30s: deadlocked on connections")
	}
}

// TestCommitWaitingForALockReturnsWhenItsContextEnds holds a row lock from outside the store,
// so that a Commit on that row waits, either in its locking read (a conditional write) or in
// its final round trip (an unconditional one, whose COMMIT is already sent). Either way the
// end of its context must end the wait, promptly and with nothing applied.
func TestCommitWaitingForALockReturnsWhenItsContextEnds(t *testing.T) {
	dsn := pgtest.Start(t)
	s := mustOpen(t, dsn, Options{})
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	other := store.Key{Space: "t", Partition: "p", Row: "other"}
	if err := s.Commit(t.Context(), []store.Mutation{{Key: k, Version: 1}}); err != nil {
		t.Fatal(err)
	}
	locker, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())

	for _, expect := range []store.Expect{{Kind: store.ExpectVersion, Version: 1}, {}} {
		tx, err := locker.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), `SELECT 1 FROM tabula_records WHERE row_key = 'r' FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		start := time.Now()
		err = s.Commit(ctx, []store.Mutation{{Key: other, Version: 1}, {Key: k, Expect: expect, Version: 2}})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Commit (%+v) blocked on a lock until its deadline = %v, want context.DeadlineExceeded", expect, err)
		}
		if waited := time.Since(start); waited > 3*time.Second {
			t.Fatalf("Commit (%+v) returned %v after its deadline", expect, waited)
		}
		if err := tx.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(t.Context(), other); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the abandoned commit (%+v) wrote %v: Get = %v", expect, other, err)
		}
		if got, err := s.Get(t.Context(), k); err != nil || got.Version != 1 {
			t.Fatalf("the abandoned commit (%+v) changed %v: %+v, %v", expect, k, got, err)
		}
	}
	if err := s.Commit(t.Context(), []store.Mutation{{Key: k, Expect: store.Expect{Kind: store.ExpectVersion, Version: 1}, Version: 2}}); err != nil {
		t.Fatalf("Commit after the abandoned ones: %v", err)
	}
}

// TestUnreachableDatabaseIsReportedAsUnavailable stops the database under a Store: every call
// fails quickly with store.ErrUnavailable, a commit attempted meanwhile leaves nothing behind,
// and once the database is back the same Store works again.
func TestUnreachableDatabaseIsReportedAsUnavailable(t *testing.T) {
	c := pgtest.NewCluster(t)
	dsn := c.NewDatabase(t)
	s := mustOpen(t, dsn, Options{})
	ctx := t.Context()
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	if err := s.Commit(ctx, []store.Mutation{{Key: k, Version: 1, Value: []byte("before")}}); err != nil {
		t.Fatal(err)
	}

	c.Stop(t)
	lost := []store.Mutation{
		{Key: store.Key{Space: "t", Partition: "p", Row: "a"}, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 2},
		{Key: k, Expect: store.Expect{Kind: store.ExpectVersion, Version: 1}, Version: 2, Value: []byte("during")},
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := s.Get(ctx, k); return err }},
		{"Scan", func() error {
			return s.Scan(ctx, store.SpaceRange("t"), func(store.Record) (bool, error) { return true, nil })
		}},
		{"Commit", func() error { return s.Commit(ctx, lost) }},
		{"UnconditionalCommit", func() error { return s.Commit(ctx, []store.Mutation{{Key: k, Version: 3}}) }},
		{"DeleteSpace", func() error { return s.DeleteSpace(ctx, "t") }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.call()
		t.Logf("%s: %v", c.name, err)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the database down = %v, want an error wrapping store.ErrUnavailable", c.name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s with the database down took %v", c.name, d)
		}
	}
	if _, err := Open(ctx, dsn, Options{}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open with the database down = %v, want an error wrapping store.ErrUnavailable", err)
	}

	c.Restart(t)
	got, err := s.Get(ctx, k)
	if err != nil || got.Version != 1 || string(got.Value) != "before" {
		t.Fatalf("after restart Get = %d %q, %v; want the record as before the outage", got.Version, got.Value, err)
	}
	if _, err := s.Get(ctx, lost[0].Key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the commit attempted during the outage wrote %v: %v", lost[0].Key, err)
	}
	if err := s.Commit(ctx, lost); err != nil {
		t.Fatalf("the same commit after restart: %v", err)
	}
}

// TestCommitsCutOffByAShutdownApplyWholeOrNotAtAll stops the database while writers commit
// pairs of rows. Each pair must be whole or absent; a commit that succeeded must be there,
// and one reported as ErrUnavailable must not (a commit whose outcome is unknown may be
// either).
func TestCommitsCutOffByAShutdownApplyWholeOrNotAtAll(t *testing.T) {
	c := pgtest.NewCluster(t)
	s := mustOpen(t, c.NewDatabase(t), Options{})
	ctx := t.Context()
	const writers = 8
	type outcome int
	const (
		applied outcome = iota
		notApplied
		unknown
	)
	outcomes := make([][]outcome, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var ms []store.Mutation
				for _, row := range []string{"a", "b"} {
					k := store.Key{Space: "t", Partition: strconv.Itoa(w), Row: fmt.Sprintf("%s%05d", row, i)}
					ms = append(ms, store.Mutation{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 1, Value: make([]byte, 1000)})
				}
				err := s.Commit(ctx, ms)
				switch {
				case err == nil:
					outcomes[w] = append(outcomes[w], applied)
				case errors.Is(err, store.ErrUnavailable):
					outcomes[w] = append(outcomes[w], notApplied)
				default:
					t.Logf("writer %d commit %d: %v", w, i, err)
					outcomes[w] = append(outcomes[w], unknown)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	c.Stop(t)
	time.Sleep(100 * time.Millisecond)
	c.Restart(t)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	counts := map[outcome]int{}
	for w := range writers {
		present := map[string]bool{}
		err := s.Scan(ctx, store.PartitionRange("t", strconv.Itoa(w)), func(rec store.Record) (bool, error) {
			present[rec.Key.Row] = true
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range outcomes[w] {
			counts[o]++
			a, b := present[fmt.Sprintf("a%05d", i)], present[fmt.Sprintf("b%05d", i)]
			switch {
			case a != b:
				t.Errorf("writer %d commit %d half applied: a=%v b=%v", w, i, a, b)
			case o == applied && !a:
				t.Errorf("writer %d commit %d succeeded but is not there", w, i)
			case o == notApplied && a:
				t.Errorf("writer %d commit %d was reported unavailable but was applied", w, i)
			}
		}
	}
	t.Logf("commits applied %d, unavailable %d, outcome unknown %d", counts[applied], counts[notApplied], counts[unknown])
	if counts[notApplied] == 0 {
		t.Error("no commit met the outage")
	}
}

func TestOpenOfADeadPortFailsQuicklyAsUnavailable(t *testing.T) {
	start := time.Now()
	_, err := Open(t.Context(), "postgres://tabula@127.0.0.1:1/none?sslmode=disable", Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open = %v, want an error wrapping store.ErrUnavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Open took %v", d)
	}
}

func TestOpenRefusesASchemaNewerThanItKnows(t *testing.T) {
	dsn := pgtest.Start(t)
	mustOpen(t, dsn, Options{}).Close()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `UPDATE tabula_schema SET version = $1`, schemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), dsn, Options{})
	var tooNew *SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Found != schemaVersion+1 || tooNew.Known != schemaVersion {
		t.Fatalf("Open = %v, want SchemaTooNewError{%d, %d}", err, schemaVersion+1, schemaVersion)
	}
}

func TestStoresOpeningAtOnceCreateTheSchemaOnce(t *testing.T) {
	dsn := pgtest.Start(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := Open(t.Context(), dsn, Options{})
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	s := mustOpen(t, dsn, Options{})
	var version int
	s.withConn(t.Context(), func(conn *pgx.Conn) error {
		return conn.QueryRow(t.Context(), `SELECT version FROM tabula_schema`).Scan(&version)
	})
	if version != schemaVersion {
		t.Fatalf("schema version %d, want %d", version, schemaVersion)
	}
}

// TestKeyPredicatesUseThePrimaryKeyIndex checks the plans of the statements that read by
// key, with the generic plan PostgreSQL caches for prepared statements: point reads must be
// index lookups and scans index range scans, in index order; the only sorting allowed is the
// incremental sort of records sharing a key_head (see keys.go), never a sort of the whole
// range. DeleteSpace may be planned as a bitmap index scan, which also reads only the
// space's range of the index.
func TestKeyPredicatesUseThePrimaryKeyIndex(t *testing.T) {
	s := mustOpen(t, pgtest.Start(t), Options{})
	ctx := t.Context()
	// Enough rows in several spaces that a sequential scan would look attractive if the
	// index were unusable.
	for space := range 4 {
		var ms []store.Mutation
		for i := range 2000 {
			k := store.Key{Space: strconv.Itoa(space), Partition: strconv.Itoa(i % 50), Row: strconv.Itoa(i)}
			ms = append(ms, store.Mutation{Key: k, Version: 1, Value: []byte("v")})
			if len(ms) == 100 {
				if err := s.Commit(ctx, ms); err != nil {
					t.Fatal(err)
				}
				ms = ms[:0]
			}
		}
	}
	scan := func(from, end store.Key) []any {
		return []any{keyHead(from), keyHead(end), from.Space, from.Partition, from.Row, end.Space, end.Partition, end.Row, 1000}
	}
	point := store.Key{Space: "1", Partition: "7", Row: "7"}
	statements := []struct {
		name, sql string
		args      []any
	}{
		{"point read", sqlGet, keyArgs(point)},
		{"point read locking", sqlLock, keyArgs(point)},
		{"partition scan", sqlScanFrom, scan(store.Key{Space: "1", Partition: "7"}, store.Key{Space: "1", Partition: "7\x00"})},
		{"range scan, next page", sqlScanAfter, scan(store.Key{Space: "1", Partition: "1", Row: "1001"}, store.Key{Space: "1", Partition: "3"})},
		{"space scan", sqlScanFrom, scan(store.Key{Space: "1"}, store.Key{Space: "1\x00"})},
		{"delete space", sqlDeleteSpace, []any{keyHead(store.Key{Space: "1"}), keyHead(store.Key{Space: "1\x00"}), "1"}},
	}
	err := s.withConn(ctx, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "ANALYZE tabula_records"); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		for i, st := range statements {
			name := fmt.Sprintf("explained_%d", i)
			if _, err := conn.Prepare(ctx, name, st.sql); err != nil {
				return err
			}
			var args []string
			for _, a := range st.args {
				switch a := a.(type) {
				case string, []byte:
					args = append(args, fmt.Sprintf(`'\x%x'::bytea`, a))
				default:
					args = append(args, fmt.Sprint(a))
				}
			}
			var plan []string
			rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+name+"("+strings.Join(args, ", ")+")")
			if err != nil {
				return err
			}
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					return err
				}
				plan = append(plan, line)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			text := strings.Join(plan, "\n")
			t.Logf("%s:\n%s", st.name, text)
			fullSort := false
			for _, line := range plan {
				if strings.HasPrefix(strings.TrimLeft(line, " ->"), "Sort  (") { // a Sort node
					fullSort = true
				}
			}
			if !strings.Contains(text, "Index Scan on tabula_records_pkey") && !strings.Contains(text, "Index Scan using tabula_records_pkey") ||
				strings.Contains(text, "Seq Scan") || fullSort ||
				strings.Contains(text, "Incremental Sort") && !strings.Contains(text, "Presorted Key: key_head") {
				t.Errorf("%s is not an index scan of the primary key in key order:\n%s", st.name, text)
			}
		}
		_, err := conn.Exec(ctx, "RESET plan_cache_mode")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logBuffer collects a store's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count returns how many lines contain s.
func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

func TestOutageIsLoggedOnceAndItsEndWithItsLength(t *testing.T) {
	c := pgtest.NewCluster(t)
	var logs logBuffer
	s := mustOpen(t, c.NewDatabase(t), Options{Logger: logs.logger()})
	ctx := t.Context()
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	if err := s.Commit(ctx, []store.Mutation{{Key: k, Version: 1}}); err != nil {
		t.Fatal(err)
	}
	c.Stop(t)
	for range 5 {
		if _, err := s.Get(ctx, k); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Get with the database down: %v", err)
		}
	}
	if err := s.Commit(ctx, []store.Mutation{{Key: k, Version: 2}}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Commit with the database down: %v", err)
	}
	if n := logs.count("PostgreSQL is unreachable"); n != 1 {
		t.Errorf("the outage was logged %d times:\n%s", n, logs.String())
	}
	c.Restart(t)
	if _, err := s.Get(ctx, k); err != nil {
		t.Fatalf("Get once the database is back: %v", err)
	}
	if _, err := s.Get(ctx, k); err != nil {
		t.Fatal(err)
	}
	if n := logs.count("PostgreSQL is reachable again"); n != 1 || logs.count("outage=") != 1 {
		t.Errorf("the end of the outage was logged %d times, or without its length:\n%s", n, logs.String())
	}
	t.Logf("log:\n%s", logs.String())
}

func TestOpenWaitsForTheDatabaseToStart(t *testing.T) {
	c := pgtest.NewCluster(t)
	dsn := c.NewDatabase(t)
	c.Stop(t)
	var logs logBuffer
	opened := make(chan error, 1)
	go func() {
		s, err := Open(t.Context(), dsn, Options{StartupWait: time.Minute, Logger: logs.logger()})
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	c.Restart(t)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("Open once the database started: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Open did not return after the database started")
	}
	if n := logs.count("waiting for PostgreSQL"); n < 2 || logs.count("PostgreSQL is reachable") != 1 {
		t.Errorf("%d lines logged waiting:\n%s", n, logs.String())
	}
	t.Logf("log:\n%s", logs.String())
}

func TestOpenGivesUpWaitingAfterStartupWait(t *testing.T) {
	var logs logBuffer
	start := time.Now()
	_, err := Open(t.Context(), "postgres://tabula@127.0.0.1:1/none?sslmode=disable", Options{StartupWait: 1200 * time.Millisecond, Logger: logs.logger()})
	if d := time.Since(start); d < 1200*time.Millisecond || d > 4*time.Second {
		t.Errorf("Open gave up after %v, want about 1.2s", d)
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open = %v, want an error wrapping store.ErrUnavailable", err)
	}
	if n := logs.count("waiting for PostgreSQL"); n < 2 {
		t.Errorf("%d attempts logged:\n%s", n, logs.String())
	}
}

// TestStatementTheDatabaseNeverAcceptsIsReportedAsRefused makes the database refuse a value
// (a CHECK constraint an operator added): the commit fails at once with store.ErrRefused,
// which the service answers with a 400 that SDKs do not retry, instead of a 500 they would.
func TestStatementTheDatabaseNeverAcceptsIsReportedAsRefused(t *testing.T) {
	s := mustOpen(t, pgtest.Start(t), Options{})
	ctx := t.Context()
	err := s.withConn(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `ALTER TABLE tabula_records ADD CONSTRAINT small_values CHECK (length(value) < 100)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Commit(ctx, []store.Mutation{{Key: store.Key{Space: "t", Partition: "p", Row: "r"}, Version: 1, Value: make([]byte, 200)}})
	if !errors.Is(err, store.ErrRefused) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Commit of a value the database refuses: %v, want an error wrapping store.ErrRefused", err)
	}
}

// TestMigrationToVersion2KeepsEveryRecord creates a database as Tabula's first schema left
// it, with records, and opens it: the migration computes the new key columns of every
// record, which then reads, scans in order and updates as before, beside long keys the first
// schema could not hold.
func TestMigrationToVersion2KeepsEveryRecord(t *testing.T) {
	dsn := pgtest.Start(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`CREATE TABLE tabula_schema (id int8 PRIMARY KEY CHECK (id = 1), version int8 NOT NULL)`,
		`INSERT INTO tabula_schema VALUES (1, 1)`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations[0](ctx, tx); err != nil {
		t.Fatal(err)
	}
	var want []store.Record
	for i := range 2500 { // more than a page of the migration
		k := store.Key{Space: "t" + strconv.Itoa(i%3), Partition: "p\x00" + strconv.Itoa(i%7), Row: strconv.Itoa(i)}
		want = append(want, store.Record{Key: k, Version: int64(i), Value: []byte("v" + strconv.Itoa(i))})
		if _, err := tx.Exec(ctx, `INSERT INTO tabula_records VALUES ($1, $2, $3, $4, $5)`, []byte(k.Space), []byte(k.Partition), []byte(k.Row), int64(i), want[i].Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	s := mustOpen(t, dsn, Options{})
	for _, w := range want[:50] {
		if got, err := s.Get(ctx, w.Key); err != nil || got.Version != w.Version || string(got.Value) != string(w.Value) {
			t.Fatalf("Get(%v) after the migration: %+v, %v", w.Key, got, err)
		}
	}
	slices.SortFunc(want, func(a, b store.Record) int { return a.Key.Compare(b.Key) })
	for _, space := range []string{"t0", "t1", "t2"} {
		var got []store.Record
		err := s.Scan(ctx, store.SpaceRange(space), func(rec store.Record) (bool, error) {
			got = append(got, store.Record{Key: rec.Key, Version: rec.Version, Value: slices.Clone(rec.Value)})
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var wantSpace []store.Record
		for _, w := range want {
			if w.Key.Space == space {
				wantSpace = append(wantSpace, w)
			}
		}
		if len(got) != len(wantSpace) {
			t.Fatalf("space %s: %d records after the migration, want %d", space, len(got), len(wantSpace))
		}
		for i := range got {
			if got[i].Key != wantSpace[i].Key || got[i].Version != wantSpace[i].Version {
				t.Fatalf("space %s record %d: %v@%d, want %v@%d", space, i, got[i].Key, got[i].Version, wantSpace[i].Key, wantSpace[i].Version)
			}
		}
	}
	old := want[0].Key
	if err := s.Commit(ctx, []store.Mutation{{Key: old, Expect: store.Expect{Kind: store.ExpectVersion, Version: want[0].Version}, Version: 9999}}); err != nil {
		t.Fatalf("updating a migrated record: %v", err)
	}
	long := store.Key{Space: "t0", Partition: strings.Repeat("長", 1024), Row: strings.Repeat("鍵", 1024)}
	if err := s.Commit(ctx, []store.Mutation{{Key: long, Version: 1}}); err != nil {
		t.Fatalf("a long key after the migration: %v", err)
	}
}
