// Package blobfetch reads copy sources on other servers: the GET the Blob service makes of an
// x-ms-copy-source that is not one of its own blobs (another account's host, Azurite, another
// Tabula, any public HTTP(S) object), for Copy Blob and the *From URL operations.
//
// Contract: Fetch makes one GET (more for Request.Sparse, sparse.go) and returns either the
// source's bytes and what its answer says of them (a blob.RemoteSource, whose Body the caller
// closes) or an *azerr.Error that is the copy's answer — the same one Azure gives, as far as
// it is known:
//
//   - the source answers 304, 4xx or 5xx: CannotVerifyCopySource with the source's status,
//     and x-ms-copy-source-status-code, x-ms-copy-source-error-code (the source's
//     x-ms-error-code, when it sent one) as headers and details (Refused);
//   - the source redirects: 400 CannotVerifyCopySource (Azure follows no redirect of a copy
//     source: "A redirected response (HTTP status code 302) from the copy source is not
//     supported.", seen from Start-AzStorageBlobCopy, azure-powershell issue 24661);
//   - the source cannot be reached (DNS, refused connection, TLS, no answer in time): 500
//     CannotVerifyCopySource, what Azure answers for a source it cannot access (AzCopy's
//     error code reference), with what failed in the message;
//   - the body fails, stalls longer than IdleTimeout, or ends short: its reads fail with 500
//     CannotVerifyCopySource, which fails the copy, which then stores nothing.
//
// The client follows no redirect, keeps no cookies, verifies TLS against the system's roots
// (SSL_CERT_FILE and SSL_CERT_DIR apply), asks for no compression (the bytes are copied as
// the source holds them, Content-Encoding and all), and bounds each wait — connecting, the
// TLS handshake, every read of the answer — rather than the whole transfer, so that a large
// source takes as long as it needs while a stalled one fails. Each fetch has its own
// connection, which lets it read the answer's metadata names as sent (net/http
// canonicalizes header names; Azure's metadata names keep their case).
package blobfetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
)

// Client fetches copy sources. Its zero value is not usable; New makes one. It is safe for
// concurrent use.
type Client struct {
	http *http.Client
	// idle bounds every wait for the source: connecting, the TLS handshake, and each read.
	idle time.Duration
	// tls is the TLS configuration of HTTPS sources (nil: system roots).
	tls *tls.Config
}

// DefaultIdleTimeout is how long a source may keep the fetch waiting for its next bytes.
const DefaultIdleTimeout = time.Minute

// New returns a Client whose waits for the source are bounded by idle (0: DefaultIdleTimeout),
// verifying HTTPS sources with tlsConfig (nil: against the system's roots).
func New(idle time.Duration, tlsConfig *tls.Config) *Client {
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	c := &Client{idle: idle, tls: tlsConfig}
	t := &http.Transport{
		Proxy:              http.ProxyFromEnvironment,
		DialContext:        c.dial,
		DialTLSContext:     c.dialTLS,
		DisableKeepAlives:  true,
		DisableCompression: true,
		TLSClientConfig:    tlsConfig,
		// A proxied HTTPS source gets its handshake from net/http: bound it too.
		TLSHandshakeTimeout: idle,
	}
	c.http = &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// Request is one fetch of a copy source.
type Request struct {
	URL *url.URL
	// Range, when not nil, is the part of the source to read (x-ms-source-range).
	Range *blob.ByteRange
	// Header is sent with the GET: the source conditions as If-*, its Authorization, the
	// x-ms-version. Range is set from Range.
	Header http.Header
	// ConditionsFailAsSource says a source that refuses the GET's conditions (304, or 412
	// ConditionNotMet) fails the copy with 412 SourceConditionNotMet, as Copy Blob's source
	// conditions do; otherwise, as for the *From URL operations, it is CannotVerifyCopySource
	// with the source's status.
	ConditionsFailAsSource bool
	// Sparse, for a whole source (Range nil), reads only the written pages of an Azure page
	// blob (sparse.go): Copy Blob's, which keeps the pages that were never written empty.
	Sparse bool
}

// Fetch GETs the source of rq. See the package comment for what it returns.
func (c *Client) Fetch(ctx context.Context, rq Request) (*blob.RemoteSource, error) {
	src, resp, err := c.get(ctx, rq)
	if err != nil || !rq.Sparse || rq.Range != nil || resp.StatusCode != http.StatusOK || src.Type != blob.PageBlob || src.Size <= 0 {
		return src, err
	}
	// A page blob: its written pages alone (sparse.go).
	src.Body.Close()
	if sparse, ok := c.fetchSparse(ctx, rq); ok {
		return sparse, nil
	}
	src, _, err = c.get(ctx, rq)
	return src, err
}

// get GETs the source of rq, returning its answer too (whose body src reads).
func (c *Client) get(ctx context.Context, rq Request) (*blob.RemoteSource, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rq.URL.String(), nil)
	if err != nil {
		return nil, nil, unreachable(rq.URL, err)
	}
	for k, v := range rq.Header {
		req.Header[k] = v
	}
	if rq.Range != nil {
		v := "bytes=" + strconv.FormatInt(rq.Range.Start, 10) + "-"
		if rq.Range.End >= 0 {
			v += strconv.FormatInt(rq.Range.End, 10)
		}
		req.Header.Set("Range", v)
	}
	var conn *recordingConn
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		conn, _ = info.Conn.(*recordingConn)
	}}))
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, unreachable(rq.URL, err)
	}
	src, err := c.answer(rq, resp, conn)
	if err != nil {
		resp.Body.Close()
		return nil, nil, err
	}
	return src, resp, nil
}

// answer makes the source's answer a RemoteSource, or the copy's error.
func (c *Client) answer(rq Request, resp *http.Response, conn *recordingConn) (*blob.RemoteSource, error) {
	h := resp.Header
	switch {
	case resp.StatusCode == http.StatusNotModified || resp.StatusCode >= 400:
		code := h.Get("x-ms-error-code")
		if rq.ConditionsFailAsSource && (resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusPreconditionFailed && code == string(azerr.ConditionNotMet)) {
			return nil, azerr.New(azerr.SourceConditionNotMet)
		}
		return nil, Refused(resp.StatusCode, code, errorMessage(resp))
	case resp.StatusCode >= 300:
		e := azerr.Newf(azerr.CannotVerifyCopySource, "A redirected response (HTTP status code %d) from the copy source is not supported.", resp.StatusCode)
		e.Status = http.StatusBadRequest
		e.Header = http.Header{"x-ms-copy-source-status-code": {strconv.Itoa(resp.StatusCode)}}
		return nil, e
	case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent:
		e := Refused(resp.StatusCode, "", fmt.Sprintf("The copy source answered %s, with no content to copy.", resp.Status))
		e.Status = http.StatusInternalServerError
		return nil, e
	}
	src := &blob.RemoteSource{
		Type: blob.BlobType(h.Get("x-ms-blob-type")),
		Properties: blob.ContentProperties{
			ContentType: h.Get("Content-Type"), ContentEncoding: h.Get("Content-Encoding"), ContentLanguage: h.Get("Content-Language"),
			ContentDisposition: h.Get("Content-Disposition"), CacheControl: h.Get("Cache-Control"),
		},
		Metadata: metadata(h, conn.rawNames()),
		Sealed:   strings.EqualFold(h.Get("x-ms-blob-sealed"), "true"),
	}
	src.Blocks, _ = strconv.Atoi(h.Get("x-ms-blob-committed-block-count"))
	if md5, err := base64.StdEncoding.DecodeString(h.Get("Content-MD5")); err == nil && len(md5) == 16 && resp.StatusCode == http.StatusOK {
		src.Properties.ContentMD5 = md5
	}
	body := &body{r: resp.Body, url: rq.URL}
	src.Body, src.Size = body, resp.ContentLength
	if rq.Range == nil {
		return src, nil
	}
	if resp.StatusCode == http.StatusOK {
		// A server that ignores Range sends the whole object: skip to the range.
		if _, err := io.CopyN(io.Discard, body, rq.Range.Start); err == io.EOF {
			// What the source would answer if it took ranges.
			return nil, Refused(http.StatusRequestedRangeNotSatisfiable, "", http.StatusText(http.StatusRequestedRangeNotSatisfiable))
		} else if err != nil {
			return nil, err
		}
		src.Size = -1
		if resp.ContentLength >= 0 {
			src.Size = max(resp.ContentLength-rq.Range.Start, 0)
		}
		if rq.Range.End >= 0 && (src.Size < 0 || src.Size > rq.Range.End-rq.Range.Start+1) {
			src.Size = rq.Range.End - rq.Range.Start + 1
			body.r = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(resp.Body, src.Size), resp.Body}
		}
		return src, nil
	}
	// 206: the range must be the one asked for, clipped to the source's end.
	start, end, total, ok := contentRange(h.Get("Content-Range"))
	wantEnd := total - 1
	if rq.Range.End >= 0 {
		wantEnd = min(wantEnd, rq.Range.End)
	}
	if !ok || start != rq.Range.Start || end != wantEnd || resp.ContentLength >= 0 && resp.ContentLength != end-start+1 {
		return nil, failed("asked for bytes %d-%d, it answered Content-Range %q and %d bytes.",
			rq.Range.Start, rq.Range.End, h.Get("Content-Range"), resp.ContentLength)
	}
	src.Size = end - start + 1
	return src, nil
}

// contentRange parses "bytes start-end/total" (total "*" is refused: the end is then unknown).
func contentRange(v string) (start, end, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	span, size, found2 := strings.Cut(rest, "/")
	first, last, found3 := strings.Cut(span, "-")
	if !found || !found2 || !found3 {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	start, err1 = strconv.ParseInt(first, 10, 64)
	end, err2 = strconv.ParseInt(last, 10, 64)
	total, err3 = strconv.ParseInt(size, 10, 64)
	return start, end, total, err1 == nil && err2 == nil && err3 == nil && start <= end && end < total
}

// Refused is the copy's answer to a source that refused to be read with status:
// CannotVerifyCopySource with that status, reporting it, and the source's error code when it
// gave one, as the real service does (the JS SDK's recorded tests read CopySourceStatusCode,
// CopySourceErrorCode and CopySourceErrorMessage from the error body; the same two codes come
// as headers; a source that is no Azure server has no code to report, as a Python SDK user's
// copy from S3 shows in azure-storage-python issue 720).
func Refused(status int, code, message string) *azerr.Error {
	msg, _, _ := strings.Cut(message, "\n")
	e := azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: %s", msg)
	e.Status = status
	s := strconv.Itoa(status)
	e.Header = http.Header{"x-ms-copy-source-status-code": {s}}
	e.Details = []azerr.Detail{{Name: "CopySourceStatusCode", Value: s}}
	if code != "" {
		e.Header["x-ms-copy-source-error-code"] = []string{code}
		e.Details = append(e.Details, azerr.Detail{Name: "CopySourceErrorCode", Value: code})
	}
	e.Details = append(e.Details, azerr.Detail{Name: "CopySourceErrorMessage", Value: msg})
	return e
}

// errorMessage is what a refusing source says: the <Message> of an Azure error body, else its
// status line.
func errorMessage(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(b, &e) == nil && e.Message != "" {
		return strings.TrimSpace(e.Message)
	}
	if t := http.StatusText(resp.StatusCode); t != "" {
		return t
	}
	return resp.Status
}

// unreachable is the copy's answer to a source no answer came from.
func unreachable(u *url.URL, err error) *azerr.Error {
	var e *azerr.Error
	if errors.As(err, &e) {
		return e
	}
	return failed("GET %s failed: %s", Where(u), describe(err))
}

// failed is the copy's answer to a source that could not be read to the end for want of
// a usable answer (no answer, a broken body, a range not the one asked for): 500
// CannotVerifyCopySource, what Azure answers for a source it cannot access.
func failed(format string, args ...any) *azerr.Error {
	e := azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: "+format, args...)
	e.Status = http.StatusInternalServerError
	return e
}

// Where names a copy source without its query, which may hold a SAS: for messages and logs.
func Where(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// describe says what a failed fetch met, without the URL (with its SAS) net/http quotes.
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer in time (" + err.Error() + ")"
	}
	return err.Error()
}

// metadata is the x-ms-meta-* headers of h, named as sent where raw has the name (the
// lowercase of net/http's canonical name otherwise). A name no blob could have (a server that
// is not Azure may send any) is left out.
func metadata(h http.Header, raw map[string]string) blob.Metadata {
	var md blob.Metadata
	for k, v := range h {
		if len(k) <= len("x-ms-meta-") || !strings.EqualFold(k[:len("x-ms-meta-")], "x-ms-meta-") {
			continue
		}
		name, ok := raw[k]
		if !ok {
			name = strings.ToLower(k)
		}
		name = name[len("x-ms-meta-"):]
		if (blob.Metadata{name: ""}).Validate() != nil {
			continue
		}
		if md == nil {
			md = blob.Metadata{}
		}
		md[name] = strings.Join(v, ",")
	}
	return md
}

// body is a source's body: its failures fail the copy (500 CannotVerifyCopySource).
type body struct {
	r   io.ReadCloser
	url *url.URL
	n   int64 // bytes read, for the message of a failure
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err != nil && err != io.EOF {
		return n, failed("the body of %s broke off after %d bytes: %s", Where(b.url), b.n, describe(err))
	}
	return n, err
}

func (b *body) Close() error { return b.r.Close() }

func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.idle}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: conn, idle: c.idle}, nil
}

func (c *Client) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.idle}
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{}
	if c.tls != nil {
		cfg = c.tls.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	cfg.NextProtos = []string{"http/1.1"}
	conn := tls.Client(raw, cfg)
	hctx, cancel := context.WithTimeout(ctx, c.idle)
	defer cancel()
	if err := conn.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, err
	}
	return &recordingConn{Conn: conn, idle: c.idle}, nil
}

// recordingConn is the connection of one fetch: each read waits at most idle, and the bytes
// up to the end of the answer's header are kept for rawNames.
type recordingConn struct {
	net.Conn
	idle time.Duration
	head []byte
	done bool
}

// maxHead bounds the header bytes kept.
const maxHead = 64 << 10

func (c *recordingConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if !c.done {
		c.head = append(c.head, p[:n]...)
		if i := bytes.Index(c.head, []byte("\r\n\r\n")); i >= 0 {
			c.head, c.done = c.head[:i], true
		} else if len(c.head) > maxHead {
			c.head, c.done = nil, true
		}
	}
	return n, err
}

// rawNames maps the canonical names of the answer's x-ms-meta-* headers to the names as sent.
// A nil conn (one net/http did not dial here, a proxy's) has none.
func (c *recordingConn) rawNames() map[string]string {
	if c == nil || !c.done {
		return nil
	}
	out := map[string]string{}
	for _, line := range bytes.Split(c.head, []byte("\r\n"))[1:] {
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) <= len("x-ms-meta-") || !bytes.EqualFold(name[:len("x-ms-meta-")], []byte("x-ms-meta-")) {
			continue
		}
		out[http.CanonicalHeaderKey(string(name))] = "x-ms-meta-" + string(name[len("x-ms-meta-"):])
	}
	return out
}
