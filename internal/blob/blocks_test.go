package blob

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

func (e *env) stage(name, id string, body []byte) {
	e.Helper()
	if _, err := e.s.PutBlock(e.ctx, path(name), []byte(id), bytes.NewReader(body), int64(len(body)), "", Checksums{}); err != nil {
		e.Fatalf("PutBlock %s %s: %v", name, id, err)
	}
}

func (e *env) commit(name string, list ...BlockListEntry) Blob {
	e.Helper()
	b, err := e.s.PutBlockList(e.ctx, path(name), list, CommitBlockListOptions{})
	if err != nil {
		e.Fatalf("PutBlockList %s: %v", name, err)
	}
	return b
}

func latest(ids ...string) []BlockListEntry {
	var out []BlockListEntry
	for _, id := range ids {
		out = append(out, BlockListEntry{Latest, []byte(id)})
	}
	return out
}

func (e *env) blockList(name string, which BlockListType) string {
	e.Helper()
	l, err := e.s.GetBlockList(e.ctx, path(name), which, "", "")
	if err != nil {
		e.Fatalf("GetBlockList %s: %v", name, err)
	}
	var sb strings.Builder
	for _, b := range l.Committed {
		fmt.Fprintf(&sb, "C:%s/%d ", b.ID, b.Size)
	}
	for _, b := range l.Uncommitted {
		fmt.Fprintf(&sb, "U:%s/%d ", b.ID, b.Size)
	}
	return strings.TrimSpace(sb.String())
}

// Blocks staged with Put Block become the blob's content, in list order, with Put Block
// List; until then the blob does not exist for reads.
func TestBlockListCommitsBlocksInOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		big := data(inlineLimit+10, 3)
		e.stage("b", "aa", []byte("hello "))
		e.stage("b", "bb", []byte("world"))
		e.stage("b", "cc", big)
		_, err := e.s.GetBlob(e.ctx, path("b"), GetBlobOptions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
		if got := e.blockList("b", AllBlocks); got != "U:aa/6 U:bb/5 U:cc/"+itoa(int64(len(big))) {
			t.Fatalf("uncommitted: %s", got)
		}
		l, _ := e.s.GetBlockList(e.ctx, path("b"), AllBlocks, "", "")
		if l.Blob != nil {
			t.Errorf("a blob with only uncommitted blocks reports %+v", l.Blob)
		}
		b := e.commit("b", latest("bb", "aa", "cc", "aa")...)
		want := append([]byte("worldhello "), append(big, "hello "...)...)
		if got := e.read(path("b")); !bytes.Equal(got, want) || b.Size != int64(len(want)) {
			t.Fatalf("content %q…, size %d", got[:min(len(got), 20)], b.Size)
		}
		if b.Properties.ContentMD5 != nil {
			t.Errorf("Put Block List stored an MD5 nobody gave: %x", b.Properties.ContentMD5)
		}
		if got := e.blockList("b", AllBlocks); got != "C:bb/5 C:aa/6 C:cc/"+itoa(int64(len(big)))+" C:aa/6" {
			t.Fatalf("after commit: %s", got)
		}
		// Ranges across blocks.
		d, err := e.s.GetBlob(e.ctx, path("b"), GetBlobOptions{Range: &ByteRange{3, 8}})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Body.Close()
		var got bytes.Buffer
		if _, err := got.ReadFrom(d.Body); err != nil || got.String() != "ldhell" {
			t.Errorf("range 3-8 across blocks: %q, %v", got.String(), err)
		}
	})
}

// Committed, Uncommitted and Latest look where they say; a block that is not there is 400
// InvalidBlockList and changes nothing.
func TestBlockListKinds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.stage("b", "x1", []byte("old1"))
		e.stage("b", "x2", []byte("old2"))
		e.commit("b", latest("x1", "x2")...)
		e.stage("b", "x2", []byte("NEW2"))
		e.stage("b", "x3", []byte("new3"))
		if got := e.blockList("b", AllBlocks); got != "C:x1/4 C:x2/4 U:x2/4 U:x3/4" {
			t.Fatalf("before: %s", got)
		}
		_, err := e.s.PutBlockList(e.ctx, path("b"), []BlockListEntry{{Uncommitted, []byte("x1")}}, CommitBlockListOptions{})
		wantCode(t, err, 400, azerr.InvalidBlockList)
		_, err = e.s.PutBlockList(e.ctx, path("b"), []BlockListEntry{{Committed, []byte("x3")}}, CommitBlockListOptions{})
		wantCode(t, err, 400, azerr.InvalidBlockList)
		_, err = e.s.PutBlockList(e.ctx, path("b"), []BlockListEntry{{Latest, []byte("x9")}}, CommitBlockListOptions{})
		wantCode(t, err, 400, azerr.InvalidBlockList)
		if got := e.blockList("b", AllBlocks); got != "C:x1/4 C:x2/4 U:x2/4 U:x3/4" {
			t.Fatalf("a refused list changed the blocks: %s", got)
		}
		e.commit("b",
			BlockListEntry{Committed, []byte("x2")},
			BlockListEntry{Latest, []byte("x2")},
			BlockListEntry{Uncommitted, []byte("x3")},
			BlockListEntry{Latest, []byte("x1")})
		if got := string(e.read(path("b"))); got != "old2NEW2new3old1" {
			t.Errorf("content %q", got)
		}
		if got := e.blockList("b", AllBlocks); got != "C:x2/4 C:x2/4 C:x3/4 C:x1/4" {
			t.Errorf("after: %s (uncommitted blocks must all be discarded)", got)
		}
		// An empty list makes an empty blob.
		if b := e.commit("b"); b.Size != 0 || len(e.read(path("b"))) != 0 {
			t.Errorf("empty list: size %d", b.Size)
		}
	})
}

func TestPutBlockRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		put := func(name, id string, body string) error {
			_, err := e.s.PutBlock(e.ctx, path(name), []byte(id), strings.NewReader(body), int64(len(body)), "", Checksums{})
			return err
		}
		wantCode(t, put("b", "", "x"), 400, azerr.InvalidBlockID)
		wantCode(t, put("b", strings.Repeat("i", 65), "x"), 400, azerr.InvalidBlockID)
		if err := put("b", strings.Repeat("i", 64), "x"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, put("b", "short", "x"), 400, azerr.InvalidBlobOrBlock)
		wantCode(t, put("b", strings.Repeat("j", 64), ""), 400, azerr.InvalidHeaderValue)
		// Committed ids do not: after a commit, new blocks may take another length (as
		// recorded from the real service), and they then set it for the next ones.
		e.stage("c", "1234", []byte("x"))
		e.commit("c", latest("1234")...)
		if err := put("c", "12345", "x"); err != nil {
			t.Fatalf("a new id length after a commit: %v", err)
		}
		wantCode(t, put("c", "123456", "x"), 400, azerr.InvalidBlobOrBlock)
		// After Put Blob there are no committed blocks.
		e.putBlob("d", []byte("whole"))
		if got := e.blockList("d", AllBlocks); got != "" {
			t.Errorf("blob written by Put Blob lists blocks %q", got)
		}
		if err := put("d", "12345", "x"); err != nil {
			t.Errorf("Put Block after Put Blob: %v", err)
		}
		// Other kinds.
		if _, _, err := e.s.PutBlob(e.ctx, path("ap"), nil, 0, PutBlobOptions{Type: AppendBlob}); err != nil {
			t.Fatal(err)
		}
		wantCode(t, put("ap", "id", "x"), 409, azerr.InvalidBlobType)
		_, err := e.s.PutBlockList(e.ctx, path("ap"), nil, CommitBlockListOptions{})
		wantCode(t, err, 409, azerr.InvalidBlobType)
		_, err = e.s.GetBlockList(e.ctx, path("ap"), CommittedBlocks, "", "")
		wantCode(t, err, 409, azerr.InvalidBlobType)
		_, err = e.s.GetBlockList(e.ctx, path("none"), CommittedBlocks, "", "")
		wantCode(t, err, 404, azerr.BlobNotFound)
		// Too long a list.
		_, err = e.s.PutBlockList(e.ctx, path("b"), make([]BlockListEntry, MaxBlockListEntries+1), CommitBlockListOptions{})
		wantCode(t, err, 400, azerr.BlockListTooLong)
	})
}

// The 100,000-uncommitted-block limit, with the limit lowered by a staging record that says
// the blob is already there.
func TestUncommittedBlockLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.stage("b", "0001", []byte("x"))
		st, _ := e.s.loadBlob(e.ctx, path("b"))
		rec, staging, err := e.s.loadStaging(e.ctx, &st)
		if err != nil || staging == nil {
			t.Fatal(err)
		}
		staging.Count = MaxUncommittedBlocks
		v, _ := jsonValue(staging)
		rec.Value = v
		if err := e.st.Commit(e.ctx, []store.Mutation{unchanged(rec.Key, rec)}); err != nil {
			t.Fatal(err)
		}
		_, err = e.s.PutBlock(e.ctx, path("b"), []byte("0002"), strings.NewReader("x"), 1, "", Checksums{})
		wantCode(t, err, 409, azerr.BlockCountExceedsLimit)
		// Replacing a staged block does not add one.
		e.stage("b", "0001", []byte("y"))
	})
}

// Uncommitted blocks go when the blob is committed, overwritten by Put Blob, deleted, or a
// week after the last Put Block; their objects go with them.
func TestUncommittedBlocksAreDiscarded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		body := data(inlineLimit+1, 9)
		e.stage("committed", "a", body)
		e.stage("committed", "b", body)
		e.commit("committed", latest("a")...)
		e.stage("overwritten", "a", body)
		e.putBlob("overwritten", []byte("x"))
		e.stage("deleted", "a", body)
		e.commit("deleted", latest("a")...)
		e.stage("deleted", "b", body)
		if err := e.s.DeleteBlob(e.ctx, path("deleted"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatal(err)
		}
		// A blob of uncommitted blocks alone is deleted as one.
		e.stage("uncommitted", "a", body)
		if err := e.s.DeleteBlob(e.ctx, path("uncommitted"), DeleteBlobOnly, "", Conditions{}); err != nil {
			t.Fatalf("deleting an uncommitted blob: %v", err)
		}
		_, err := e.s.GetBlockList(e.ctx, path("uncommitted"), AllBlocks, "", "")
		wantCode(t, err, 404, azerr.BlobNotFound)
		wantCode(t, e.s.DeleteBlob(e.ctx, path("uncommitted"), DeleteBlobOnly, "", Conditions{}), 404, azerr.BlobNotFound)
		e.stage("expiring", "a", body)
		e.clock.Advance(6 * 24 * time.Hour)
		e.stage("expiring", "b", body) // the week counts from the last Put Block
		e.collect()
		if got := e.blockList("committed", AllBlocks); got != "C:a/"+itoa(int64(len(body))) {
			t.Errorf("committed: %s", got)
		}
		if got := e.blockList("overwritten", UncommittedBlocks); got != "" {
			t.Errorf("overwritten: %s", got)
		}
		if got := e.blockList("expiring", UncommittedBlocks); got == "" {
			t.Errorf("expiring blocks went early")
		}
		if n := len(e.objects()); n != 3 { // committed's a, expiring's a and b
			t.Errorf("%d objects, want 3", n)
		}
		e.clock.Advance(uncommittedBlockExpiry - e.s.Grace)
		stats := e.collect()
		_, err = e.s.GetBlockList(e.ctx, path("expiring"), AllBlocks, "", "")
		wantCode(t, err, 404, azerr.BlobNotFound)
		if n := len(e.objects()); stats.Expired != 1 || n != 1 {
			t.Errorf("after a week: %+v, %d objects, want 1", stats, n)
		}
	})
}

// Eight Put Blocks in parallel, the SDKs' upload shape, through two front-ends, then one
// Put Block List: every block lands, and the commit is atomic.
func TestParallelPutBlocks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		const blocks = 24
		bodies := make([][]byte, blocks)
		var wg sync.WaitGroup
		errs := make(chan error, blocks)
		sem := make(chan struct{}, 8)
		for i := range blocks {
			bodies[i] = data(1000+i, uint64(i))
			if i%3 == 0 {
				bodies[i] = data(inlineLimit+i, uint64(i))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				svc := e.s
				if i%2 == 1 {
					svc = e.other
				}
				_, err := svc.PutBlock(e.ctx, path("b"), fmt.Appendf(nil, "%04d", i), bytes.NewReader(bodies[i]), int64(len(bodies[i])), "", Checksums{})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var list []BlockListEntry
		var want []byte
		for i := range blocks {
			list = append(list, BlockListEntry{Uncommitted, fmt.Appendf(nil, "%04d", i)})
			want = append(want, bodies[i]...)
		}
		e.commit("b", list...)
		if got := e.read(path("b")); !bytes.Equal(got, want) {
			t.Fatalf("content of %d bytes differs from the %d staged", len(got), len(want))
		}
	})
}
