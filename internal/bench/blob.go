package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The Blob service workloads. They drive a blob endpoint (--blob-endpoint, and --compare-blob
// for the second target) and are chosen by name or all at once with --workloads blob; "all"
// stays the Table service's workloads.
//
// Large blobs move as the SDKs move them: an upload is Put Block of --block-size blocks,
// --blob-parallel at a time, then Put Block List; a download is ranged Get Blob of
// --block-size, --blob-parallel at a time, or one Get Blob of the whole blob. Every byte the
// bench writes is a function of its offset (contentByte), so downloads are checked as they
// stream, without being held.

// blobAPIVersion is sent as x-ms-version to blob endpoints: one every emulator takes, late
// enough for blocks of up to 4,000 MiB.
const blobAPIVersion = "2021-08-06"

// blobRole says which of a run's containers a workload uses.
type blobRole int

const (
	noBlob          blobRole = iota
	bigContainer             // holds the --blob-size blob the downloads read, unless blob-upload made one
	uploadContainer          // receives blob-upload's blobs
	smallContainer           // preloaded with --small-blobs blobs for blob-get-small
	putContainer             // receives blob-put-small's blobs
	listContainer            // preloaded with --list-blobs empty blobs for blob-list
	numBlobRoles
)

var blobSuffixes = [numBlobRoles]string{"", "big", "upload", "small", "put", "list"}

const (
	headlineMB    = "MB/s" // 10^6 bytes a second
	headlineBlobs = "blobs/s"
	headlinePages = "pages/s"
)

// bigBlobName is the blob the download workloads read when the run uploads one for them.
const bigBlobName = "big"

// blobSpec is what a blob workload needs beyond an op.
type blobSpec struct {
	container blobRole
	// workers is how many workers run the workload; nil means --concurrency.
	workers func(cfg *config) int
	// rounds says the workload moves whole blobs block by block: its workers share a
	// transfer, start no blob after --duration, and finish the blob they started.
	rounds bool
}

func parallelWorkers(cfg *config) int { return cfg.blobParallel }
func oneWorker(*config) int           { return 1 }

// blobWorkloads are the workloads of --workloads blob, in the order a run takes them.
var blobWorkloads = []workload{
	{name: "blob-upload", about: "upload of a --blob-size blob: Put Block of --block-size blocks, --blob-parallel at a time, then Put Block List; again until --duration",
		table: noTable, headline: headlineMB, op: blobUploadOp, blob: &blobSpec{container: uploadContainer, workers: parallelWorkers, rounds: true}},
	{name: "blob-download-ranged", about: "download of the --blob-size blob: Get Blob of --block-size ranges, --blob-parallel at a time; again until --duration",
		table: noTable, headline: headlineMB, op: blobRangedGetOp, blob: &blobSpec{container: bigContainer, workers: parallelWorkers, rounds: true}},
	{name: "blob-download", about: "download of the --blob-size blob in one Get Blob, one at a time",
		table: noTable, headline: headlineMB, op: blobGetOp, blob: &blobSpec{container: bigContainer, workers: oneWorker}},
	{name: "blob-put-small", about: "Put Blob of a new --small-size block blob",
		table: noTable, headline: headlineBlobs, op: blobPutSmallOp, blob: &blobSpec{container: putContainer}},
	{name: "blob-get-small", about: "Get Blob of a random one of --small-blobs preloaded --small-size blobs",
		table: noTable, headline: headlineBlobs, op: blobGetSmallOp, blob: &blobSpec{container: smallContainer}},
	{name: "blob-list", about: "List Blobs, one page of --list-page from a random page start, in a container of --list-blobs blobs",
		table: noTable, headline: headlinePages, op: blobListOp, blob: &blobSpec{container: listContainer}},
}

// blobStringToSign is the SharedKey string to sign of a Blob service request (spec blob.md
// §6.1), for the requests the bench sends: x-ms-date and never Date, x-ms- header names that
// sort the same by code point and by the service's culture order, and a body of
// contentLength bytes. resource is "/" + account + the escaped path; every query parameter
// is signed, decoded.
func blobStringToSign(method string, header http.Header, contentLength int, date, version, resource, rawQuery string) string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	line(method)
	line(header.Get("Content-Encoding"))
	line(header.Get("Content-Language"))
	if contentLength > 0 {
		line(strconv.Itoa(contentLength))
	} else {
		line("") // empty for an empty body from version 2015-02-21
	}
	for _, name := range []string{"Content-Md5", "Content-Type", "Date", "If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"} {
		line(header.Get(name))
	}
	type field struct{ name, value string }
	fields := []field{{"x-ms-date", date}, {"x-ms-version", version}}
	for name, values := range header {
		if lower := strings.ToLower(name); strings.HasPrefix(lower, "x-ms-") {
			trimmed := make([]string, len(values))
			for i, v := range values {
				trimmed[i] = strings.TrimSpace(v)
			}
			fields = append(fields, field{lower, strings.Join(trimmed, ",")})
		}
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.name, b.name) })
	for _, f := range fields {
		line(f.name + ":" + f.value)
	}
	b.WriteString(resource)
	if rawQuery != "" {
		q, _ := url.ParseQuery(rawQuery) // the bench's own queries, which parse
		params := map[string][]string{}
		for name, values := range q {
			params[strings.ToLower(name)] = append(params[strings.ToLower(name)], values...)
		}
		names := make([]string, 0, len(params))
		for name := range params {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			values := params[name]
			slices.Sort(values)
			b.WriteString("\n" + name + ":" + strings.Join(values, ","))
		}
	}
	return b.String()
}

func signBlob(key []byte, stringToSign string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(stringToSign))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// What the bench writes: every blob's byte at offset o is contentByte(o), a 64 KiB random
// pattern repeated, the first eight bytes of every 64 KiB segment replaced by the segment's
// number. Random bytes give a store nothing to compress; the stamps make bytes served from the
// wrong offset show. Blocks start at multiples of 64 KiB (--block-size is one), so a block
// buffer is filled once and only its stamps change from block to block.
const (
	stampEvery = 64 << 10
	stampLen   = 8
)

var blobPattern = func() []byte {
	rng := rand.New(rand.NewPCG(12, 6))
	p := make([]byte, stampEvery)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}()

func contentByte(o int64) byte {
	if in := o % stampEvery; in >= stampLen {
		return blobPattern[in]
	}
	return byte(uint64(o/stampEvery) >> (8 * (o % stampEvery)))
}

// fillContent makes dst the bytes of a blob from off, a multiple of stampEvery. With stampsOnly,
// dst already holds them from another such offset and only the stamps are rewritten.
func fillContent(dst []byte, off int64, stampsOnly bool) {
	for seg := 0; seg < len(dst); seg += stampEvery {
		if !stampsOnly {
			copy(dst[seg:], blobPattern)
		}
		for k := seg; k < min(seg+stampLen, len(dst)); k++ {
			dst[k] = contentByte(off + int64(k))
		}
	}
}

// smallContent makes dst the bytes of small blob n: a blob's first len(dst) bytes with n in
// the first eight, so that a Get that answers another blob shows.
func smallContent(dst []byte, n int64) {
	fillContent(dst, 0, false)
	for k := 0; k < min(stampLen, len(dst)); k++ {
		dst[k] = byte(uint64(n) >> (8 * k))
	}
}

// blobSink checks a download as it streams: it counts the bytes and compares the stamp and the
// eight bytes after it in every 64 KiB segment with contentByte.
type blobSink struct {
	buf []byte
	pos int64 // blob offset of the next byte
	n   int64 // bytes received
	bad int64 // first offset found wrong, -1 when none
}

func (s *blobSink) reset(off int64) { s.pos, s.n, s.bad = off, 0, -1 }

func (s *blobSink) Write(p []byte) (int, error) {
	s.check(p)
	return len(p), nil
}

// ReadFrom reads in 256 KiB pieces (io.Copy would use 32 KiB), reading the socket directly
// once the connection's buffer is drained.
func (s *blobSink) ReadFrom(r io.Reader) (int64, error) {
	if s.buf == nil {
		s.buf = make([]byte, 256<<10)
	}
	var total int64
	for {
		n, err := r.Read(s.buf)
		s.check(s.buf[:n])
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (s *blobSink) check(p []byte) {
	start, end := s.pos, s.pos+int64(len(p))
	s.pos, s.n = end, s.n+int64(len(p))
	if s.bad >= 0 {
		return
	}
	for seg := start - start%stampEvery; seg < end; seg += stampEvery {
		for o := max(seg, start); o < min(seg+2*stampLen, end); o++ {
			if p[o-start] != contentByte(o) {
				s.bad = o
				return
			}
		}
	}
}

// verify returns an *opError unless the sink received exactly want bytes, all as written.
func (s *blobSink) verify(what string, want int64) error {
	switch {
	case s.n != want:
		return &opError{key: "wrong length: " + what, detail: fmt.Sprintf("received %d bytes, want %d", s.n, want)}
	case s.bad >= 0:
		return &opError{key: "wrong content: " + what, detail: fmt.Sprintf("byte at blob offset %d is not the one uploaded", s.bad)}
	}
	return nil
}

// transfer is the blocks of whole blobs, shared by the workers that move them: each claims
// the next block, and the worker that finishes a blob's last block commits it.
type transfer struct {
	blocks    int64     // of one blob
	deadline  time.Time // no blob starts after it
	maxRounds int64     // 0: no limit but the deadline

	mu   sync.Mutex
	next int64           // the next block to claim, counted over every round
	done map[int64]int64 // blocks finished, by round, for the rounds in progress
}

// errTransferDone ends a worker of a rounds workload: no block is left to claim.
var errTransferDone = errors.New("no block left to move")

func newTransfer(cfg *config, deadline time.Time, maxRounds int64) *transfer {
	return &transfer{blocks: blocksOf(cfg), deadline: deadline, maxRounds: maxRounds, done: map[int64]int64{}}
}

func blocksOf(cfg *config) int64 { return (cfg.blobSize + cfg.blockSize - 1) / cfg.blockSize }

// claim returns the round (which blob) and block of the next block to move, or ok false when
// the blob in progress is all claimed and none may start. The first blob always starts, so
// that a run moves at least one whatever its --duration.
func (x *transfer) claim() (round, block int64, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	round = x.next / x.blocks
	if x.next%x.blocks == 0 && round > 0 && (!time.Now().Before(x.deadline) || x.maxRounds > 0 && round >= x.maxRounds) {
		return 0, 0, false
	}
	block = x.next % x.blocks
	x.next++
	return round, block, true
}

// finish records one block of round as moved and reports whether it was the round's last.
func (x *transfer) finish(round int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.done[round]++
	if x.done[round] < x.blocks {
		return false
	}
	delete(x.done, round)
	return true
}

// blockRange is the offset and length of a block of the --blob-size blob.
func blockRange(cfg *config, block int64) (off, n int64) {
	off = block * cfg.blockSize
	return off, min(cfg.blockSize, cfg.blobSize-off)
}

// blockID is a block's id: the base64 of its six-digit number, which has no characters a
// query must escape.
func blockID(block int64) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%06d", block))
}

func blobPath(container, name string) string { return "/" + container + "/" + name }

var octetStream = http.Header{"Content-Type": {"application/octet-stream"}}

// putBlock uploads block of the blob name.
func (w *worker) putBlock(ctx context.Context, container, name string, block int64) (int64, error) {
	off, n := blockRange(w.cfg, block)
	if int64(cap(w.block)) < w.cfg.blockSize {
		w.block = make([]byte, w.cfg.blockSize)
		fillContent(w.block, off, false)
	} else {
		fillContent(w.block[:n], off, true)
	}
	r, err := w.bcn.do(ctx, http.MethodPut, blobPath(container, name), "comp=block&blockid="+queryEscape(blockID(block)), octetStream, w.block[:n])
	if err != nil {
		return 0, err
	}
	if r.status != http.StatusCreated {
		return 0, statusError(r)
	}
	return n, nil
}

var xmlContent = http.Header{"Content-Type": {"application/xml"}}

// putBlockList commits blocks 0..blocks-1 as the blob name.
func (w *worker) putBlockList(ctx context.Context, container, name string, blocks int64) error {
	b := append(w.bcn.body[:0], `<?xml version="1.0" encoding="utf-8"?><BlockList>`...)
	for i := range blocks {
		b = append(b, "<Latest>"...)
		b = append(b, blockID(i)...)
		b = append(b, "</Latest>"...)
	}
	b = append(b, "</BlockList>"...)
	w.bcn.body = b
	r, err := w.bcn.do(ctx, http.MethodPut, blobPath(container, name), "comp=blocklist", xmlContent, b)
	if err != nil {
		return err
	}
	if r.status != http.StatusCreated {
		return statusError(r)
	}
	return nil
}

// uploadStep moves one block of x's blobs, named by name, into container, and commits the
// blob when the block was its last, returning its round (-1 otherwise). An operation is a Put
// Block; the one that completes a blob includes its Put Block List, and counts the blob.
func (w *worker) uploadStep(ctx context.Context, x *transfer, container string, name func(round int64) string) (st opStats, committed int64, err error) {
	round, block, ok := x.claim()
	if !ok {
		return opStats{}, -1, errTransferDone
	}
	n, err := w.putBlock(ctx, container, name(round), block)
	if err != nil {
		return opStats{}, -1, err
	}
	st = opStats{bytes: n}
	if !x.finish(round) {
		return st, -1, nil
	}
	if err := w.putBlockList(ctx, container, name(round), x.blocks); err != nil {
		return opStats{}, -1, err
	}
	st.entities = 1
	return st, round, nil
}

func uploadName(round int64) string { return fmt.Sprintf("up%05d", round) }

// blobUploadOp is an operation of blob-upload. The first blob it commits is the one the
// downloads read if they run after it: it holds the bytes they would otherwise upload first.
func blobUploadOp(ctx context.Context, w *worker) (opStats, error) {
	container := w.t.containers[uploadContainer]
	st, committed, err := w.uploadStep(ctx, w.t.xfer, container, uploadName)
	if committed == 0 {
		// One worker commits round 0; the others read this after the workload has ended.
		w.t.uploaded = blobPath(container, uploadName(0))
	}
	return st, err
}

// blobRangedGetOp reads one --block-size range of the big blob; the worker that reads a
// round's last range counts the blob.
func blobRangedGetOp(ctx context.Context, w *worker) (opStats, error) {
	x := w.t.xfer
	round, block, ok := x.claim()
	if !ok {
		return opStats{}, errTransferDone
	}
	off, n := blockRange(w.cfg, block)
	w.sink.reset(off)
	w.bcn.sink = &w.sink
	r, err := w.bcn.do(ctx, http.MethodGet, w.t.bigBlob, "",
		http.Header{"Range": {"bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)}}, nil)
	w.bcn.sink = nil
	if err != nil {
		return opStats{}, err
	}
	if r.status != http.StatusPartialContent {
		return opStats{}, statusError(r)
	}
	if err := w.sink.verify("ranged Get Blob", n); err != nil {
		return opStats{}, err
	}
	st := opStats{bytes: n}
	if x.finish(round) {
		st.entities = 1
	}
	return st, nil
}

func blobGetOp(ctx context.Context, w *worker) (opStats, error) {
	w.sink.reset(0)
	w.bcn.sink = &w.sink
	r, err := w.bcn.do(ctx, http.MethodGet, w.t.bigBlob, "", nil, nil)
	w.bcn.sink = nil
	if err != nil {
		return opStats{}, err
	}
	if r.status != http.StatusOK {
		return opStats{}, statusError(r)
	}
	if err := w.sink.verify("Get Blob", w.cfg.blobSize); err != nil {
		return opStats{}, err
	}
	return opStats{entities: 1, bytes: w.cfg.blobSize}, nil
}

var blockBlobHeader = http.Header{"Content-Type": {"application/octet-stream"}, "X-Ms-Blob-Type": {"BlockBlob"}}

// putBlob writes a block blob of size bytes, smallContent(n), in one Put Blob.
func (w *worker) putBlob(ctx context.Context, container, name string, size int, n int64) error {
	if cap(w.bcn.body) < size {
		w.bcn.body = make([]byte, size)
	}
	w.bcn.body = w.bcn.body[:size]
	smallContent(w.bcn.body, n)
	r, err := w.bcn.do(ctx, http.MethodPut, blobPath(container, name), "", blockBlobHeader, w.bcn.body)
	if err != nil {
		return err
	}
	if r.status != http.StatusCreated {
		return statusError(r)
	}
	return nil
}

func smallName(n int64) string { return fmt.Sprintf("s%08d", n) }
func listName(n int64) string  { return fmt.Sprintf("l%09d", n) }

func blobPutSmallOp(ctx context.Context, w *worker) (opStats, error) {
	w.seq++
	if err := w.putBlob(ctx, w.t.containers[putContainer], w.name+"-"+strconv.FormatInt(w.seq, 10), w.cfg.smallSize, w.seq); err != nil {
		return opStats{}, err
	}
	return opStats{entities: 1, bytes: int64(w.cfg.smallSize)}, nil
}

func blobGetSmallOp(ctx context.Context, w *worker) (opStats, error) {
	n := w.rng.Int64N(w.cfg.smallBlobs)
	r, err := w.bcn.do(ctx, http.MethodGet, blobPath(w.t.containers[smallContainer], smallName(n)), "", nil, nil)
	if err != nil {
		return opStats{}, err
	}
	if r.status != http.StatusOK {
		return opStats{}, statusError(r)
	}
	if len(w.small) != w.cfg.smallSize {
		w.small = make([]byte, w.cfg.smallSize)
	}
	smallContent(w.small, n)
	if !bytes.Equal(r.body, w.small) {
		return opStats{}, &opError{key: "wrong content: small Get Blob", detail: fmt.Sprintf("blob %s: %d bytes, not the %d uploaded", smallName(n), len(r.body), len(w.small))}
	}
	return opStats{entities: 1, bytes: int64(len(r.body))}, nil
}

// listPage is one page of the list container as setup walked it: the marker that starts it
// and the blobs it returned.
type listPage struct {
	marker string
	blobs  int
}

// listBlobs asks for the page of container that starts at marker, and returns the blobs it
// lists and its NextMarker.
func (cn *conn) listBlobs(ctx context.Context, container, marker string, pageSize int) (blobs int, next string, err error) {
	query := "restype=container&comp=list&maxresults=" + strconv.Itoa(pageSize)
	if marker != "" {
		query += "&marker=" + queryEscape(marker)
	}
	r, err := cn.do(ctx, http.MethodGet, "/"+container, query, nil, nil)
	if err != nil {
		return 0, "", err
	}
	if r.status != http.StatusOK {
		return 0, "", statusError(r)
	}
	if !bytes.Contains(r.body, []byte("</EnumerationResults>")) {
		return 0, "", &opError{key: "malformed List Blobs response", detail: truncate(string(r.body), 300)}
	}
	return bytes.Count(r.body, []byte("<Blob>")), xmlUnescape(xmlElement(r.body, "NextMarker")), nil
}

var xmlUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'", "&amp;", "&")

func xmlUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return xmlUnescaper.Replace(s)
}

// blobListOp lists one page from a random page start that setup recorded, and expects the
// blobs the walk found there.
func blobListOp(ctx context.Context, w *worker) (opStats, error) {
	p := w.t.listPages[w.rng.IntN(len(w.t.listPages))]
	got, _, err := w.bcn.listBlobs(ctx, w.t.containers[listContainer], p.marker, w.cfg.listPage)
	if err != nil {
		return opStats{}, err
	}
	if got != p.blobs {
		return opStats{}, &opError{key: "wrong count: List Blobs", detail: fmt.Sprintf("the page at marker %q listed %d blobs, %d at setup", p.marker, got, p.blobs)}
	}
	return opStats{entities: int64(got), pages: 1}, nil
}

// containerName is a run's container for role: lower case, as container names must be.
func containerName(prefix, runID string, role blobRole) string {
	return strings.ToLower(prefix) + runID + "-" + blobSuffixes[role]
}

// setupBlobs creates the containers the selected workloads use on t and preloads them: the small
// blobs for blob-get-small, the list container (walked once to record where its pages start).
// The blob the downloads read comes later (ensureBigBlob).
func setupBlobs(ctx context.Context, cfg *config, t *target, runID string, prog *progress) error {
	need := [numBlobRoles]bool{}
	anyBlob := false
	for _, wl := range cfg.workloads {
		if wl.blob != nil {
			need[wl.blob.container], anyBlob = true, true
		}
	}
	if !anyBlob {
		return nil
	}
	if t.blob == nil {
		return fmt.Errorf("the blob workloads need a blob endpoint for %s (--blob-endpoint, --compare-blob)", t.label)
	}
	cn := &conn{c: t.blob}
	defer cn.close()
	start := time.Now()
	for role := bigContainer; role < numBlobRoles; role++ {
		t.containers[role] = containerName(cfg.tablePrefix, runID, role)
		if !need[role] {
			continue
		}
		r, err := cn.do(ctx, http.MethodPut, "/"+t.containers[role], "restype=container", nil, nil)
		if err == nil && r.status != http.StatusCreated {
			err = statusError(r)
		}
		if err != nil {
			return fmt.Errorf("creating container %s on %s: %w", t.containers[role], t.label, err)
		}
		t.createdContainers = append(t.createdContainers, t.containers[role])
	}
	if need[smallContainer] {
		if err := preloadBlobs(ctx, cfg, t, smallContainer, cfg.smallBlobs, cfg.smallSize, smallName, prog); err != nil {
			return fmt.Errorf("preloading %s on %s: %w", t.containers[smallContainer], t.label, err)
		}
	}
	if need[listContainer] {
		if err := preloadBlobs(ctx, cfg, t, listContainer, cfg.listBlobs, 0, listName, prog); err != nil {
			return fmt.Errorf("preloading %s on %s: %w", t.containers[listContainer], t.label, err)
		}
		if err := walkList(ctx, cfg, t, cn); err != nil {
			return fmt.Errorf("listing %s on %s: %w", t.containers[listContainer], t.label, err)
		}
	}
	t.blobPreload = time.Since(start)
	return nil
}

// ensureBigBlob makes sure t has the blob the downloads read, before the first of them runs
// (not timed): blob-upload's first blob when it ran before, and else one uploaded now with
// blob-upload's requests and parallelism. It says which on human.
func ensureBigBlob(ctx context.Context, cfg *config, t *target, prog *progress, human io.Writer) error {
	if t.bigBlob != "" {
		return nil
	}
	if t.uploaded != "" {
		t.bigBlob = t.uploaded
		fmt.Fprintf(human, "%-22s the downloads on %s read blob-upload's first blob\n", "", t.label)
		return nil
	}
	start := time.Now()
	x := newTransfer(cfg, start.Add(time.Hour*24*365), 1)
	loaders := make([]*worker, cfg.blobParallel)
	for i := range loaders {
		loaders[i] = newWorker(cfg, t, i, 0)
	}
	container := t.containers[bigContainer]
	err := runLoaders(ctx, loaders, fmt.Sprintf("uploading a %s blob to %s", fmtBytes(cfg.blobSize), t.label), prog, func(w *worker) (bool, error) {
		_, _, err := w.uploadStep(ctx, x, container, func(int64) string { return bigBlobName })
		if errors.Is(err, errTransferDone) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("uploading the download blob to %s on %s: %w", container, t.label, err)
	}
	t.bigBlob = blobPath(container, bigBlobName)
	fmt.Fprintf(human, "%-22s uploaded the download blob to %s in %s (not timed)\n", "", t.label, fmtMs(time.Since(start).Seconds()*1000))
	return nil
}

// preloadBlobs puts n blobs of size bytes, named by name, into the container of role, with
// --blob-loaders workers. A connection the server drops is tried again on a fresh one: a
// preload is not measured, and a blob put twice is the same blob.
func preloadBlobs(ctx context.Context, cfg *config, t *target, role blobRole, n int64, size int, name func(int64) string, prog *progress) error {
	var next atomic.Int64
	loaders := make([]*worker, cfg.blobLoaders)
	for i := range loaders {
		loaders[i] = newWorker(cfg, t, i, 0)
	}
	container := t.containers[role]
	return runLoaders(ctx, loaders, fmt.Sprintf("preloading %d blobs on %s", n, t.label), prog, func(w *worker) (bool, error) {
		i := next.Add(1) - 1
		if i >= n {
			return false, nil
		}
		err := w.putBlob(ctx, container, name(i), size, i)
		for retries := 0; err != nil && retries < 3 && isTransport(err) && ctx.Err() == nil; retries++ {
			err = w.putBlob(ctx, container, name(i), size, i)
		}
		return err == nil, err
	})
}

// runLoaders runs step on every loader until it returns false or an error; the first error
// stops them all and is returned.
func runLoaders(ctx context.Context, loaders []*worker, label string, prog *progress, step func(w *worker) (more bool, err error)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := prog.start(label, 0, loaders)
	defer stop()
	var wg sync.WaitGroup
	for _, w := range loaders {
		wg.Go(func() {
			defer w.bcn.close()
			for ctx.Err() == nil {
				more, err := step(w)
				if err != nil {
					cancel(err)
					return
				}
				if !more {
					return
				}
				w.done.Add(1)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// walkList lists the whole list container page by page, recording where each page starts and
// what it held, and checks that it holds every blob preloaded.
func walkList(ctx context.Context, cfg *config, t *target, cn *conn) error {
	t.listPages = nil
	var total int64
	marker := ""
	for {
		blobs, next, err := cn.listBlobs(ctx, t.containers[listContainer], marker, cfg.listPage)
		if err != nil {
			return err
		}
		t.listPages = append(t.listPages, listPage{marker: marker, blobs: blobs})
		total += int64(blobs)
		if next == "" {
			break
		}
		if next == marker {
			return fmt.Errorf("List Blobs returned the marker it was given (%q)", marker)
		}
		marker = next
	}
	if total != cfg.listBlobs {
		return fmt.Errorf("the container lists %d blobs, %d were put", total, cfg.listBlobs)
	}
	return nil
}

// teardownBlobs deletes the containers setupBlobs created.
func teardownBlobs(ctx context.Context, t *target) error {
	if len(t.createdContainers) == 0 {
		return nil
	}
	cn := &conn{c: t.blob}
	defer cn.close()
	var errs []error
	for _, name := range t.createdContainers {
		r, err := cn.do(ctx, http.MethodDelete, "/"+name, "restype=container", nil, nil)
		if err == nil && r.status != http.StatusAccepted {
			err = statusError(r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting container %s on %s: %w", name, t.label, err))
		}
	}
	t.createdContainers = nil
	return errors.Join(errs...)
}

// fmtBytes writes a size in the largest binary unit that divides it, or in bytes.
func fmtBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// sizeFlag is a flag of bytes: 4096, 4KiB, 4MiB, 1GiB (K, M, G and KB, MB, GB are binary too).
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return strings.ReplaceAll(fmtBytes(*f.n), " ", "")
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

func parseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	num, unit := s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
	shift := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30, "GB": 30, "GIB": 30}
	sh, ok := shift[unit]
	v, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || v < 0 || v > (1<<62)>>sh {
		return 0, fmt.Errorf("%q is not a size (4096, 4KiB, 4MiB, 1GiB)", s)
	}
	return v << sh, nil
}
