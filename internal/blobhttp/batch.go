package blobhttp

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/batchwire"
	"github.com/tabula-dev/tabula/internal/server"
)

// Blob Batch (blob.md §16): up to 256 Delete Blob or Set Blob Tier sub-requests in one
// multipart/mixed body, each authenticated, authorized and executed on its own, and answered
// in a part of the 202 response, in request order.
const (
	maxBatchSubRequests = 256
	// batchWorkers is how many sub-requests run at once: independent writes share WAL syncs
	// when they commit together.
	batchWorkers = 16
	// versionContainerBatch is the first version with a container's own batch.
	versionContainerBatch = "2020-04-08"
)

// batchKind is the one operation all sub-requests of a batch must be.
type batchKind int

const (
	batchDelete batchKind = iota + 1
	batchSetTier
)

func (k batchKind) String() string {
	if k == batchSetTier {
		return "Set Blob Tier"
	}
	return "Delete Blob"
}

// submitBatch serves a batch of the account (container "") or of one container. Faults of
// the batch as a whole (a malformed body, no sub-request, too many, mixed operations, a
// sub-request outside the container) are answered as Azure does: 202 with a single part, with
// no Content-ID, carrying the error; nothing is executed then.
func (s *Server) submitBatch(rq *request, container string) error {
	body, err := readBatchBody(rq)
	if err != nil {
		return err
	}
	parts, err := batchwire.DecodeParts(rq.R.Header.Get("Content-Type"), body)
	if err != nil {
		if azerr.As(err).Status == http.StatusRequestEntityTooLarge {
			return err
		}
		return s.batchRefused(rq, err)
	}
	subs, err := s.checkBatch(rq, container, parts)
	if err != nil {
		return s.batchRefused(rq, err)
	}
	// Read once here: the batch's ResponseWriter is not for the workers to touch.
	version := rq.W.Header()["x-ms-version"]
	responses := make([]batchwire.PartResponse, len(subs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(batchWorkers, len(subs)) {
		wg.Go(func() {
			for i := range work {
				responses[i] = s.runSubRequest(rq, version, subs[i])
			}
		})
	}
	for i := range subs {
		work <- i
	}
	close(work)
	wg.Wait()
	failed := 0
	for _, r := range responses {
		if r.Status >= 300 {
			failed++
		}
	}
	// The batch's log line says what it held (each sub-request has its own line too).
	rq.NoteAttrs(slog.String("batch_op", subs[0].kind.String()), slog.Int("sub_requests", len(subs)), slog.Int("sub_failed", failed))
	contentType, out := batchwire.EncodePartsResponse(responses)
	return writeBatchResponse(rq, contentType, out)
}

// readBatchBody reads the batch's body, at most batchwire.MaxBodySize bytes (413 beyond).
func readBatchBody(rq *request) ([]byte, error) {
	if _, err := contentLength(rq); err != nil {
		return nil, err
	}
	return readXMLBody(rq, batchwire.MaxBodySize)
}

// subRequest is one sub-request of a batch, checked and ready to run.
type subRequest struct {
	part batchwire.Part
	kind batchKind
	// resource is the path after the account it addresses, percent-encoded ("/c/b");
	// signed is the path as the request line wrote it, which is what a SharedKey signed.
	resource, signed string
}

// checkBatch checks the batch as a whole before anything runs: its size, that every
// sub-request is a Delete Blob or every one a Set Blob Tier, and, in a container's batch,
// that each addresses a blob of that container.
func (s *Server) checkBatch(rq *request, container string, parts []batchwire.Part) ([]subRequest, error) {
	if len(parts) == 0 {
		return nil, azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid. The batch holds no sub-request.")
	}
	if len(parts) > maxBatchSubRequests {
		return nil, azerr.Newf(azerr.ExceedsMaxBatchRequestCount, "The batch operation exceeds maximum number of allowed subrequests. It holds %d; at most %d are allowed.", len(parts), maxBatchSubRequests)
	}
	subs := make([]subRequest, len(parts))
	var first batchKind
	for i, p := range parts {
		kind := subRequestKind(p)
		if kind == 0 {
			return nil, azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid. Sub-request %d is %s %s; a batch holds Delete Blob or Set Blob Tier (PUT ?comp=tier) requests only.", i, p.Method, p.URL.EscapedPath())
		}
		if i == 0 {
			first = kind
		} else if kind != first {
			return nil, azerr.New(azerr.AllBatchSubRequestsShouldBeSameAPI)
		}
		sub := subRequest{part: p, kind: kind}
		sub.resource, sub.signed = s.subRequestPath(rq, p.URL)
		if container != "" {
			name, _, _ := strings.Cut(strings.TrimPrefix(sub.resource, "/"), "/")
			if decoded, err := url.PathUnescape(name); err != nil || decoded != container {
				return nil, azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid. Sub-request %d addresses %s, outside container %q whose batch this is.", i, p.URL.EscapedPath(), container)
			}
		}
		subs[i] = sub
	}
	return subs, nil
}

// subRequestKind names the operation of p, 0 when it is neither of a batch's two.
func subRequestKind(p batchwire.Part) batchKind {
	q := p.URL.Query()
	switch {
	case q.Has("restype"):
		return 0
	case p.Method == http.MethodDelete && !q.Has("comp"):
		return batchDelete
	case p.Method == http.MethodPut && q.Get("comp") == "tier":
		return batchSetTier
	}
	return 0
}

// subRequestPath reads the path of a sub-request's target. SDKs write it in several forms
// against a path-style endpoint: "/account/c/b" (Go, JS, C++), "/c/b" (Python),
// "account/c/b" (.NET); each signs the path it wrote, after "/" + account. In path style a
// first segment naming the account is taken as the account's when a container and a blob
// follow it: a container named like the account whose blob name has no '/' stays reachable,
// one whose blob name has a '/' does not.
func (s *Server) subRequestPath(rq *request, u *url.URL) (resource, signed string) {
	signed = u.EscapedPath()
	if !strings.HasPrefix(signed, "/") {
		signed = "/" + signed
	}
	resource = signed
	if rq.PathStyle {
		seg, rest, _ := strings.Cut(signed[1:], "/")
		if name, _ := server.HostedAccount(s.auth, seg); name == rq.Account && strings.Contains(rest, "/") {
			resource = "/" + rest
		}
	}
	return resource, signed
}

// runSubRequest serves one sub-request as the request it embeds, through the same
// authentication, routing and handlers as any request, and returns its answer as a part.
// version is the x-ms-version the batch answers with.
func (s *Server) runSubRequest(batch *request, version []string, sub subRequest) batchwire.PartResponse {
	p := sub.part
	header := p.Header.Clone()
	var length int64
	if v := header.Get("Content-Length"); v != "" {
		length, _ = strconv.ParseInt(v, 10, 64)
		header.Del("Content-Length") // as net/http keeps it: in ContentLength only
	}
	target := &url.URL{Path: sub.signed, RawQuery: p.URL.RawQuery}
	if decoded, err := url.PathUnescape(sub.signed); err == nil {
		target.Path, target.RawPath = decoded, sub.signed
	}
	r := (&http.Request{
		Method:        p.Method,
		URL:           target,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Host:          batch.R.Host,
		RemoteAddr:    batch.R.RemoteAddr,
		TLS:           batch.R.TLS,
		ContentLength: length,
		Body:          http.NoBody,
		RequestURI:    p.RawTarget,
	}).WithContext(batch.ctx)

	w := &partWriter{header: make(http.Header, 8)}
	rq := &request{ctx: batch.ctx, log: batch.log}
	batch.BeginPart(&rq.Request, w, r, defaultVersion)
	if rq.Version == "" {
		// SDKs strip x-ms-version from sub-requests (it is not signed): they run at the
		// batch's version.
		rq.Version = batch.Version
		w.header["x-ms-version"] = version
	}
	rq.Account, rq.Secondary, rq.PathStyle, rq.BaseURL, rq.Path = batch.Account, batch.Secondary, batch.PathStyle, batch.BaseURL, sub.resource
	err := s.serveAddressed(rq)
	if err != nil {
		server.WriteXMLError(&rq.Request, err, rq.log)
	}
	part := w.part(p.ContentID, err)
	batch.FinishPart(&rq.Request, part.Status, int64(len(part.Body)))
	return part
}

// batchRefused answers the batch as a whole with err: 202 and one part without Content-ID
// carrying the error, with the batch's own request id (as recorded from the real service).
func (s *Server) batchRefused(rq *request, err error) error {
	e := azerr.As(err)
	if e.Status >= 500 {
		return err
	}
	w := &partWriter{header: make(http.Header, 8)}
	for _, name := range []string{"x-ms-request-id", "x-ms-version", "x-ms-client-request-id", "Server"} {
		if v, ok := rq.W.Header()[name]; ok {
			w.header[name] = v
		}
	}
	errRq := rq.Request
	errRq.W = w
	server.WriteXMLError(&errRq, e, rq.log)
	contentType, out := batchwire.EncodePartsResponse([]batchwire.PartResponse{w.part("", e)})
	return writeBatchResponse(rq, contentType, out)
}

func writeBatchResponse(rq *request, contentType string, body []byte) error {
	h := rq.W.Header()
	h["Content-Type"] = []string{contentType}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rq.W.WriteHeader(http.StatusAccepted)
	_, _ = rq.W.Write(body)
	return nil
}

// partWriter is the http.ResponseWriter a sub-request is answered through.
type partWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *partWriter) Header() http.Header { return w.header }

func (w *partWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *partWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// Headers a part writes last, in this order, after the operation's own (the real service's
// order). Date is left out: parts carry none.
var partTrailingHeaders = []string{"x-ms-request-id", "x-ms-version", "x-ms-client-request-id", "Content-Length", "Content-Type", "Server"}

// part is what w received, as a batch response part. err is what the handler failed with,
// whose message is the status line's reason, as Azure writes it.
func (w *partWriter) part(contentID string, err error) batchwire.PartResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	reason := http.StatusText(status)
	if err != nil {
		var e *azerr.Error
		if errors.As(err, &e) && e.Status == status {
			reason, _, _ = strings.Cut(e.Message, "\n")
		}
	}
	h := w.header
	lines := make([]batchwire.HeaderLine, 0, len(h))
	if vs := h["x-ms-error-code"]; len(vs) > 0 {
		lines = append(lines, batchwire.HeaderLine{Name: "x-ms-error-code", Value: vs[0]})
	}
	var own []string
	for k := range h {
		if k == "x-ms-error-code" || k == "Date" || slices.Contains(partTrailingHeaders, k) {
			continue
		}
		own = append(own, k)
	}
	sort.Strings(own)
	for _, k := range own {
		for _, v := range h[k] {
			lines = append(lines, batchwire.HeaderLine{Name: k, Value: v})
		}
	}
	for _, k := range partTrailingHeaders {
		vs := h[k]
		if len(vs) == 0 || k == "Content-Length" && w.body.Len() == 0 {
			continue
		}
		lines = append(lines, batchwire.HeaderLine{Name: k, Value: vs[0]})
	}
	return batchwire.PartResponse{ContentID: contentID, Status: status, Reason: reason, Header: lines, Body: w.body.Bytes()}
}
