package table

import (
	"hash/maphash"
	"strings"
	"sync"
)

// tableCache keeps tables' metadata in memory, so that the table lookup every entity request
// starts with costs a map read instead of a store read and a JSON decode. It is only used over
// a store.Exclusive store, where every change to a table record is made by this Service, which
// tells the cache.
//
// A lookup that misses reads the store and then fills the cache, unlocked in between; a
// change to the table in that gap would leave the filled entry stale. So every change bumps
// a generation, and a fill made with an older generation than the current one is dropped.
type tableCache struct {
	mu         sync.RWMutex
	generation uint64
	byName     map[tableName]Table

	// deletions makes entity writes and table deletions exclude each other, per table (by
	// stripe): a write holds its table's stripe shared from checking that the table exists
	// until its commit returns, a deletion holds it exclusively while it deletes the table's
	// record. So a write never lands in the space of a table deleted while it was in flight,
	// where nothing would ever read or remove it.
	seed      maphash.Seed
	deletions [64]sync.RWMutex
}

// tableName identifies a table: names are matched ignoring case.
type tableName struct {
	account string
	lower   string
}

func nameOf(account, name string) tableName {
	return tableName{account: account, lower: strings.ToLower(name)}
}

// maxCachedTables bounds the cache's memory; an account with more tables than this still
// works, with some lookups reading the store.
const maxCachedTables = 4096

func newTableCache() *tableCache {
	return &tableCache{byName: make(map[tableName]Table), seed: maphash.MakeSeed()}
}

// deletionLock returns the lock that orders writes to the table and its deletion.
func (c *tableCache) deletionLock(name tableName) *sync.RWMutex {
	h := maphash.String(c.seed, name.account+"\x00"+name.lower)
	return &c.deletions[h%uint64(len(c.deletions))]
}

// lookup returns the cached table, or false and the generation a fill must present.
func (c *tableCache) lookup(name tableName) (Table, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.byName[name]
	return t, c.generation, ok
}

// fill caches t, read from the store when the generation was generation, unless a table has
// changed since.
func (c *tableCache) fill(name tableName, t Table, generation uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	if len(c.byName) >= maxCachedTables {
		for evicted := range c.byName {
			delete(c.byName, evicted)
			break
		}
	}
	c.byName[name] = t
}

// forget drops what is cached for name and makes every lookup in progress drop what it read:
// called after each change to a table record, and when a cached version proved stale.
func (c *tableCache) forget(name tableName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	delete(c.byName, name)
}
