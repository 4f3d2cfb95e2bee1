package blob

import (
	"fmt"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/serviceprops"
)

func (e *env) retain(days int) {
	e.Helper()
	err := e.s.SetServiceProperties(e.ctx, "acct", func(p *serviceprops.Properties) {
		p.DeleteRetentionPolicy = serviceprops.DeleteRetention{Enabled: days > 0, Days: days}
	})
	if err != nil {
		e.Fatal(err)
	}
}

// deletedListing lists ctr with deleted blobs and snapshots: "name[@snap][ deleted Nd]".
func (e *env) deletedListing() string {
	e.Helper()
	page, err := e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Include: ListBlobsInclude{Snapshots: true, Deleted: true}})
	if err != nil {
		e.Fatal(err)
	}
	var out []string
	for _, en := range page.Entries {
		s := en.Blob.Name
		if en.Blob.Snapshot != "" {
			s += "@snap"
		}
		if en.Blob.Deleted {
			s += fmt.Sprintf(" deleted %dd", en.Blob.RemainingRetentionDays)
		}
		out = append(out, s)
	}
	return fmt.Sprint(out)
}

// Soft-deleted blobs keep their bytes for the retention they were deleted under (a later
// change of the policy does not move it), then Collect removes them and their objects; past
// their retention they can neither be listed nor restored, even before Collect runs.
func TestSoftDeletedBlobsExpire(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.retain(2)
		block := data(64<<10, 3) // an object of its own, not inline bytes
		e.stage("b", "1", block)
		e.commit("b", latest("1")...)
		if err := e.s.DeleteBlob(e.ctx, path("b"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		e.retain(30)
		if got := e.deletedListing(); got != "[b deleted 2d]" {
			t.Fatalf("just deleted: %s", got)
		}
		if stats := e.collect(); stats.SoftDeleted != 0 || len(e.objects()) != 1 {
			t.Fatalf("within retention: %+v, %d objects", stats, len(e.objects()))
		}
		e.clock.Advance(2 * 24 * time.Hour)
		if got := e.deletedListing(); got != "[]" {
			t.Fatalf("past retention, not yet collected: %s", got)
		}
		wantCode(t, e.s.UndeleteBlob(e.ctx, path("b")), 404, azerr.BlobNotFound)
		if stats := e.collect(); stats.SoftDeleted != 1 {
			t.Fatalf("past retention: %+v", stats)
		}
		e.collect()
		if n := len(e.objects()); n != 0 {
			t.Fatalf("%d objects left after the retention and Grace", n)
		}
		e.putBlob("b", []byte("new"))
		if got := e.deletedListing(); got != "[b]" {
			t.Fatalf("a new blob of the name: %s", got)
		}
	})
}

// An overwrite keeps the replaced blob as a soft-deleted snapshot sharing its content, which
// Undelete restores as a snapshot with its bytes; a blob of another type is not kept.
func TestOverwritesKeepSoftDeletedSnapshots(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.retain(7)
		e.putBlob("b", []byte("one"))
		e.putBlob("b", []byte("two"))
		if got := e.deletedListing(); got != "[b@snap deleted 7d b]" {
			t.Fatalf("after an overwrite: %s", got)
		}
		if err := e.s.UndeleteBlob(e.ctx, path("b")); err != nil {
			t.Fatal(err)
		}
		page, err := e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Include: ListBlobsInclude{Snapshots: true}})
		if err != nil || len(page.Entries) != 2 || page.Entries[0].Blob.Snapshot == "" {
			t.Fatalf("after Undelete: %+v, %v", page.Entries, err)
		}
		snap := path("b")
		snap.Snapshot = page.Entries[0].Blob.Snapshot
		if got := string(e.read(snap)); got != "one" {
			t.Fatalf("the restored snapshot reads %q", got)
		}
		if _, _, err := e.s.PutBlob(e.ctx, path("b"), nil, 0, PutBlobOptions{Type: AppendBlob}); err != nil {
			t.Fatal(err)
		}
		if got := e.deletedListing(); got != "[b@snap b]" {
			t.Fatalf("after replacing with an append blob: %s", got)
		}
	})
}

// A soft-deleted blob leaves the tag index and comes back with Undelete.
func TestSoftDeletedBlobsAreNotFoundByTags(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.retain(7)
		if _, _, err := e.s.PutBlob(e.ctx, path("b"), nil, 0, PutBlobOptions{Type: BlockBlob, Tags: Tags{"k": "v"}}); err != nil {
			t.Fatal(err)
		}
		find := func() int {
			t.Helper()
			found, err := e.s.FindBlobsByTags(e.ctx, "acct", FindBlobsOptions{Where: `"k" = 'v'`})
			if err != nil {
				t.Fatal(err)
			}
			return len(found.Blobs)
		}
		if n := find(); n != 1 {
			t.Fatalf("found %d", n)
		}
		if err := e.s.DeleteBlob(e.ctx, path("b"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		if n := find(); n != 0 {
			t.Fatalf("found %d soft-deleted", n)
		}
		if err := e.s.UndeleteBlob(e.ctx, path("b")); err != nil {
			t.Fatal(err)
		}
		if n := find(); n != 1 {
			t.Fatalf("found %d after Undelete", n)
		}
	})
}
