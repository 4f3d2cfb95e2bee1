package blob

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// A download in progress keeps its bytes while the blob is overwritten and the collector
// runs, for Grace; afterwards the old bytes are gone.
func TestDownloadOutlivesOverwriteForGrace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		body := data(3<<20, 11)
		e.stage("b", "1", body[:1<<20])
		e.stage("b", "2", body[1<<20:2<<20])
		e.stage("b", "3", body[2<<20:])
		e.commit("b", latest("1", "2", "3")...)
		d, err := e.s.GetBlob(e.ctx, path("b"), GetBlobOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Body.Close()
		first := make([]byte, 1000)
		if _, err := io.ReadFull(d.Body, first); err != nil {
			t.Fatal(err)
		}
		e.putBlob("b", []byte("new"))
		e.clock.Advance(e.s.Grace / 2)
		if _, err := e.s.Collect(e.ctx); err != nil {
			t.Fatal(err)
		}
		rest, err := io.ReadAll(d.Body)
		if err != nil || !bytes.Equal(append(first, rest...), body) {
			t.Fatalf("download across the overwrite: %d bytes, %v", 1000+len(rest), err)
		}
		if n := len(e.objects()); n != 3 {
			t.Errorf("%d objects within Grace, want 3", n)
		}
		stats := e.collect()
		if n := len(e.objects()); n != 0 || stats.Contents != 1 || stats.Objects != 3 {
			t.Errorf("after Grace: %+v, %d objects left", stats, n)
		}
	})
}

// SweepOrphans deletes what failed uploads left: objects nothing refers to, once they are
// OrphanGrace old — never a referenced one, nor one the collector will judge.
func TestSweepOrphans(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		kept := data(inlineLimit+1, 1)
		e.putBlob("kept", kept)
		orphan, _, err := e.st.PutObject(e.ctx, strings.NewReader("left by a crash"))
		if err != nil {
			t.Fatal(err)
		}
		e.putBlob("replaced", data(inlineLimit+1, 2))
		e.putBlob("replaced", nil) // its object is garbage, not yet Grace old
		n, err := e.s.SweepOrphans(e.ctx)
		if err != nil || n != 0 {
			t.Fatalf("a sweep before OrphanGrace deleted %d, %v", n, err)
		}
		e.s.Now = func() time.Time { return time.Now().Add(e.s.OrphanGrace + time.Minute) }
		n, err = e.s.SweepOrphans(e.ctx)
		if err != nil || n != 1 {
			t.Fatalf("SweepOrphans deleted %d, %v; want the orphan only", n, err)
		}
		if _, err := e.st.ReadObject(e.ctx, orphan, 0, 1); err == nil {
			t.Error("the orphan is still there")
		}
		if !bytes.Equal(e.read(path("kept")), kept) {
			t.Error("a referenced object was swept")
		}
		if len(e.objects()) != 2 {
			t.Errorf("objects %v, want the kept one and the garbage one", e.objects())
		}
	})
}

// An upload that took longer than half of OrphanGrace is refused rather than referenced, and
// its object deleted: a sweep may already be judging it.
func TestStaleUploadIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		slow := &slowReader{r: bytes.NewReader(data(inlineLimit+1, 3)), during: func() { e.clock.Advance(e.s.OrphanGrace) }}
		_, _, err := e.s.PutBlob(e.ctx, path("b"), slow, inlineLimit+1, PutBlobOptions{Type: BlockBlob})
		wantCode(t, err, 500, "OperationTimedOut")
		if objs := e.objects(); len(objs) != 0 {
			t.Errorf("objects left: %v", objs)
		}
	})
}

// slowReader runs during once, at its first read.
type slowReader struct {
	r      io.Reader
	during func()
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.during != nil {
		s.during()
		s.during = nil
	}
	return s.r.Read(p)
}
