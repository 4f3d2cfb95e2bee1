package postgres

import (
	"context"
	"errors"
	"fmt"
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
// index lookups and scans index range scans, in index order without a sort. DeleteSpace may
// be planned as a bitmap index scan, which also reads only the space's range of the index.
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
	statements := []struct {
		name, sql string
		args      []any
	}{
		{"point read", sqlGet, []any{"1", "7", "7"}},
		{"point read locking", sqlLock, []any{"1", "7", "7"}},
		{"partition scan", sqlScanFrom, []any{"1", "7", "", "1", "7\x00", "", 1000}},
		{"range scan, next page", sqlScanAfter, []any{"1", "1", "1001", "1", "3", "", 1000}},
		{"space scan", sqlScanFrom, []any{"1", "", "", "1\x00", "", "", 1000}},
		{"delete space", sqlDeleteSpace, []any{"1"}},
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
				if str, ok := a.(string); ok {
					args = append(args, `'\x`+fmt.Sprintf("%x", str)+`'::bytea`)
				} else {
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
			if !strings.Contains(text, "Index Scan on tabula_records_pkey") && !strings.Contains(text, "Index Scan using tabula_records_pkey") ||
				strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") {
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
