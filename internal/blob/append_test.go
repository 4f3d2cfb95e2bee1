package blob

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func (e *env) createAppend(name string) {
	e.Helper()
	if _, _, err := e.s.PutBlob(e.ctx, path(name), nil, 0, PutBlobOptions{Type: AppendBlob}); err != nil {
		e.Fatal(err)
	}
}

func (e *env) appendBlock(name, body string, o AppendBlockOptions) (AppendResult, error) {
	return e.s.AppendBlock(e.ctx, path(name), strings.NewReader(body), int64(len(body)), o)
}

// The log-data pattern: appends with append-position and max-size conditions.
func TestAppendConditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createAppend("log")
		steps := []struct {
			body      string
			o         AppendBlockOptions
			want      string
			offset    int64
			committed int
		}{
			{"line1\n", AppendBlockOptions{AppendPosition: ptr[int64](0)}, "ok", 0, 1},
			{"line2\n", AppendBlockOptions{AppendPosition: ptr[int64](0)}, "412 AppendPositionConditionNotMet", 0, 0},
			{"line2\n", AppendBlockOptions{AppendPosition: ptr[int64](6)}, "ok", 6, 2},
			{"line3\n", AppendBlockOptions{MaxSize: ptr[int64](17)}, "412 MaxBlobSizeConditionNotMet", 0, 0},
			{"line3\n", AppendBlockOptions{MaxSize: ptr[int64](18)}, "ok", 12, 3},
			{"", AppendBlockOptions{}, "400 InvalidHeaderValue", 0, 0},
			{"x", AppendBlockOptions{Conditions: Conditions{IfMatch: []ETag{`"0x1"`}}}, "412 ConditionNotMet", 0, 0},
		}
		for i, s := range steps {
			r, err := e.appendBlock("log", s.body, s.o)
			if got := codeOf(err); got != s.want {
				t.Fatalf("step %d: %s, want %s", i, got, s.want)
			}
			if err == nil && (r.Offset != s.offset || r.Blob.CommittedBlockCount != s.committed) {
				t.Errorf("step %d: offset %d, %d blocks; want %d, %d", i, r.Offset, r.Blob.CommittedBlockCount, s.offset, s.committed)
			}
		}
		if got := string(e.read(path("log"))); got != "line1\nline2\nline3\n" {
			t.Errorf("content %q", got)
		}
		_, err := e.appendBlock("missing", "x", AppendBlockOptions{})
		wantCode(t, err, 404, azerr.BlobNotFound)
		e.putBlob("block", []byte("x"))
		_, err = e.appendBlock("block", "x", AppendBlockOptions{})
		wantCode(t, err, 409, azerr.InvalidBlobType)
	})
}

func TestSealedAppendBlob(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createAppend("log")
		if _, err := e.appendBlock("log", "a", AppendBlockOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := e.s.SealBlob(e.ctx, path("log"), AppendBlockOptions{AppendPosition: ptr[int64](0)})
		wantCode(t, err, 412, azerr.AppendPositionConditionNotMet)
		b, err := e.s.SealBlob(e.ctx, path("log"), AppendBlockOptions{AppendPosition: ptr[int64](1)})
		if err != nil || !b.Sealed {
			t.Fatalf("seal: %+v, %v", b, err)
		}
		if _, err := e.s.SealBlob(e.ctx, path("log"), AppendBlockOptions{}); err != nil {
			t.Errorf("sealing again: %v", err)
		}
		_, err = e.appendBlock("log", "b", AppendBlockOptions{})
		wantCode(t, err, 409, azerr.BlobIsSealed)
	})
}

// Concurrent appends through two front-ends serialise: every block lands whole, at its own
// offset.
func TestConcurrentAppends(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createAppend("log")
		const writers, each = 4, 10
		var wg sync.WaitGroup
		offsets := make(chan int64, writers*each)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc := e.s
				if w%2 == 1 {
					svc = e.other
				}
				for i := range each {
					body := fmt.Sprintf("<%d:%02d>", w, i)
					r, err := svc.AppendBlock(e.ctx, path("log"), strings.NewReader(body), int64(len(body)), AppendBlockOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					offsets <- r.Offset
				}
			}()
		}
		wg.Wait()
		close(offsets)
		seen := map[int64]bool{}
		for o := range offsets {
			if o%6 != 0 || seen[o] {
				t.Errorf("offset %d reported twice or misaligned", o)
			}
			seen[o] = true
		}
		got := string(e.read(path("log")))
		if len(got) != writers*each*6 || strings.Count(got, "<") != writers*each {
			t.Fatalf("content %q", got)
		}
		b, _ := e.s.GetBlobProperties(e.ctx, path("log"), "", Conditions{})
		if b.CommittedBlockCount != writers*each {
			t.Errorf("%d committed blocks", b.CommittedBlockCount)
		}
	})
}

// The 50,000-block limit, with the count set close to it.
func TestAppendBlockLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createAppend("log")
		st, _ := e.s.loadExisting(e.ctx, path("log"))
		st.b.Blocks = MaxAppendBlocks - 1
		m, _ := e.s.put(&st, &st.b)
		if err := e.st.Commit(e.ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, err := e.appendBlock("log", "x", AppendBlockOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := e.appendBlock("log", "y", AppendBlockOptions{})
		wantCode(t, err, 409, azerr.BlockCountExceedsLimit)
	})
}
