package pebble

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/internal/store"
)

// gather returns the store's counters by metric name.
func gather(t *testing.T, s *Store) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				out[mf.GetName()] += c.GetValue()
			}
		}
	}
	return out
}

func TestCollectorCountsCommitsAndTheWALSyncsThatMadeThemDurable(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	ctx := context.Background()
	before := gather(t, s)
	put := func(row string) store.Mutation {
		return store.Mutation{Key: store.Key{Space: "s", Partition: "p", Row: row}, Value: []byte("v"), Version: 1}
	}
	// One after the other, each commit waits for a sync of its own.
	for i := range 10 {
		if err := s.Commit(ctx, []store.Mutation{put(fmt.Sprint("a", i)), put(fmt.Sprint("b", i))}); err != nil {
			t.Fatal(err)
		}
	}
	after := gather(t, s)
	delta := func(name string) float64 { return after[name] - before[name] }
	if got := delta("tabula_store_commits_total"); got != 10 {
		t.Errorf("commits counted %v, want 10", got)
	}
	if got := delta("tabula_store_mutations_total"); got != 20 {
		t.Errorf("mutations counted %v, want 20", got)
	}
	if got := delta("tabula_store_syncs_total"); got < 10 {
		t.Errorf("WAL syncs counted %v for 10 commits made one after the other, want at least 10", got)
	}
	if got := delta("tabula_store_wal_writes_total"); got < 10 {
		t.Errorf("WAL writes counted %v for 10 commits, want at least 10", got)
	}

	// Concurrent commits may share syncs, never need more than one each.
	before = after
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				if err := s.Commit(ctx, []store.Mutation{put(fmt.Sprint("c", w, "-", i))}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	after = gather(t, s)
	if got := delta("tabula_store_commits_total"); got != 320 {
		t.Errorf("commits counted %v, want 320", got)
	}
	if got := delta("tabula_store_syncs_total"); got < 1 || got > 320 {
		t.Errorf("WAL syncs counted %v for 320 concurrent commits, want 1 to 320", got)
	}
	t.Logf("320 commits from 16 goroutines: %v syncs, %v WAL writes", delta("tabula_store_syncs_total"), delta("tabula_store_wal_writes_total"))
}
