package table

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/store"
)

// sharedStoreService is a Service over the same kind of store as newTestService, but seen as
// a shared one (the store.Exclusive marker hidden), so that it caches nothing.
func sharedStoreService(t testing.TB) *Service {
	type storeOnly struct{ store.Store }
	return New(storeOnly{newTestService(t).store})
}

func isTableNotFound(err error) bool {
	var e *azerr.Error
	return errors.As(err, &e) && e.Code == azerr.TableNotFound
}

// Every change a Service makes to a table is what its next lookup sees, cache or not.
func TestTableLookupsSeeEveryChange(t *testing.T) {
	for name, s := range map[string]*Service{"exclusive store": newTestService(t), "shared store": sharedStoreService(t)} {
		t.Run(name, func(t *testing.T) {
			if cached := s.tables != nil; cached != (name == "exclusive store") {
				t.Fatalf("table cache in use: %v", cached)
			}
			ctx := context.Background()
			if _, err := s.Table(ctx, "acct", "Orders"); !isTableNotFound(err) {
				t.Fatalf("before creation: %v, want TableNotFound", err)
			}
			first, err := s.CreateTable(ctx, "acct", "Orders")
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Table(ctx, "acct", "oRDERS")
			if err != nil || got.Space != first.Space || got.Name != "Orders" {
				t.Fatalf("after creation: %+v, %v", got, err)
			}
			policies := []AccessPolicy{{ID: "readers", Permission: "r"}}
			if err := s.SetTablePolicies(ctx, "acct", "orders", policies); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Table(ctx, "acct", "Orders"); len(got.Policies) != 1 || got.Policies[0].ID != "readers" {
				t.Fatalf("after Set Table ACL: policies %+v", got.Policies)
			}
			if err := s.DeleteTable(ctx, "acct", "ORDERS"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Table(ctx, "acct", "Orders"); !isTableNotFound(err) {
				t.Fatalf("after deletion: %v, want TableNotFound", err)
			}
			second, err := s.CreateTable(ctx, "acct", "orders")
			if err != nil {
				t.Fatal(err)
			}
			got, err = s.Table(ctx, "acct", "Orders")
			if err != nil || got.Space != second.Space || got.Space == first.Space || len(got.Policies) != 0 {
				t.Fatalf("after re-creation: %+v, %v (first space %s)", got, err, first.Space)
			}
		})
	}
}

// Lookups racing with deletions and re-creations never leave a deleted table in the cache:
// once the churn stops, every lookup answers what the store holds.
func TestTableCacheSettlesOnTheStoredTable(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	const tables = 4
	stop := repeatUntilStopped(4, func(_, i int) {
		_, _ = s.Table(ctx, "acct", fmt.Sprintf("churn%d", i%tables))
	})
	for round := 0; round < 200; round++ {
		name := fmt.Sprintf("churn%d", round%tables)
		if round%3 == 2 {
			_ = s.DeleteTable(ctx, "acct", name)
		} else {
			_, _ = s.CreateTable(ctx, "acct", name)
		}
	}
	stop()
	for i := 0; i < tables; i++ {
		name := fmt.Sprintf("churn%d", i)
		cached, cerr := s.Table(ctx, "acct", name)
		stored, serr := s.loadTable(ctx, "acct", name)
		if isTableNotFound(cerr) != isTableNotFound(serr) || cached.Space != stored.Space {
			t.Errorf("%s: lookup says %q (%v), store holds %q (%v)", name, cached.Space, cerr, stored.Space, serr)
		}
	}
}

// A write through a table looked up from the cache lands where a fresh lookup reads it.
func TestWriteThroughCachedTableIsReadBack(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	if _, err := s.CreateTable(ctx, "acct", "items"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTable(ctx, "acct", "items"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTable(ctx, "acct", "items"); err != nil {
		t.Fatal(err)
	}
	tbl, err := s.Table(ctx, "acct", "items")
	if err != nil {
		t.Fatal(err)
	}
	e := edm.Entity{PartitionKey: "p", RowKey: "r"}
	if _, err := s.Write(ctx, tbl, Write{Kind: Insert, Entity: e}); err != nil {
		t.Fatal(err)
	}
	fresh, err := s.loadTable(ctx, "acct", "items")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Entity(ctx, fresh, "p", "r"); err != nil {
		t.Fatalf("entity written through the cached table: %v", err)
	}
}

// Writes racing with deletions of their table never leave entities behind in a deleted
// table's space (where nothing would read or remove them): a write either lands before the
// deletion, and is removed with the table, or finds the table gone.
func TestWritesRacingTableDeletionLeaveNothingBehind(t *testing.T) {
	// Over an exclusive store writes and deletions exclude each other; over a shared one a
	// write may land after the deletion, and the sweep removes what it left.
	t.Run("exclusive store", func(t *testing.T) { testWritesRacingTableDeletion(t, newTestService(t), false) })
	t.Run("shared store, swept", func(t *testing.T) { testWritesRacingTableDeletion(t, sharedStoreService(t), true) })
}

func testWritesRacingTableDeletion(t *testing.T, s *Service, sweep bool) {
	ctx := context.Background()
	var mu sync.Mutex
	var spaces []string
	create := func() {
		tbl, err := s.CreateTable(ctx, "acct", "racing")
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		spaces = append(spaces, tbl.Space)
		mu.Unlock()
	}
	create()
	stop := repeatUntilStopped(8, func(worker, i int) {
		tbl, err := s.Table(ctx, "acct", "racing")
		if err != nil {
			return
		}
		e := edm.Entity{PartitionKey: "p", RowKey: fmt.Sprintf("w%d-%d", worker, i)}
		if _, err := s.Write(ctx, tbl, Write{Kind: InsertOrReplace, Entity: e}); err != nil && !isTableNotFound(err) {
			t.Error(err)
		}
	})
	for round := 0; round < 40; round++ {
		if err := s.DeleteTable(ctx, "acct", "racing"); err != nil {
			t.Fatal(err)
		}
		create()
	}
	stop()
	if sweep {
		if _, err := s.SweepDeletedTables(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	current, err := s.Table(ctx, "acct", "racing")
	if err != nil {
		t.Fatal(err)
	}
	for _, space := range spaces {
		if space == current.Space {
			continue
		}
		left := 0
		if err := s.store.Scan(ctx, store.SpaceRange(space), func(store.Record) (bool, error) {
			left++
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		if left > 0 {
			t.Errorf("deleted table's space %s still holds %d entities", space, left)
		}
	}
}

// repeatUntilStopped calls fn(worker, i) for i = 0, 1, … in each of n goroutines until the
// returned stop is called; stop waits for them to return.
func repeatUntilStopped(n int, fn func(worker, i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for worker := 0; worker < n; worker++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				fn(worker, i)
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

func countSpace(t *testing.T, s *Service, space string) int {
	t.Helper()
	n := 0
	if err := s.store.Scan(context.Background(), store.SpaceRange(space), func(store.Record) (bool, error) {
		n++
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A table deletion is remembered until a sweep has removed, once more, everything in the
// table's space: entities a stopped process left behind, and entities a write from another
// front-end committed after the deletion.
func TestSweepFinishesTableDeletions(t *testing.T) {
	for name, s := range map[string]*Service{"exclusive store": newTestService(t), "shared store": sharedStoreService(t)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
			s.now = func() time.Time { return clock }

			// Deleted normally; then an entity lands in the space, as a write racing the
			// deletion from another front-end would leave it.
			deleted, _ := s.CreateTable(ctx, "acct", "deleted")
			if err := s.DeleteTable(ctx, "acct", "deleted"); err != nil {
				t.Fatal(err)
			}
			put := store.Mutation{Key: store.Key{Space: deleted.Space, Partition: "p", Row: "late"}, Value: []byte{1}, Version: 1}
			if err := s.store.Commit(ctx, []store.Mutation{put}); err != nil {
				t.Fatal(err)
			}

			// Deleted by a process that stopped before removing the entities: the deletion's
			// commit alone, as DeleteTable makes it.
			stopped, _ := s.CreateTable(ctx, "acct", "stopped")
			for i := 0; i < 3; i++ {
				if _, err := s.Write(ctx, stopped, Write{Kind: Insert, Entity: edm.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.store.Commit(ctx, []store.Mutation{
				{Key: tableKey("acct", "stopped"), Delete: true},
				{Key: store.Key{Space: deletedSpace, Row: stopped.Space}, Value: []byte{}, Version: int64(edm.TicksOf(clock))},
			}); err != nil {
				t.Fatal(err)
			}
			s.forgetTable("acct", "stopped")

			kept, _ := s.CreateTable(ctx, "acct", "kept")
			if _, err := s.Write(ctx, kept, Write{Kind: Insert, Entity: edm.Entity{PartitionKey: "p", RowKey: "r"}}); err != nil {
				t.Fatal(err)
			}

			if n, err := s.SweepDeletedTables(ctx, time.Minute); err != nil || n != 0 {
				t.Fatalf("sweep within the grace period: %d swept, %v", n, err)
			}
			if countSpace(t, s, deleted.Space) != 1 || countSpace(t, s, stopped.Space) != 3 {
				t.Fatal("a sweep within the grace period removed entities")
			}
			clock = clock.Add(2 * time.Minute)
			if n, err := s.SweepDeletedTables(ctx, time.Minute); err != nil || n != 2 {
				t.Fatalf("sweep after the grace period: %d swept, %v; want 2", n, err)
			}
			if a, b := countSpace(t, s, deleted.Space), countSpace(t, s, stopped.Space); a != 0 || b != 0 {
				t.Fatalf("after the sweep: %d and %d entities left in the deleted tables' spaces", a, b)
			}
			if n := countSpace(t, s, deletedSpace); n != 0 {
				t.Fatalf("%d deletions still remembered after the sweep", n)
			}
			if countSpace(t, s, kept.Space) != 1 {
				t.Fatal("the sweep touched a table that was not deleted")
			}
			if n, err := s.SweepDeletedTables(ctx, 0); err != nil || n != 0 {
				t.Fatalf("second sweep: %d swept, %v", n, err)
			}
		})
	}
}
