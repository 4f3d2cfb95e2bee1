package table

import (
	"strings"
	"sync"

	"github.com/tabula-dev/tabula/internal/namecache"
)

// tableCache keeps tables' metadata in memory (see namecache: only over a store.Exclusive
// store), and orders entity writes against table deletions.
type tableCache struct {
	*namecache.Cache[tableName, Table]
	deletions *namecache.DeletionLocks
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
	return &tableCache{namecache.New[tableName, Table](maxCachedTables), namecache.NewDeletionLocks()}
}

// deletionLock returns the lock that orders writes to the table and its deletion.
func (c *tableCache) deletionLock(name tableName) *sync.RWMutex {
	return c.deletions.For(name.account + "\x00" + name.lower)
}
