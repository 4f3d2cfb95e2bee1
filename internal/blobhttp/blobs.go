package blobhttp

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobfetch"
	"github.com/tabula-dev/tabula/internal/metrics"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/structmsg"
)

// blobType reads x-ms-blob-type.
func blobType(h http.Header) (blob.BlobType, error) {
	v := h.Get("x-ms-blob-type")
	for _, t := range []blob.BlobType{blob.BlockBlob, blob.PageBlob, blob.AppendBlob} {
		if strings.EqualFold(v, string(t)) {
			return t, nil
		}
	}
	if v == "" {
		return "", missingHeader("x-ms-blob-type")
	}
	return "", invalidHeader("x-ms-blob-type", v, "not BlockBlob, PageBlob or AppendBlob")
}

func (s *Server) putBlob(rq *request) error {
	h := rq.R.Header
	body, err := uploadContent(rq)
	if err != nil {
		return err
	}
	o := blob.PutBlobOptions{LeaseID: leaseID(h), Conditions: conditions(h, ""), Metadata: metadata(h), Tier: h.Get("x-ms-access-tier"), EncryptionScope: requestScope(rq)}
	if o.Type, err = blobType(h); err != nil {
		return err
	}
	key, err := withCustomerKey(h, &o.Conditions, true)
	if err != nil {
		return err
	}
	o.Conditions.NoOverwrite = rq.createOnly()
	if o.Properties, _, err = blobProperties(h, true); err != nil {
		return err
	}
	if o.Tags, err = tags(h); err != nil {
		return err
	}
	if o.Protection, err = protection(h); err != nil {
		return err
	}
	if o.Checksums, err = checksums(h); err != nil {
		return err
	}
	if o.Type == blob.PageBlob {
		n, err := int64Header(h, "x-ms-blob-content-length")
		if err != nil {
			return err
		}
		if n == nil {
			return missingHeader("x-ms-blob-content-length")
		}
		o.PageBlobSize = *n
		seq, err := int64Header(h, "x-ms-blob-sequence-number")
		if err != nil {
			return err
		}
		if seq != nil {
			o.SequenceNumber = *seq
		}
	} else if h.Get("x-ms-blob-content-length") != "" {
		return invalidHeader("x-ms-blob-content-length", h.Get("x-ms-blob-content-length"), "only page blobs take a size")
	}
	if err := bodyLimit(rq, "Put Blob", body.size); err != nil {
		return err
	}
	b, sums, err := s.svc.PutBlob(rq.ctx, rq.path(), body, body.size, o)
	if err != nil {
		return err
	}
	wrote(body.size)
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	setVersionID(out, &b)
	answerCustomerKey(out, key)
	body.answer(out)
	if o.Type == blob.BlockBlob {
		setChecksums(out, sums, true)
	}
	answerScope(out, b.EncryptionScope)
	out["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusCreated)
}

// copySource resolves x-ms-copy-source. A source on this server (never fetched over HTTP) is
// a blob of an account it hosts, authorized for reading: by the SAS the URL carries, else by
// the bearer token of x-ms-copy-source-authorization, else by the request's own credential
// when the source is in the request's account (blob.md §11.1), else anonymously. A URL
// naming no hosted account is 404 CannotVerifyCopySource.
//
// fetched says the service reads the source as a client's GET would (Copy Blob From URL and
// the *From URL operations): an account key then authorizes nothing, even in the same account
// (blob.md §11.2, and azblob's live TestPutBlobFromURLNegative), but a bearer token does, as
// the identity it signs in can be the source's reader too (the JS SDK's live "destination
// bearer token" tests copy a same-account source given without SAS). Without either, the
// source is read anonymously, which a private container refuses.
//
// A source on another server is not resolved but fetched: the returned Fetch, for
// blob.SourceOptions.Fetch, GETs it with what the request says of the source (remote.go); an
// unmet source condition is then what the GET answers for the *From URL operations, 412
// SourceConditionNotMet for Copy Blob (not fetched). Without a Fetcher (--fetch-copy-sources
// off) such a source is 404 CannotVerifyCopySource.
func (s *Server) copySource(rq *request, fetched bool) (blob.Path, blob.Fetch, error) {
	raw := rq.R.Header.Get("x-ms-copy-source")
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return blob.Path{}, nil, invalidHeader("x-ms-copy-source", raw, "not an absolute URL")
	}
	if !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https") {
		return blob.Path{}, nil, invalidHeader("x-ms-copy-source", raw, "not an http or https URL")
	}
	if !s.sameServer(rq.R, u) {
		if s.Fetcher == nil {
			return blob.Path{}, nil, azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: %s is not on this server (%s), which fetches no copy source from other servers (--fetch-copy-sources).", blobfetch.Where(u), rq.R.Host)
		}
		h := sourceRequestHeader(rq)
		rq.sourceTags = s.remoteTags(u, h)
		return blob.Path{}, s.remoteSource(rq, u, h, !fetched), nil
	}
	p, err := s.localSource(rq, u, fetched)
	return p, nil, err
}

// localSource resolves u, a copy source on this server, as copySource describes.
func (s *Server) localSource(rq *request, u *url.URL, fetched bool) (blob.Path, error) {
	raw := rq.R.Header.Get("x-ms-copy-source")
	host := u.Hostname()
	path := u.EscapedPath()
	account := ""
	if label, _, ok := strings.Cut(host, "."); ok {
		account, _ = server.HostedAccount(s.auth, label)
	}
	if account == "" {
		seg, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		account, _ = server.HostedAccount(s.auth, seg)
		path = "/" + rest
	}
	if account == "" {
		return blob.Path{}, azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: %s is not a blob of an account this server hosts.", raw)
	}
	// The request's own credential is for its own account: a source in another account is
	// read with the source URL's SAS, a bearer token, or anonymously (a public container).
	crossAccount := account != rq.Account
	src := &request{Request: server.Request{Path: path}}
	if err := parsePath(src); err != nil || src.blob == "" {
		return blob.Path{}, azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: %s names no blob.", raw)
	}
	q := u.Query()
	p := blob.Path{Account: account, Container: src.container, Name: src.blob, Snapshot: q.Get("snapshot"), VersionID: q.Get("versionid")}
	// readAs authenticates a GET of the source as r describes it (its credential).
	decoded, _ := url.PathUnescape(path)
	decoded = blobName(decoded)
	readAs := func(r auth.Request) (*auth.Grant, error) {
		r.Service, r.Method, r.RawPath, r.Query = auth.Blob, http.MethodGet, u.EscapedPath(), q
		r.Account, r.Path, r.TLSOffered, r.ClientIP = account, decoded, server.TLSOffered(rq.ctx), server.ClientIP(rq.R)
		return s.auth.Authenticate(rq.ctx, &r)
	}
	grant, op := rq.grant, auth.OpReadCopySourceBlob
	bearer := rq.R.Header.Get("x-ms-copy-source-authorization")
	var readErr error
	switch {
	case q.Has("sig"):
		h := http.Header{}
		if q.Has("sduoid") && bearer != "" {
			// A SAS for a delegated user serves that user's token, which the source's
			// authorization header carries.
			h.Set("Authorization", bearer)
		}
		grant, readErr = readAs(auth.Request{Header: h, Version: rq.Version, Secure: u.Scheme == "https"})
	case bearer != "":
		// A bearer token for the source, checked as if it came with a read of it; one that
		// does not verify leaves the source unverified (azblob's live tests expect
		// CannotVerifyCopySource for a made-up token).
		if scheme, _, _ := strings.Cut(bearer, " "); !strings.EqualFold(scheme, "Bearer") {
			return blob.Path{}, invalidHeader("x-ms-copy-source-authorization", bearer, "only the Bearer scheme is taken")
		}
		grant, readErr = readAs(auth.Request{Header: http.Header{"Authorization": {bearer}, "X-Ms-Version": {rq.Version}},
			Version: rq.Version, Host: u.Host, Secure: rq.R.TLS != nil})
	case fetched && !crossAccount && isBearer(rq.grant):
		// The caller's identity reads the source, needing the same right a GET would.
		op = auth.OpGetBlob
	case fetched || crossAccount:
		grant, readErr = readAs(auth.Request{Header: http.Header{"X-Ms-Version": {rq.Version}}, Version: rq.Version, Host: u.Host, Secure: rq.R.TLS != nil})
	}
	if readErr != nil {
		return blob.Path{}, sourceRefused(readErr)
	}
	if grant != rq.grant {
		op = auth.OpGetBlob
	}
	t := auth.Target{Name: p.Container, Blob: p.Name}
	if grant.Anonymous() || q.Has("sig") {
		if c, err := s.svc.GetContainer(rq.ctx, account, p.Container, ""); err == nil {
			t.PublicAccess = string(c.PublicAccess)
		}
	}
	if err := grant.Authorize(op, t); err != nil {
		return blob.Path{}, sourceRefused(err)
	}
	return p, nil
}

// destinationFirst passes on copySource's answer, but holds back a source that cannot be
// verified (refused) for the copy to answer once it has judged the destination, which the
// service does first; a malformed source header is answered at once.
func destinationFirst(src blob.Path, fetch blob.Fetch, err error) (_ blob.Path, _ blob.Fetch, refused, _ error) {
	if err != nil && azerr.As(err).Code == azerr.CannotVerifyCopySource {
		return src, fetch, err, nil
	}
	return src, fetch, nil, err
}

// sameServer tells whether the copy source u is on this server as the request r reached it:
// the same port, and the same host name, two loopback names, or the host-style names of two
// hosted accounts under one domain. Another server's blob of the same path is not this
// server's to copy (AzCopy copies between two local servers so).
func (s *Server) sameServer(r *http.Request, u *url.URL) bool {
	defaultPort := func(secure bool) string {
		if secure {
			return "443"
		}
		return "80"
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, defaultPort(r.TLS != nil)
	}
	host = strings.Trim(host, "[]")
	srcHost, srcPort := u.Hostname(), u.Port()
	if srcPort == "" {
		srcPort = defaultPort(u.Scheme == "https")
	}
	if srcPort != port {
		return false
	}
	loopback := func(h string) bool {
		ip := net.ParseIP(h)
		return strings.EqualFold(h, "localhost") || ip != nil && ip.IsLoopback()
	}
	if strings.EqualFold(host, srcHost) || loopback(host) && loopback(srcHost) {
		return true
	}
	_, domain, ok := strings.Cut(host, ".")
	label, srcDomain, srcOK := strings.Cut(srcHost, ".")
	if !ok || !srcOK || !strings.EqualFold(domain, srcDomain) {
		return false
	}
	account, _ := server.HostedAccount(s.auth, label)
	return account != ""
}

// isBearer tells a grant of a bearer token alone (a user delegation SAS presented with its
// user's token is the SAS's grant).
func isBearer(g *auth.Grant) bool {
	_, _, ok := g.Bearer()
	return ok
}

// sourceRefused is a copy source the credential cannot read: CannotVerifyCopySource with the
// status the source's own refusal had, reported as a source on another server's refusal is
// (blobfetch.Refused).
func sourceRefused(err error) error {
	e := azerr.As(err)
	return blobfetch.Refused(e.Status, string(e.Code), e.Message)
}

func (s *Server) sourceOptions(h http.Header) blob.SourceOptions {
	return blob.SourceOptions{LeaseID: h.Get("x-ms-source-lease-id"), Conditions: conditions(h, "x-ms-source-")}
}

// copyTags reads x-ms-copy-source-tag-option: COPY gives the copy the source's tags, REPLACE
// (the default) those of x-ms-tags.
func copyTags(h http.Header) (bool, error) {
	switch v := h.Get("x-ms-copy-source-tag-option"); {
	case v == "" || strings.EqualFold(v, "REPLACE"):
		return false, nil
	case strings.EqualFold(v, "COPY"):
		return true, nil
	default:
		return false, invalidHeader("x-ms-copy-source-tag-option", v, "not COPY or REPLACE")
	}
}

// fetchedSource is the source of a *From URL operation, which reads it as a GET would.
func (s *Server) fetchedSource(h http.Header) (blob.SourceOptions, error) {
	o := s.sourceOptions(h)
	o.Fetched = true
	var err error
	if o.CustomerKey, err = customerKey(h, "x-ms-source-", false); err != nil {
		return o, err
	}
	o.CRC64, err = base64Header(h, "x-ms-source-content-crc64", azerr.InvalidHeaderValue)
	if err == nil && o.CRC64 != nil && len(o.CRC64) != 8 {
		err = invalidHeader("x-ms-source-content-crc64", h.Get("x-ms-source-content-crc64"), "not the base64 of 8 bytes")
	}
	return o, err
}

func (s *Server) copyBlob(rq *request) error {
	h := rq.R.Header
	sync := strings.EqualFold(h.Get("x-ms-requires-sync"), "true")
	src, fetch, refused, err := destinationFirst(s.copySource(rq, sync))
	if err != nil {
		return err
	}
	o := blob.CopyOptions{
		SourceURL: h.Get("x-ms-copy-source"), Source: s.sourceOptions(h),
		Metadata: metadata(h), Tier: h.Get("x-ms-access-tier"), LeaseID: leaseID(h), Conditions: conditions(h, ""),
		EncryptionScope: requestScope(rq), Sync: sync, RehydratePriority: h.Get("x-ms-rehydrate-priority"),
	}
	o.Source.Refused, o.Source.Fetch, o.Source.FetchTags = refused, fetch, rq.sourceTags
	if o.Tags, err = tags(h); err != nil {
		return err
	}
	if o.Protection, err = protection(h); err != nil {
		return err
	}
	if v := h.Get("x-ms-seal-blob"); v != "" {
		seal, err := strconv.ParseBool(v)
		if err != nil {
			return invalidHeader("x-ms-seal-blob", v, "not true or false")
		}
		o.Seal = &seal
	}
	if o.SourceMD5, err = base64Header(h, "x-ms-source-content-md5", azerr.InvalidMD5); err != nil {
		return err
	}
	o.Conditions.NoOverwrite = rq.createOnly()
	if o.CopyTags, err = copyTags(h); err != nil {
		return err
	}
	b, err := s.svc.CopyBlob(rq.ctx, rq.path(), src, o)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	setVersionID(out, &b)
	if o.SourceMD5 != nil {
		// Checked against the source: what Copy Blob From URL answers (Content-MD5).
		out["Content-Md5"] = []string{base64.StdEncoding.EncodeToString(o.SourceMD5)}
	}
	out["x-ms-copy-id"] = []string{b.Copy.ID}
	out["x-ms-copy-status"] = []string{b.Copy.Status}
	answerScope(out, b.EncryptionScope)
	return rq.done(http.StatusAccepted)
}

// incrementalCopy answers Incremental Copy Blob. The copy is done when it is answered, but
// the answer says pending, as Azure's always does (azblob's TestIncrementalCopy checks it):
// clients then read the status, success, from the blob's properties.
func (s *Server) incrementalCopy(rq *request) error {
	h := rq.R.Header
	src, fetch, err := s.copySource(rq, true)
	if err != nil {
		return err
	}
	if fetch != nil {
		return azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source within the specified time: the source is on another server, and Tabula copies incrementally only from the page blobs it hosts.")
	}
	b, err := s.svc.IncrementalCopy(rq.ctx, rq.path(), src, blob.IncrementalCopyOptions{SourceURL: h.Get("x-ms-copy-source"), Conditions: conditions(h, "")})
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	out["x-ms-copy-id"] = []string{b.Copy.ID}
	out["x-ms-copy-status"] = []string{"pending"}
	return rq.done(http.StatusAccepted)
}

func (s *Server) putBlobFromURL(rq *request) error {
	h := rq.R.Header
	src, fetch, refused, err := destinationFirst(s.copySource(rq, true))
	if err != nil {
		return err
	}
	o := blob.PutBlobFromURLOptions{Metadata: metadata(h), Tier: h.Get("x-ms-access-tier"), LeaseID: leaseID(h), Conditions: conditions(h, ""), EncryptionScope: requestScope(rq)}
	if o.Source, err = s.fetchedSource(h); err != nil {
		return err
	}
	o.Source.Refused, o.Source.Fetch, o.Source.FetchTags = refused, fetch, rq.sourceTags
	if o.SourceMD5, err = base64Header(h, "x-ms-source-content-md5", azerr.InvalidMD5); err != nil {
		return err
	}
	if o.Tags, err = tags(h); err != nil {
		return err
	}
	if o.Protection, err = protection(h); err != nil {
		return err
	}
	props, sent, err := blobProperties(h, false)
	if err != nil {
		return err
	}
	keepSource := !strings.EqualFold(h.Get("x-ms-copy-source-blob-properties"), "false")
	if sent || !keepSource {
		o.Properties, o.KeepSourceProperties = &props, keepSource
	}
	key, err := withCustomerKey(h, &o.Conditions, true)
	if err != nil {
		return err
	}
	o.Conditions.NoOverwrite = rq.createOnly()
	if o.CopyTags, err = copyTags(h); err != nil {
		return err
	}
	b, err := s.svc.PutBlobFromURL(rq.ctx, rq.path(), src, o)
	if err != nil {
		return err
	}
	wrote(b.Size)
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	setVersionID(out, &b)
	answerCustomerKey(out, key)
	setChecksums(out, blob.Checksums{MD5: b.Properties.ContentMD5, CRC64: o.Source.CRC64}, true)
	answerScope(out, b.EncryptionScope)
	out["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusCreated)
}

// responseOverrides applies a SAS's rscc, rscd, rsce, rscl and rsct (blob.md §6.3).
func responseOverrides(rq *request, h http.Header) {
	if !rq.Query.Has("sig") {
		return
	}
	for param, header := range map[string]string{"rscc": "Cache-Control", "rscd": "Content-Disposition", "rsce": "Content-Encoding", "rscl": "Content-Language", "rsct": "Content-Type"} {
		if v := rq.Query.Get(param); v != "" {
			h[header] = []string{v}
		}
	}
}

func (s *Server) getBlob(rq *request) error {
	h := rq.R.Header
	o := blob.GetBlobOptions{
		LeaseID: leaseID(h), Conditions: conditions(h, ""),
		RangeMD5:   strings.EqualFold(h.Get("x-ms-range-get-content-md5"), "true"),
		RangeCRC64: strings.EqualFold(h.Get("x-ms-range-get-content-crc64"), "true"),
	}
	if _, err := withCustomerKey(h, &o.Conditions, false); err != nil {
		return err
	}
	if r, ok := byteRange(h); ok {
		o.Range = &r
	}
	structured, err := wantsStructured(rq)
	if err != nil {
		return err
	}
	d, err := s.svc.GetBlob(rq.ctx, rq.path(), o)
	if err != nil {
		return err
	}
	defer d.Body.Close()
	out := rq.W.Header()
	setBlobHeaders(out, &d.Blob)
	responseOverrides(rq, out)
	out["Content-Length"] = []string{strconv.FormatInt(d.Count, 10)}
	status := http.StatusOK
	md5 := d.Blob.Properties.ContentMD5
	if d.Partial {
		status = http.StatusPartialContent
		out["Content-Range"] = []string{"bytes " + strconv.FormatInt(d.Offset, 10) + "-" + strconv.FormatInt(d.Offset+d.Count-1, 10) + "/" + strconv.FormatInt(d.Blob.Size, 10)}
		if md5 != nil {
			out["x-ms-blob-content-md5"] = []string{base64.StdEncoding.EncodeToString(md5)}
		}
		md5 = d.RangeMD5
	}
	setChecksums(out, blob.Checksums{MD5: md5, CRC64: d.RangeCRC64}, true)
	copyBody := func() error { _, err := io.Copy(rq.W, d.Body); return err }
	if structured {
		out["Content-Length"] = []string{strconv.FormatInt(structmsg.EncodedLen(d.Count), 10)}
		out["x-ms-structured-body"] = []string{structmsg.HeaderValue}
		out["x-ms-structured-content-length"] = []string{strconv.FormatInt(d.Count, 10)}
		copyBody = func() error { return structmsg.Encode(rq.W, d.Body, d.Count) }
	}
	rq.W.WriteHeader(status)
	// A failure while streaming cannot change the status any more: the connection is cut,
	// and the client sees a short body.
	if err := copyBody(); err != nil {
		rq.log.Warn("blob download cut short", "request_id", rq.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	metrics.BlobBytesRead.Add(float64(d.Count))
	return nil
}

// wrote counts, in /metrics, a write of n bytes of blob data: a blob put, a block, pages or
// an appended block.
func wrote(n int64) {
	metrics.BlobsWritten.Inc()
	metrics.BlobBytesWritten.Add(float64(n))
}

func (s *Server) getBlobProperties(rq *request) error {
	h := rq.R.Header
	cond := conditions(h, "")
	if _, err := withCustomerKey(h, &cond, false); err != nil {
		return err
	}
	b, err := s.svc.GetBlobProperties(rq.ctx, rq.path(), leaseID(h), cond)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setBlobHeaders(out, &b)
	responseOverrides(rq, out)
	setChecksums(out, blob.Checksums{MD5: b.Properties.ContentMD5}, true)
	out["Content-Length"] = []string{strconv.FormatInt(b.Size, 10)}
	rq.W.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) getBlobMetadata(rq *request) error {
	h := rq.R.Header
	cond := conditions(h, "")
	key, err := withCustomerKey(h, &cond, false)
	if err != nil {
		return err
	}
	b, err := s.svc.GetBlobProperties(rq.ctx, rq.path(), leaseID(h), cond)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	answerCustomerKey(out, key)
	setMetadata(out, b.Metadata)
	return rq.done(http.StatusOK)
}

func (s *Server) setBlobMetadata(rq *request) error {
	h := rq.R.Header
	cond := conditions(h, "")
	key, err := withCustomerKey(h, &cond, true)
	if err != nil {
		return err
	}
	scope := requestScope(rq)
	cond.EncryptionScope = &scope
	b, err := s.svc.SetBlobMetadata(rq.ctx, rq.path(), metadata(h), leaseID(h), cond)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	setVersionID(out, &b)
	answerCustomerKey(out, key)
	answerScope(out, b.EncryptionScope)
	out["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusOK)
}

func (s *Server) setBlobProperties(rq *request) error {
	h := rq.R.Header
	o := blob.SetBlobPropertiesOptions{LeaseID: leaseID(h), Conditions: conditions(h, ""), SequenceAction: blob.SequenceAction(strings.ToLower(h.Get("x-ms-sequence-number-action")))}
	props, sent, err := blobProperties(h, false)
	if err != nil {
		return err
	}
	if o.Size, err = int64Header(h, "x-ms-blob-content-length"); err != nil {
		return err
	}
	if o.SequenceNumber, err = int64Header(h, "x-ms-blob-sequence-number"); err != nil {
		return err
	}
	// The content properties are set together, those not sent cleared, even when none is
	// sent (azblob's recorded TestBlobSetPropertiesEmptyValue); only a request that just
	// resizes a page blob or changes its sequence number leaves them alone.
	if sent || o.Size == nil && o.SequenceAction == "" && o.SequenceNumber == nil {
		o.Properties = &props
	}
	b, err := s.svc.SetBlobProperties(rq.ctx, rq.path(), o)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	if b.Type == blob.PageBlob {
		out["x-ms-blob-sequence-number"] = []string{strconv.FormatInt(b.SequenceNumber, 10)}
	}
	return rq.done(http.StatusOK)
}

func (s *Server) deleteBlob(rq *request) error {
	h := rq.R.Header
	if rq.Query.Has("deletetype") {
		// Permanent deletion of a soft-deleted snapshot or version; the SDKs send
		// "Permanent".
		if v := rq.Query.Get("deletetype"); !strings.EqualFold(v, "permanent") {
			e := azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid: deletetype=%q is not permanent.", v)
			e.Details = []azerr.Detail{{Name: "QueryParameterName", Value: "deletetype"}, {Name: "QueryParameterValue", Value: v}}
			return e
		}
		if err := s.svc.PermanentlyDeleteBlob(rq.ctx, rq.path()); err != nil {
			return err
		}
		rq.W.Header()["x-ms-delete-type-permanent"] = []string{"true"}
		return rq.done(http.StatusAccepted)
	}
	d, err := blob.ParseDeleteSnapshots(h.Get("x-ms-delete-snapshots"))
	if err != nil {
		return err
	}
	cond := conditions(h, "")
	cond.TierIfModifiedSince, cond.TierIfUnmodifiedSince = httpDate(h, "x-ms-access-tier-if-modified-since"), httpDate(h, "x-ms-access-tier-if-unmodified-since")
	if err := s.svc.DeleteBlob(rq.ctx, rq.path(), d, leaseID(h), cond); err != nil {
		return err
	}
	if soft, err := s.svc.DeletesSoftly(rq.ctx, rq.Account); err == nil {
		rq.W.Header()["x-ms-delete-type-permanent"] = []string{strconv.FormatBool(!soft)}
	}
	return rq.done(http.StatusAccepted)
}

func (s *Server) leaseBlob(rq *request) error {
	req, err := leaseRequest(rq.R.Header)
	if err != nil {
		return err
	}
	r, err := s.svc.LeaseBlob(rq.ctx, rq.path(), req, conditions(rq.R.Header, ""))
	if err != nil {
		return err
	}
	return answerLease(rq, req.Action, r)
}

func (s *Server) snapshotBlob(rq *request) error {
	h := rq.R.Header
	cond := conditions(h, "")
	key, err := withCustomerKey(h, &cond, false)
	if err != nil {
		return err
	}
	scope := requestScope(rq)
	cond.EncryptionScope = &scope
	snap, b, err := s.svc.SnapshotBlob(rq.ctx, rq.path(), metadata(h), leaseID(h), cond)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	setVersionID(out, &b)
	answerCustomerKey(out, key)
	out["x-ms-snapshot"] = []string{snap}
	answerScope(out, b.EncryptionScope)
	// false for a snapshot taken with a customer-provided key or in an encryption scope, as
	// azblob's recorded TestBlobSnapshotWithCPK and TestBlobSnapshotWithCPKScope read it.
	out["x-ms-request-server-encrypted"] = []string{strconv.FormatBool(key == "" && scope == "")}
	return rq.done(http.StatusCreated)
}

func (s *Server) abortCopy(rq *request) error {
	h := rq.R.Header
	if !strings.EqualFold(h.Get("x-ms-copy-action"), "abort") {
		return invalidHeader("x-ms-copy-action", h.Get("x-ms-copy-action"), "must be abort")
	}
	if err := s.svc.AbortCopy(rq.ctx, rq.path(), rq.Query.Get("copyid"), leaseID(h)); err != nil {
		return err
	}
	return rq.done(http.StatusNoContent)
}

func (s *Server) setBlobTier(rq *request) error {
	h := rq.R.Header
	tier := h.Get("x-ms-access-tier")
	if tier == "" {
		return missingHeader("x-ms-access-tier")
	}
	rehydrating, err := s.svc.SetBlobTier(rq.ctx, rq.path(), blob.SetTierOptions{Tier: tier, LeaseID: leaseID(h), Priority: h.Get("x-ms-rehydrate-priority"), IfTags: h.Get("x-ms-if-tags")})
	if err != nil {
		return err
	}
	if rehydrating {
		return rq.done(http.StatusAccepted)
	}
	return rq.done(http.StatusOK)
}

func (s *Server) getBlobTags(rq *request) error {
	b, err := s.svc.GetBlobProperties(rq.ctx, rq.path(), leaseID(rq.R.Header), blob.Conditions{IfTags: rq.R.Header.Get("x-ms-if-tags")})
	if err != nil {
		return err
	}
	w := newXML()
	w.tags(b.Tags)
	return rq.writeXML(http.StatusOK, w.Bytes())
}

// maxTagsBody bounds a Set Blob Tags body.
const maxTagsBody = 64 << 10

func (s *Server) setBlobTags(rq *request) error {
	body, err := readXMLBody(rq, maxTagsBody)
	if err != nil {
		return err
	}
	t, err := parseTags(body)
	if err != nil {
		return err
	}
	h := rq.R.Header
	// Set Blob Tags spells its ETag and time conditions x-ms-blob-if-*, beside x-ms-if-tags.
	cond := blob.Conditions{
		IfMatch: etags(h, "x-ms-blob-if-match"), IfNoneMatch: etags(h, "x-ms-blob-if-none-match"),
		IfModifiedSince: httpDate(h, "x-ms-blob-if-modified-since"), IfUnmodifiedSince: httpDate(h, "x-ms-blob-if-unmodified-since"),
		IfTags: h.Get("x-ms-if-tags"),
	}
	if err := s.svc.SetBlobTags(rq.ctx, rq.path(), t, leaseID(h), cond); err != nil {
		return err
	}
	return rq.done(http.StatusNoContent)
}

func (s *Server) undeleteBlob(rq *request) error {
	if err := s.svc.UndeleteBlob(rq.ctx, rq.path()); err != nil {
		return err
	}
	return rq.done(http.StatusOK)
}
