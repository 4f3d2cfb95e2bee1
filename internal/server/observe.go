package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/faults"
	"github.com/tabula-dev/tabula/internal/metrics"
	"github.com/tabula-dev/tabula/internal/throttle"
)

// RequestLog says which requests get a log line. The zero value logs none.
type RequestLog struct {
	// Logger receives the lines; nil logs none.
	Logger *slog.Logger
	// ErrorsOnly logs only requests answered with a status of 400 or more.
	ErrorsOnly bool
	// SampleEvery logs one in this many successful requests (0 and 1: every one); failed
	// requests are always logged.
	SampleEvery uint64

	seen atomic.Uint64
}

// wants reports whether a request answered with status gets a line.
func (l *RequestLog) wants(status int) bool {
	if l == nil || l.Logger == nil {
		return false
	}
	if status >= 400 || status == 0 {
		return true
	}
	if l.ErrorsOnly {
		return false
	}
	return l.SampleEvery <= 1 || l.seen.Add(1)%l.SampleEvery == 0
}

// record is what one request's log line and metrics are made of. The observing middleware
// creates it; the service's handler fills in what only it knows through its Request.
type record struct {
	service   string
	requestID string
	account   string
	operation string
	resource  string
	partition string
	attrs     []slog.Attr

	faults *faults.Set
	// log is where the request's line goes (nil: nowhere), for the parts it carries
	// (BeginPart); start is when a part began.
	log   *RequestLog
	start time.Time
	// after is a fault to inject once the handler has applied the operation; its answer is
	// then discarded.
	after *faults.Hit
}

// observe wraps an endpoint's handler: it times each request, counts its bytes, and when it
// is answered writes its log line and updates the metrics.
func observe(e Endpoint, h http.Handler, log *RequestLog, faultSet *faults.Set) http.Handler {
	service := e.Name
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &responseRecorder{ResponseWriter: w}
		rw.conn, _ = r.Context().Value(azureConnKey{}).(*azureConn)
		if rw.conn != nil {
			if r.TLS == nil {
				if st, ok := rw.conn.tlsState(); ok {
					r.TLS = st // net/http sets it only for a *tls.Conn it accepted itself
				}
			}
			if raw := rw.conn.names.take(r); raw != nil {
				renameMetaHeaders(r, raw)
			}
		}
		rec := &rw.rec
		rec.service, rec.log = service, log
		if !faultSet.Empty() {
			rec.faults = faultSet
		}
		var body *countingBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &countingBody{ReadCloser: r.Body}
			r.Body = body
		}
		defer func() {
			// A fault that closes the connection unwinds with http.ErrAbortHandler: the
			// request still gets its line and counts before net/http closes it.
			if p := recover(); p != nil {
				rw.dropHeld()
				if p == http.ErrAbortHandler && rec.faults != nil {
					finish(w, r, rw, rec, body, start, log, true)
				}
				panic(p)
			}
		}()
		h.ServeHTTP(rw, r)
		if body != nil {
			body.drainUnread(r)
		}
		if rec.after != nil {
			injectAfter(rw, w, rec, e.ErrorBody)
		}
		finish(w, r, rw, rec, body, start, log, false)
		rw.sendHeld()
	})
}

// finish counts a request and writes its log line. A request whose connection a fault closed
// (aborted) counts with status 0, and so does one that failed because its client went away
// mid-request (a body cut short): no one saw that answer, and it is no failure of the server's.
func finish(w http.ResponseWriter, r *http.Request, rw *responseRecorder, rec *record, body *countingBody, start time.Time, log *RequestLog, aborted bool) {
	status := rw.status
	if status == 0 && !aborted {
		status = http.StatusOK
	}
	if status >= 500 && r.Context().Err() != nil {
		status = 0
		rec.attrs = append(rec.attrs, slog.Bool("client_gone", true))
	}
	var in int64
	if body != nil {
		in = body.n
	}
	account(r, rec, status, errorCode(w.Header()), in, rw.bytes, time.Since(start), log)
}

// account adds one answered request to the metrics and, if log wants it, writes its line.
func account(r *http.Request, rec *record, status int, errCode string, in, out int64, elapsed time.Duration, log *RequestLog) {
	counted := countersFor(rec.service, rec.operation, status)
	counted.requests.Inc()
	counted.duration.Observe(elapsed.Seconds())
	if in > 0 {
		counted.requestBytes.Add(float64(in))
	}
	if out > 0 {
		counted.responseBytes.Add(float64(out))
	}
	if !log.wants(status) {
		return
	}
	attrs := append(make([]slog.Attr, 0, 12+len(rec.attrs)),
		slog.String("request_id", rec.requestID),
		slog.String("service", rec.service),
		slog.String("account", rec.account),
		slog.String("op", rec.operation),
		slog.String("resource", rec.resource),
		slog.String("method", r.Method),
		slog.Int("status", status),
	)
	if errCode != "" {
		attrs = append(attrs, slog.String("error", errCode))
	}
	attrs = append(attrs,
		slog.Float64("ms", float64(elapsed.Microseconds())/1000),
		slog.Int64("in", in),
		slog.Int64("out", out),
		slog.String("client", r.RemoteAddr),
	)
	attrs = append(attrs, rec.attrs...)
	level := slog.LevelInfo
	if status >= 500 || status == 0 {
		level = slog.LevelWarn
	}
	log.Logger.LogAttrs(r.Context(), level, "request", attrs...)
}

// BeginPart starts part, a request carried inside rq (a Blob Batch's sub-request), answered
// through w: as Begin does, except that it is counted and logged on its own, under rq's
// service and account and its own operation, by FinishPart. Fault rules do not reach it.
func (rq *Request) BeginPart(part *Request, w http.ResponseWriter, r *http.Request, defaultVersion string) {
	Begin(part, w, r, defaultVersion)
	part.rec = &record{service: rq.rec.service, requestID: part.ID, account: rq.rec.account, log: rq.rec.log, start: time.Now()}
}

// FinishPart counts a part begun with BeginPart, answered with status, and writes its log
// line (with the batch's request id as parent).
func (rq *Request) FinishPart(part *Request, status int, out int64) {
	rec := part.rec
	if rec.service == "" {
		return // not observed: a handler driven directly by a test
	}
	rec.attrs = append(rec.attrs, slog.String("parent", rq.ID))
	account(part.R, rec, status, errorCode(part.W.Header()), 0, out, time.Since(rec.start), rec.log)
}

// errorCode is the response's x-ms-error-code, which handlers may have set under its
// canonical name or, as Azure spells it, in lower case.
func errorCode(h http.Header) string {
	if v := h["x-ms-error-code"]; len(v) > 0 {
		return v[0]
	}
	return h.Get("x-ms-error-code")
}

// recordOf returns the record of the request answered through w, or a throw-away one when the
// request is not observed (a handler driven directly by a test). The record travels with the
// response writer rather than the request's context: a new context would copy the request.
func recordOf(w http.ResponseWriter) *record {
	if rw, ok := w.(*responseRecorder); ok {
		return &rw.rec
	}
	return &record{}
}

// requestCounters are the metrics of one (service, operation, status), looked up once: finding
// them by label values on every request would hash the labels each time.
type requestCounters struct {
	requests                    prometheus.Counter
	duration                    prometheus.Observer
	requestBytes, responseBytes prometheus.Counter // the service's
}

type countersKey struct {
	service, operation string
	status             int
}

var counters sync.Map // countersKey → *requestCounters

func countersFor(service, operation string, status int) *requestCounters {
	key := countersKey{service, operation, status}
	if c, ok := counters.Load(key); ok {
		return c.(*requestCounters)
	}
	c := &requestCounters{
		requests:      metrics.Requests.WithLabelValues(service, operation, strconv.Itoa(status)),
		duration:      metrics.RequestDuration.WithLabelValues(service, operation),
		requestBytes:  metrics.RequestBytes.WithLabelValues(service),
		responseBytes: metrics.ResponseBytes.WithLabelValues(service),
	}
	actual, _ := counters.LoadOrStore(key, c)
	return actual.(*requestCounters)
}

// Name names what the request asks for before it is authenticated, for its log line and its
// metrics only: a request that authentication refuses is then logged and counted under its
// operation and resource rather than under none. Note names it again once it is authenticated
// (the body may name the resource better) and applies the fault rules, which judge only
// authenticated requests.
func (rq *Request) Name(operation, resource string) {
	rq.rec.operation, rq.rec.resource = operation, resource
}

// Note names what the request does for its log line, its metrics and the fault rules: the
// operation in Azure's words ("Insert Entity", "Put Blob") and the table, container or queue
// it addresses. An error is a fault injected before the operation: the handler answers it
// instead of applying the operation. (A fault that closes the connection does not return.)
func (rq *Request) Note(operation, resource string) error {
	rq.rec.operation, rq.rec.resource = operation, resource
	return rq.injectFault(false)
}

// NotePartition names the partition (PartitionKey) the request acts on, for fault rules
// that name one; its error is Note's.
func (rq *Request) NotePartition(partition string) error {
	rq.rec.partition = partition
	return rq.injectFault(true)
}

// injectFault applies the first fault rule that hits the request so far described: before the
// operation it fails, delays or cuts the request here; after it, it is noted for observe.
func (rq *Request) injectFault(partitioned bool) error {
	rec := rq.rec
	if rec.faults == nil || rec.after != nil {
		return nil
	}
	hit, ok := rec.faults.Match(faults.Request{Service: rec.service, Operation: rec.operation, Account: rec.account,
		Resource: rec.resource, Partition: rec.partition}, partitioned)
	if !ok {
		return nil
	}
	rec.attrs = append(rec.attrs, slog.String("fault", hit.Rule))
	if hit.After {
		rec.after = &hit
		if rw, ok := rq.W.(*responseRecorder); ok && hit.Action != faults.ActionLatency {
			rw.discard = true
		}
		return nil
	}
	switch hit.Action {
	case faults.ActionError:
		return hit.Err
	case faults.ActionClose:
		panic(http.ErrAbortHandler) // net/http closes the connection without an answer
	case faults.ActionLatency:
		select {
		case <-time.After(hit.Latency):
		case <-rq.R.Context().Done():
		}
	}
	return nil
}

// injectAfter applies a fault noted for after the operation: the handler's answer, discarded,
// is replaced by the fault's.
func injectAfter(rw *responseRecorder, w http.ResponseWriter, rec *record, errorBody func(*azerr.Error, string) (string, []byte)) {
	hit := rec.after
	switch hit.Action {
	case faults.ActionLatency:
		time.Sleep(hit.Latency)
	case faults.ActionClose:
		panic(http.ErrAbortHandler)
	case faults.ActionError:
		h := w.Header()
		for k := range h {
			switch k {
			case "x-ms-request-id", "x-ms-version", "x-ms-client-request-id", "Date", "Server":
			default:
				delete(h, k)
			}
		}
		h["x-ms-error-code"] = []string{string(hit.Err.Code)}
		rw.discard, rw.status, rw.bytes = false, 0, 0
		if errorBody == nil {
			rw.WriteHeader(hit.Err.Status)
			return
		}
		contentType, body := errorBody(hit.Err, rec.requestID)
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		rw.WriteHeader(hit.Err.Status)
		_, _ = rw.Write(body)
	}
}

// NoteAttrs adds facts to the request's log line (a query's plan and entities scanned).
func (rq *Request) NoteAttrs(attrs ...slog.Attr) {
	rq.rec.attrs = append(rq.rec.attrs, attrs...)
}

// NoteFailure adds to the request's log line what its error answer says beyond its code, so
// that whoever reads the log sees why a request was refused: for AuthenticationFailed, the
// reason the client is sent as AuthenticationErrorDetail (auth_detail); for a request over a
// scalability target (--throttle), which target (throttled).
func (rq *Request) NoteFailure(err error) {
	if rq.rec == nil {
		return
	}
	if _, detail := authDetail(azerr.As(err)); detail != "" {
		rq.rec.attrs = append(rq.rec.attrs, slog.String("auth_detail", detail))
	}
	if scope := throttle.ScopeOf(err); scope != "" {
		rq.rec.attrs = append(rq.rec.attrs, slog.String("throttled", scope))
	}
}

// responseRecorder notes the status and body size of a response. It passes on what net/http's
// own writer offers: Unwrap for http.ResponseController (read deadlines), ReadFrom for
// zero-copy bodies, Flush.
type responseRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	rec    record
	// discard swallows the handler's answer, which a fault injected after the operation
	// replaces.
	discard bool
	// conn is the connection the response goes out on, as the server's bytes before any TLS
	// encrypts them; held says it holds the response (writeWhole) until sendHeld.
	conn *azureConn
	held bool
}

// azureConnKey is the context key of a request's *azureConn.
type azureConnKey struct{}

func (w *responseRecorder) WriteHeader(code int) {
	if w.discard {
		return
	}
	if w.status == 0 && code >= 200 {
		w.status = code
		w.dateNow()
	}
	w.ResponseWriter.WriteHeader(code)
}

// dateNow makes the Date header Begin set the time the response begins, as Azure's is: a
// request that took seconds (an upload, a copy) would otherwise answer a Date before its own
// Last-Modified.
func (w *responseRecorder) dateNow() {
	h := w.Header()
	if _, ok := h["Date"]; ok {
		h["Date"] = dateValue(time.Now())
	}
}

func (w *responseRecorder) Write(p []byte) (int, error) {
	if w.discard {
		return len(p), nil
	}
	if w.status == 0 {
		w.status = http.StatusOK
		w.dateNow()
	}
	if w.conn != nil && w.bytes == 0 && len(p) > 0 && len(p) <= maxHeld && w.declaresLength(len(p)) {
		return w.writeWhole(p)
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// writeWhole writes p, the whole of a body whose length the header declares, and the header
// with it, in one write to the connection: the connection holds what net/http hands it until
// sendHeld, once the request is counted and logged (so that nobody sees the answer before
// its metrics). net/http buffers 4 KiB per connection: a header and a body that do not fit
// in it together go out in two writes (a 4 KiB blob's, say), and a write costs the server as
// much as a quarter of serving a small read.
func (w *responseRecorder) writeWhole(p []byte) (int, error) {
	w.conn.hold()
	w.held = true
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// sendHeld sends what writeWhole held: net/http is made to hand over what it still buffers
// (the header is written and the body is all there is, so flushing sends nothing early that
// it would have held), and the connection writes it all at once.
func (w *responseRecorder) sendHeld() {
	if !w.held {
		return
	}
	w.held = false
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	_ = w.conn.release() // a failed write surfaces to net/http on the connection's next use
}

// dropHeld discards what writeWhole held: the handler panicked (a fault closing the
// connection, say), and net/http closes the connection without an answer.
func (w *responseRecorder) dropHeld() {
	if w.held {
		w.held = false
		w.conn.drop()
	}
}

// declaresLength reports whether the response's header declares a body of n bytes.
func (w *responseRecorder) declaresLength(n int) bool {
	v := w.Header()["Content-Length"]
	return len(v) == 1 && v[0] == strconv.Itoa(n)
}

func (w *responseRecorder) ReadFrom(src io.Reader) (int64, error) {
	if w.discard {
		return io.Copy(io.Discard, src)
	}
	if w.status == 0 {
		w.status = http.StatusOK
		w.dateNow()
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(w.ResponseWriter, src)
	}
	w.bytes += n
	return n, err
}

func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *responseRecorder) Flush() {
	if w.discard {
		return
	}
	if w.held { // the handler wants its answer out now
		w.sendHeld()
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type countingBody struct {
	io.ReadCloser
	n   int64
	eof bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// maxDrainBytes is how much of a request body the server reads past an answer that did not
// need it (a 413 judged from Content-Length, any refusal before the body).
const maxDrainBytes = 64 << 20

// drainUnread reads what is left of a body the handler did not read, up to maxDrainBytes.
// Clients that send the whole body before reading the answer (Python's requests, most
// HTTP/1.1 clients) would otherwise have the connection closed under them while still
// sending, and report a broken connection instead of the answer: net/http reads at most
// 256 KiB of an unread body and then closes. A client that asked to be told first (Expect:
// 100-continue) and was not (nothing read, so net/http sent no 100 Continue) has not sent the
// body and is not asked for it.
func (b *countingBody) drainUnread(r *http.Request) {
	if b.eof || b.n == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	_, _ = io.CopyN(io.Discard, b, maxDrainBytes)
}

// BufferedWriter batches log lines into few writes: one write per request line would cost a
// system call per request. Lines reach the underlying writer within flushInterval, and at
// Flush.
type BufferedWriter struct {
	mu  sync.Mutex
	buf *bufio.Writer
}

// flushInterval bounds how late a log line appears.
const flushInterval = 100 * time.Millisecond

// NewBufferedWriter returns a BufferedWriter over w that flushes until ctx is done, and once
// more then.
func NewBufferedWriter(ctx context.Context, w io.Writer) *BufferedWriter {
	b := &BufferedWriter{buf: bufio.NewWriterSize(w, 64<<10)}
	go func() {
		tick := time.NewTicker(flushInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				b.Flush()
				return
			case <-tick.C:
				b.Flush()
			}
		}
	}()
	return b
}

func (b *BufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Flush writes out what is buffered.
func (b *BufferedWriter) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.buf.Flush()
}
