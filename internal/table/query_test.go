package table

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/odata"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

func newTestService(t testing.TB) *Service {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st)
}

// load fills partitions p0000.. with rows r00000.. directly through the store, 1000 per
// commit, so large tables load quickly.
func load(t testing.TB, s *Service, tbl Table, partitions, rows int) {
	t.Helper()
	var muts []store.Mutation
	flush := func() {
		if err := s.store.Commit(context.Background(), muts); err != nil {
			t.Fatal(err)
		}
		muts = muts[:0]
	}
	for p := range partitions {
		for r := range rows {
			e := edm.Entity{Properties: []edm.Property{{Name: "N", Value: edm.Value{Type: edm.Int32, Int: int64(r)}}}}
			muts = append(muts, store.Mutation{
				Key:     store.Key{Space: tbl.Space, Partition: fmt.Sprintf("p%04d", p), Row: fmt.Sprintf("r%05d", r)},
				Value:   e.MarshalBinary(),
				Version: int64(s.nextTimestamp(0)),
			})
			if len(muts) == 1000 {
				flush()
			}
		}
	}
	if len(muts) > 0 {
		flush()
	}
}

func mustFilter(t testing.TB, f string) *odata.Filter {
	t.Helper()
	flt, err := odata.ParseFilter(f)
	if err != nil {
		t.Fatal(err)
	}
	return flt
}

// TestQueryCostDoesNotGrowWithOtherPartitions pins the design guide's cost ladder: a point
// query reads one entity and a partition query reads only its partition, however many other
// partitions the table holds; a filter on a non-key property reads the whole table.
func TestQueryCostDoesNotGrowWithOtherPartitions(t *testing.T) {
	ctx := context.Background()
	for _, partitions := range []int{1, 10, 200} {
		s := newTestService(t)
		tbl, err := s.CreateTable(ctx, "acct", "costs")
		if err != nil {
			t.Fatal(err)
		}
		load(t, s, tbl, partitions, 50)
		cases := []struct {
			filter  string
			plan    Plan
			scanned int
			matched int
		}{
			{"PartitionKey eq 'p0000' and RowKey eq 'r00007'", PlanPoint, 1, 1},
			{"PartitionKey eq 'p0000' and RowKey eq 'nope'", PlanPoint, 0, 0},
			{"PartitionKey eq 'p0000'", PlanPartition, 50, 50},
			{"PartitionKey eq 'p0000' and RowKey ge 'r00010' and RowKey lt 'r00020'", PlanPartition, 10, 10},
			{"PartitionKey eq 'p0000' and N lt 5", PlanPartition, 50, 5},
			{"N eq 3", PlanTableScan, 50 * partitions, partitions},
			// A RowKey alone names no partition: every partition is read.
			{"RowKey eq 'r00007'", PlanTableScan, 50 * partitions, partitions},
			{"PartitionKey lt 'p0001'", PlanRange, 50, 50},
		}
		for _, tc := range cases {
			page, err := s.QueryEntities(ctx, tbl, Query{Filter: mustFilter(t, tc.filter)})
			if err != nil {
				t.Fatal(err)
			}
			if page.Plan != tc.plan || page.Scanned != tc.scanned || len(page.Entities) != tc.matched || page.Next != nil {
				t.Errorf("%d partitions, %q: plan %s, scanned %d, matched %d, next %v; want %s, %d, %d, none",
					partitions, tc.filter, page.Plan, page.Scanned, len(page.Entities), page.Next, tc.plan, tc.scanned, tc.matched)
			}
		}
	}
}

// queryAll follows continuations and returns the RowKeys in order.
func queryAll(t *testing.T, s *Service, tbl Table, q Query, between func(page int)) []string {
	t.Helper()
	var keys []string
	for page := 0; ; page++ {
		p, err := s.QueryEntities(context.Background(), tbl, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entities {
			keys = append(keys, e.PartitionKey+"/"+e.RowKey)
		}
		if p.Next == nil {
			return keys
		}
		if page > 10000 {
			t.Fatal("paging does not end")
		}
		if between != nil {
			between(page)
		}
		q.Resume = p.Next
	}
}

func TestPagingYieldsEveryEntityOnceDespiteWritesBetweenPages(t *testing.T) {
	ctx := context.Background()
	s := newTestService(t)
	tbl, _ := s.CreateTable(ctx, "acct", "paging")
	load(t, s, tbl, 3, 100)
	// Between pages, delete an entity already returned and insert one before the resume
	// point: neither may disturb the rest of the scan.
	keys := queryAll(t, s, tbl, Query{Top: 7, Filter: mustFilter(t, "N ge 0")}, func(page int) {
		if _, err := s.Write(ctx, tbl, Write{Kind: Delete, IfMatch: ETagCondition{Any: true},
			Entity: edm.Entity{PartitionKey: "p0000", RowKey: fmt.Sprintf("r%05d", page)}}); err != nil && page < 3 {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, tbl, Write{Kind: InsertOrReplace,
			Entity: edm.Entity{PartitionKey: "p0000", RowKey: fmt.Sprintf("a%05d", page)}}); err != nil {
			t.Fatal(err)
		}
	})
	if len(keys) != 300 {
		t.Fatalf("got %d entities, want 300", len(keys))
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("out of order or repeated: %s then %s", keys[i-1], keys[i])
		}
	}
}

func TestPageThatRunsOutOfTimeReturnsAContinuation(t *testing.T) {
	ctx := context.Background()
	s := newTestService(t)
	tbl, _ := s.CreateTable(ctx, "acct", "budget")
	load(t, s, tbl, 2, 1000)
	s.PageBudget = time.Nanosecond
	// A filter nothing matches: every page is empty but must carry a continuation until the
	// table is exhausted, and the scan must make progress on every page.
	pages := 0
	q := Query{Filter: mustFilter(t, "N eq -1")}
	for {
		p, err := s.QueryEntities(ctx, tbl, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Entities) != 0 || p.Scanned == 0 {
			t.Fatalf("page %d: %d entities, %d scanned", pages, len(p.Entities), p.Scanned)
		}
		if p.Next == nil {
			break
		}
		q.Resume = p.Next
	}
	if pages < 2 {
		t.Fatalf("a 1 ns budget produced %d page(s) for 2000 entities", pages)
	}
	s.PageBudget = time.Hour
	if keys := queryAll(t, s, tbl, Query{}, nil); len(keys) != 2000 {
		t.Fatalf("got %d entities, want 2000", len(keys))
	}
}

func TestTopBoundsEachPage(t *testing.T) {
	ctx := context.Background()
	s := newTestService(t)
	tbl, _ := s.CreateTable(ctx, "acct", "top")
	load(t, s, tbl, 1, 10)
	p, err := s.QueryEntities(ctx, tbl, Query{Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	// Exactly $top entities and nothing after them: no continuation.
	if len(p.Entities) != 10 || p.Next != nil {
		t.Fatalf("$top=10 on 10 entities: %d entities, next %v", len(p.Entities), p.Next)
	}
	p, _ = s.QueryEntities(ctx, tbl, Query{Top: 3})
	if len(p.Entities) != 3 || p.Next == nil || p.Next.RowKey != "r00003" {
		t.Fatalf("$top=3: %d entities, next %+v", len(p.Entities), p.Next)
	}
}

// BenchmarkPointQuery and BenchmarkPartitionScan measure the two cheapest rungs of the cost
// ladder on tables of different sizes: the point query's cost must not depend on the size.
func BenchmarkPointQuery(b *testing.B) {
	for _, size := range []struct{ partitions, rows int }{{10, 100}, {100, 10000}} {
		b.Run(fmt.Sprintf("entities=%d", size.partitions*size.rows), func(b *testing.B) {
			ctx := context.Background()
			s := newTestService(b)
			tbl, _ := s.CreateTable(ctx, "acct", "bench")
			load(b, s, tbl, size.partitions, size.rows)
			f := mustFilter(b, "PartitionKey eq 'p0003' and RowKey eq 'r00042'")
			b.ResetTimer()
			for b.Loop() {
				p, err := s.QueryEntities(ctx, tbl, Query{Filter: f})
				if err != nil || len(p.Entities) != 1 {
					b.Fatal(err, len(p.Entities))
				}
			}
		})
	}
}

func BenchmarkPartitionScan(b *testing.B) {
	for _, partitions := range []int{1, 100} {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			ctx := context.Background()
			s := newTestService(b)
			tbl, _ := s.CreateTable(ctx, "acct", "bench")
			load(b, s, tbl, partitions, 10000)
			f := mustFilter(b, "PartitionKey eq 'p0000'")
			b.ResetTimer()
			entities := 0
			for b.Loop() {
				q := Query{Filter: f}
				for {
					p, err := s.QueryEntities(ctx, tbl, q)
					if err != nil {
						b.Fatal(err)
					}
					entities += len(p.Entities)
					if p.Next == nil {
						break
					}
					q.Resume = p.Next
				}
			}
			b.ReportMetric(float64(entities)/b.Elapsed().Seconds(), "entities/s")
		})
	}
}

// benchEntity is about 1 KiB over 10 properties of mixed types, like tabula bench's.
func benchEntity(i int) edm.Entity {
	return edm.Entity{Properties: []edm.Property{
		{Name: "Category", Value: edm.Value{Type: edm.Int32, Int: int64(i % 100)}},
		{Name: "Name", Value: edm.Value{Type: edm.String, Str: fmt.Sprintf("name-%08d", i)}},
		{Name: "Note", Value: edm.Value{Type: edm.String, Str: string(make([]byte, 600))}},
		{Name: "Big", Value: edm.Value{Type: edm.Int64, Int: int64(i) << 33}},
		{Name: "Price", Value: edm.Value{Type: edm.Double, Float: float64(i) / 7}},
		{Name: "Active", Value: edm.Value{Type: edm.Boolean, Int: int64(i % 2)}},
		{Name: "When", Value: edm.Value{Type: edm.DateTime, Int: int64(edm.MinDateTime) + int64(i)}},
		{Name: "Id", Value: edm.Value{Type: edm.Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
		{Name: "Blob", Value: edm.Value{Type: edm.Binary, Bin: make([]byte, 256)}},
		{Name: "Code", Value: edm.Value{Type: edm.String, Str: "ABCDEFGHIJ"}},
	}}
}

// BenchmarkFilteredTableScan reads a 100k-entity table for a 1%-selective filter on a
// non-key property: the table-scan rung of the cost ladder.
func BenchmarkFilteredTableScan(b *testing.B) {
	ctx := context.Background()
	s := newTestService(b)
	tbl, _ := s.CreateTable(ctx, "acct", "bench")
	const n = 100000
	var muts []store.Mutation
	for i := range n {
		e := benchEntity(i)
		muts = append(muts, store.Mutation{Key: store.Key{Space: tbl.Space, Partition: fmt.Sprintf("p%02d", i%10), Row: fmt.Sprintf("r%07d", i)},
			Value: e.MarshalBinary(), Version: int64(s.nextTimestamp(0))})
		if len(muts) == 1000 {
			if err := s.store.Commit(ctx, muts); err != nil {
				b.Fatal(err)
			}
			muts = muts[:0]
		}
	}
	f := mustFilter(b, "Category eq 42")
	b.ResetTimer()
	for b.Loop() {
		q, matched := Query{Filter: f}, 0
		for {
			p, err := s.QueryEntities(ctx, tbl, q)
			if err != nil {
				b.Fatal(err)
			}
			matched += len(p.Entities)
			if p.Next == nil {
				break
			}
			q.Resume = p.Next
		}
		if matched != n/100 {
			b.Fatalf("matched %d", matched)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "examined/s")
}
