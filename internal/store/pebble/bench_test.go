package pebble

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

// benchValue is the size of a small entity in its stored form.
var benchValue = bytes.Repeat([]byte("v"), 200)

// BenchmarkCommitSingle measures durable single-record commits (fsync'd, on disk) from many
// concurrent writers, each to its own partition: the rate group commit sustains.
func BenchmarkCommitSingle(b *testing.B) {
	for _, mode := range []struct {
		name   string
		expect store.ExpectKind
	}{{"Unconditional", store.ExpectAnything}, {"Insert", store.ExpectAbsent}} {
		b.Run(mode.name, func(b *testing.B) {
			s := mustOpen(b, b.TempDir(), Options{})
			defer s.Close()
			var writers atomic.Int64
			b.SetParallelism(16) // writers per GOMAXPROCS: an HTTP server has many requests in flight
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				partition := fmt.Sprintf("p%03d", writers.Add(1))
				for i := 0; pb.Next(); i++ {
					m := store.Mutation{
						Key:     store.Key{Space: "bench", Partition: partition, Row: fmt.Sprintf("r%09d", i)},
						Expect:  store.Expect{Kind: mode.expect},
						Version: int64(i),
						Value:   benchValue,
					}
					if err := s.Commit(context.Background(), []store.Mutation{m}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// populatePartition writes n records to one partition in batches and flushes them to
// sstables, so that reads go through the block cache rather than the memtable.
func populatePartition(b *testing.B, s *Store, partition string, n int) []store.Key {
	keys := make([]store.Key, n)
	var ms []store.Mutation
	for i := range keys {
		keys[i] = store.Key{Space: "bench", Partition: partition, Row: fmt.Sprintf("%036d", i)}
		ms = append(ms, store.Mutation{Key: keys[i], Version: int64(i), Value: benchValue})
		if len(ms) == 100 || i == n-1 {
			if err := s.Commit(context.Background(), ms); err != nil {
				b.Fatal(err)
			}
			ms = ms[:0]
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	return keys
}

func BenchmarkGet(b *testing.B) {
	s := mustOpen(b, b.TempDir(), Options{})
	defer s.Close()
	keys := populatePartition(b, s, "p", 10_000)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(context.Background(), keys[rng.IntN(len(keys))]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}

func BenchmarkScan(b *testing.B) {
	const n = 10_000
	s := mustOpen(b, b.TempDir(), Options{})
	defer s.Close()
	populatePartition(b, s, "p", n)
	b.ReportAllocs()
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
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
}

// BenchmarkCommitBatchOfInserts measures the commit of an entity group transaction: 100
// inserts into one partition, each expecting its key absent, into a table that already holds
// 100,000 records in sstables. In memory, so that the condition checks and the batch, not
// the fsync, are measured.
func BenchmarkCommitBatchOfInserts(b *testing.B) {
	s := mustOpen(b, "", Options{InMemory: true})
	defer s.Close()
	for p := range 10 {
		populatePartition(b, s, fmt.Sprintf("p%d", p), 10_000)
	}
	ms := make([]store.Mutation, 100)
	b.ReportAllocs()
	batches := 0
	for b.Loop() {
		for i := range ms {
			ms[i] = store.Mutation{
				Key:     store.Key{Space: "bench", Partition: "p3", Row: fmt.Sprintf("new%09d-%03d", batches, i)},
				Expect:  store.Expect{Kind: store.ExpectAbsent},
				Version: 1,
				Value:   benchValue,
			}
		}
		if err := s.Commit(context.Background(), ms); err != nil {
			b.Fatal(err)
		}
		batches++
	}
	b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "inserts/s")
}

// BenchmarkCommitSequential measures one writer's durable inserts of ~1.4 KB records, one
// after the other, on a new store: each waits for a WAL sync of its own, so this is the
// latency of a durable write, and the CPU it costs, as a lone client sees them.
func BenchmarkCommitSequential(b *testing.B) {
	s := mustOpen(b, b.TempDir(), Options{})
	defer s.Close()
	value := make([]byte, 1400)
	cpu0 := processCPU()
	i := 0
	for b.Loop() {
		m := store.Mutation{Key: store.Key{Space: "bench", Partition: "p", Row: fmt.Sprintf("r%09d", i)},
			Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 1, Value: value}
		if err := s.Commit(context.Background(), []store.Mutation{m}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(i), "cpu-µs/commit")
}

// BenchmarkCommitWithThinkTime is BenchmarkCommitSingle's inserts from 16 writers that each
// spend about 100 µs of CPU between commits, as serving an HTTP write does. It reports the
// CPU time of the process per commit and how many commits each WAL sync made durable.
func BenchmarkCommitWithThinkTime(b *testing.B) {
	work := make([]byte, 64<<10)
	var sink atomic.Uint32
	s := mustOpen(b, b.TempDir(), Options{})
	defer s.Close()
	var writers atomic.Int64
	b.SetParallelism(8)
	cpu0, syncs0 := processCPU(), s.wal.syncs.Load()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		partition := fmt.Sprintf("p%03d", writers.Add(1))
		for i := 0; pb.Next(); i++ {
			for range 6 {
				sink.Add(crc32.ChecksumIEEE(work))
			}
			m := store.Mutation{Key: store.Key{Space: "bench", Partition: partition, Row: fmt.Sprintf("r%09d", i)},
				Expect: store.Expect{Kind: store.ExpectAbsent}, Version: int64(i), Value: benchValue}
			if err := s.Commit(context.Background(), []store.Mutation{m}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/commit")
	b.ReportMetric(float64(b.N)/float64(s.wal.syncs.Load()-syncs0), "commits/sync")
}

// BenchmarkAppendingPartitions measures the store under sustained batch inserts whose keys
// rise within each of 16 partitions (16 writers, one partition each, 100 records of ~1.2 KB
// per commit, each expecting its key absent; an op is one commit), durable and on disk, so that
// flushes and compactions, not just commits, are counted: the process's CPU per record and
// the bytes Pebble wrote to sstables per byte of record (write amplification). Run it long
// enough for compactions to matter: -benchtime=6000x is 600,000 records.
func BenchmarkAppendingPartitions(b *testing.B) {
	s := mustOpen(b, b.TempDir(), Options{})
	defer s.Close()
	values := make([][]byte, 4096)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range values {
		values[i] = entityLikeValue(rng, i)
	}
	var writers atomic.Int64
	b.SetParallelism(8) // 16 writers on 2 cores
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := writers.Add(1)
		partition := fmt.Sprintf("w%02d", w)
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		ms := make([]store.Mutation, 100)
		for n := 0; pb.Next(); n++ {
			for i := range ms {
				ms[i] = store.Mutation{Key: store.Key{Space: "t", Partition: partition, Row: fmt.Sprintf("r%010d", n*len(ms)+i)},
					Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 1, Value: values[rng.IntN(len(values))]}
			}
			if err := s.Commit(context.Background(), ms); err != nil {
				b.Error(err)
				return
			}
		}
	})
	records := float64(100 * b.N)
	b.ReportMetric(records/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/records, "cpu-µs/record")
	total := s.db.Metrics().Total()
	b.ReportMetric(total.WriteAmp(), "write-amp")
}

// entityLikeValue is about what a 1.4 KB JSON entity of mixed types is once stored: property
// names and small values, then ~900 bytes of padding as random as a client's data may be.
func entityLikeValue(rng *rand.Rand, i int) []byte {
	b := fmt.Appendf(nil, "\x01Category\x02%d\x01Units\x02%d\x01Name\x03entity %d\x01Region\x03westeurope\x01Counter\x04%d\x01Payload\x09",
		i%100, i%1000*7, i, i*1000003)
	for range 390 {
		b = append(b, byte(rng.Uint32()))
	}
	b = append(b, "\x01Description\x03"...)
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for range 520 {
		b = append(b, chars[rng.IntN(len(chars))])
	}
	return b
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
