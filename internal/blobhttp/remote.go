package blobhttp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobfetch"
	"github.com/tabula-dev/tabula/internal/metrics"
)

// Copy sources on other servers: the request's x-ms-source-* headers become those of the
// GET blobfetch makes, and the service calls it once it has judged the destination.

// sourceHeaders maps a copy request's headers about its source to the GET's: the source
// conditions, the source's lease, x-ms-copy-source-authorization, the bearer token the
// source takes as its Authorization, and the customer-provided key the source was written
// with (x-ms-source-encryption-*).
var sourceHeaders = []struct{ from, to string }{
	{"x-ms-source-if-match", "If-Match"},
	{"x-ms-source-if-none-match", "If-None-Match"},
	{"x-ms-source-if-modified-since", "If-Modified-Since"},
	{"x-ms-source-if-unmodified-since", "If-Unmodified-Since"},
	{"x-ms-source-if-tags", "x-ms-if-tags"},
	{"x-ms-source-lease-id", "x-ms-lease-id"},
	{"x-ms-copy-source-authorization", "Authorization"},
	{"x-ms-source-encryption-key", "x-ms-encryption-key"},
	{"x-ms-source-encryption-key-sha256", "x-ms-encryption-key-sha256"},
	{"x-ms-source-encryption-algorithm", "x-ms-encryption-algorithm"},
}

// remoteSource is the Fetch of u, a copy source on another server, for rq, whose GET has the
// header h (sourceRequestHeader). It carries the request's x-ms-version, whatever the source: an Azure server without a tell-tale host
// name (Azurite, another Tabula, a public container) then answers in that version's shape,
// and other servers ignore it. asCopyBlob makes unmet source conditions 412
// SourceConditionNotMet, as Copy Blob's are, and copies only the written pages of a page blob.
func (s *Server) remoteSource(rq *request, u *url.URL, h http.Header, asCopyBlob bool) blob.Fetch {
	source := blobfetch.Where(u)
	return func(ctx context.Context, r *blob.ByteRange) (*blob.RemoteSource, error) {
		note := &fetchNote{source: source}
		rq.fetched = note
		metrics.CopySourceFetches.Inc()
		src, err := s.Fetcher.Fetch(ctx, blobfetch.Request{URL: u, Range: r, Header: h, ConditionsFailAsSource: asCopyBlob, Sparse: asCopyBlob})
		if err != nil {
			return nil, err
		}
		src.Body = &countedBody{ReadCloser: src.Body, n: &note.bytes}
		return src, nil
	}
}

// sourceRequestHeader is the header of the requests made of rq's copy source on another
// server: rq's x-ms-version and the source headers mapped by sourceHeaders.
func sourceRequestHeader(rq *request) http.Header {
	version := rq.Version
	if version == "" {
		version = defaultVersion
	}
	h := http.Header{"X-Ms-Version": {version}, "User-Agent": {"Tabula (copy source)"}}
	for _, m := range sourceHeaders {
		if v := rq.R.Header.Get(m.from); v != "" {
			h.Set(m.to, v)
		}
	}
	return h
}

// remoteTags reads the tags of u, a copy source on another server, with the header h
// (sourceRequestHeader), for a copy that takes them (x-ms-copy-source-tag-option: COPY).
func (s *Server) remoteTags(u *url.URL, h http.Header) func(ctx context.Context) (blob.Tags, error) {
	return func(ctx context.Context) (blob.Tags, error) {
		return s.Fetcher.Tags(ctx, blobfetch.Request{URL: u, Header: h})
	}
}

// fetchNote is what a request's log line says of the copy source it fetched.
type fetchNote struct {
	source string
	bytes  atomic.Int64
}

// noteFetch adds to the request's log line the copy source it fetched from another server, if
// any, and the bytes read by the time it was answered (copy_source, fetched_bytes).
func (rq *request) noteFetch() {
	if rq.fetched == nil {
		return
	}
	n := rq.fetched.bytes.Load()
	rq.NoteAttrs(slog.String("copy_source", rq.fetched.source), slog.Int64("fetched_bytes", n))
}

// countedBody counts the bytes read through it into n and the copy-source bytes metric: a
// pending copy goes on reading after its request's log line.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	metrics.CopySourceBytes.Add(float64(n))
	return n, err
}
