package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBucketsCoverEveryValueInOrder(t *testing.T) {
	// Every value lies in the bucket bucketOf names, and buckets are contiguous.
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 257, 1000, 1 << 20, 1<<20 + 12345, 1<<40 - 1, math.MaxInt64} {
		i := bucketOf(v)
		lo, width := bucketRange(i)
		if v < lo || v-lo >= width {
			t.Errorf("value %d in bucket %d = [%d, %d+%d)", v, i, lo, lo, width)
		}
		if i >= numBuckets {
			t.Errorf("value %d: bucket %d out of %d", v, i, numBuckets)
		}
	}
	for i := 1; i < numBuckets; i++ {
		lo, _ := bucketRange(i)
		plo, pw := bucketRange(i - 1)
		if plo+pw != lo {
			t.Fatalf("bucket %d starts at %d, bucket %d ends at %d", i, lo, i-1, plo+pw)
		}
	}
}

func TestHistogramSmallValuesAreExact(t *testing.T) {
	var h Histogram
	for v := 1; v <= 100; v++ {
		h.Record(time.Duration(v))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.01, 1}, {0.5, 50}, {0.99, 99}, {0.999, 100}, {1, 100}} {
		if got := h.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %d, want %d", c.q, got, c.want)
		}
	}
	if h.Count() != 100 || h.Max() != 100 || h.Mean() != 50 {
		t.Errorf("count %d max %d mean %d, want 100 100 50", h.Count(), h.Max(), h.Mean())
	}
}

// Percentiles of a known distribution, recorded by several workers in shuffled order and
// merged, are within the histogram's 1/128 precision of the exact ones.
func TestHistogramPercentilesOfUniformAndExponentialDistributions(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for name, gen := range map[string]func() time.Duration{
		"uniform 0-100ms":  func() time.Duration { return time.Duration(rng.Int64N(int64(100 * time.Millisecond))) },
		"exponential 2ms":  func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(2*time.Millisecond)) },
		"bimodal 50µs/1ms": bimodal(rng),
	} {
		t.Run(name, func(t *testing.T) {
			const n = 200_000
			values := make([]time.Duration, n)
			var workers [4]Histogram
			for i := range values {
				values[i] = gen()
				workers[i%len(workers)].Record(values[i])
			}
			var h Histogram
			for i := range workers {
				h.Merge(&workers[i])
			}
			slices.Sort(values)
			if h.Count() != n || h.Max() != values[n-1] {
				t.Fatalf("count %d max %v, want %d %v", h.Count(), h.Max(), n, values[n-1])
			}
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
				exact := values[int(math.Ceil(q*n))-1]
				got := h.Quantile(q)
				if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 1.0/subBuckets {
					t.Errorf("p%v = %v, exact %v (off by %.2f%%)", q*100, got, exact, rel*100)
				}
			}
		})
	}
}

func bimodal(rng *rand.Rand) func() time.Duration {
	return func() time.Duration {
		if rng.IntN(100) < 95 {
			return 50*time.Microsecond + time.Duration(rng.Int64N(int64(5*time.Microsecond)))
		}
		return time.Millisecond + time.Duration(rng.Int64N(int64(100*time.Microsecond)))
	}
}

func TestEmptyHistogramReportsZero(t *testing.T) {
	var h, empty Histogram
	h.Merge(&empty)
	if h.Quantile(0.99) != 0 || h.Mean() != 0 || h.Max() != 0 || h.Count() != 0 {
		t.Errorf("empty histogram: p99 %v mean %v max %v count %d", h.Quantile(0.99), h.Mean(), h.Max(), h.Count())
	}
}
