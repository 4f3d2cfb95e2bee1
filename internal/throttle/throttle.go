// Package throttle holds the services to Azure's scalability targets when asked to
// (--throttle): about 2,000 entities a second per table partition, 2,000 messages a second
// per queue, 500 requests a second per blob, and 20,000 a second per account over all three
// services. Azure answers traffic beyond them with 503 ServerBusy, and a client that does not
// back off and retry fails in production; throttling here lets that be tested on a laptop.
// It never changes what a request does, only whether it is served now.
package throttle

import (
	"errors"
	"sync"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/metrics"
)

// Azure's documented targets for a standard storage account.
const (
	DefaultPartitionRate = 2000  // entities per second, one table partition
	DefaultQueueRate     = 2000  // messages per second, one queue
	DefaultBlobRate      = 500   // requests per second, one blob
	DefaultAccountRate   = 20000 // requests per second (entities for tables), one account
)

// Rates are the targets a Limiter holds traffic to, each per second.
type Rates struct {
	Partition float64 // entities, one table partition
	Queue     float64 // messages, one queue
	Blob      float64 // requests, one blob
	Account   float64 // requests, one account, every service together; a table request counts its entities
}

// DefaultRates are Azure's targets.
func DefaultRates() Rates {
	return Rates{Partition: DefaultPartitionRate, Queue: DefaultQueueRate, Blob: DefaultBlobRate, Account: DefaultAccountRate}
}

// The scopes a request is refused for, as tabula_throttled_requests_total and the log
// line name them.
const (
	ScopePartition = "partition"
	ScopeQueue     = "queue"
	ScopeBlob      = "blob"
	ScopeAccount   = "account"
)

// Refusal is a request refused for going over a target: Azure's 503 ServerBusy, which
// target it went over (Scope) aside.
type Refusal struct {
	Scope string
	Err   *azerr.Error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// ScopeOf is the scope err was refused for, "" when err is not a Refusal.
func ScopeOf(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Scope
	}
	return ""
}

// Limiter meters traffic per table partition, queue, blob and account with token buckets
// that hold one second's worth, so a burst up to the rate passes and a sustained rate above
// it does not. The zero value is not usable; a nil *Limiter throttles nothing.
type Limiter struct {
	rates Rates
	now   func() time.Time

	mu      sync.Mutex
	scoped  map[scopeKey]*bucket
	account map[string]*bucket
	takes   int // since the last sweep of idle buckets
}

// scopeKey names one metered thing below an account: a table partition (scope ScopePartition,
// in a table), a queue, or a blob (in a container).
type scopeKey struct{ scope, account, parent, name string }

// New returns a Limiter at the given rates.
func New(r Rates) *Limiter {
	return &Limiter{rates: r, now: time.Now, scoped: map[scopeKey]*bucket{}, account: map[string]*bucket{}}
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

// Take admits a table request acting on n entities of one partition (partition "" for a
// request that spans partitions: only the account is metered), or refuses it with Azure's
// 503 ServerBusy, taking nothing then. A request larger than a bucket passes when the bucket
// is full, so that a 100-entity batch is never refused at a rate below 100.
func (l *Limiter) Take(account, table, partition string, n int) error {
	if l == nil {
		return nil
	}
	var k *scopeKey
	if partition != "" {
		k = &scopeKey{ScopePartition, account, table, partition}
	}
	return l.take(account, n, k, n, l.rates.Partition)
}

// TakeQueue admits a Queue service request on n messages of one queue (queue "" for a
// request on the account or a queue's settings: only the account is metered, one request).
func (l *Limiter) TakeQueue(account, queue string, n int) error {
	if l == nil {
		return nil
	}
	var k *scopeKey
	if queue != "" {
		k = &scopeKey{ScopeQueue, account, "", queue}
	}
	return l.take(account, 1, k, n, l.rates.Queue)
}

// TakeBlob admits a Blob service request on one blob (blob "" for a request on the account
// or a container: only the account is metered).
func (l *Limiter) TakeBlob(account, container, blob string) error {
	if l == nil {
		return nil
	}
	var k *scopeKey
	if blob != "" {
		k = &scopeKey{ScopeBlob, account, container, blob}
	}
	return l.take(account, 1, k, 1, l.rates.Blob)
}

// take admits a request counting n against the account and, when k is not nil, scoped
// against k's bucket at rate; or refuses it, taking nothing.
func (l *Limiter) take(account string, n int, k *scopeKey, scoped int, rate float64) error {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	acct := bucketOf(l.account, account, now, l.rates.Account)
	if acct.fill(now, l.rates.Account) < min(float64(n), l.rates.Account) {
		return refuse(ScopeAccount, "Operations per second is over the account limit.")
	}
	if k != nil {
		b := bucketOf(l.scoped, *k, now, rate)
		if b.fill(now, rate) < min(float64(scoped), rate) {
			return refuse(k.scope, "The server is busy.")
		}
		b.tokens -= float64(scoped)
	}
	acct.tokens -= float64(n)
	return nil
}

func refuse(scope, message string) error {
	metrics.Throttled.WithLabelValues(scope).Inc()
	return &Refusal{Scope: scope, Err: azerr.Newf(azerr.ServerBusy, "%s", message)}
}

// Charge accounts for n more entities a table request was served, such as a query's
// results, which are known only afterwards. Buckets may go negative: the requests that
// follow wait for it.
func (l *Limiter) Charge(account, table, partition string, n int) {
	if l == nil || n <= 0 {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	acct := bucketOf(l.account, account, now, l.rates.Account)
	acct.fill(now, l.rates.Account)
	acct.tokens -= float64(n)
	if partition != "" {
		part := bucketOf(l.scoped, scopeKey{ScopePartition, account, table, partition}, now, l.rates.Partition)
		part.fill(now, l.rates.Partition)
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

// sweepEvery is how many takes pass between sweeps of the scoped buckets.
const sweepEvery = 4096

// sweep forgets the buckets of partitions, queues and blobs idle for a second or more, which
// are full again and so need no memory, to keep the map bounded by those in use.
func (l *Limiter) sweep(now time.Time) {
	l.takes++
	if l.takes < sweepEvery {
		return
	}
	l.takes = 0
	for k, b := range l.scoped {
		if now.Sub(b.at) >= time.Second {
			delete(l.scoped, k)
		}
	}
}
