package blob

import (
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

// A soft-deleted container past its retention is reclaimed whole: its space and its record.
func TestExpiredDeletedContainerLeavesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.s.ContainerRetention = func(string) int { return 1 }
		e.putBlob("b", data(600<<10, 3))
		if err := e.s.DeleteContainer(e.ctx, "acct", "ctr", "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		if stats := e.collect(); stats.Containers != 0 || len(e.objects()) != 1 {
			t.Fatalf("within the retention: %+v, %d objects", stats, len(e.objects()))
		}
		e.clock.Advance(24 * time.Hour)
		e.collect() // the container's space
		e.collect() // the objects its blobs held
		if n := len(e.objects()); n != 0 {
			t.Fatalf("%d objects left", n)
		}
		err := e.st.Scan(e.ctx, store.SpaceRange(deletedContainersSpace), func(rec store.Record) (bool, error) {
			t.Errorf("left: %s", rec.Key)
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
