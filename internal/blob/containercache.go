package blob

import (
	"context"
	"sync"

	"github.com/tabula-dev/tabula/internal/store"
)

// containerCache keeps the space of each existing container in memory, so that a blob request
// finds its container's blobs with a map read instead of a store read and a JSON decode. It
// is only used over a store.Exclusive store, where every change to a container record is
// committed by this Service (through commit, which tells the cache).
//
// A lookup that misses reads the store and then fills the cache, unlocked in between; a
// change to a container in that gap would leave the filled entry stale. So every change
// bumps a generation, and a fill made with an older generation than the current one is
// dropped.
type containerCache struct {
	mu         sync.RWMutex
	generation uint64
	spaces     map[containerName]string
}

type containerName struct{ account, name string }

// maxCachedContainers bounds the cache's memory; past it some lookups read the store.
const maxCachedContainers = 4096

func newContainerCache() *containerCache {
	return &containerCache{spaces: make(map[containerName]string)}
}

// lookup returns the cached space, or false and the generation a fill must present.
func (c *containerCache) lookup(n containerName) (string, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	space, ok := c.spaces[n]
	return space, c.generation, ok
}

// fill caches space, read from the store when the generation was generation, unless a
// container has changed since.
func (c *containerCache) fill(n containerName, space string, generation uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	if len(c.spaces) >= maxCachedContainers {
		for evicted := range c.spaces {
			delete(c.spaces, evicted)
			break
		}
	}
	c.spaces[n] = space
}

// forget drops what is cached for n and makes every lookup in progress drop what it read.
func (c *containerCache) forget(n containerName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	delete(c.spaces, n)
}

// containerSpace returns the space holding the blobs of an existing container: 404
// ContainerNotFound when it does not exist.
func (s *Service) containerSpace(ctx context.Context, account, name string) (string, error) {
	if s.containers == nil {
		_, c, err := s.loadContainer(ctx, account, name)
		return c.Space, err
	}
	n := containerName{account, name}
	space, generation, ok := s.containers.lookup(n)
	if ok {
		return space, nil
	}
	_, c, err := s.loadContainer(ctx, account, name)
	if err != nil {
		return "", err
	}
	s.containers.fill(n, c.Space, generation)
	return c.Space, nil
}

// commit commits mutations to the store, then forgets the cached containers they touch,
// whatever the outcome (a failed commit may still have applied). Every commit of the
// Service goes through it.
func (s *Service) commit(ctx context.Context, mutations []store.Mutation) error {
	err := s.store.Commit(ctx, mutations)
	if s.containers != nil {
		for _, m := range mutations {
			if m.Key.Space == containersSpace {
				s.containers.forget(containerName{m.Key.Partition, m.Key.Row})
			}
		}
	}
	return err
}
