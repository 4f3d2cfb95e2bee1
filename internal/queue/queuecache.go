package queue

import (
	"hash/maphash"
	"sync"
)

// queueCache keeps queues' metadata in memory, so that the queue lookup every message
// operation starts with costs a map read instead of a store read and a JSON decode. It is only
// used over a store.Exclusive store, where every change to a queue record is made by this
// Service, which tells the cache.
//
// A lookup that misses reads the store and then fills the cache, unlocked in between; a
// change in that gap would leave the filled entry stale. So every change bumps a generation,
// and a fill made with an older generation than the current one is dropped.
type queueCache struct {
	mu         sync.RWMutex
	generation uint64
	byName     map[queueName]Queue

	// deletions makes message writes and queue deletions exclude each other, per queue (by
	// stripe): a write holds its queue's stripe shared from checking that the queue exists
	// until its commit returns, a deletion holds it exclusively while it deletes the queue's
	// record. So no message lands in the space of a queue deleted while it was in flight,
	// where nothing would ever read or remove it.
	seed      maphash.Seed
	deletions [64]sync.RWMutex
}

type queueName struct{ account, name string }

// maxCachedQueues bounds the cache's memory; an account with more queues than this still
// works, with some lookups reading the store.
const maxCachedQueues = 4096

func newQueueCache() *queueCache {
	return &queueCache{byName: make(map[queueName]Queue), seed: maphash.MakeSeed()}
}

// deletionLock returns the lock that orders message writes to the queue and its deletion.
func (c *queueCache) deletionLock(n queueName) *sync.RWMutex {
	h := maphash.String(c.seed, n.account+"/"+n.name)
	return &c.deletions[h%uint64(len(c.deletions))]
}

// lookup returns the cached queue, or false and the generation a fill must present.
func (c *queueCache) lookup(n queueName) (Queue, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	q, ok := c.byName[n]
	return q, c.generation, ok
}

// fill caches q, read from the store when the generation was generation, unless a queue has
// changed since.
func (c *queueCache) fill(n queueName, q Queue, generation uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	if len(c.byName) >= maxCachedQueues {
		for evicted := range c.byName {
			delete(c.byName, evicted)
			break
		}
	}
	c.byName[n] = q
}

// forget drops what is cached for n and makes every lookup in progress drop what it read:
// called after each change to a queue record.
func (c *queueCache) forget(n queueName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	delete(c.byName, n)
}
