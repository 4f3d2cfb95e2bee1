package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The Queue service workloads. They drive a queue endpoint (--queue-endpoint, and
// --compare-queue for the second target) and are chosen by name or all at once with
// --workloads queue; "all" stays the Table service's workloads.

// queueAPIVersion is sent as x-ms-version to queue endpoints: one every emulator takes.
const queueAPIVersion = "2021-02-12"

// queueRole says which of a run's queues a workload uses.
type queueRole int

const (
	noQueue    queueRole = iota // a table workload
	putQueue                    // receives the puts
	workQueue                   // preloaded with --messages, consumed by get+delete
	depthQueue                  // preloaded with --queue-depth, kept at that depth
	numQueueRoles
)

var queueSuffixes = [numQueueRoles]string{"", "put", "work", "depth"}

const headlineMessages = "messages/s"

// queueWorkloads are the workloads of --workloads queue, in the order a run takes them.
var queueWorkloads = []workload{
	{name: "queue-put", about: "Put Message of a new message of --message-size bytes", table: noTable, queue: putQueue, headline: headlineMessages, op: queuePutOp},
	{name: "queue-get-delete", about: "Get Messages (one) then Delete Message, from a queue preloaded with --messages messages", table: noTable, queue: workQueue, headline: headlineMessages, op: queueGetDeleteOp},
	{name: "queue-get-at-depth", about: "Get Messages (one) then Update Message back to visible, on a queue kept at --queue-depth messages", table: noTable, queue: depthQueue, headline: headlineMessages, op: queueGetAtDepthOp},
}

// signQueueLite signs a request as a SharedKeyLite client of the Queue service does, with
// x-ms-date and x-ms-version the only x-ms- headers (shared/spec/queue.md §2.2).
func signQueueLite(key []byte, method, contentType, date, resource string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(method + "\n\n" + contentType + "\n\nx-ms-date:" + date + "\nx-ms-version:" + queueAPIVersion + "\n" + resource))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

var queueXMLHeader = http.Header{"Content-Type": {"application/xml"}}

// appendMessageBody appends a Put Message body whose text is size bytes: letters and digits
// that need no escaping, varied by n so that no two messages are alike.
func appendMessageBody(dst []byte, size int, n int64) []byte {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	dst = append(dst, "<QueueMessage><MessageText>"...)
	tag := strconv.FormatInt(n, 36)
	dst = append(dst, tag...)
	for i := len(tag); i < size; i++ {
		dst = append(dst, chars[(int64(i)*7+n)%int64(len(chars))])
	}
	return append(dst, "</MessageText></QueueMessage>"...)
}

func (w *worker) putMessage(ctx context.Context, queue string) error {
	w.seq++
	w.qcn.body = appendMessageBody(w.qcn.body[:0], w.cfg.messageSize, w.seq)
	r, err := w.qcn.do(ctx, http.MethodPost, "/"+queue+"/messages", "", queueXMLHeader, w.qcn.body)
	if err != nil {
		return err
	}
	if r.status != http.StatusCreated {
		return statusError(r)
	}
	return nil
}

func queuePutOp(ctx context.Context, w *worker) (opStats, error) {
	if err := w.putMessage(ctx, w.t.queues[putQueue]); err != nil {
		return opStats{}, err
	}
	return opStats{entities: 1}, nil
}

// getMessage dequeues one message and returns its id and pop receipt, or empty strings when
// nothing is visible.
func (w *worker) getMessage(ctx context.Context, queue string) (id, receipt string, err error) {
	r, err := w.qcn.do(ctx, http.MethodGet, "/"+queue+"/messages", "numofmessages=1&visibilitytimeout=60", nil, nil)
	if err != nil {
		return "", "", err
	}
	if r.status != http.StatusOK {
		return "", "", statusError(r)
	}
	id, receipt = xmlElement(r.body, "MessageId"), xmlElement(r.body, "PopReceipt")
	if (id == "") != (receipt == "") {
		return "", "", &opError{key: "malformed Get Messages response", detail: truncate(string(r.body), 300)}
	}
	return id, receipt, nil
}

// xmlElement returns the text of the first <name> element of body, or "". The elements read
// here (ids, receipts) hold nothing XML escapes.
func xmlElement(body []byte, name string) string {
	_, rest, ok := bytes.Cut(body, []byte("<"+name+">"))
	if !ok {
		return ""
	}
	v, _, _ := bytes.Cut(rest, []byte("</"+name+">"))
	return string(v)
}

func messagePath(queue, id string) string { return "/" + queue + "/messages/" + url.PathEscape(id) }

func queueGetDeleteOp(ctx context.Context, w *worker) (opStats, error) {
	queue := w.t.queues[workQueue]
	id, receipt, err := w.getMessage(ctx, queue)
	if err != nil {
		return opStats{}, err
	}
	if id == "" {
		return opStats{}, &opError{key: "queue ran dry", detail: "the preloaded queue is empty: raise --messages for this --duration"}
	}
	r, err := w.qcn.do(ctx, http.MethodDelete, messagePath(queue, id), "popreceipt="+queryEscape(receipt), nil, nil)
	if err != nil {
		return opStats{}, err
	}
	if r.status != http.StatusNoContent {
		return opStats{}, statusError(r)
	}
	return opStats{entities: 1}, nil
}

// queueGetAtDepthOp dequeues a message and makes it visible again at once (it goes to the
// back of the queue), so that the queue keeps its depth and every Get reads the head of a
// queue that deep.
func queueGetAtDepthOp(ctx context.Context, w *worker) (opStats, error) {
	queue := w.t.queues[depthQueue]
	id, receipt, err := w.getMessage(ctx, queue)
	if err != nil {
		return opStats{}, err
	}
	if id == "" {
		return opStats{}, &opError{key: "queue ran dry", detail: "every message of the depth queue is invisible: raise --queue-depth above the requests in flight"}
	}
	r, err := w.qcn.do(ctx, http.MethodPut, messagePath(queue, id), "popreceipt="+queryEscape(receipt)+"&visibilitytimeout=0", nil, nil)
	if err != nil {
		return opStats{}, err
	}
	if r.status != http.StatusNoContent {
		return opStats{}, statusError(r)
	}
	return opStats{entities: 1}, nil
}

// queueName is a run's queue for role: lower case, as queue names must be.
func queueName(prefix, runID string, role queueRole) string {
	return strings.ToLower(prefix) + runID + "-" + queueSuffixes[role]
}

// setupQueues creates the queues the selected workloads use on t and preloads them.
func setupQueues(ctx context.Context, cfg *config, t *target, runID string, prog *progress) error {
	need := [numQueueRoles]bool{}
	for _, wl := range cfg.workloads {
		need[wl.queue] = true
	}
	if !need[putQueue] && !need[workQueue] && !need[depthQueue] {
		return nil
	}
	if t.queue == nil {
		return fmt.Errorf("the queue workloads need a queue endpoint for %s (--queue-endpoint, --compare-queue)", t.label)
	}
	cn := &conn{c: t.queue}
	defer cn.close()
	start := time.Now()
	for role := putQueue; role < numQueueRoles; role++ {
		t.queues[role] = queueName(cfg.tablePrefix, runID, role)
		if !need[role] {
			continue
		}
		r, err := cn.do(ctx, http.MethodPut, "/"+t.queues[role], "", nil, nil)
		if err == nil && r.status != http.StatusCreated {
			err = statusError(r)
		}
		if err != nil {
			return fmt.Errorf("creating queue %s on %s: %w", t.queues[role], t.label, err)
		}
		t.createdQueues = append(t.createdQueues, t.queues[role])
	}
	messages := cfg.messages
	if t.messages > 0 {
		messages = t.messages
	}
	for _, fill := range []struct {
		role queueRole
		n    int64
	}{{workQueue, messages}, {depthQueue, cfg.queueDepth}} {
		if !need[fill.role] {
			continue
		}
		if err := preloadQueue(ctx, cfg, t, t.queues[fill.role], fill.n, prog); err != nil {
			return fmt.Errorf("preloading queue %s on %s: %w", t.queues[fill.role], t.label, err)
		}
	}
	t.queuePreload = time.Since(start)
	return nil
}

// preloadQueue puts n messages into queue with cfg.concurrency workers. Any failure stops it.
func preloadQueue(ctx context.Context, cfg *config, t *target, queue string, n int64, prog *progress) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	loaders := make([]*worker, cfg.concurrency)
	for i := range loaders {
		loaders[i] = newWorker(cfg, t, i, 0)
	}
	stop := prog.start(fmt.Sprintf("preloading %d messages on %s", n, t.label), 0, loaders)
	defer stop()
	var wg sync.WaitGroup
	for _, w := range loaders {
		wg.Go(func() {
			defer w.qcn.close()
			for next.Add(1) <= n && ctx.Err() == nil {
				// A connection the server drops is tried again on a fresh one: a preload
				// is not measured, and a message put twice changes nothing that is.
				err := w.putMessage(ctx, queue)
				for retries := 0; err != nil && retries < 3 && isTransport(err) && ctx.Err() == nil; retries++ {
					err = w.putMessage(ctx, queue)
				}
				if err != nil {
					cancel(err)
					return
				}
				w.done.Add(1)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

func isTransport(err error) bool {
	var oe *opError
	return errors.As(err, &oe) && strings.HasPrefix(oe.key, "transport")
}

// teardownQueues deletes the queues setupQueues created.
func teardownQueues(ctx context.Context, t *target) error {
	if len(t.createdQueues) == 0 {
		return nil
	}
	cn := &conn{c: t.queue}
	defer cn.close()
	var errs []error
	for _, name := range t.createdQueues {
		r, err := cn.do(ctx, http.MethodDelete, "/"+name, "", nil, nil)
		if err == nil && r.status != http.StatusNoContent {
			err = statusError(r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting queue %s on %s: %w", name, t.label, err))
		}
	}
	t.createdQueues = nil
	return errors.Join(errs...)
}
