package blobfetch

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/tabula-dev/tabula/internal/blob"
)

// Page blobs are often mostly empty (a disk of 127 GiB with a few written): Azure copies the
// pages written and no others. With Request.Sparse, when the GET of the whole source answers
// that it is an Azure page blob, that answer is closed at once and the source is asked for
// its page ranges (Get Page Ranges, with the same URL and headers). The first written range
// is read (bytes 0-0 when none is), which answers what the blob is now (its size, properties,
// metadata and ETag), and the body is the written ranges, each further one a GET of that
// range on the condition of that answer's ETag (a source changed meanwhile fails the copy
// with its 412). A source that does not list its ranges is read whole again. Block blobs and
// other sources cost no request more.

// pageList is a Get Page Ranges answer.
type pageList struct {
	XMLName    xml.Name
	Ranges     []struct{ Start, End int64 } `xml:"PageRange"`
	NextMarker string
}

// maxRangeListings bounds the Get Page Ranges requests of one copy (each lists up to 10,000
// ranges on Azure).
const maxRangeListings = 1000

// pageRanges lists the written ranges of the page blob rq.URL names, following NextMarker,
// with rq's headers; ok is false when the source did not list them.
func (c *Client) pageRanges(ctx context.Context, rq Request) (ranges []blob.ByteRange, ok bool) {
	marker := ""
	for range maxRangeListings {
		u := *rq.URL
		q := u.Query()
		q.Set("comp", "pagelist")
		if marker != "" {
			q.Set("marker", marker)
		}
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, false
		}
		for k, v := range rq.Header {
			req.Header[k] = v
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, false
		}
		var list pageList
		err = xml.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&list)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || list.XMLName.Local != "PageList" {
			return nil, false
		}
		for _, r := range list.Ranges {
			if r.Start < 0 || r.End < r.Start || len(ranges) > 0 && r.Start <= ranges[len(ranges)-1].End {
				return nil, false // not a page list in order: copy everything
			}
			ranges = append(ranges, blob.ByteRange{Start: r.Start, End: r.End})
		}
		if marker = list.NextMarker; marker == "" {
			return ranges, true
		}
	}
	return nil, false
}

// fetchSparse reads the written pages of the page blob rq names, as above; ok is false when
// the whole source is to be read instead.
func (c *Client) fetchSparse(ctx context.Context, rq Request) (_ *blob.RemoteSource, ok bool) {
	ranges, ok := c.pageRanges(ctx, rq)
	if !ok {
		return nil, false
	}
	first := blob.ByteRange{Start: 0, End: 0}
	if len(ranges) > 0 {
		first = ranges[0]
	}
	src, resp, err := c.get(ctx, Request{URL: rq.URL, Range: &first, Header: rq.Header, ConditionsFailAsSource: rq.ConditionsFailAsSource})
	if err != nil {
		return nil, false
	}
	_, _, total, whole := contentRange(resp.Header.Get("Content-Range"))
	etag := resp.Header.Get("ETag")
	var written int64
	for _, r := range ranges {
		written += r.End - r.Start + 1
		whole = whole && r.End < total
	}
	if resp.StatusCode != http.StatusPartialContent || !whole || src.Type != blob.PageBlob || total%blob.PageSize != 0 || etag == "" {
		src.Body.Close()
		return nil, false
	}
	header := rq.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		header.Del(k)
	}
	header.Set("If-Match", etag)
	body := &rangesBody{c: c, ctx: ctx, url: rq.URL, header: header, cur: src.Body}
	if len(ranges) == 0 {
		src.Body.Close()
		body.cur = nil
	} else {
		body.ranges = ranges[1:]
	}
	if ranges == nil {
		ranges = []blob.ByteRange{} // none written: still a sparse copy
	}
	src.Body, src.Size, src.Pages, src.BlobSize = body, written, ranges, total
	return src, true
}

// rangesBody reads ranges of url one GET after the other. Close may come from another
// goroutine while a Read waits (a copy aborted): it closes the range being read, which ends
// that Read.
type rangesBody struct {
	c      *Client
	ctx    context.Context
	url    *url.URL
	header http.Header

	mu     sync.Mutex
	ranges []blob.ByteRange
	cur    io.ReadCloser
	closed bool
}

func (b *rangesBody) Read(p []byte) (int, error) {
	for {
		cur, err := b.current()
		if cur == nil || err != nil {
			return 0, err
		}
		n, err := cur.Read(p)
		if err == io.EOF {
			b.mu.Lock()
			if b.cur == cur {
				b.cur = nil
			}
			b.mu.Unlock()
			cur.Close()
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// current is the range being read, opening the next one when none is; nil at the end.
func (b *rangesBody) current() (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, failed("the copy of %s was stopped.", Where(b.url))
	}
	if b.cur != nil {
		return b.cur, nil
	}
	if len(b.ranges) == 0 {
		return nil, io.EOF
	}
	r := b.ranges[0]
	b.ranges = b.ranges[1:]
	src, err := b.c.Fetch(b.ctx, Request{URL: b.url, Range: &r, Header: b.header})
	if err != nil {
		return nil, err
	}
	if src.Size != r.End-r.Start+1 {
		src.Body.Close()
		return nil, failed("asked %s for bytes %d-%d, it answered %d bytes.", Where(b.url), r.Start, r.End, src.Size)
	}
	b.cur = src.Body
	return b.cur, nil
}

func (b *rangesBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed, b.ranges = true, nil
	if b.cur != nil {
		err := b.cur.Close()
		b.cur = nil
		return err
	}
	return nil
}
