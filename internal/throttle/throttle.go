// Package throttle holds the Table service to Azure's scalability targets when asked to
// (--throttle): about 2,000 entities a second per partition and 20,000 per account. Azure
// answers traffic beyond them with 503 ServerBusy, and a client that does not back off and
// retry fails in production; throttling here lets that be tested on a laptop. It never changes
// what a request does, only whether it is served now.
package throttle

import (
	"sync"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/metrics"
)

// Azure's documented targets for the Table service.
const (
	DefaultPartitionRate = 2000  // entities per second, one partition
	DefaultAccountRate   = 20000 // entities per second, one account
)

// Limiter meters entities per partition and per account with token buckets that hold one
// second's worth, so a burst up to the rate passes and a sustained rate above it does not.
// The zero value is not usable; a nil *Limiter throttles nothing.
type Limiter struct {
	partitionRate, accountRate float64
	now                        func() time.Time

	mu         sync.Mutex
	partitions map[partitionKey]*bucket
	accounts   map[string]*bucket
	takes      int // since the last sweep of idle buckets
}

type partitionKey struct{ account, table, partition string }

// New returns a Limiter at the given rates in entities per second.
func New(partitionRate, accountRate float64) *Limiter {
	return &Limiter{partitionRate: partitionRate, accountRate: accountRate, now: time.Now,
		partitions: map[partitionKey]*bucket{}, accounts: map[string]*bucket{}}
}

type bucket struct {
	tokens float64
	at     time.Time
}

// fill refills b at rate up to one second's worth and returns its tokens.
func (b *bucket) fill(now time.Time, rate float64) float64 {
	b.tokens = min(rate, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	return b.tokens
}

// Take admits a request acting on n entities of one partition (partition "" for a request
// that spans partitions: only the account is metered), or refuses it with Azure's 503
// ServerBusy, taking nothing then. A request larger than a bucket passes when the bucket is
// full, so that a 100-entity batch is never refused at a rate below 100.
func (l *Limiter) Take(account, table, partition string, n int) error {
	if l == nil {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	want := float64(n)
	acct := bucketOf(l.accounts, account, now, l.accountRate)
	if acct.fill(now, l.accountRate) < min(want, l.accountRate) {
		metrics.Throttled.WithLabelValues("account").Inc()
		return azerr.Newf(azerr.ServerBusy, "Operations per second is over the account limit.")
	}
	var part *bucket
	if partition != "" {
		part = bucketOf(l.partitions, partitionKey{account, table, partition}, now, l.partitionRate)
		if part.fill(now, l.partitionRate) < min(want, l.partitionRate) {
			metrics.Throttled.WithLabelValues("partition").Inc()
			return azerr.Newf(azerr.ServerBusy, "The server is busy.")
		}
		part.tokens -= want
	}
	acct.tokens -= want
	return nil
}

// Charge accounts for n more entities a request was served, such as a query's results, which
// are known only afterwards. Buckets may go negative: the requests that follow wait for it.
func (l *Limiter) Charge(account, table, partition string, n int) {
	if l == nil || n <= 0 {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	acct := bucketOf(l.accounts, account, now, l.accountRate)
	acct.fill(now, l.accountRate)
	acct.tokens -= float64(n)
	if partition != "" {
		part := bucketOf(l.partitions, partitionKey{account, table, partition}, now, l.partitionRate)
		part.fill(now, l.partitionRate)
		part.tokens -= float64(n)
	}
}

// bucketOf returns the bucket of key, a full one when key has none yet.
func bucketOf[K comparable](m map[K]*bucket, key K, now time.Time, rate float64) *bucket {
	if b, ok := m[key]; ok {
		return b
	}
	b := &bucket{tokens: rate, at: now}
	m[key] = b
	return b
}

// sweepEvery is how many takes pass between sweeps of the partition buckets.
const sweepEvery = 4096

// sweep forgets the buckets of partitions idle for a second or more, which are full again and
// so need no memory, to keep the map bounded by the partitions in use.
func (l *Limiter) sweep(now time.Time) {
	l.takes++
	if l.takes < sweepEvery {
		return
	}
	l.takes = 0
	for k, b := range l.partitions {
		if now.Sub(b.at) >= time.Second {
			delete(l.partitions, k)
		}
	}
}
