package postgres

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

// The benchmarks compare this backend with the embedded Pebble one at the store level, on
// the operations the Table service is made of. The PostgreSQL cluster of pgtest runs without
// fsync and synchronous commit while Pebble syncs its WAL, so commit figures flatter
// PostgreSQL; read figures are comparable (both served from memory), and show the cost of a
// round trip to the server.

var backends = []struct {
	name string
	open func(b *testing.B) store.Store
}{
	{"pebble", func(b *testing.B) store.Store {
		s, err := pebble.Open(b.TempDir(), pebble.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(b *testing.B) store.Store { return mustOpen(b, pgtest.Start(b), Options{}) }},
}

// benchValue is the size of a small entity in its stored form.
var benchValue = bytes.Repeat([]byte("v"), 200)

func forEachBackend(b *testing.B, bench func(b *testing.B, s store.Store)) {
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) { bench(b, backend.open(b)) })
	}
}

// populate writes n records to partition p of space "bench", 100 per commit.
func populate(b *testing.B, s store.Store, n int) []store.Key {
	keys := make([]store.Key, n)
	var ms []store.Mutation
	for i := range keys {
		keys[i] = store.Key{Space: "bench", Partition: "p", Row: fmt.Sprintf("%036d", i)}
		ms = append(ms, store.Mutation{Key: keys[i], Version: int64(i), Value: benchValue})
		if len(ms) == 100 || i == n-1 {
			if err := s.Commit(context.Background(), ms); err != nil {
				b.Fatal(err)
			}
			ms = ms[:0]
		}
	}
	return keys
}

func BenchmarkGet(b *testing.B) {
	forEachBackend(b, func(b *testing.B, s store.Store) {
		keys := populate(b, s, 10_000)
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			if _, err := s.Get(context.Background(), keys[rng.IntN(len(keys))]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
	})
}

// BenchmarkInsert commits inserts (ExpectAbsent) of size rows to one partition per writer,
// from 8 writers per GOMAXPROCS as an HTTP server under load would.
func BenchmarkInsert(b *testing.B) {
	for _, size := range []int{1, 100} {
		b.Run(fmt.Sprintf("rows=%d", size), func(b *testing.B) {
			forEachBackend(b, func(b *testing.B, s store.Store) {
				var writers atomic.Int64
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					partition := fmt.Sprintf("p%03d", writers.Add(1))
					ms := make([]store.Mutation, size)
					for i := 0; pb.Next(); i++ {
						for j := range ms {
							ms[j] = store.Mutation{
								Key:     store.Key{Space: "bench", Partition: partition, Row: fmt.Sprintf("r%09d-%03d", i, j)},
								Expect:  store.Expect{Kind: store.ExpectAbsent},
								Version: int64(i),
								Value:   benchValue,
							}
						}
						if err := s.Commit(context.Background(), ms); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		})
	}
}

// BenchmarkScanPartition reads a partition of 1000 records, a full query page.
func BenchmarkScanPartition(b *testing.B) {
	const n = 1000
	forEachBackend(b, func(b *testing.B, s store.Store) {
		populate(b, s, n)
		for b.Loop() {
			count := 0
			err := s.Scan(context.Background(), store.PartitionRange("bench", "p"), func(store.Record) (bool, error) {
				count++
				return true, nil
			})
			if err != nil || count != n {
				b.Fatalf("Scan = %v after %d records", err, count)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
