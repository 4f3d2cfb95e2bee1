package blob

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func (e *env) snapshot(name string) string {
	e.Helper()
	snap, _, err := e.s.SnapshotBlob(e.ctx, path(name), nil, "", Conditions{})
	if err != nil {
		e.Fatalf("SnapshotBlob %s: %v", name, err)
	}
	return snap
}

func snapshotPath(name, snap string) Path {
	p := path(name)
	p.Snapshot = snap
	return p
}

// A snapshot keeps the bytes, properties and metadata the blob had, whatever happens to the
// blob afterwards, including after the collector ran; it is read-only.
func TestSnapshotsKeepTheirBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, size := range []int{10, inlineLimit + 10} {
			name := "b" + itoa(int64(size))
			v1 := data(size, 1)
			b1 := e.putBlob(name, v1)
			if _, err := e.s.SetBlobMetadata(e.ctx, path(name), Metadata{"v": "1"}, "", Conditions{}); err != nil {
				t.Fatal(err)
			}
			snap := e.snapshot(name)
			if len(snap) != len("2022-03-04T15:55:59.8246172Z") || !strings.HasSuffix(snap, "Z") {
				t.Errorf("snapshot timestamp %q", snap)
			}
			e.clock.Advance(time.Second)
			e.putBlob(name, data(size, 2))
			e.collect()
			if got := e.read(snapshotPath(name, snap)); !bytes.Equal(got, v1) {
				t.Fatalf("%d bytes: snapshot content changed", size)
			}
			props, err := e.s.GetBlobProperties(e.ctx, snapshotPath(name, snap), "", Conditions{})
			if err != nil || props.Metadata["v"] != "1" || props.Snapshot != snap || props.Created != b1.Created || props.Lease != (LeaseInfo{}) {
				t.Fatalf("snapshot properties %+v, %v", props, err)
			}
			_, err = e.s.SetBlobMetadata(e.ctx, snapshotPath(name, snap), nil, "", Conditions{})
			wantCode(t, err, 400, azerr.InvalidOperation)
			_, _, err = e.s.PutBlob(e.ctx, snapshotPath(name, snap), nil, 0, PutBlobOptions{Type: BlockBlob})
			wantCode(t, err, 400, azerr.InvalidOperation)
		}
		_, err := e.s.GetBlob(e.ctx, snapshotPath("b10", "2001-01-01T00:00:00.0000000Z"), GetBlobOptions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
		_, err = e.s.GetBlob(e.ctx, snapshotPath("b10", "yesterday"), GetBlobOptions{})
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
	})
}

// Snapshot Blob keeps the blob's ETag; metadata given replaces the copied metadata.
func TestSnapshotMetadataAndETag(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		b := e.putBlob("b", []byte("x"))
		snap, base, err := e.s.SnapshotBlob(e.ctx, path("b"), Metadata{"only": "snap"}, "", Conditions{})
		if err != nil || base.ETag != b.ETag {
			t.Fatalf("SnapshotBlob: %+v, %v", base, err)
		}
		props, _ := e.s.GetBlobProperties(e.ctx, snapshotPath("b", snap), "", Conditions{})
		if props.Metadata["only"] != "snap" || props.ETag != b.ETag {
			t.Errorf("snapshot %+v", props)
		}
		_, _, err = e.s.SnapshotBlob(e.ctx, path("b"), nil, "", Conditions{IfMatch: []ETag{`"0x1"`}})
		wantCode(t, err, 412, azerr.ConditionNotMet)
		_, _, err = e.s.SnapshotBlob(e.ctx, path("none"), nil, "", Conditions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
		s2 := e.snapshot("b")
		if s2 <= snap {
			t.Errorf("snapshots %s then %s: not increasing", snap, s2)
		}
	})
}

func TestDeleteWithSnapshots(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		body := data(inlineLimit+1, 5)
		setup := func(name string) (string, string) {
			e.putBlob(name, body)
			s1 := e.snapshot(name)
			e.putBlob(name, data(inlineLimit+1, 6))
			return s1, e.snapshot(name)
		}
		s1, s2 := setup("b")
		err := e.s.DeleteBlob(e.ctx, path("b"), DeleteBlobOnly, "", Conditions{})
		wantCode(t, err, 409, azerr.SnapshotsPresent)
		err = e.s.DeleteBlob(e.ctx, snapshotPath("b", s1), IncludeSnapshots, "", Conditions{})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
		if err := e.s.DeleteBlob(e.ctx, snapshotPath("b", s1), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		_, err = e.s.GetBlob(e.ctx, snapshotPath("b", s1), GetBlobOptions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
		if err := e.s.DeleteBlob(e.ctx, path("b"), OnlySnapshots, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		_, err = e.s.GetBlob(e.ctx, snapshotPath("b", s2), GetBlobOptions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
		if err := e.s.DeleteBlob(e.ctx, path("b"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		setup("c")
		if err := e.s.DeleteBlob(e.ctx, path("c"), IncludeSnapshots, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		page, _ := e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Include: ListBlobsInclude{Snapshots: true}})
		if len(page.Entries) != 0 {
			t.Errorf("left after deleting: %+v", page.Entries)
		}
		e.collect()
		if objs := e.objects(); len(objs) != 0 {
			t.Errorf("objects left: %v", objs)
		}
		err = e.s.DeleteBlob(e.ctx, path("c"), DeleteBlobOnly, "", Conditions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
	})
}
