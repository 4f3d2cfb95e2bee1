package blob

import (
	"bytes"
	"crypto/md5"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// A copy shares the source's objects: no byte is written again, and each side keeps its
// bytes when the other is overwritten or deleted and the collector has run.
func TestCopyBlobSharesObjectsSafely(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		body := data(inlineLimit+100, 1)
		e.stage("src", "b1", body[:200000])
		e.stage("src", "b2", body[200000:])
		e.commit("src", latest("b1", "b2")...)
		if _, err := e.s.SetBlobMetadata(e.ctx, path("src"), Metadata{"m": "src"}, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		before := len(e.objects())
		b, err := e.s.CopyBlob(e.ctx, path("dst"), path("src"), CopyOptions{SourceURL: "http://x/acct/ctr/src"})
		if err != nil {
			t.Fatal(err)
		}
		if b.Copy == nil || b.Copy.Status != "success" || b.Copy.Source != "http://x/acct/ctr/src" || !validLeaseID(b.Copy.ID) ||
			b.Copy.Progress != itoa(int64(len(body)))+"/"+itoa(int64(len(body))) || b.Metadata["m"] != "src" {
			t.Fatalf("copy result %+v", b)
		}
		if after := len(e.objects()); after != before {
			t.Errorf("copy wrote objects: %d before, %d after", before, after)
		}
		if got := e.blockList("dst", CommittedBlocks); got != "C:b1/200000 C:b2/"+itoa(int64(len(body)-200000)) {
			t.Errorf("copy's blocks: %s", got)
		}
		e.putBlob("src", []byte("overwritten"))
		e.collect()
		if got := e.read(path("dst")); !bytes.Equal(got, body) {
			t.Fatal("the copy lost its bytes when the source was overwritten")
		}
		if err := e.s.DeleteBlob(e.ctx, path("dst"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		e.collect()
		if objs := e.objects(); len(objs) != 0 {
			t.Errorf("objects left when nothing refers to them: %v", objs)
		}
	})
}

func TestCopyBlobRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		src := e.putBlob("src", []byte("small source"))
		if _, err := e.s.SetBlobProperties(e.ctx, path("src"), SetBlobPropertiesOptions{Properties: &ContentProperties{ContentType: "text/plain"}}); err != nil {
			t.Fatal(err)
		}
		b, err := e.s.CopyBlob(e.ctx, path("dst"), path("src"), CopyOptions{Metadata: Metadata{"own": "md"}})
		if err != nil || b.Metadata["own"] != "md" || b.Properties.ContentType != "text/plain" || string(e.read(path("dst"))) != "small source" {
			t.Fatalf("copy: %+v, %v", b, err)
		}
		// Copy onto itself, and from a snapshot back onto its blob.
		snap := e.snapshot("src")
		e.putBlob("src", []byte("changed"))
		if _, err := e.s.CopyBlob(e.ctx, path("src"), snapshotPath("src", snap), CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := string(e.read(path("src"))); got != "small source" {
			t.Errorf("restored from snapshot: %q", got)
		}
		if _, err := e.s.CopyBlob(e.ctx, path("src"), path("src"), CopyOptions{}); err != nil {
			t.Errorf("copy onto itself: %v", err)
		}
		_, err = e.s.CopyBlob(e.ctx, path("dst"), path("missing"), CopyOptions{})
		wantCode(t, err, 404, azerr.CannotVerifyCopySource)
		_, err = e.s.CopyBlob(e.ctx, path("dst"), Path{Account: "acct", Container: "nope", Name: "x"}, CopyOptions{})
		wantCode(t, err, 404, azerr.CannotVerifyCopySource)
		_, err = e.s.CopyBlob(e.ctx, path("dst"), Path{Account: "other", Container: "ctr", Name: "src"}, CopyOptions{})
		wantCode(t, err, 404, azerr.CannotVerifyCopySource)
		// A source in another account of the server copies like any other (who may read it
		// is the HTTP layer's to decide), and the copy outlives its source.
		if _, err := e.s.CreateContainer(e.ctx, "other", "ctr", nil, ""); err != nil {
			t.Fatal(err)
		}
		other := Path{Account: "other", Container: "ctr", Name: "big"}
		big := bytes.Repeat([]byte("cross-account "), 64<<10) // an object, not inline bytes
		if _, _, err := e.s.PutBlob(e.ctx, other, bytes.NewReader(big), int64(len(big)), PutBlobOptions{Type: BlockBlob}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.CopyBlob(e.ctx, path("from-other"), other, CopyOptions{}); err != nil {
			t.Fatalf("copy from another account: %v", err)
		}
		if err := e.s.DeleteContainer(e.ctx, "other", "ctr", "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(e.s.Grace + time.Second)
		for range 2 {
			if _, err := e.s.Collect(e.ctx); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(e.s.Grace + time.Second)
		}
		if got := e.read(path("from-other")); !bytes.Equal(got, big) {
			t.Fatalf("the copy from another account lost its bytes once the source was reclaimed (%d bytes)", len(got))
		}
		_, err = e.s.CopyBlob(e.ctx, path("dst"), path("src"), CopyOptions{Source: SourceOptions{Conditions: Conditions{IfMatch: []ETag{src.ETag}}}})
		wantCode(t, err, 412, azerr.SourceConditionNotMet)
		_, err = e.s.CopyBlob(e.ctx, path("dst"), path("src"), CopyOptions{Conditions: Conditions{IfNoneMatch: []ETag{AnyETag}}})
		wantCode(t, err, 409, azerr.BlobAlreadyExists)
		// A later Set Blob Properties forgets the copy.
		b, _ = e.s.SetBlobProperties(e.ctx, path("dst"), SetBlobPropertiesOptions{})
		if b.Copy != nil {
			t.Errorf("copy state kept after Set Blob Properties: %+v", b.Copy)
		}
	})
}

func TestAbortCopy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("dst", []byte("x"))
		err := e.s.AbortCopy(e.ctx, path("dst"), "not-a-guid", "")
		wantCode(t, err, 400, azerr.InvalidQueryParameterValue)
		err = e.s.AbortCopy(e.ctx, path("dst"), idC, "")
		wantCode(t, err, 409, azerr.NoPendingCopyOperation)
		err = e.s.AbortCopy(e.ctx, path("none"), idC, "")
		wantCode(t, err, 404, azerr.BlobNotFound)
		if _, err := e.s.LeaseBlob(e.ctx, path("dst"), LeaseRequest{Action: AcquireLease, ProposedID: idA, Duration: ptr(15)}, Conditions{}); err != nil {
			t.Fatal(err)
		}
		err = e.s.AbortCopy(e.ctx, path("dst"), idC, idA)
		wantCode(t, err, 412, azerr.InfiniteLeaseDurationRequired)
		err = e.s.AbortCopy(e.ctx, path("dst"), idC, "")
		wantCode(t, err, 412, azerr.LeaseIDMissing)
	})
}

// Put Blob From URL makes a block blob of any source's bytes, with no committed blocks; a page
// blob's unwritten pages become zeros.
func TestPutBlobFromURL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.stage("blocks", "b1", data(inlineLimit+1, 1))
		e.commit("blocks", latest("b1")...)
		if _, _, err := e.s.PutBlob(e.ctx, path("pages"), nil, 0, PutBlobOptions{Type: PageBlob, PageBlobSize: 4 * PageSize}); err != nil {
			t.Fatal(err)
		}
		page := bytes.Repeat([]byte{7}, PageSize)
		if _, _, err := e.s.PutPages(e.ctx, path("pages"), ByteRange{PageSize, 2*PageSize - 1}, bytes.NewReader(page), PageSize, PageWriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, src := range []string{"blocks", "pages"} {
			want := e.read(path(src))
			sum := md5.Sum(want)
			b, err := e.s.PutBlobFromURL(e.ctx, path(src+"-copy"), path(src), PutBlobFromURLOptions{SourceMD5: sum[:], Metadata: Metadata{"a": "b"}})
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if b.Type != BlockBlob || b.Copy != nil || b.Metadata["a"] != "b" {
				t.Errorf("%s: result %+v", src, b)
			}
			if got := e.read(path(src + "-copy")); !bytes.Equal(got, want) {
				t.Errorf("%s: bytes differ", src)
			}
			if got := e.blockList(src+"-copy", CommittedBlocks); got != "" {
				t.Errorf("%s: blocks %s", src, got)
			}
		}
		wrong := md5.Sum([]byte("no"))
		_, err := e.s.PutBlobFromURL(e.ctx, path("x"), path("blocks"), PutBlobFromURLOptions{SourceMD5: wrong[:]})
		wantCode(t, err, 400, azerr.MD5Mismatch)
	})
}

// Put Block From URL stages a range of a source as a block; its pieces refer to the source's
// objects (or, for a small source kept in its record, to a new object).
func TestPutBlockFromURL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		big := data(inlineLimit*2, 4)
		e.stage("big", "p1", big[:inlineLimit+7])
		e.stage("big", "p2", big[inlineLimit+7:])
		e.commit("big", latest("p1", "p2")...)
		e.putBlob("small", []byte("0123456789"))
		ranges := []struct {
			src  string
			id   string
			r    *ByteRange
			want []byte
		}{
			{"big", "r1", &ByteRange{10, inlineLimit + 99}, big[10 : inlineLimit+100]},
			{"small", "r2", &ByteRange{2, 4}, []byte("234")},
			{"big", "r3", nil, big},
		}
		var want []byte
		var list []BlockListEntry
		for _, r := range ranges {
			n, err := e.s.PutBlockFromURL(e.ctx, path("dst"), []byte(r.id), path(r.src), r.r, BlockFromURLOptions{})
			if err != nil {
				t.Fatalf("%s %v: %v", r.src, r.r, err)
			}
			if n != int64(len(r.want)) {
				t.Fatalf("%s %v: staged %d bytes, want %d", r.src, r.r, n, len(r.want))
			}
			want = append(want, r.want...)
			list = append(list, BlockListEntry{Uncommitted, []byte(r.id)})
		}
		e.commit("dst", list...)
		if got := e.read(path("dst")); !bytes.Equal(got, want) {
			t.Fatalf("content differs (%d bytes, want %d)", len(got), len(want))
		}
		_, err := e.s.PutBlockFromURL(e.ctx, path("dst"), []byte("r9"), path("small"), &ByteRange{10, -1}, BlockFromURLOptions{})
		wantCode(t, err, 416, azerr.InvalidRange)
		e.putBlob("big", nil)
		e.putBlob("small", nil)
		if err := e.s.DeleteBlob(e.ctx, path("dst"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		e.collect()
		if objs := e.objects(); len(objs) != 0 {
			t.Errorf("objects left: %v", objs)
		}
	})
}

func TestAppendAndPagesFromURL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.putBlob("src", []byte(strings.Repeat("s", 2*PageSize)))
		if _, _, err := e.s.PutBlob(e.ctx, path("log"), nil, 0, PutBlobOptions{Type: AppendBlob}); err != nil {
			t.Fatal(err)
		}
		r, err := e.s.AppendBlockFromURL(e.ctx, path("log"), path("src"), &ByteRange{0, 2}, SourceOptions{}, nil, AppendBlockOptions{})
		if err != nil || r.Offset != 0 || r.Blob.CommittedBlockCount != 1 {
			t.Fatalf("AppendBlockFromURL: %+v, %v", r, err)
		}
		if got := string(e.read(path("log"))); got != "sss" {
			t.Errorf("appended %q", got)
		}
		if _, _, err := e.s.PutBlob(e.ctx, path("disk"), nil, 0, PutBlobOptions{Type: PageBlob, PageBlobSize: 4 * PageSize}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.PutPagesFromURL(e.ctx, path("disk"), ByteRange{PageSize, 3*PageSize - 1}, path("src"), ByteRange{0, 2*PageSize - 1}, SourceOptions{}, nil, PageWriteOptions{}); err != nil {
			t.Fatal(err)
		}
		want := append(append(make([]byte, PageSize), strings.Repeat("s", 2*PageSize)...), make([]byte, PageSize)...)
		if got := e.read(path("disk")); !bytes.Equal(got, want) {
			t.Errorf("pages from URL differ")
		}
	})
}
