package postgres

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

func TestCollectorCountsCommitsTheirRecordsAndTheServersWALSyncs(t *testing.T) {
	s := mustOpen(t, pgtest.Start(t), Options{})
	gather := func() map[string]float64 {
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
					out[mf.GetName()] = c.GetValue()
				}
			}
		}
		return out
	}
	before := gather()
	for i := range 5 {
		ms := []store.Mutation{
			{Key: store.Key{Space: "s", Partition: "p", Row: fmt.Sprint("a", i)}, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 1, Value: []byte("v")},
			{Key: store.Key{Space: "s", Partition: "p", Row: fmt.Sprint("b", i)}, Version: 1, Value: []byte("v")},
			{Key: store.Key{Space: "s", Partition: "p", Row: fmt.Sprint("c", i)}, Version: 1, Value: []byte("v")},
		}
		if err := s.Commit(t.Context(), ms); err != nil {
			t.Fatal(err)
		}
	}
	// A commit refused by its condition is not counted.
	refused := []store.Mutation{{Key: store.Key{Space: "s", Partition: "p", Row: "a0"}, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 2}}
	if err := s.Commit(t.Context(), refused); err == nil {
		t.Fatal("an insert of an existing key was committed")
	}
	after := gather()
	if got := after["tabula_store_commits_total"] - before["tabula_store_commits_total"]; got != 5 {
		t.Errorf("commits counted %v, want 5", got)
	}
	if got := after["tabula_store_mutations_total"] - before["tabula_store_mutations_total"]; got != 15 {
		t.Errorf("mutations counted %v, want 15", got)
	}
	// The server's counts are its own (every client's) and reach pg_stat_wal late, so only
	// their presence is certain.
	for _, name := range []string{"tabula_store_syncs_total", "tabula_store_wal_writes_total"} {
		if _, ok := after[name]; !ok {
			t.Errorf("%s missing: pg_stat_wal was not read", name)
		}
	}
}
