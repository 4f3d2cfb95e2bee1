package blob

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// slowSource is a copy source on another server whose bytes arrive as the test writes them.
type slowSource struct {
	size int64
	w    *io.PipeWriter
	r    *io.PipeReader
	// closed is closed once the copy stopped reading (the service closed the body).
	closed chan struct{}
}

func newSlowSource(size int64) *slowSource {
	r, w := io.Pipe()
	return &slowSource{size: size, r: r, w: w, closed: make(chan struct{})}
}

func (s *slowSource) fetch(context.Context, *ByteRange) (*RemoteSource, error) {
	return &RemoteSource{Body: &closeNotifier{PipeReader: s.r, closed: s.closed}, Size: s.size, Properties: ContentProperties{ContentType: "text/plain"}, Metadata: Metadata{"origin": "far"}}, nil
}

type closeNotifier struct {
	*io.PipeReader
	closed chan struct{}
	once   sync.Once
}

func (c *closeNotifier) Close() error {
	c.once.Do(func() {
		c.PipeReader.CloseWithError(errors.New("closed by the copy"))
		close(c.closed)
	})
	return nil
}

// startSlowCopy starts a copy of src into name that goes pending at once.
func (e *env) startSlowCopy(name string, src *slowSource) Blob {
	e.Helper()
	e.s.CopyWait = 0
	b, err := e.s.CopyBlob(e.ctx, path(name), Path{}, CopyOptions{SourceURL: "http://far/x", Source: SourceOptions{Fetch: src.fetch}})
	if err != nil {
		e.Fatal(err)
	}
	if b.Copy == nil || b.Copy.Status != "pending" || b.Size != 0 || !b.Copy.CompletionTime.IsZero() || b.Copy.Progress != "0/"+itoa(src.size) {
		e.Fatalf("a copy still arriving: %+v %+v", b, b.Copy)
	}
	return b
}

// copyState waits until the copy into name is no longer pending and returns its state.
func (e *env) settledCopy(name string) Blob {
	e.Helper()
	for range 1000 {
		b, err := e.s.GetBlobProperties(e.ctx, path(name), "", Conditions{})
		if err != nil {
			e.Fatal(err)
		}
		if b.Copy.Status != "pending" {
			return b
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.Fatal("the copy stayed pending")
	return Blob{}
}

// A copy whose source outlasts CopyWait is answered pending: the blob has no bytes but the
// copy's metadata and properties, takes no writes but leases, and gets the bytes once they
// have all arrived.
func TestACopyOutlastingItsAnswerIsPending(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ended := make(chan CopyEnd, 1)
		e.s.CopyEnded = func(c CopyEnd) { ended <- c }
		body := data(inlineLimit+3000, 7)
		src := newSlowSource(int64(len(body)))
		e.putBlob("dst", []byte("before"))
		started := e.startSlowCopy("dst", src)
		if started.Metadata["origin"] != "far" || started.Properties.ContentType != "text/plain" || len(e.read(path("dst"))) != 0 {
			t.Fatalf("the pending copy: %+v", started)
		}

		_, _, err := e.s.PutBlob(e.ctx, path("dst"), strings.NewReader("x"), 1, PutBlobOptions{Type: BlockBlob})
		wantCode(t, err, 409, azerr.PendingCopyOperation)
		_, err = e.s.SetBlobMetadata(e.ctx, path("dst"), Metadata{"a": "b"}, "", Conditions{})
		wantCode(t, err, 409, azerr.PendingCopyOperation)
		_, err = e.s.CopyBlob(e.ctx, path("dst"), Path{}, CopyOptions{Source: SourceOptions{Fetch: (&remote{body: []byte("other")}).fetch}})
		wantCode(t, err, 409, azerr.PendingCopyOperation)
		if _, err := e.s.LeaseBlob(e.ctx, path("dst"), LeaseRequest{Action: AcquireLease, Duration: ptr(InfiniteLease), ProposedID: idA}, Conditions{}); err != nil {
			t.Fatalf("a lease on a pending copy: %v", err)
		}

		src.w.Write(body[:1000])
		src.w.Write(body[1000:])
		src.w.Close()
		done := e.settledCopy("dst")
		if done.Copy.Status != "success" || done.Copy.ID != started.Copy.ID || done.Copy.Progress != itoa(int64(len(body)))+"/"+itoa(int64(len(body))) ||
			done.Copy.CompletionTime.IsZero() || done.Size != int64(len(body)) || done.ETag == started.ETag || len(done.Properties.ContentMD5) != 16 || done.Lease.State != "leased" {
			t.Fatalf("the copy done: %+v %+v", done, done.Copy)
		}
		if !bytes.Equal(e.read(path("dst")), body) {
			t.Fatal("the copy done reads other bytes")
		}
		if c := <-ended; c.ID != started.Copy.ID || c.Status != "success" || c.Bytes != int64(len(body)) || c.Path != path("dst") {
			t.Fatalf("the copy's end was heard as %+v", c)
		}
	})
}

// Abort Copy Blob names the pending copy: another id is 409 CopyIdMismatch; its own leaves the
// blob with no bytes and the copy's metadata, says aborted, and stops the fetch. Any
// front-end may abort it.
func TestAbortingAPendingCopy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		src := newSlowSource(1 << 20)
		b := e.startSlowCopy("dst", src)
		wantCode(t, e.other.AbortCopy(e.ctx, path("dst"), "aaaaaaaa-0000-0000-0000-000000000001", ""), 409, azerr.CopyIDMismatch)
		src.w.Write(make([]byte, 1000))
		if err := e.other.AbortCopy(e.ctx, path("dst"), strings.ToUpper(b.Copy.ID), ""); err != nil {
			t.Fatal(err)
		}
		got := e.settledCopy("dst")
		if got.Copy.Status != "aborted" || got.Size != 0 || got.Metadata["origin"] != "far" || got.Copy.CompletionTime.IsZero() {
			t.Fatalf("aborted: %+v %+v", got, got.Copy)
		}
		wantCode(t, e.s.AbortCopy(e.ctx, path("dst"), b.Copy.ID, ""), 409, azerr.NoPendingCopyOperation)
		e.s.copies.cancel(b.Copy.ID) // the second front-end has no way to reach this one's fetch
		select {
		case <-src.closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the aborted copy's fetch goes on")
		}
		e.s.StopCopies(e.ctx)
		if got := e.settledCopy("dst"); got.Copy.Status != "aborted" || len(e.read(path("dst"))) != 0 {
			t.Fatalf("after the fetch ended: %+v", got.Copy)
		}
		if _, err := e.s.SetBlobMetadata(e.ctx, path("dst"), Metadata{"a": "b"}, "", Conditions{}); err != nil {
			t.Fatalf("writing an aborted copy: %v", err)
		}
	})
}

// The process doing a copy stops it when its blob no longer names it as pending: aborted by
// another front-end, or deleted.
func TestAPendingCopyStopsWhenItsBlobGoes(t *testing.T) {
	defer func(beat time.Duration) { copyBeat = beat }(copyBeat)
	copyBeat = 10 * time.Millisecond
	forEachBackend(t, func(t *testing.T, e *env) {
		for _, end := range []string{"abort", "delete"} {
			src := newSlowSource(1 << 20)
			b := e.startSlowCopy("dst", src)
			var err error
			if end == "abort" {
				err = e.other.AbortCopy(e.ctx, path("dst"), b.Copy.ID, "")
			} else {
				err = e.other.DeleteBlob(e.ctx, path("dst"), DeleteBlobOnly, "", Conditions{})
			}
			if err != nil {
				t.Fatalf("%s: %v", end, err)
			}
			select {
			case <-src.closed:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the copy's fetch goes on", end)
			}
		}
		e.s.StopCopies(e.ctx)
		e.collect()
		if objs := e.objects(); len(objs) != 0 {
			t.Errorf("objects left by stopped copies: %v", objs)
		}
	})
}

// A pending copy whose source breaks off, or whose bytes do not check out, fails: the blob
// keeps no bytes and the description says why.
func TestAPendingCopyThatFails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ended := make(chan CopyEnd, 2)
		e.s.CopyEnded = func(c CopyEnd) { ended <- c }
		src := newSlowSource(5000)
		e.startSlowCopy("cut", src)
		src.w.Write(make([]byte, 100))
		src.w.CloseWithError(errors.New("connection reset by peer"))
		got := e.settledCopy("cut")
		if got.Copy.Status != "failed" || got.Size != 0 || !strings.HasPrefix(got.Copy.Description, `500 InternalError "`) || !strings.Contains(got.Copy.Description, "connection reset") {
			t.Fatalf("a copy cut short: %+v", got.Copy)
		}
		if c := <-ended; c.Status != "failed" || c.Description != got.Copy.Description {
			t.Fatalf("the failed copy's end was heard as %+v", c)
		}

		body := data(3000, 1)
		src = newSlowSource(int64(len(body)))
		e.s.CopyWait = 0
		_, err := e.s.CopyBlob(e.ctx, path("md5"), Path{}, CopyOptions{Source: SourceOptions{Fetch: src.fetch}, SourceMD5: make([]byte, 16)})
		if err != nil {
			t.Fatal(err)
		}
		src.w.Write(body)
		src.w.Close()
		got = e.settledCopy("md5")
		if got.Copy.Status != "failed" || !strings.HasPrefix(got.Copy.Description, "400 Md5Mismatch") {
			t.Fatalf("a copy whose MD5 does not match: %+v", got.Copy)
		}
		if _, _, err := e.s.PutBlob(e.ctx, path("md5"), strings.NewReader("x"), 1, PutBlobOptions{Type: BlockBlob}); err != nil {
			t.Fatalf("writing a failed copy: %v", err)
		}
		e.s.StopCopies(e.ctx)
	})
}

// A copy whose process stopped beating (a crash) reports failed once its beat is a minute
// old, and its blob takes writes again; a server that stops records its copies as failed.
func TestAPendingCopyWhoseServerStopped(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		src := newSlowSource(1 << 20)
		e.startSlowCopy("crashed", src)
		// The second front-end stands for the process after a crash: it does not do the copy.
		e.clock.Advance(copyStale + time.Second)
		got, err := e.other.GetBlobProperties(e.ctx, path("crashed"), "", Conditions{})
		if err != nil || got.Copy.Status != "failed" || !strings.Contains(got.Copy.Description, "stopped") {
			t.Fatalf("a copy whose process went silent: %+v %v", got.Copy, err)
		}
		if _, _, err := e.other.PutBlob(e.ctx, path("crashed"), strings.NewReader("x"), 1, PutBlobOptions{Type: BlockBlob}); err != nil {
			t.Fatalf("writing a copy whose process went silent: %v", err)
		}

		src = newSlowSource(1 << 20)
		e.startSlowCopy("stopped", src)
		e.s.StopCopies(e.ctx)
		got = e.settledCopy("stopped")
		if got.Copy.Status != "failed" || !strings.Contains(got.Copy.Description, "shut down") {
			t.Fatalf("a copy of a server that stopped: %+v", got.Copy)
		}
	})
}

// Over a store only one process can open (Pebble), a pending copy that another process was
// doing failed with it, at once: a restart need not wait for its beat to go stale. Over
// PostgreSQL another front-end may be doing it, and it stays pending.
func TestAPendingCopyOfAnotherProcess(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		src := newSlowSource(1 << 20)
		b := e.startSlowCopy("dst", src)
		// What the process that started the copy before a crash left in the store.
		if !e.s.changePending(path("dst"), b.Copy.ID, func(c *CopyState, _ time.Time) { c.Process = "a process gone" }) {
			t.Fatal("the copy is not pending")
		}
		got, err := e.other.GetBlobProperties(e.ctx, path("dst"), "", Conditions{})
		if err != nil {
			t.Fatal(err)
		}
		if !e.other.exclusive {
			if got.Copy.Status != "pending" {
				t.Fatalf("a copy another front-end may be doing: %+v", got.Copy)
			}
			return
		}
		if got.Copy.Status != "failed" || !strings.Contains(got.Copy.Description, "stopped") || got.Copy.CompletionTime.IsZero() {
			t.Fatalf("a copy of a process gone: %+v", got.Copy)
		}
		list, err := e.other.ListBlobs(e.ctx, "acct", "ctr", ListBlobsOptions{})
		if err != nil || len(list.Entries) != 1 || list.Entries[0].Blob.Copy.Status != "failed" {
			t.Fatalf("listed: %+v %v", list.Entries, err)
		}
		if _, _, err := e.other.PutBlob(e.ctx, path("dst"), strings.NewReader("x"), 1, PutBlobOptions{Type: BlockBlob}); err != nil {
			t.Fatalf("writing the blob of a copy of a process gone: %v", err)
		}
		select {
		case <-src.closed:
		case <-time.After(10 * time.Second):
			t.Fatal("this process went on fetching a copy it no longer names")
		}
	})
}

// A copy whose bytes arrive within CopyWait is answered success, as before.
func TestACopyWithinItsWaitIsDone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.s.CopyWait = time.Minute
		src := newSlowSource(10)
		go func() {
			src.w.Write([]byte("0123456789"))
			src.w.Close()
		}()
		b, err := e.s.CopyBlob(e.ctx, path("dst"), Path{}, CopyOptions{Source: SourceOptions{Fetch: src.fetch}})
		if err != nil || b.Copy.Status != "success" || string(e.read(path("dst"))) != "0123456789" {
			t.Fatalf("%+v %v", b.Copy, err)
		}
	})
}
