package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
)

// The development account every emulator hosts; used when --account and --key are not given.
const (
	devAccount = "devstoreaccount1"
	devKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// apiVersion is sent as x-ms-version: the version the current SDKs speak.
const apiVersion = "2019-02-02"

// Client speaks the Table service REST API to one endpoint over keep-alive HTTP/1.1, signing
// every request with SharedKeyLite. It is safe for concurrent use; the buffers a request needs
// belong to the caller (see conn).
type Client struct {
	// Endpoint is the service root as given, without a trailing slash
	// (http://127.0.0.1:10002/devstoreaccount1).
	Endpoint string
	Account  string
	key      []byte
	scheme   string
	host     string
	// basePath is the path of the service root ("/devstoreaccount1" path-style, "" host-style);
	// every request path starts with it.
	basePath string
	timeout  time.Duration
	wires    *wires
	// kind is the service the endpoint is: requests are signed and versioned as that
	// service's (queue.go, blob.go).
	kind serviceKind
}

// serviceKind is the Azure Storage service an endpoint serves.
type serviceKind int

const (
	tableService serviceKind = iota
	queueService
	blobService
)

// NewClient returns a client for endpoint. An empty account is taken from the endpoint: its
// last path segment (path style, as emulators serve) or else the first label of its host (host
// style, as Azure serves). An empty key means the development account's well-known key, which
// only devstoreaccount1 accepts. conns is the number of requests that will be in flight at
// once: the client keeps that many connections open.
func NewClient(endpoint, account, key string, conns int, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(endpoint, "/"))
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q: want http://host:port/account or https://account.host", endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("endpoint %q: the service root has no query or fragment", endpoint)
	}
	basePath := u.EscapedPath()
	if account == "" {
		if i := strings.LastIndexByte(basePath, '/'); i >= 0 && i < len(basePath)-1 {
			account = basePath[i+1:]
		} else {
			account, _, _ = strings.Cut(u.Hostname(), ".")
		}
	}
	if key == "" {
		if account != devAccount {
			return nil, fmt.Errorf("account %s needs --key (the well-known key is only for %s)", account, devAccount)
		}
		key = devKey
	}
	rawKey, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("--key is not base64: %w", err)
	}
	return &Client{
		Endpoint: u.String(),
		Account:  account,
		key:      rawKey,
		scheme:   u.Scheme,
		host:     u.Host,
		basePath: basePath,
		timeout:  timeout,
		wires:    newWires(u.Scheme, u.Host, timeout),
	}, nil
}

// Close closes the client's connections.
func (c *Client) Close() { c.wires.closeAll() }

// conn is what one worker owns to issue requests: its connection, opened on first use and
// again after a failure, and reusable request and response buffers. A conn is used by one
// goroutine at a time. Request bodies are built in body.
type conn struct {
	c      *Client
	wire   *wire
	body   []byte // request body under construction
	head   []byte // request line and headers
	header http.Header
	resp   bytes.Buffer
	// sink, when set, receives the body of a 200 or 206 response instead of resp: the
	// downloads stream through it (blob.go) rather than being held whole.
	sink io.Writer
}

// response is the part of an HTTP response a workload looks at. body aliases the conn's buffer
// and is valid until the next request on the same conn.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a signed request. path is the escaped path after the service root ("/Tables",
// "/t(PartitionKey='a',RowKey='b')"), rawQuery the escaped query. body, when not nil, is sent
// with the Content-Type given in header. The response body is read in full into the conn's
// buffer.
//
// A transport failure is returned as an *opError; an HTTP error status is not an error here:
// the caller decides what it expected.
func (cn *conn) do(ctx context.Context, method, path, rawQuery string, header http.Header, body []byte) (response, error) {
	c := cn.c
	date := time.Now().UTC().Format(http.TimeFormat)
	h := cn.head[:0]
	h = append(h, method...)
	h = append(h, ' ')
	h = append(h, c.basePath...)
	h = append(h, path...)
	if rawQuery != "" {
		h = append(h, '?')
		h = append(h, rawQuery...)
	}
	h = append(h, " HTTP/1.1\r\nHost: "...)
	h = append(h, c.host...)
	h = append(h, "\r\nX-Ms-Date: "...)
	h = append(h, date...)
	switch c.kind {
	case queueService:
		h = append(h, "\r\nX-Ms-Version: "+queueAPIVersion+"\r\n"...)
		h = append(h, "Authorization: SharedKeyLite "+c.Account+":"...)
		h = append(h, signQueueLite(c.key, method, header.Get("Content-Type"), date, "/"+c.Account+c.basePath+path)...)
	case blobService:
		h = append(h, "\r\nX-Ms-Version: "+blobAPIVersion+"\r\n"...)
		h = append(h, "Authorization: SharedKey "+c.Account+":"...)
		h = append(h, signBlob(c.key, blobStringToSign(method, header, len(body), date, blobAPIVersion, "/"+c.Account+c.basePath+path, rawQuery))...)
	default:
		h = append(h, "\r\nX-Ms-Version: "+apiVersion+"\r\nDataServiceVersion: 3.0;\r\nMaxDataServiceVersion: 3.0;NetFx\r\n"...)
		// SharedKeyLite signs the date and the canonicalized resource: "/" + account + the
		// path as sent (which, path style, repeats the account), plus "?comp=" when present
		// (never, for the operations benchmarked).
		h = append(h, "Authorization: SharedKeyLite "+c.Account+":"...)
		h = append(h, auth.SignSharedKeyLite(c.key, date, "/"+c.Account+c.basePath+path)...)
	}
	h = append(h, "\r\n"...)
	for k, vs := range header {
		for _, v := range vs {
			h = append(h, k...)
			h = append(h, ": "...)
			h = append(h, v...)
			h = append(h, "\r\n"...)
		}
	}
	if body != nil || method == http.MethodPost || method == http.MethodPut {
		h = append(h, "Content-Length: "...)
		h = strconv.AppendInt(h, int64(len(body)), 10)
		h = append(h, "\r\n"...)
	}
	h = append(h, "\r\n"...)
	cn.head = h
	if cn.header == nil {
		cn.header = make(http.Header, len(keptHeaders))
	}
	for {
		reused := cn.wire != nil && cn.wire.used
		if cn.wire == nil {
			w, err := c.wires.get(ctx)
			if err != nil {
				return response{}, transportError(err)
			}
			cn.wire = w
		}
		status, close, err := cn.wire.roundTrip(ctx, c.timeout, method, h, body, cn.header, &cn.resp, cn.sink)
		if err != nil {
			c.wires.drop(cn.wire)
			cn.wire = nil
			if reused && method == http.MethodGet && errors.Is(err, errNothingReceived) {
				// The server may have closed the connection as idle before the request
				// arrived. A read can safely be sent again; a write cannot (the server may
				// have applied it), so its failure is counted, as net/http would report it.
				continue
			}
			return response{}, transportError(err)
		}
		cn.wire.used = true
		if close {
			c.wires.drop(cn.wire)
			cn.wire = nil
		}
		return response{status: status, header: cn.header, body: cn.resp.Bytes()}, nil
	}
}

// close closes the conn's connection, if open.
func (cn *conn) close() {
	if cn.wire != nil {
		cn.c.wires.drop(cn.wire)
		cn.wire = nil
	}
}

// opError is a failed operation, with the key it is counted under.
type opError struct {
	// key groups errors in the report: "409 EntityAlreadyExists", "transport: read:
	// connection reset by peer", "batch 400 InvalidInput", "count: partition scan".
	key string
	// detail is one instance's message, kept as the group's example.
	detail string
}

func (e *opError) Error() string { return e.key + ": " + e.detail }

// transportError classifies a failure to get a response. Addresses and ports are left out of
// the key, so that one cause is one line of the report whatever connection it hit.
func transportError(err error) *opError {
	key := "transport"
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, http.ErrHandlerTimeout):
		key += ": timeout"
	case errors.Is(err, context.Canceled):
		key += ": canceled"
	case errors.As(err, &oe):
		key += ": " + oe.Op + ": " + oe.Err.Error()
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		key += ": connection closed by server"
	default:
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() {
			key += ": timeout"
		} else {
			key += ": " + truncate(err.Error(), 60)
		}
	}
	return &opError{key: key, detail: err.Error()}
}

// statusError describes a response that is not the one expected: its status and Azure error
// code, taken from x-ms-error-code or else from the error body (JSON or XML).
func statusError(r response) *opError {
	code := r.header.Get("X-Ms-Error-Code")
	if code == "" {
		code = errorCodeFromBody(r.body)
	}
	key := fmt.Sprint(r.status)
	if code != "" {
		key += " " + code
	}
	return &opError{key: key, detail: truncate(string(r.body), 300)}
}

// errorCodeFromBody finds the code in {"odata.error":{"code":"X",…}} or <code>X</code>
// without parsing the document: error bodies vary between servers, and only the code is wanted.
func errorCodeFromBody(body []byte) string {
	if _, rest, ok := bytes.Cut(body, []byte(`"code":`)); ok {
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if len(rest) > 0 && rest[0] == '"' {
			if code, _, ok := bytes.Cut(rest[1:], []byte(`"`)); ok {
				return string(code)
			}
		}
	}
	for _, open := range []string{"<code>", "<Code>"} {
		if _, rest, ok := bytes.Cut(body, []byte(open)); ok {
			if code, _, ok := bytes.Cut(rest, []byte("<")); ok {
				return string(bytes.TrimSpace(code))
			}
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// createTable creates a table; it is an error if it exists.
func (cn *conn) createTable(ctx context.Context, name string) error {
	h := http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json;odata=nometadata"},
		"Prefer":       {"return-no-content"},
	}
	r, err := cn.do(ctx, http.MethodPost, "/Tables", "", h, []byte(`{"TableName":"`+name+`"}`))
	if err != nil {
		return err
	}
	if r.status != http.StatusNoContent && r.status != http.StatusCreated {
		return statusError(r)
	}
	return nil
}

// deleteTable deletes a table and everything in it.
func (cn *conn) deleteTable(ctx context.Context, name string) error {
	r, err := cn.do(ctx, http.MethodDelete, "/Tables('"+name+"')", "", http.Header{"Accept": {"application/json;odata=nometadata"}}, nil)
	if err != nil {
		return err
	}
	if r.status != http.StatusNoContent {
		return statusError(r)
	}
	return nil
}

// entityPath is the path of one entity. Benchmark keys are alphanumeric, so nothing needs
// quoting or escaping.
func entityPath(table, pk, rk string) string {
	return "/" + table + "(PartitionKey='" + pk + "',RowKey='" + rk + "')"
}

// queryEscape escapes a query parameter value with %20 for spaces, as the SDKs send it (some
// servers do not read '+' as a space).
func queryEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}
