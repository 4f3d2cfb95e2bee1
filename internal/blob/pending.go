package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Pending copies. Copy Blob of a source on another server (without x-ms-requires-sync)
// fetches the source while the request waits, at most CopyWait: a copy whose bytes have all
// arrived by then is committed and answered success, as every other copy here. A longer one
// is answered pending, so that no client's timeout cuts a copy of gigabytes short: the
// destination becomes a blob of no bytes with the copy's type, properties and metadata and
// x-ms-copy-status pending, and the bytes go on arriving after the answer. The copy then ends
//
//   - success: the bytes become the blob's in one commit, as if it had been answered then;
//   - failed: the source broke off or did not check out, or the process doing it stopped;
//     the blob keeps no bytes and x-ms-copy-status-description says why;
//   - aborted: Abort Copy Blob named it; the blob keeps no bytes (Azure's "zero length and
//     full metadata").
//
// While a copy is pending, writes to its blob are 409 PendingCopyOperation, except lease
// operations, blocks staged, tags, and deletion (which ends the copy).
//
// Only the running fetch lives in memory, so any front-end over the store may abort a copy
// another one is doing: every copyBeat (2 s) the process doing it writes its progress and the
// time (CopyState.Beat) into the blob, and stops when the blob no longer names the copy as
// pending (aborted, deleted, or replaced). A pending copy whose last beat is older than
// copyStale lost its process (a crash, a stop) and reports failed, and writes to its blob go
// through again; over a store only one process can open, one that another process was doing
// has failed as soon as this one reads it. Front-ends judge the beat by their own clocks, as
// they do leases.

const (
	copyPending = "pending"
	copySuccess = "success"
	copyFailed  = "failed"
	copyAborted = "aborted"

	copyStale = time.Minute
)

// copyBeat is how often a pending copy writes its progress, a small record: often enough for
// a client polling the blob to see it move (a variable for the tests).
var copyBeat = 2 * time.Second

// DefaultCopyWait is CopyWait unless the server says otherwise: well within the time any
// client waits for an answer (the .NET SDK's network timeout is 100 s).
const DefaultCopyWait = 5 * time.Second

// pending reports whether c is a copy still going on at now.
func (c *CopyState) pending(now time.Time) bool {
	return c != nil && c.Status == copyPending && (c.Rehydrating || now.Sub(c.Beat) < copyStale)
}

// at is c as reported at now: a pending copy whose process stopped beating has failed.
func (c *CopyState) at(now time.Time) *CopyState {
	if c == nil || c.Status != copyPending || c.pending(now) {
		return c
	}
	return c.lost()
}

// lost is pending copy c failed for having lost its process, when it last beat.
func (c *CopyState) lost() *CopyState {
	failed := *c
	failed.Status, failed.CompletionTime = copyFailed, c.Beat
	failed.Description = copyFailure(500, azerr.InternalError, "The copy stopped: the server doing it stopped or lost its store.")
	return &failed
}

// thisProcess names this process in the pending copies it does: a process that opens a
// store no other process can have open (store.Exclusive) after another one did, a restart,
// knows at once that the pending copies it finds there are no one's, rather than a minute
// after their last beat (a variable for the tests, which play a restart).
var thisProcess = randomID()

// orphan fails b's pending copy, as read from an exclusive store, if another process was
// doing it: that process is gone.
func (s *Service) orphan(b *blobRecord) {
	if c := b.Copy; s.exclusive && c != nil && c.Status == copyPending && c.Process != "" && c.Process != thisProcess {
		b.Copy = c.lost()
	}
}

// copyFailure is an x-ms-copy-status-description: the status and code of the failure, and
// what happened.
func copyFailure(status int, code azerr.Code, message string) string {
	return fmt.Sprintf("%d %s \"%s\"", status, code, message)
}

// describeFailure is the x-ms-copy-status-description of a copy that ended with err; stopped
// tells a copy the process stopped.
func describeFailure(err error, stopped bool) string {
	var e *azerr.Error
	switch {
	case stopped:
		return copyFailure(500, azerr.InternalError, "The copy stopped: the server doing it shut down.")
	case errors.As(err, &e):
		return copyFailure(e.Status, e.Code, e.Message)
	}
	return copyFailure(500, azerr.InternalError, "Copy failed when reading the source: "+err.Error())
}

// copyJobs are the pending copies this process is doing.
type copyJobs struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc // by copy id
	stopped bool
	running sync.WaitGroup
}

// start notes the copy id, cancelled by cancel, and reports whether it did: once the jobs
// are stopped, the copy is cancelled at once instead (and done must not be called).
func (j *copyJobs) start(id string, cancel context.CancelFunc) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stopped {
		cancel()
		return false
	}
	j.running.Add(1)
	if j.cancels == nil {
		j.cancels = make(map[string]context.CancelFunc)
	}
	j.cancels[id] = cancel
	return true
}

func (j *copyJobs) done(id string) {
	j.mu.Lock()
	delete(j.cancels, id)
	j.mu.Unlock()
	j.running.Done()
}

// cancel stops the copy id if this process is doing it.
func (j *copyJobs) cancel(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if c := j.cancels[id]; c != nil {
		c()
	}
}

func (j *copyJobs) stopping() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stopped
}

// StopCopies stops the pending copies this process is doing, each recorded as failed, and
// waits until they are (at most until ctx is done). Copies started later stop at once. A
// server calls it before it closes the store.
func (s *Service) StopCopies(ctx context.Context) {
	s.copies.mu.Lock()
	s.copies.stopped = true
	for _, cancel := range s.copies.cancels {
		cancel()
	}
	s.copies.mu.Unlock()
	done := make(chan struct{})
	go func() { s.copies.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// received is what receiving a copy source gave.
type received struct {
	u   upload
	err error
}

// countingBody counts the bytes read through it.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// copyFromRemote is Copy Blob of a source on another server (fetch): replaceFromRemote's copy
// when the bytes arrive within CopyWait, else a pending copy (above).
func (s *Service) copyFromRemote(ctx context.Context, dst Path, fetch Fetch, limit int64, tooLarge func(int64) error, sums Checksums,
	leaseID string, cond Conditions, scope string, pr Protection, build buildFromRemote) (Blob, error) {
	if err := s.judgeDestination(ctx, dst, leaseID, cond)(); err != nil {
		return Blob{}, err
	}
	// The fetch outlives the request once the copy is pending; until then, it ends with it.
	job, cancel := context.WithCancel(context.WithoutCancel(ctx))
	src, err := fetch(job, nil)
	if err != nil {
		cancel()
		return Blob{}, err
	}
	if src.Size > limit {
		src.Body.Close()
		cancel()
		return Blob{}, tooLarge(src.Size)
	}
	body := &countingBody{ReadCloser: src.Body}
	src.Body = body
	// A body that does not heed its context still stops when the copy does (closing a
	// body twice is harmless).
	context.AfterFunc(job, func() { body.Close() })
	arrived := make(chan received, 1)
	go func() {
		u, err := s.receiveSource(job, src, limit, tooLarge, sums, true, blockSource(src))
		arrived <- received{u, err}
	}()
	wait := time.NewTimer(s.CopyWait)
	defer wait.Stop()
	select {
	case r := <-arrived:
		cancel()
		if r.err != nil {
			return Blob{}, r.err
		}
		return s.commitRemote(ctx, dst, src, &r.u, leaseID, cond, scope, pr, build)
	case <-ctx.Done():
		cancel()
		r := <-arrived
		s.discard(&r.u)
		return Blob{}, ctx.Err()
	case <-wait.C:
	}
	out, err := s.startPending(ctx, dst, src, leaseID, cond, scope, pr, build)
	if err != nil {
		cancel()
		go func() {
			r := <-arrived
			s.discard(&r.u)
		}()
		return Blob{}, err
	}
	id := out.Copy.ID
	noted := s.copies.start(id, cancel)
	go func() {
		if noted {
			defer s.copies.done(id)
		}
		defer cancel()
		s.followPending(job, dst, id, src, body, arrived, cancel, build)
	}()
	return out, nil
}

// startPending replaces dst with the pending copy of src: no bytes, the type, properties,
// metadata, tags and tier the copy will have, judging the destination again.
func (s *Service) startPending(ctx context.Context, dst Path, src *RemoteSource, leaseID string, cond Conditions, scope string, pr Protection, build buildFromRemote) (Blob, error) {
	none := upload{data: []byte{}}
	return s.commitRemote(ctx, dst, src, &none, leaseID, cond, scope, pr, func(src *RemoteSource, u *upload, next *blobRecord, now time.Time) error {
		if err := build(src, u, next, now); err != nil {
			return err
		}
		next.Type, next.Props.ContentMD5 = remoteType(src, max(src.Size, 0)), nil
		next.Copy.Status, next.Copy.Progress = copyPending, fmt.Sprintf("0/%d", max(src.Size, 0))
		next.Copy.CompletionTime, next.Copy.Beat, next.Copy.Process = time.Time{}, now, thisProcess
		return nil
	})
}

// followPending waits for the bytes of the pending copy id into dst, beating meanwhile, and
// ends the copy. cancel stops the fetch (job).
func (s *Service) followPending(job context.Context, dst Path, id string, src *RemoteSource, body *countingBody, arrived <-chan received, cancel context.CancelFunc, build buildFromRemote) {
	beat := time.NewTicker(copyBeat)
	defer beat.Stop()
	for {
		select {
		case r := <-arrived:
			s.endPending(dst, id, src, r, job.Err() != nil && s.copies.stopping(), build)
			return
		case <-beat.C:
			n := body.n.Load()
			total := src.Size
			if total < 0 {
				total = n
			}
			if !s.changePending(dst, id, func(c *CopyState, now time.Time) {
				c.Progress, c.Beat = fmt.Sprintf("%d/%d", n, total), now
			}) {
				cancel()
			}
		}
	}
}

// errNotPending says the blob no longer names the copy as pending.
var errNotPending = errors.New("the copy is no longer pending")

// changePending applies change to the copy state of dst if it still names the pending copy
// id, without changing the blob's ETag; it reports whether it did.
func (s *Service) changePending(dst Path, id string, change func(c *CopyState, now time.Time)) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadBlob(ctx, dst)
		if err != nil {
			return nil, err
		}
		if !namesPending(&st, id) {
			return nil, errNotPending
		}
		c := *st.b.Copy
		change(&c, s.Now())
		st.b.Copy = &c
		return s.put(&st, &st.b)
	})
	return err == nil
}

func namesPending(st *blobState, id string) bool {
	return st.exists() && st.b.Copy != nil && st.b.Copy.ID == id && st.b.Copy.Status == copyPending
}

// endPending ends the pending copy id into dst with what arrived: its bytes become the blob's,
// or it failed (stopped: the process stopped it). A copy no longer pending (aborted, its blob
// deleted or replaced) leaves nothing.
func (s *Service) endPending(dst Path, id string, src *RemoteSource, r received, stopped bool, build buildFromRemote) {
	if r.err == nil {
		r.err = s.completePending(dst, id, src, &r.u, build)
		if r.err == nil {
			s.copyEnded(CopyEnd{Path: dst, ID: id, Status: copySuccess, Bytes: r.u.Len})
			return
		}
		if errors.Is(r.err, errNotPending) {
			s.discard(&r.u)
			return
		}
		// A store failure may leave the commit's outcome unknown: SweepOrphans decides then.
		s.discardUnless(r.err, &r.u)
	}
	description := describeFailure(r.err, stopped)
	if s.changePending(dst, id, func(c *CopyState, now time.Time) {
		c.Status, c.Description, c.CompletionTime = copyFailed, description, now
	}) {
		s.copyEnded(CopyEnd{Path: dst, ID: id, Status: copyFailed, Description: description})
	}
}

// CopyEnd is how a pending copy ended, for CopyEnded.
type CopyEnd struct {
	Path Path
	ID   string
	// Status is success or failed, with Description saying why; Bytes were copied.
	Status, Description string
	Bytes               int64
}

func (s *Service) copyEnded(e CopyEnd) {
	if s.CopyEnded != nil {
		s.CopyEnded(e)
	}
}

// completePending gives the pending copy id into dst the bytes received as u.
func (s *Service) completePending(dst Path, id string, src *RemoteSource, u *upload, build buildFromRemote) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.update(ctx, func() ([]store.Mutation, error) {
		if err := s.fresh(u); err != nil {
			return nil, err
		}
		st, err := s.loadBlob(ctx, dst)
		if err != nil {
			return nil, err
		}
		if !namesPending(&st, id) {
			return nil, errNotPending
		}
		now := s.Now()
		copied := blobRecord{Size: copySize(src, u)}
		if err := build(src, u, &copied, now); err != nil {
			return nil, err
		}
		next := st.b
		next.Type, next.Size, next.Props, next.Sealed, next.Blocks = copied.Type, copied.Size, copied.Props, copied.Sealed, copied.Blocks
		next.Lease = st.b.Lease.afterWrite(now)
		next.Copy = &CopyState{ID: id, Source: st.b.Copy.Source, Status: copySuccess, Progress: fmt.Sprintf("%d/%d", u.Len, u.Len), CompletionTime: now.UTC()}
		holdUpload(&next, u)
		s.touchBlob(&next)
		m, err := s.put(&st, &next)
		if err != nil {
			return nil, err
		}
		var b batch
		b.add(m...)
		addUploadExtent(&b, &next, u, src)
		return b.m, nil
	})
}
