// Package namecache keeps, in memory, what a service reads of its named resources (tables,
// queues, containers) so that the lookup every request starts with costs a map read instead
// of a store read and a decode. It is for store.Exclusive stores only, where every change to
// those records is made by the process holding the cache, which tells it.
//
// A lookup that misses reads the store and then fills the cache, unlocked in between; a change
// in that gap would leave the filled entry stale. So every change bumps a generation, and a
// fill made with an older generation than the current one is dropped.
package namecache

import (
	"hash/maphash"
	"sync"
)

// Cache maps names to what was read for them, holding at most a fixed number; past it, some
// lookups read the store again.
type Cache[K comparable, V any] struct {
	mu         sync.RWMutex
	generation uint64
	entries    map[K]V
	limit      int
}

// New returns an empty cache of at most limit entries.
func New[K comparable, V any](limit int) *Cache[K, V] {
	return &Cache[K, V]{entries: make(map[K]V), limit: limit}
}

// Lookup returns the cached value, or false and the generation a Fill must present.
func (c *Cache[K, V]) Lookup(k K) (V, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.entries[k]
	return v, c.generation, ok
}

// Fill caches v, read from the store when the generation was generation, unless anything
// was forgotten since.
func (c *Cache[K, V]) Fill(k K, v V, generation uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	if len(c.entries) >= c.limit {
		for evicted := range c.entries {
			delete(c.entries, evicted)
			break
		}
	}
	c.entries[k] = v
}

// Forget drops what is cached for k and makes every lookup in progress drop what it read:
// called after each change to k's record (whatever the commit's outcome: a failed commit may
// still have applied), and when a cached value proved stale.
func (c *Cache[K, V]) Forget(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	delete(c.entries, k)
}

// Len returns how many values are cached.
func (c *Cache[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// DeletionLocks make writes into a resource and its deletion exclude each other, per
// resource (by stripe): a write holds its resource's lock shared from checking that the
// resource exists until its commit returns, a deletion holds it exclusively while it deletes
// the resource's record. So no write lands in the space of a resource deleted while it was in
// flight, where nothing would ever read or remove it.
type DeletionLocks struct {
	seed    maphash.Seed
	stripes [64]sync.RWMutex
}

// NewDeletionLocks returns a set of unheld locks.
func NewDeletionLocks() *DeletionLocks { return &DeletionLocks{seed: maphash.MakeSeed()} }

// For returns the lock of the resource named name (an account and a name, joined so that no
// two resources share the string).
func (d *DeletionLocks) For(name string) *sync.RWMutex {
	return &d.stripes[maphash.String(d.seed, name)%uint64(len(d.stripes))]
}
