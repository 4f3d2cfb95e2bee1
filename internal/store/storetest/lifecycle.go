package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

func testDeleteSpaceLeavesOtherSpacesIntact(t *testing.T, s store.Store) {
	// The neighbours of "t" in key order, including spaces it is a prefix of.
	spaces := []string{"", "s", "t", "t\x00", "t\x00\x00", "ta", "u", "\xff"}
	var kept []store.Record
	for _, space := range spaces {
		for _, partition := range []string{"", "p", "t"} {
			for _, row := range []string{"", "r"} {
				k := store.Key{Space: space, Partition: partition, Row: row}
				put(t, s, k, 1, k.String())
				if space != "t" {
					kept = append(kept, store.Record{Key: k, Version: 1, Value: []byte(k.String())})
				}
			}
		}
	}

	if err := s.DeleteSpace(t.Context(), "t"); err != nil {
		t.Fatalf("DeleteSpace: %v", err)
	}
	requireRecords(t, "deleted space", scanAll(t, s, store.SpaceRange("t")), nil)
	if _, ok := get(t, s, store.Key{Space: "t", Partition: "p", Row: "r"}); ok {
		t.Fatal("Get found a record of a deleted space")
	}
	var left []store.Record
	for _, space := range spaces {
		left = append(left, scanAll(t, s, store.SpaceRange(space))...)
	}
	requireRecords(t, "other spaces", left, kept)

	// The space can be used again, and deleting a space with no records is a no-op.
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	commit(t, s, store.Mutation{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 2, Value: []byte("new")})
	if got, ok := get(t, s, k); !ok || got.Version != 2 {
		t.Fatalf("record written after DeleteSpace: %+v (found %v)", got, ok)
	}
	if err := s.DeleteSpace(t.Context(), "never-written"); err != nil {
		t.Fatalf("DeleteSpace of an empty space: %v", err)
	}
}

func testDeleteSpaceIsAtomicForReaders(t *testing.T, s store.Store) {
	const n = 300
	var ms []store.Mutation
	for i := range n {
		ms = append(ms, store.Mutation{
			Key:     store.Key{Space: "t", Partition: strconv.Itoa(i % 7), Row: strconv.Itoa(i)},
			Version: 1,
		})
	}
	commit(t, s, ms...)

	deleted := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			// Read whether DeleteSpace has returned before scanning: a scan started after
			// that must see nothing.
			after := stopped(deleted)
			count := 0
			err := s.Scan(t.Context(), store.SpaceRange("t"), func(store.Record) (bool, error) {
				count++
				return true, nil
			})
			if err != nil {
				t.Errorf("Scan: %v", err)
				return
			}
			if count != 0 && count != n {
				t.Errorf("Scan during DeleteSpace saw %d of %d records", count, n)
				return
			}
			if after {
				if count != 0 {
					t.Errorf("Scan after DeleteSpace returned saw %d records", count)
				}
				return
			}
		}
	})
	if err := s.DeleteSpace(t.Context(), "t"); err != nil {
		t.Errorf("DeleteSpace: %v", err)
	}
	close(deleted)
	wg.Wait()
}

func testConditionalIncrementsAreExact(t *testing.T, s store.Store) {
	// Each writer increments a counter with read-modify-write commits conditioned on the
	// version it read, retrying on conflict. Lost or doubled updates change the total.
	const writers, increments = 8, 25
	k := store.Key{Space: "t", Partition: "counter", Row: ""}
	put(t, s, k, 0, "0")

	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			cur, err := s.Get(t.Context(), k)
			for done := 0; done < increments; {
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				n, _ := strconv.Atoi(string(cur.Value))
				next := store.Mutation{
					Key:     k,
					Expect:  store.Expect{Kind: store.ExpectVersion, Version: cur.Version},
					Version: cur.Version + 1,
					Value:   []byte(strconv.Itoa(n + 1)),
				}
				err = s.Commit(t.Context(), []store.Mutation{next})
				var cf *store.ConditionFailedError
				switch {
				case err == nil:
					done++
					cur = store.Record{Key: k, Version: next.Version, Value: next.Value}
				case errors.As(err, &cf) && cf.Found != nil:
					// Lost the race: retry from what the winner wrote.
					cur, err = *cf.Found, nil
				default:
					t.Errorf("Commit: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	got, _ := get(t, s, k)
	const want = writers * increments
	if got.Version != want || string(got.Value) != strconv.Itoa(want) {
		t.Fatalf("counter = version %d value %q, want %d", got.Version, got.Value, want)
	}
}

func testExactlyOneConcurrentInsertWins(t *testing.T, s store.Store) {
	const writers = 8
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		winner = -1
		losers []*store.ConditionFailedError
	)
	for i := range writers {
		wg.Go(func() {
			err := s.Commit(t.Context(), []store.Mutation{{
				Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: int64(i), Value: []byte("insert"),
			}})
			mu.Lock()
			defer mu.Unlock()
			var cf *store.ConditionFailedError
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Errorf("inserts %d and %d both succeeded", winner, i)
			case errors.As(err, &cf):
				losers = append(losers, cf)
			default:
				t.Errorf("Commit: %v", err)
			}
		})
	}
	wg.Wait()
	if winner < 0 {
		t.Fatal("no insert succeeded")
	}
	for _, cf := range losers {
		if cf.Found == nil || cf.Found.Version != int64(winner) {
			t.Errorf("losing insert found %+v, want the winner's record (version %d)", cf.Found, winner)
		}
	}
}

func testWritersOfDifferentPartitionsAllSucceed(t *testing.T, s store.Store) {
	const writers, commits = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range commits {
				k := store.Key{Space: "t", Partition: fmt.Sprintf("p%d", w), Row: fmt.Sprintf("r%02d", i)}
				err := s.Commit(t.Context(), []store.Mutation{{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 1}})
				if err != nil {
					t.Errorf("Commit(%v): %v", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := len(scanAll(t, s, store.SpaceRange("t"))); got != writers*commits {
		t.Fatalf("%d records after %d commits", got, writers*commits)
	}
}

func testCloseWaitsForInFlightCalls(t *testing.T, s store.Store) {
	populateRows(t, s, 1)
	inScan, release := make(chan struct{}), make(chan struct{})
	scanErr := make(chan error, 1)
	go func() {
		scanErr <- s.Scan(t.Context(), store.SpaceRange("t"), func(store.Record) (bool, error) {
			close(inScan)
			<-release
			return true, nil
		})
	}()
	<-inScan

	closeErr := make(chan error, 1)
	go func() { closeErr <- s.Close() }()
	select {
	case err := <-closeErr:
		close(release)
		t.Fatalf("Close returned (%v) while a Scan was in progress", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-scanErr; err != nil {
		t.Errorf("Scan in progress during Close: %v", err)
	}
	if err := <-closeErr; err != nil {
		t.Errorf("Close: %v", err)
	}
}

func testCallsAfterCloseReturnErrClosed(t *testing.T, s store.Store) {
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	put(t, s, k, 1, "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	if _, err := s.Get(ctx, k); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	err := s.Scan(ctx, store.SpaceRange("t"), func(store.Record) (bool, error) {
		t.Error("Scan after Close called fn")
		return false, nil
	})
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Scan after Close: %v, want ErrClosed", err)
	}
	if err := s.Commit(ctx, []store.Mutation{{Key: k, Delete: true}}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Commit after Close: %v, want ErrClosed", err)
	}
	if err := s.DeleteSpace(ctx, "t"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("DeleteSpace after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}
