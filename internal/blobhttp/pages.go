package blobhttp

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/blob"
)

// pageRange reads a page write's range: required, and "bytes=S-E" (400 InvalidHeaderValue
// naming Range otherwise, as the real service answers).
func pageRange(h http.Header) (blob.ByteRange, error) {
	r, ok := byteRange(h)
	if !ok {
		v := h.Get("x-ms-range")
		if v == "" {
			v = h.Get("Range")
		}
		if v == "" {
			return r, missingHeader("x-ms-range")
		}
		return r, invalidHeader("Range", v, "not bytes=start-end")
	}
	if r.End < 0 {
		return r, invalidHeader("Range", h.Get("x-ms-range")+h.Get("Range"), "a page range needs its end")
	}
	return r, nil
}

func pageWriteOptions(h http.Header) (blob.PageWriteOptions, error) {
	o := blob.PageWriteOptions{LeaseID: leaseID(h), Conditions: conditions(h, "")}
	var err error
	if o.IfSequenceNumberLE, err = int64Header(h, "x-ms-if-sequence-number-le"); err != nil {
		return o, err
	}
	if o.IfSequenceNumberLT, err = int64Header(h, "x-ms-if-sequence-number-lt"); err != nil {
		return o, err
	}
	if o.IfSequenceNumberEQ, err = int64Header(h, "x-ms-if-sequence-number-eq"); err != nil {
		return o, err
	}
	// A sequence number is never negative: such a condition is malformed, not unmet (the
	// real service answers -1 with 400 InvalidInput, azblob's recorded
	// TestBlobPutPagesIfSequenceNumberLessThanNegOne and its kin).
	for _, c := range []struct {
		name string
		v    *int64
	}{{"x-ms-if-sequence-number-le", o.IfSequenceNumberLE}, {"x-ms-if-sequence-number-lt", o.IfSequenceNumberLT}, {"x-ms-if-sequence-number-eq", o.IfSequenceNumberEQ}} {
		if c.v != nil && *c.v < 0 {
			return o, azerr.Newf(azerr.InvalidInput, "One of the request inputs is not valid: %s is %d; sequence numbers are 0 or more.", c.name, *c.v)
		}
	}
	return o, nil
}

func (s *Server) putPage(rq *request) error {
	h := rq.R.Header
	r, err := pageRange(h)
	if err != nil {
		return err
	}
	o, err := pageWriteOptions(h)
	if err != nil {
		return err
	}
	key, err := withCustomerKey(h, &o.Conditions, true)
	if err != nil {
		return err
	}
	var b blob.Blob
	var sums blob.Checksums
	switch write := strings.ToLower(h.Get("x-ms-page-write")); {
	case write == "clear":
		b, err = s.svc.ClearPages(rq.ctx, rq.path(), r, o)
	case write != "update":
		if write == "" {
			return missingHeader("x-ms-page-write")
		}
		return invalidHeader("x-ms-page-write", write, "not update or clear")
	case h.Get("x-ms-copy-source") != "":
		src, fetch, err := s.copySource(rq, true)
		if err != nil {
			return err
		}
		sr, err := sourceRange(h)
		if err != nil {
			return err
		}
		if sr == nil {
			return missingHeader("x-ms-source-range")
		}
		md5, err := base64Header(h, "x-ms-source-content-md5", azerr.InvalidMD5)
		if err != nil {
			return err
		}
		so, err := s.fetchedSource(h)
		if err != nil {
			return err
		}
		so.Fetch = fetch
		b, err = s.svc.PutPagesFromURL(rq.ctx, rq.path(), r, src, *sr, so, md5, o)
		if err != nil {
			return err
		}
		wrote(r.End - r.Start + 1)
		// The checksums the source range was checked against (azblob's
		// TestUploadPagesFromURLWithMD5).
		sums = blob.Checksums{MD5: md5, CRC64: so.CRC64}
	default:
		body, err := uploadContent(rq)
		if err != nil {
			return err
		}
		if o.Checksums, err = checksums(h); err != nil {
			return err
		}
		b, sums, err = s.svc.PutPages(rq.ctx, rq.path(), r, body, body.size, o)
		if err != nil {
			return err
		}
		wrote(body.size)
		body.answer(rq.W.Header())
	}
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	out["x-ms-blob-sequence-number"] = []string{strconv.FormatInt(b.SequenceNumber, 10)}
	setChecksums(out, sums, true) // an MD5 only where the request gave one to check
	answerCustomerKey(out, key)
	answerScope(out, requestScope(rq))
	out["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusCreated)
}

func (s *Server) getPageRanges(rq *request) error {
	h := rq.R.Header
	o := blob.PageRangesOptions{PrevSnapshot: rq.Query.Get("prevsnapshot"), Marker: rq.Query.Get("marker"), LeaseID: leaseID(h), Conditions: conditions(h, "")}
	if r, ok := byteRange(h); ok {
		o.Range = &r
	}
	if !rq.atLeast(versionPagedPageRanges) {
		// Older versions answer every range at once.
		o.Marker = ""
	} else {
		var err error
		if o.MaxResults, err = maxResults(rq); err != nil {
			return err
		}
	}
	pr, err := s.svc.GetPageRanges(rq.ctx, rq.path(), o)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, pr.Blob.ETag, pr.Blob.LastModified)
	out["x-ms-blob-content-length"] = []string{strconv.FormatInt(pr.Blob.Size, 10)}
	w := newXML()
	w.open("PageList")
	// Written and cleared ranges in the order of their offsets, interleaved as the service
	// lists them (clients that read one list in document order, such as the legacy Python
	// library, get it sorted).
	written, cleared := pr.Ranges, pr.Cleared
	for len(written) > 0 || len(cleared) > 0 {
		name, r := "PageRange", blob.PageRange{}
		if len(cleared) > 0 && (len(written) == 0 || cleared[0].Start < written[0].Start) {
			name, r, cleared = "ClearRange", cleared[0], cleared[1:]
		} else {
			r, written = written[0], written[1:]
		}
		w.open(name)
		w.elem("Start", strconv.FormatInt(r.Start, 10))
		w.elem("End", strconv.FormatInt(r.End, 10))
		w.close(name)
	}
	// NextMarker came with paging (2020-10-02); older clients read every child of PageList
	// as a range (the legacy Python library fails on one without a Start).
	if rq.atLeast(versionPagedPageRanges) {
		w.elem("NextMarker", pr.NextMarker)
	}
	w.close("PageList")
	return rq.writeXML(http.StatusOK, w.Bytes())
}

func appendOptions(h http.Header) (blob.AppendBlockOptions, error) {
	o := blob.AppendBlockOptions{LeaseID: leaseID(h), Conditions: conditions(h, "")}
	var err error
	if o.MaxSize, err = int64Header(h, "x-ms-blob-condition-maxsize"); err != nil {
		return o, err
	}
	if o.AppendPosition, err = int64Header(h, "x-ms-blob-condition-appendpos"); err != nil {
		return o, err
	}
	// An offset or size below zero is malformed, not a condition that fails (the real
	// service answers appendpos -1 with 400 InvalidHeaderValue, azblob's live tests).
	for _, c := range []struct {
		name string
		v    *int64
	}{{"x-ms-blob-condition-maxsize", o.MaxSize}, {"x-ms-blob-condition-appendpos", o.AppendPosition}} {
		if c.v != nil && *c.v < 0 {
			return o, invalidHeader(c.name, strconv.FormatInt(*c.v, 10), "not 0 or more")
		}
	}
	return o, nil
}

func (s *Server) appendBlock(rq *request) error {
	h := rq.R.Header
	o, err := appendOptions(h)
	if err != nil {
		return err
	}
	key, err := withCustomerKey(h, &o.Conditions, true)
	if err != nil {
		return err
	}
	var res blob.AppendResult
	if h.Get("x-ms-copy-source") != "" {
		src, fetch, err := s.copySource(rq, true)
		if err != nil {
			return err
		}
		sr, err := sourceRange(h)
		if err != nil {
			return err
		}
		md5, err := base64Header(h, "x-ms-source-content-md5", azerr.InvalidMD5)
		if err != nil {
			return err
		}
		so, err := s.fetchedSource(h)
		if err != nil {
			return err
		}
		so.Fetch = fetch
		if res, err = s.svc.AppendBlockFromURL(rq.ctx, rq.path(), src, sr, so, md5, o); err != nil {
			return err
		}
		wrote(res.Blob.Size - res.Offset)
		// The checksums the source range was checked against, as for Put Block From URL.
		if md5 != nil {
			res.Sums.MD5 = md5
		}
		if so.CRC64 != nil {
			res.Sums.CRC64 = so.CRC64
		}
	} else {
		body, err := uploadContent(rq)
		if err != nil {
			return err
		}
		if body.size == 0 {
			return invalidHeader("Content-Length", "0", "Append Block needs a body")
		}
		if err := bodyLimit(rq, "Append Block", body.size); err != nil {
			return err
		}
		if o.Checksums, err = checksums(h); err != nil {
			return err
		}
		if res, err = s.svc.AppendBlock(rq.ctx, rq.path(), body, body.size, o); err != nil {
			return err
		}
		wrote(body.size)
		body.answer(rq.W.Header())
	}
	out := rq.W.Header()
	setETag(out, res.Blob.ETag, res.Blob.LastModified)
	out["x-ms-blob-append-offset"] = []string{strconv.FormatInt(res.Offset, 10)}
	out["x-ms-blob-committed-block-count"] = []string{strconv.Itoa(res.Blob.CommittedBlockCount)}
	setChecksums(out, res.Sums, true) // an MD5 only where the request gave one to check
	answerCustomerKey(out, key)
	answerScope(out, requestScope(rq))
	out["x-ms-request-server-encrypted"] = []string{"true"}
	return rq.done(http.StatusCreated)
}

func (s *Server) sealBlob(rq *request) error {
	o, err := appendOptions(rq.R.Header)
	if err != nil {
		return err
	}
	b, err := s.svc.SealBlob(rq.ctx, rq.path(), o)
	if err != nil {
		return err
	}
	out := rq.W.Header()
	setETag(out, b.ETag, b.LastModified)
	out["x-ms-blob-sealed"] = []string{"true"}
	return rq.done(http.StatusOK)
}
