package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// tableRole says which of a run's tables a workload uses.
type tableRole int

const (
	readTable   tableRole = iota // preloaded before the workloads; rewrites keep its contents
	insertTable                  // new entities over every partition
	hotTable                     // new entities in one partition
	batchTable                   // new entities, a hundred per transaction
	numTableRoles
	noTable = numTableRoles // a queue workload
)

var tableSuffixes = [numTableRoles]string{"read", "ins", "hot", "batch"}

// opStats is what one successful operation did.
type opStats struct {
	entities int64 // entities written, read or returned
	pages    int64 // query responses (scans only)
	examined int64 // entities the server had to look at (the filtered table scan only)
	bytes    int64 // bytes of blob data written or read (the blob workloads)
}

// workload is one kind of operation, issued in a loop by every worker.
type workload struct {
	name  string
	about string
	table tableRole
	// headline names the rate a comparison ranks by.
	headline string
	op       func(ctx context.Context, w *worker) (opStats, error)
	// queue is the queue a queue workload uses (queue.go); noQueue for a table workload.
	queue queueRole
	// blob is what a blob workload needs (blob.go); nil for the others.
	blob *blobSpec
}

const (
	headlineEntities = "entities/s"
	headlineOps      = "ops/s"
	headlineExamined = "examined/s"
)

// workloads lists every workload in the order a run takes them.
var workloads = []workload{
	{"insert", "Insert Entity of a new entity, spread over --partitions partitions", insertTable, headlineEntities, insertOp(false), noQueue, nil},
	{"insert-one-partition", "Insert Entity of a new entity, all in one partition (the hot-partition path)", hotTable, headlineEntities, insertOp(true), noQueue, nil},
	{"insert-or-replace", "Insert Or Replace Entity (PUT) over a random preloaded entity", readTable, headlineEntities, upsertOp(http.MethodPut), noQueue, nil},
	{"insert-or-merge", "Insert Or Merge Entity (MERGE) over a random preloaded entity", readTable, headlineEntities, upsertOp("MERGE"), noQueue, nil},
	{"point-get", "Query Entity by PartitionKey and RowKey, a random preloaded entity", readTable, headlineEntities, pointGetOp, noQueue, nil},
	{"batch-insert", "Entity group transaction ($batch) inserting 100 new entities into one partition", batchTable, headlineEntities, batchInsertOp, noQueue, nil},
	{"partition-scan", "Query Entities for one random partition whole (PartitionKey eq …), following continuations", readTable, headlineEntities, partitionScanOp, noQueue, nil},
	{"table-scan-filtered", "Query Entities over the whole table for Category eq 42 (1% of it), following continuations", readTable, headlineExamined, tableScanOp, noQueue, nil},
	{"mixed", "80% point-get, 20% insert-or-replace, over random preloaded entities", readTable, headlineOps, mixedOp, noQueue, nil},
}

// allWorkloads lists every workload: the table, queue and blob ones.
func allWorkloads() []workload {
	return slices.Concat(workloads, queueWorkloads, blobWorkloads)
}

func findWorkload(name string) (workload, bool) {
	for _, wl := range allWorkloads() {
		if wl.name == name {
			return wl, true
		}
	}
	return workload{}, false
}

// writeHeader is the header set of a single-entity write.
func writeHeader() http.Header {
	return http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json;odata=minimalmetadata"},
		"Prefer":       {"return-no-content"},
	}
}

func readHeader() http.Header {
	return http.Header{"Accept": {"application/json;odata=minimalmetadata"}}
}

// insertOp inserts an entity under a key no worker has used: the worker's number and its own
// sequence.
func insertOp(onePartition bool) func(context.Context, *worker) (opStats, error) {
	return func(ctx context.Context, w *worker) (opStats, error) {
		w.seq++
		pk := "hot"
		table := w.t.tables[hotTable]
		if !onePartition {
			pk = partitionKey(w.rng.IntN(w.cfg.partitions))
			table = w.t.tables[insertTable]
		}
		w.cn.body = w.cfg.shape.appendJSON(w.cn.body[:0], w.rng, pk, rowKey(w.name+"-", w.seq), w.seq)
		r, err := w.cn.do(ctx, http.MethodPost, "/"+table, "", writeHeader(), w.cn.body)
		if err != nil {
			return opStats{}, err
		}
		if r.status != http.StatusNoContent {
			return opStats{}, statusError(r)
		}
		return opStats{entities: 1}, nil
	}
}

// upsertOp rewrites a random preloaded entity with method (PUT replaces, MERGE merges), no
// If-Match: the insert-or-… forms.
func upsertOp(method string) func(context.Context, *worker) (opStats, error) {
	return func(ctx context.Context, w *worker) (opStats, error) {
		return w.upsert(ctx, method, w.rng.Int64N(w.cfg.entities))
	}
}

func (w *worker) upsert(ctx context.Context, method string, idx int64) (opStats, error) {
	pk, rk := readKeys(idx, w.cfg.partitions)
	w.cn.body = w.cfg.shape.appendJSON(w.cn.body[:0], w.rng, pk, rk, idx)
	r, err := w.cn.do(ctx, method, entityPath(w.t.tables[readTable], pk, rk), "", writeHeader(), w.cn.body)
	if err != nil {
		return opStats{}, err
	}
	if r.status != http.StatusNoContent {
		return opStats{}, statusError(r)
	}
	return opStats{entities: 1}, nil
}

func pointGetOp(ctx context.Context, w *worker) (opStats, error) {
	return w.pointGet(ctx, w.rng.Int64N(w.cfg.entities))
}

func (w *worker) pointGet(ctx context.Context, idx int64) (opStats, error) {
	pk, rk := readKeys(idx, w.cfg.partitions)
	r, err := w.cn.do(ctx, http.MethodGet, entityPath(w.t.tables[readTable], pk, rk), "", readHeader(), nil)
	if err != nil {
		return opStats{}, err
	}
	if r.status != w.t.getStatus {
		return opStats{}, statusError(r)
	}
	return opStats{entities: 1}, nil
}

func mixedOp(ctx context.Context, w *worker) (opStats, error) {
	idx := w.rng.Int64N(w.cfg.entities)
	if w.rng.IntN(100) < 80 {
		return w.pointGet(ctx, idx)
	}
	return w.upsert(ctx, http.MethodPut, idx)
}

func batchInsertOp(ctx context.Context, w *worker) (opStats, error) {
	pk := w.name
	first := w.seq + 1
	w.seq += batchSize
	w.cn.body = w.batch.appendBody(w.cn.body[:0], batchSize, func(i int, dst []byte) []byte {
		n := first + int64(i)
		return w.cfg.shape.appendJSON(dst, w.rng, pk, rowKey("r", n), n)
	})
	h := http.Header{"Content-Type": {w.batch.contentType()}, "Accept": {"application/json;odata=minimalmetadata"}}
	r, err := w.cn.do(ctx, http.MethodPost, "/$batch", "", h, w.cn.body)
	if err != nil {
		return opStats{}, err
	}
	if err := checkBatchResponse(r, batchSize); err != nil {
		return opStats{}, err
	}
	return opStats{entities: batchSize}, nil
}

func partitionScanOp(ctx context.Context, w *worker) (opStats, error) {
	p := w.rng.IntN(w.cfg.partitions)
	got, pages, err := w.cn.scan(ctx, w.t.tables[readTable], "PartitionKey eq '"+partitionKey(p)+"'")
	if err != nil {
		return opStats{}, err
	}
	if want := preloadedIn(w.cfg.entities, w.cfg.partitions, p); got != want {
		return opStats{}, &opError{key: "wrong count: partition scan",
			detail: fmt.Sprintf("partition %s returned %d entities, %d were preloaded", partitionKey(p), got, want)}
	}
	return opStats{entities: got, pages: pages}, nil
}

func tableScanOp(ctx context.Context, w *worker) (opStats, error) {
	got, pages, err := w.cn.scan(ctx, w.t.tables[readTable], "Category eq "+strconv.Itoa(scanCategory))
	if err != nil {
		return opStats{}, err
	}
	if want := preloadedInCategory(w.cfg.entities, scanCategory); got != want {
		return opStats{}, &opError{key: "wrong count: filtered table scan",
			detail: fmt.Sprintf("Category eq %d returned %d entities, %d were preloaded", scanCategory, got, want)}
	}
	return opStats{entities: got, pages: pages, examined: w.cfg.entities}, nil
}

// scan runs Query Entities with filter and follows x-ms-continuation-NextPartitionKey/-NextRowKey
// until a page comes without them, counting the entities and pages returned. A page may be
// empty and still carry a continuation (servers stop a page when its time budget runs out).
func (cn *conn) scan(ctx context.Context, table, filter string) (entities, pages int64, err error) {
	base := "$filter=" + queryEscape(filter)
	query := base
	var lastPK, lastRK string
	for {
		r, err := cn.do(ctx, http.MethodGet, "/"+table+"()", query, readHeader(), nil)
		if err != nil {
			return entities, pages, err
		}
		if r.status != http.StatusOK {
			return entities, pages, statusError(r)
		}
		n, err := countEntities(r.body)
		if err != nil {
			return entities, pages, &opError{key: "malformed query response", detail: err.Error()}
		}
		entities += int64(n)
		pages++
		npk := r.header.Get("X-Ms-Continuation-Nextpartitionkey")
		if npk == "" {
			return entities, pages, nil
		}
		nrk := r.header.Get("X-Ms-Continuation-Nextrowkey")
		if npk == lastPK && nrk == lastRK {
			return entities, pages, &opError{key: "continuation did not advance",
				detail: fmt.Sprintf("page %d returned the continuation it was asked for (%s, %s)", pages, npk, nrk)}
		}
		lastPK, lastRK = npk, nrk
		query = base + "&NextPartitionKey=" + queryEscape(npk)
		if nrk != "" {
			query += "&NextRowKey=" + queryEscape(nrk)
		}
	}
}

// countEntities counts the objects in the "value" array of a query response without decoding
// them: at a hundred thousand entities a second, decoding would cost the client more than the
// server spends serving them. It tracks nesting outside strings and skips each string with
// IndexByte (most of a page is string values), and fails on a document that is not a complete
// object with a "value" array.
func countEntities(body []byte) (int, error) {
	depth := 0
	var lastKey []byte // the last string seen at depth 1: the key of what follows
	valueDepth := -1   // the depth inside the value array, while in it
	found, count := false, 0
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '"':
			end := stringEnd(body, i)
			if end < 0 {
				return 0, fmt.Errorf("truncated JSON (%d bytes)", len(body))
			}
			if depth == 1 {
				lastKey = body[i+1 : end]
			}
			i = end
		case '{', '[':
			if depth == 0 && c != '{' {
				return 0, fmt.Errorf("the response is not a JSON object")
			}
			depth++
			if c == '[' && depth == 2 && bytes.Equal(lastKey, []byte("value")) {
				valueDepth, found = depth, true
			} else if c == '{' && depth == valueDepth+1 {
				count++
			}
		case '}', ']':
			if depth == valueDepth {
				valueDepth = -1
			}
			depth--
			if depth < 0 {
				return 0, fmt.Errorf("unbalanced JSON at byte %d", i)
			}
		}
	}
	switch {
	case depth != 0:
		return 0, fmt.Errorf("truncated JSON (%d bytes)", len(body))
	case !found:
		return 0, fmt.Errorf("no \"value\" array in %q", truncate(string(body), 200))
	}
	return count, nil
}

// stringEnd returns the index of the quote closing the JSON string that opens at body[open],
// or -1 if the string does not end. A quote preceded by an odd number of backslashes is
// escaped.
func stringEnd(body []byte, open int) int {
	for j := open + 1; ; j++ {
		k := bytes.IndexByte(body[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		backslashes := 0
		for m := j - 1; m > open && body[m] == '\\'; m-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return j
		}
	}
}
