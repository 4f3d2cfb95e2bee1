package blob

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// describe writes a page's entries as "name", "name@snapshot-index", "prefix/" or "name(u)".
func describe(page BlobPage, snaps map[string]int) string {
	var out []string
	for _, en := range page.Entries {
		switch {
		case en.Prefix != "":
			out = append(out, en.Prefix)
		case en.Blob.Snapshot != "":
			out = append(out, fmt.Sprintf("%s@%d", en.Blob.Name, snaps[en.Blob.Snapshot]))
		case en.Blob.Uncommitted:
			out = append(out, en.Blob.Name+"(u)")
		default:
			out = append(out, en.Blob.Name)
		}
	}
	return strings.Join(out, " ")
}

// listAll pages through a listing with maxresults n and returns each page described.
func (e *env) listAll(o ListBlobsOptions, snaps map[string]int) []string {
	e.Helper()
	var pages []string
	for {
		page, err := e.s.ListBlobs(e.ctx, "acct", "ctr", o)
		if err != nil {
			e.Fatalf("ListBlobs %+v: %v", o, err)
		}
		pages = append(pages, describe(page, snaps))
		if page.NextMarker == "" {
			return pages
		}
		o.Marker = page.NextMarker
	}
}

func TestListBlobs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, n := range []string{"a", "b/1", "b/2", "b/c/1", "B", "c", "d/x", "e"} {
			e.putBlob(n, []byte(n))
		}
		snaps := map[string]int{e.snapshot("c"): 1, e.snapshot("c"): 2}
		e.stage("staged", "id", []byte("x"))
		e.stage("a", "id", []byte("x")) // a committed blob with uncommitted blocks is listed once
		cases := []struct {
			name  string
			o     ListBlobsOptions
			pages []string
		}{
			{"flat, in byte order", ListBlobsOptions{}, []string{"B a b/1 b/2 b/c/1 c d/x e"}},
			{"flat, pages of 3", ListBlobsOptions{MaxResults: 3}, []string{"B a b/1", "b/2 b/c/1 c", "d/x e"}},
			{"prefix", ListBlobsOptions{Prefix: "b/"}, []string{"b/1 b/2 b/c/1"}},
			{"prefix matching nothing", ListBlobsOptions{Prefix: "zz"}, []string{""}},
			{"delimiter", ListBlobsOptions{Delimiter: "/"}, []string{"B a b/ c d/ e"}},
			{"delimiter, pages of 2", ListBlobsOptions{Delimiter: "/", MaxResults: 2}, []string{"B a", "b/ c", "d/ e"}},
			{"delimiter and prefix", ListBlobsOptions{Delimiter: "/", Prefix: "b/"}, []string{"b/1 b/2 b/c/"}},
			{"snapshots before their blob, oldest first", ListBlobsOptions{Prefix: "c", Include: ListBlobsInclude{Snapshots: true}}, []string{"c@1 c@2 c"}},
			{"snapshots, pages of 1", ListBlobsOptions{Prefix: "c", MaxResults: 1, Include: ListBlobsInclude{Snapshots: true}}, []string{"c@1", "c@2", "c"}},
			{"uncommitted blobs", ListBlobsOptions{Prefix: "s", Include: ListBlobsInclude{UncommittedBlobs: true}}, []string{"staged(u)"}},
			{"uncommitted blobs with committed ones", ListBlobsOptions{MaxResults: 2, Include: ListBlobsInclude{UncommittedBlobs: true}}, []string{"B a", "b/1 b/2", "b/c/1 c", "d/x e", "staged(u)"}},
			{"no uncommitted blobs unless asked", ListBlobsOptions{Prefix: "s"}, []string{""}},
			{"a multi-character delimiter", ListBlobsOptions{Delimiter: "/c/"}, []string{"B a b/1 b/2 b/c/ c d/x e"}},
		}
		for _, c := range cases {
			if got := e.listAll(c.o, snaps); strings.Join(got, " | ") != strings.Join(c.pages, " | ") {
				t.Errorf("%s: %q, want %q", c.name, got, c.pages)
			}
		}
		page, err := e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Prefix: "b/1"})
		if err != nil || len(page.Entries) != 1 || page.Entries[0].Blob.Size != 3 || page.Entries[0].Blob.Lease.State != LeaseAvailable {
			t.Errorf("entry properties: %+v, %v", page.Entries, err)
		}
		_, err = e.s.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{Marker: "%%%"})
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		_, err = e.s.ListBlobs(e.ctx, "acct", "none", ListBlobsOptions{})
		wantCode(t, err, 404, azerr.ContainerNotFound)
	})
}

// countingStore counts the records its scans hand out.
type countingStore struct {
	backendStore
	scanned atomic.Int64
}

func (c *countingStore) Scan(ctx context.Context, r store.Range, fn func(store.Record) (bool, error)) error {
	return c.backendStore.Scan(ctx, r, func(rec store.Record) (bool, error) {
		c.scanned.Add(1)
		return fn(rec)
	})
}

// A page costs what it returns, whatever the container holds: a page of 10 reads about 10
// records, even in a folder of thousands that the delimiter folds, and however deep in the
// listing the marker points.
func TestListBlobsPageCostDoesNotGrowWithTheContainer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		cs := &countingStore{backendStore: e.st}
		s := New(cs, cs)
		s.Now = e.clock.Now
		var muts []store.Mutation
		st, err := e.s.loadBlob(e.ctx, path("x"))
		if err != nil {
			t.Fatal(err)
		}
		// 3,000 blobs in folder big/, 3,000 at the top level, written directly.
		rec := blobRecord{Type: BlockBlob, data: []byte("x"), Size: 1}
		value, _ := encodeBlob(&rec)
		for i := range 3000 {
			for _, name := range []string{fmt.Sprintf("big/%05d", i), fmt.Sprintf("top%05d", i)} {
				muts = append(muts, store.Mutation{Key: baseKey(st.space, name), Value: value, Version: 1})
			}
		}
		for i := 0; i < len(muts); i += 1000 {
			if err := e.st.Commit(e.ctx, muts[i:min(i+1000, len(muts))]); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct {
			name string
			o    ListBlobsOptions
			max  int64
		}{
			{"first page", ListBlobsOptions{MaxResults: 10}, 11},
			{"deep page", ListBlobsOptions{MaxResults: 10, Marker: encodeMarker(store.Key{Partition: "top02500", Row: rowBase})}, 11},
			{"a folded folder", ListBlobsOptions{MaxResults: 10, Delimiter: "/"}, 11 + skipInScan},
			{"prefix", ListBlobsOptions{MaxResults: 10, Prefix: "top01"}, 11},
		}
		for _, c := range cases {
			cs.scanned.Store(0)
			page, err := s.ListBlobs(e.ctx, "acct", "ctr", c.o)
			if err != nil || len(page.Entries) != 10 {
				t.Fatalf("%s: %d entries, %v", c.name, len(page.Entries), err)
			}
			if n := cs.scanned.Load(); n > c.max {
				t.Errorf("%s: scanned %d records for a page of 10, want at most %d", c.name, n, c.max)
			}
		}
	})
}
