package blob

import (
	"context"

	"github.com/tabula-dev/tabula/internal/namecache"
	"github.com/tabula-dev/tabula/internal/store"
)

// containerCache keeps the space of each existing container in memory (see namecache: only
// over a store.Exclusive store, where every change to a container record is committed by this
// Service, through commit, which tells the cache).
type containerCache = namecache.Cache[containerName, containerRef]

// containerRef is what a blob request needs of its container: the space of its blobs and
// its encryption scope policy.
type containerRef struct {
	space string
	scope ScopePolicy
}

type containerName struct{ account, name string }

// maxCachedContainers bounds the cache's memory; past it some lookups read the store.
const maxCachedContainers = 4096

func newContainerCache() *containerCache {
	return namecache.New[containerName, containerRef](maxCachedContainers)
}

// containerOf returns what a blob request needs of an existing container: 404
// ContainerNotFound when it does not exist.
func (s *Service) containerOf(ctx context.Context, account, name string) (containerRef, error) {
	if s.containers == nil {
		_, c, err := s.loadContainer(ctx, account, name)
		return c.ref(), err
	}
	n := containerName{account, name}
	ref, generation, ok := s.containers.Lookup(n)
	if ok {
		return ref, nil
	}
	_, c, err := s.loadContainer(ctx, account, name)
	if err != nil {
		return containerRef{}, err
	}
	s.containers.Fill(n, c.ref(), generation)
	return c.ref(), nil
}

// commit commits mutations to the store, then forgets the cached containers they touch,
// whatever the outcome (a failed commit may still have applied). Every commit of the
// Service goes through it.
func (s *Service) commit(ctx context.Context, mutations []store.Mutation) error {
	err := s.store.Commit(ctx, mutations)
	if s.containers != nil {
		for _, m := range mutations {
			if m.Key.Space == containersSpace {
				s.containers.Forget(containerName{m.Key.Partition, m.Key.Row})
			}
		}
	}
	return err
}
