package queue

import (
	"sync"

	"github.com/tabula-dev/tabula/internal/namecache"
)

// queueCache keeps queues' metadata in memory (see namecache: only over a store.Exclusive
// store), and orders message writes against queue deletions.
type queueCache struct {
	*namecache.Cache[queueName, Queue]
	deletions *namecache.DeletionLocks
}

type queueName struct{ account, name string }

// maxCachedQueues bounds the cache's memory; an account with more queues than this still
// works, with some lookups reading the store.
const maxCachedQueues = 4096

func newQueueCache() *queueCache {
	return &queueCache{namecache.New[queueName, Queue](maxCachedQueues), namecache.NewDeletionLocks()}
}

// deletionLock returns the lock that orders message writes to the queue and its deletion.
func (c *queueCache) deletionLock(n queueName) *sync.RWMutex {
	return c.deletions.For(n.account + "/" + n.name)
}
