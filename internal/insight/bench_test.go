package insight

import (
	"strconv"
	"sync/atomic"
	"testing"
)

// The design guide's watch runs inside every table request, so its cost is measured here per
// observed operation, from many goroutines on one table (the contended case: one table's
// figures share a lock). Compare the ns/op with a request's own server CPU (tens of µs:
// BENCHMARKS.md) to see what watching costs.

// partitions are the keys the benchmarks spread over: a busy table's working set.
var partitions = func() []string {
	p := make([]string, 1000)
	for i := range p {
		p[i] = "customer-" + strconv.Itoa(i)
	}
	return p
}()

func BenchmarkObserveInsert(b *testing.B) {
	o := New(DefaultConfig(), nil)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			o.Write("devstoreaccount1", "Orders", partitions[i%int64(len(partitions))], 1, true, 1400, 11)
		}
	})
}

func BenchmarkObservePointRead(b *testing.B) {
	o := New(DefaultConfig(), nil)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			o.Read("devstoreaccount1", "Orders", partitions[i%int64(len(partitions))], 1)
		}
	})
}

func BenchmarkObserveQuery(b *testing.B) {
	o := New(DefaultConfig(), nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.Query("devstoreaccount1", "Orders", "PartitionKey eq 'customer-7' and Total gt 100.5", "partition-range", 120, 12)
		}
	})
}

// BenchmarkJudge is the once-a-second pass over every table's window.
func BenchmarkJudge(b *testing.B) {
	o := New(DefaultConfig(), nil)
	for t := range 100 {
		table := "table" + strconv.Itoa(t)
		for i := range 1000 {
			o.Write("devstoreaccount1", table, partitions[i], 1, true, 1400, 11)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		o.Judge()
	}
}
