package bench

import (
	"math"
	"math/bits"
	"time"
)

// subBucketBits sets the histogram's precision: every power-of-two range of values is split
// into 2^subBucketBits equal buckets, so a recorded value is known to within 1/128 (0.8%).
const subBucketBits = 7

const (
	subBuckets = 1 << subBucketBits
	// numBuckets covers every non-negative int64: values below subBuckets are exact, and each
	// of the remaining 63-subBucketBits+1 powers of two has subBuckets buckets.
	numBuckets = (64 - subBucketBits) * subBuckets
)

// Histogram records durations in log-linear buckets (the HdrHistogram layout): memory is fixed
// (numBuckets counters, about 58 KiB) however many values are recorded, and every percentile
// it reports is within 0.8% of a value that was recorded. The zero value is empty and ready.
// A Histogram is not safe for concurrent use: each worker records into its own, and Merge
// combines them.
type Histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      float64 // nanoseconds; float so that long runs cannot overflow
	min, max int64
}

// bucketOf returns the bucket index of v (v >= 0).
func bucketOf(v int64) int {
	if v < subBuckets {
		return int(v)
	}
	exp := bits.Len64(uint64(v)) - 1 // >= subBucketBits
	shift := exp - subBucketBits
	top := v >> shift // in [subBuckets, 2*subBuckets)
	return (shift+1)*subBuckets + int(top-subBuckets)
}

// bucketRange returns the smallest value of bucket i and the number of values it holds.
func bucketRange(i int) (lowest, width int64) {
	if i < subBuckets {
		return int64(i), 1
	}
	shift := i/subBuckets - 1
	top := int64(subBuckets + i%subBuckets)
	return top << shift, 1 << shift
}

// Record adds one duration. Negative durations (a clock step) count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the average of the recorded values, zero when there are none.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Max is the largest recorded value, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the value below or at which a fraction q (0 < q <= 1) of the recorded values
// lie: the value of rank ceil(q·n), reported as the middle of its bucket and clamped to the
// exact minimum and maximum. It is zero when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	rank = min(rank, h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		lowest, width := bucketRange(i)
		v := lowest + (width-1)/2
		return time.Duration(min(max(v, h.min), h.max))
	}
	return time.Duration(h.max) // not reached: the counts add up to n
}
