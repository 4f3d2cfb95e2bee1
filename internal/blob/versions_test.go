package blob

import (
	"bytes"
	"testing"
)

// Previous versions hold their bytes: the collector never reclaims what a version reaches,
// whether the version took the replaced blob's content (an overwrite, a delete) or a copy of
// it (Set Blob Metadata), and reclaims it once the version is deleted.
func TestVersionsKeepTheirBytesFromTheCollector(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.s.Versioning = func(account string) bool { return account == "acct" }
		first, second := data(600<<10, 1), data(700<<10, 2) // beyond inlineLimit: objects
		v1 := e.putBlob("b", first).VersionID
		if _, err := e.s.SetBlobMetadata(e.ctx, path("b"), Metadata{"k": "v"}, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		v3 := e.putBlob("b", second).VersionID
		if err := e.s.DeleteBlob(e.ctx, path("b"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		e.collect()
		at := func(id string) Path { p := path("b"); p.VersionID = id; return p }
		if got := e.read(at(v1)); !bytes.Equal(got, first) {
			t.Fatalf("the first version after collection: %d bytes", len(got))
		}
		if got := e.read(at(v3)); !bytes.Equal(got, second) {
			t.Fatalf("the deleted blob's version after collection: %d bytes", len(got))
		}
		page, err := e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Include: ListBlobsInclude{Versions: true}})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entries) != 3 {
			t.Fatalf("%d versions listed, want 3 (put, metadata, put)", len(page.Entries))
		}
		for _, entry := range page.Entries {
			if err := e.s.DeleteBlob(e.ctx, at(entry.Blob.VersionID), DeleteBlobOnly, "", Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.collect()
		if n := len(e.objects()); n != 0 {
			t.Fatalf("%d objects left after every version was deleted", n)
		}
	})
}

// Writes on an account without versioning make no versions and answer no version id, and a
// version id names nothing there.
func TestNoVersionsWithoutVersioning(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.s.Versioning = func(account string) bool { return account == "other" }
		if v := e.putBlob("b", []byte("one")).VersionID; v != "" {
			t.Fatalf("version id %q without versioning", v)
		}
		e.putBlob("b", []byte("two"))
		page, err := e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Include: ListBlobsInclude{Versions: true}})
		if err != nil || len(page.Entries) != 1 || page.Entries[0].Blob.VersionID != "" {
			t.Fatalf("listing: %+v, %v", page.Entries, err)
		}
		p := path("b")
		p.VersionID = "2024-01-01T00:00:00.0000000Z"
		_, err = e.s.GetBlobProperties(e.ctx, p, "", Conditions{})
		wantCode(t, err, 404, "BlobNotFound")
	})
}
