package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// target is one endpoint under test and the tables a run made there.
type target struct {
	label  string
	client *Client
	tables [numTableRoles]string
	// created lists the tables setup made, for teardown.
	created []string
	// getStatus is the status a successful point get answers: 200, or 204 from the empty
	// handler of the ceiling measurement.
	getStatus int
	preload   time.Duration
	// metrics reads the server's own metrics around each workload (servercost.go); nil for
	// a server without Tabula's.
	metrics *serverMetrics

	// queue is the client of the target's queue endpoint, nil when it has none; queues and
	// createdQueues are as tables and created, for the queue workloads.
	queue         *Client
	queues        [numQueueRoles]string
	createdQueues []string
	queuePreload  time.Duration
	messages      int64 // preloaded for queue-get-delete; 0: --messages

	// blob is the client of the target's blob endpoint, nil when it has none; containers and
	// createdContainers are as tables and created, for the blob workloads.
	blob              *Client
	containers        [numBlobRoles]string
	createdContainers []string
	blobPreload       time.Duration
	// listPages are where the pages of the list container start (blob.go).
	listPages []listPage
	// xfer is the blocks the workers of a rounds workload share while it runs.
	xfer *transfer
	// bigBlob is the path of the blob the downloads read, once there is one; uploaded, of
	// the first blob blob-upload committed (ensureBigBlob).
	bigBlob, uploaded string
}

// worker issues one workload's operations in a loop and keeps its own tallies, so that
// workers share nothing while they run.
type worker struct {
	cfg   *config
	t     *target
	cn    *conn
	qcn   *conn // to the target's queue endpoint, for the queue workloads
	bcn   *conn // to the target's blob endpoint, for the blob workloads
	rng   *rand.Rand
	batch *batchBuilder
	// name ("w007") starts the row keys of what the worker inserts, and is the partition of
	// its batches: with seq, keys no other worker of the run uses.
	name string
	seq  int64

	// block is an upload's block buffer, sink checks downloads, small a small blob's bytes
	// (blob.go).
	block []byte
	sink  blobSink
	small []byte

	hist                              Histogram
	ops, entities, pages, exam, bytes int64
	errs                              map[string]*ErrorCount
	done                              atomic.Int64 // operations finished, ok or not: the progress line
	failed                            atomic.Int64
}

// newWorker returns worker number id of a workload. Workers with the same seed and id draw the
// same random keys, so that with --compare both endpoints get the same sequence.
func newWorker(cfg *config, t *target, id int, seed uint64) *worker {
	w := &worker{
		cfg:  cfg,
		t:    t,
		cn:   &conn{c: t.client},
		qcn:  &conn{c: t.queue},
		bcn:  &conn{c: t.blob},
		rng:  rand.New(rand.NewPCG(seed, uint64(id))),
		name: fmt.Sprintf("w%03d", id),
		errs: map[string]*ErrorCount{},
	}
	w.batch = newBatchBuilder(t.client, t.tables[batchTable], w.rng)
	return w
}

func (w *worker) countError(err error) {
	var oe *opError
	if !errors.As(err, &oe) {
		oe = &opError{key: "client: " + truncate(err.Error(), 60), detail: err.Error()}
	}
	e := w.errs[oe.key]
	if e == nil {
		e = &ErrorCount{Key: oe.key, Example: oe.detail}
		w.errs[oe.key] = e
	}
	e.Count++
	w.failed.Add(1)
}

// runWorkload runs wl against t with cfg.concurrency workers for cfg.duration and returns
// their merged tallies. Workers stop starting operations at the deadline; the elapsed time
// runs until the last one has finished, so a long operation still in flight is counted in
// full, against the time it took.
//
// The workers of a rounds workload (blob.go) share a transfer instead: they start no blob
// after the deadline, finish the one started, and stop when no block is left.
func runWorkload(ctx context.Context, cfg *config, wl workload, t *target, seed uint64, prog *progress) Result {
	n, rounds := cfg.concurrency, false
	if wl.blob != nil {
		if wl.blob.workers != nil {
			n = wl.blob.workers(cfg)
		}
		rounds = wl.blob.rounds
	}
	workers := make([]*worker, n)
	for i := range workers {
		workers[i] = newWorker(cfg, t, i, seed)
	}
	stop := prog.start(wl.name+" on "+t.label, cfg.duration, workers)
	start := time.Now()
	deadline := start.Add(cfg.duration)
	if rounds {
		t.xfer = newTransfer(cfg, deadline, 0)
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil && (rounds || time.Now().Before(deadline)) {
				t0 := time.Now()
				st, err := wl.op(ctx, w)
				d := time.Since(t0)
				switch {
				case errors.Is(err, errTransferDone):
					return
				case err == nil:
					w.hist.Record(d)
					w.ops++
					w.entities += st.entities
					w.pages += st.pages
					w.exam += st.examined
					w.bytes += st.bytes
				case ctx.Err() != nil:
					// Interrupted: the run is abandoned, not failed.
				default:
					w.countError(err)
				}
				w.done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	for _, w := range workers {
		w.cn.close()
		w.qcn.close()
		w.bcn.close()
	}

	var hist Histogram
	r := Result{Workload: wl.name, Endpoint: t.label, HeadlineUnit: wl.headline, ElapsedSeconds: elapsed.Seconds()}
	errs := map[string]*ErrorCount{}
	for _, w := range workers {
		hist.Merge(&w.hist)
		r.Ops += w.ops
		r.Entities += w.entities
		r.Pages += w.pages
		r.examined += w.exam
		r.Bytes += w.bytes
		for k, e := range w.errs {
			if m := errs[k]; m != nil {
				m.Count += e.Count
			} else {
				c := *e
				errs[k] = &c
			}
		}
	}
	r.finish(&hist, elapsed, errs)
	return r
}

// setup creates the tables the selected workloads use on t and preloads the read table.
func setup(ctx context.Context, cfg *config, t *target, runID string, prog *progress) error {
	cn := &conn{c: t.client}
	defer cn.close()
	need := [numTableRoles + 1]bool{} // noTable included
	for _, wl := range cfg.workloads {
		need[wl.table] = true
	}
	if err := setupQueues(ctx, cfg, t, runID, prog); err != nil {
		return err
	}
	if err := setupBlobs(ctx, cfg, t, runID, prog); err != nil {
		return err
	}
	for role, suffix := range tableSuffixes {
		t.tables[role] = cfg.tablePrefix + runID + suffix
		if !need[role] {
			continue
		}
		if err := cn.createTable(ctx, t.tables[role]); err != nil {
			return fmt.Errorf("creating table %s on %s: %w", t.tables[role], t.label, err)
		}
		t.created = append(t.created, t.tables[role])
	}
	if !need[readTable] {
		return nil
	}
	start := time.Now()
	if err := preload(ctx, cfg, t, prog); err != nil {
		return fmt.Errorf("preloading %s on %s: %w", t.tables[readTable], t.label, err)
	}
	t.preload = time.Since(start)
	return nil
}

// preload fills the read table with entities 0..cfg.entities-1, a hundred per batch, every
// partition cut into batches and the batches shared among cfg.concurrency workers. Any failure
// stops it: read workloads over a partial table would measure something else.
func preload(ctx context.Context, cfg *config, t *target, prog *progress) error {
	type job struct {
		partition int
		first     int64 // the first entity's position within its partition
		n         int
	}
	jobs := make(chan job)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		defer close(jobs)
		for p := range cfg.partitions {
			inPartition := preloadedIn(cfg.entities, cfg.partitions, p)
			for k := int64(0); k < inPartition; k += batchSize {
				select {
				case jobs <- job{p, k, int(min(batchSize, inPartition-k))}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	loaders := make([]*worker, cfg.concurrency)
	for i := range loaders {
		w := newWorker(cfg, t, i, 0)
		w.batch = newBatchBuilder(t.client, t.tables[readTable], w.rng)
		loaders[i] = w
	}
	stop := prog.start(fmt.Sprintf("preloading %d entities on %s", cfg.entities, t.label), 0, loaders)
	defer stop()
	defer func() {
		for _, w := range loaders {
			w.cn.close()
		}
	}()
	var wg sync.WaitGroup
	for _, w := range loaders {
		wg.Go(func() {
			for j := range jobs {
				pk := partitionKey(j.partition)
				w.cn.body = w.batch.appendBody(w.cn.body[:0], j.n, func(i int, dst []byte) []byte {
					idx := int64(j.partition) + (j.first+int64(i))*int64(cfg.partitions)
					return cfg.shape.appendJSON(dst, w.rng, pk, rowKey("r", idx), idx)
				})
				h := http.Header{"Content-Type": {w.batch.contentType()}, "Accept": {"application/json;odata=minimalmetadata"}}
				r, err := w.cn.do(ctx, http.MethodPost, "/$batch", "", h, w.cn.body)
				if err == nil {
					err = checkBatchResponse(r, j.n)
				}
				if err != nil {
					cancel(err)
					return
				}
				w.done.Add(int64(j.n))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// teardown deletes the tables setup created. It runs even after an interrupt, with its own
// time limit.
func teardown(t *target) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cn := &conn{c: t.client}
	defer cn.close()
	errs := []error{teardownQueues(ctx, t), teardownBlobs(ctx, t)}
	for _, name := range t.created {
		if err := cn.deleteTable(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("deleting table %s on %s: %w", name, t.label, err))
		}
	}
	t.created = nil
	return errors.Join(errs...)
}

// emptyHandler serves 204 No Content to every request, reading nothing: the fastest server
// net/http allows, for the ceiling measurement. It listens on a free loopback port until stop
// is called.
func emptyHandler() (endpoint string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/" + devAccount, func() { srv.Close() }, nil
}

// sortedErrors lists error counts most frequent first.
func sortedErrors(m map[string]*ErrorCount) []ErrorCount {
	out := make([]ErrorCount, 0, len(m))
	for _, e := range m {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	return out
}
