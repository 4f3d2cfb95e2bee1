package namecache

import (
	"fmt"
	"testing"
)

// A lookup that read the store before a change and fills the cache after it must not leave
// what it read in the cache.
func TestFillsOlderThanAChangeAreDropped(t *testing.T) {
	c := New[string, string](8)
	_, generation, ok := c.Lookup("orders")
	if ok {
		t.Fatal("empty cache hit")
	}
	c.Forget("orders") // the record changed after the lookup read it
	c.Fill("orders", "old", generation)
	if got, _, ok := c.Lookup("orders"); ok {
		t.Fatalf("stale fill kept: %q", got)
	}
	_, generation, _ = c.Lookup("orders")
	c.Fill("orders", "new", generation)
	if got, _, ok := c.Lookup("orders"); !ok || got != "new" {
		t.Fatalf("current fill: %q, %v", got, ok)
	}
	// A change to another name also drops fills in progress: the generation is shared.
	_, generation, _ = c.Lookup("users")
	c.Forget("orders")
	c.Fill("users", "u", generation)
	if _, _, ok := c.Lookup("users"); ok {
		t.Fatal("a fill older than a change to another name was kept")
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := New[string, int](100)
	for i := range 1000 {
		k := fmt.Sprint("t", i)
		_, generation, _ := c.Lookup(k)
		c.Fill(k, i, generation)
	}
	if n := c.Len(); n > 100 {
		t.Fatalf("%d cached, bound 100", n)
	}
	if _, _, ok := c.Lookup("t999"); !ok {
		t.Fatal("the latest fill is not cached")
	}
}

func TestDeletionLocksAreStableAndShared(t *testing.T) {
	d := NewDeletionLocks()
	if d.For("acct\x00orders") != d.For("acct\x00orders") {
		t.Fatal("one name, two locks")
	}
	seen := map[any]bool{}
	for i := range 1000 {
		seen[d.For(fmt.Sprint("acct\x00t", i))] = true
	}
	if len(seen) < 32 {
		t.Fatalf("1000 names spread over only %d stripes", len(seen))
	}
}
