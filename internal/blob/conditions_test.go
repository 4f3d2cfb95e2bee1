package blob

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The read rules of shared/spec/blob.md §3: If-Match ∧ If-Unmodified-Since failing is 412,
// (If-None-Match ∨ If-Modified-Since) failing is 304 with ETag and Last-Modified.
func TestReadConditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		b := e.putBlob("b", []byte("x"))
		etag, other := b.ETag, ETag(`"0x8DA7B2FB962744D"`)
		before, at, after := b.LastModified.Add(-time.Second), b.LastModified, b.LastModified.Add(time.Second)
		cases := []struct {
			name string
			c    Conditions
			want string
		}{
			{"none", Conditions{}, "ok"},
			{"If-Match the ETag", Conditions{IfMatch: []ETag{etag}}, "ok"},
			{"If-Match unquoted", Conditions{IfMatch: []ETag{ETag(etag.Unquoted())}}, "ok"},
			{"If-Match *", Conditions{IfMatch: []ETag{AnyETag}}, "ok"},
			{"If-Match another", Conditions{IfMatch: []ETag{other}}, "412 ConditionNotMet"},
			{"If-Match a list holding it", Conditions{IfMatch: []ETag{other, etag}}, "ok"},
			{"If-None-Match the ETag", Conditions{IfNoneMatch: []ETag{etag}}, "304 ConditionNotMet"},
			{"If-None-Match another", Conditions{IfNoneMatch: []ETag{other}}, "ok"},
			{"If-None-Match *", Conditions{IfNoneMatch: []ETag{AnyETag}}, "400 UnsatisfiableCondition"},
			{"If-Modified-Since before", Conditions{IfModifiedSince: before}, "ok"},
			{"If-Modified-Since at", Conditions{IfModifiedSince: at}, "304 ConditionNotMet"},
			{"If-Unmodified-Since at", Conditions{IfUnmodifiedSince: at}, "ok"},
			{"If-Unmodified-Since before", Conditions{IfUnmodifiedSince: before}, "412 ConditionNotMet"},
			{"If-None-Match fails but If-Modified-Since holds", Conditions{IfNoneMatch: []ETag{etag}, IfModifiedSince: before}, "ok"},
			{"If-Match holds, If-None-Match fails", Conditions{IfMatch: []ETag{etag}, IfNoneMatch: []ETag{etag}}, "304 ConditionNotMet"},
			{"If-Match fails before If-None-Match", Conditions{IfMatch: []ETag{other}, IfNoneMatch: []ETag{etag}}, "412 ConditionNotMet"},
			{"If-Unmodified-Since after", Conditions{IfUnmodifiedSince: after}, "ok"},
		}
		for _, c := range cases {
			_, err := e.s.GetBlobProperties(e.ctx, path("b"), "", c.c)
			if got := codeOf(err); got != c.want {
				t.Errorf("%s: %s, want %s", c.name, got, c.want)
				continue
			}
			if strings.HasPrefix(c.want, "304") {
				h := err.(*azerr.Error).Header
				if h.Get("ETag") != string(etag) || h.Get("Last-Modified") != at.Format(http.TimeFormat) {
					t.Errorf("%s: 304 headers %v", c.name, h)
				}
			}
			if _, err := e.s.GetBlob(e.ctx, path("b"), GetBlobOptions{Conditions: c.c}); codeOf(err) != c.want {
				t.Errorf("%s: Get Blob %s, want %s", c.name, codeOf(err), c.want)
			}
		}
		_, err := e.s.GetBlobProperties(e.ctx, path("missing"), "", Conditions{IfMatch: []ETag{etag}})
		wantCode(t, err, 404, azerr.BlobNotFound)
	})
}

// The write rules: any unmet condition is 412, except If-None-Match: * on a write that
// creates (Put Blob, Put Block List, copies), which is 409 BlobAlreadyExists — what "upload
// without overwrite" means to every SDK. On a missing blob only If-Match fails.
func TestWriteConditions(t *testing.T) {
	cases := []struct {
		name string
		blob string
		cond func(b Blob) Conditions
		// want: Put Blob, Put Block List, Copy Blob, Set Blob Metadata
		want [4]string
	}{
		{"If-Match the ETag", "b", func(b Blob) Conditions { return Conditions{IfMatch: []ETag{b.ETag}} },
			[4]string{"ok", "ok", "ok", "ok"}},
		{"If-Match another", "b", func(b Blob) Conditions { return Conditions{IfMatch: []ETag{`"0x1"`}} },
			[4]string{"412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet"}},
		{"If-None-Match *", "b", func(b Blob) Conditions { return Conditions{IfNoneMatch: []ETag{AnyETag}} },
			[4]string{"409 BlobAlreadyExists", "409 BlobAlreadyExists", "409 BlobAlreadyExists", "412 ConditionNotMet"}},
		{"If-None-Match the ETag", "b", func(b Blob) Conditions { return Conditions{IfNoneMatch: []ETag{b.ETag}} },
			[4]string{"412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet"}},
		{"If-Modified-Since its time", "b", func(b Blob) Conditions { return Conditions{IfModifiedSince: b.LastModified} },
			[4]string{"412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet"}},
		{"If-Unmodified-Since before", "b", func(b Blob) Conditions { return Conditions{IfUnmodifiedSince: b.LastModified.Add(-time.Second)} },
			[4]string{"412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet"}},
		{"missing blob, If-Match *", "new", func(b Blob) Conditions { return Conditions{IfMatch: []ETag{AnyETag}} },
			[4]string{"412 ConditionNotMet", "412 ConditionNotMet", "412 ConditionNotMet", "404 BlobNotFound"}},
		{"missing blob, If-None-Match *", "new", func(b Blob) Conditions { return Conditions{IfNoneMatch: []ETag{AnyETag}} },
			[4]string{"ok", "ok", "ok", "404 BlobNotFound"}},
		{"missing blob, If-Modified-Since later", "new", func(b Blob) Conditions { return Conditions{IfModifiedSince: b.LastModified.Add(time.Hour)} },
			[4]string{"ok", "ok", "ok", "404 BlobNotFound"}},
	}
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("source", []byte("src"))
		ops := []func(name string, c Conditions) error{
			func(name string, c Conditions) error {
				_, _, err := e.s.PutBlob(e.ctx, path(name), strings.NewReader("y"), 1, PutBlobOptions{Type: BlockBlob, Conditions: c})
				return err
			},
			func(name string, c Conditions) error {
				_, err := e.s.PutBlockList(e.ctx, path(name), nil, CommitBlockListOptions{Conditions: c})
				return err
			},
			func(name string, c Conditions) error {
				_, err := e.s.CopyBlob(e.ctx, path(name), path("source"), CopyOptions{Conditions: c})
				return err
			},
			func(name string, c Conditions) error {
				_, err := e.s.SetBlobMetadata(e.ctx, path(name), nil, "", c)
				return err
			},
		}
		for _, c := range cases {
			for i, op := range ops {
				_ = e.s.DeleteBlob(e.ctx, path("new"), DeleteBlobOnly, "", Conditions{})
				e.clock.Advance(time.Second)
				b := e.putBlob("b", []byte("x"))
				if got := codeOf(op(c.blob, c.cond(b))); got != c.want[i] {
					t.Errorf("%s, operation %d: %s, want %s", c.name, i, got, c.want[i])
				}
			}
		}
	})
}

// ETag and Last-Modified change with every write to bytes, properties or metadata, never
// with reads, leases or tags; creation time never changes.
func TestETagChangesWithWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		first := e.putBlob("b", []byte("x"))
		seen := map[ETag]bool{first.ETag: true}
		props := func() Blob {
			b, err := e.s.GetBlobProperties(e.ctx, path("b"), "", Conditions{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		writes := []struct {
			name    string
			do      func() error
			changes bool
		}{
			{"Set Blob Metadata", func() error {
				_, err := e.s.SetBlobMetadata(e.ctx, path("b"), Metadata{"a": "1"}, "", Conditions{})
				return err
			}, true},
			{"Set Blob Properties", func() error {
				_, err := e.s.SetBlobProperties(e.ctx, path("b"), SetBlobPropertiesOptions{Properties: &ContentProperties{ContentType: "text/plain"}})
				return err
			}, true},
			{"Put Blob", func() error {
				_, _, err := e.s.PutBlob(e.ctx, path("b"), strings.NewReader("yy"), 2, PutBlobOptions{Type: BlockBlob})
				return err
			}, true},
			{"Lease", func() error {
				_, err := e.s.LeaseBlob(e.ctx, path("b"), LeaseRequest{Action: AcquireLease, Duration: ptr(15), ProposedID: idA}, Conditions{})
				return err
			}, false},
			{"Set Blob Tags", func() error { return e.s.SetBlobTags(e.ctx, path("b"), Tags{"k": "v"}, idA, Conditions{}) }, false},
			{"Set Blob Tier", func() error {
				_, err := e.s.SetBlobTier(e.ctx, path("b"), SetTierOptions{Tier: "cool", LeaseID: idA})
				return err
			}, false},
			{"Snapshot", func() error {
				_, _, err := e.s.SnapshotBlob(e.ctx, path("b"), nil, "", Conditions{})
				return err
			}, false},
			{"Put Block", func() error {
				_, err := e.s.PutBlock(e.ctx, path("b"), []byte("id"), strings.NewReader("z"), 1, idA, Checksums{})
				return err
			}, false},
			{"Put Block List", func() error {
				_, err := e.s.PutBlockList(e.ctx, path("b"), []BlockListEntry{{Latest, []byte("id")}}, CommitBlockListOptions{LeaseID: idA})
				return err
			}, true},
		}
		for _, w := range writes {
			e.clock.Advance(time.Second)
			before := props()
			if err := w.do(); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			after := props()
			changed := after.ETag != before.ETag
			if changed != w.changes || changed != after.LastModified.After(before.LastModified) {
				t.Errorf("%s: ETag %s → %s, Last-Modified %v → %v; want changed=%v", w.name, before.ETag, after.ETag, before.LastModified, after.LastModified, w.changes)
			}
			if changed && seen[after.ETag] {
				t.Errorf("%s: ETag %s was used before", w.name, after.ETag)
			}
			seen[after.ETag] = true
			if !after.Created.Equal(first.Created) {
				t.Errorf("%s: creation time %v, want %v", w.name, after.Created, first.Created)
			}
		}
		// Put Block List replaced tier and tags (none were given) and kept the lease.
		if b := props(); !b.AccessTierInferred || len(b.Tags) != 0 || b.Lease.State != LeaseLeased {
			t.Errorf("final properties %+v", b)
		}
	})
}
