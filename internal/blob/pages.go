package blob

import (
	"cmp"
	"context"
	"encoding/base64"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Page blobs. A page blob's content holds the pages written, as extents that never overlap
// (all with index 0); pages no extent covers read as zeros. A write replaces whatever it
// overlaps, trimming the extents at its edges, in the same commit as the blob record.

// PageWriteOptions are the conditions of Put Page and Clear Page.
type PageWriteOptions struct {
	LeaseID    string
	Conditions Conditions
	// IfSequenceNumberLE, LT and EQ are x-ms-if-sequence-number-le|lt|eq (nil: absent).
	IfSequenceNumberLE, IfSequenceNumberLT, IfSequenceNumberEQ *int64
	// Checksums are the body's Content-MD5 or x-ms-content-crc64 (Put Page).
	Checksums Checksums
}

// validatePageRange checks a page write's range: whole 512-byte pages (400
// InvalidHeaderValue, as the real service answers a misaligned range) of at most 4 MiB.
func validatePageRange(r ByteRange) error {
	if r.End < 0 || r.Start%PageSize != 0 || (r.End+1)%PageSize != 0 || r.End < r.Start {
		return azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. A page range must start at a multiple of %d and end one byte before one (Range: bytes=%d-%d).", PageSize, r.Start, r.End)
	}
	return nil
}

// checkPageWrite judges a page write against an existing blob.
func (s *Service) checkPageWrite(st *blobState, r ByteRange, o *PageWriteOptions, now time.Time) error {
	if st.b.Type != PageBlob {
		return azerr.Newf(azerr.InvalidBlobType, "The blob type is invalid for this operation. Page writes apply to page blobs; this is a %s.", st.b.Type)
	}
	if err := notIncrementalBase(st); err != nil {
		return err
	}
	if err := s.checkWriteAccess(st, o.LeaseID, o.Conditions, modify, now); err != nil {
		return err
	}
	if err := st.b.checkMutable(now); err != nil {
		return err
	}
	seq := st.b.Sequence
	if o.IfSequenceNumberLE != nil && !(seq <= *o.IfSequenceNumberLE) ||
		o.IfSequenceNumberLT != nil && !(seq < *o.IfSequenceNumberLT) ||
		o.IfSequenceNumberEQ != nil && seq != *o.IfSequenceNumberEQ {
		return azerr.New(azerr.SequenceNumberConditionNotMet)
	}
	if r.End >= st.b.Size {
		return azerr.Newf(azerr.InvalidPageRange, "The page range specified is invalid. Pages %d-%d lie beyond the blob's size of %d bytes.", r.Start, r.End, st.b.Size)
	}
	return nil
}

// PutPages writes size bytes of body at the pages of r (x-ms-page-write: update), whose
// length must be size (400 InvalidHeaderValue) and at most 4 MiB (413).
func (s *Service) PutPages(ctx context.Context, p Path, r ByteRange, body io.Reader, size int64, o PageWriteOptions) (Blob, Checksums, error) {
	if err := notSnapshot(p); err != nil {
		return Blob{}, Checksums{}, err
	}
	if err := validatePageRange(r); err != nil {
		return Blob{}, Checksums{}, err
	}
	if size != r.End-r.Start+1 {
		return Blob{}, Checksums{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. Content-Length %d differs from the %d bytes of the page range.", size, r.End-r.Start+1)
	}
	if size > MaxPutPageSize {
		return Blob{}, Checksums{}, azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. Put Page takes at most %d bytes.", MaxPutPageSize)
	}
	if err := o.Checksums.validate(); err != nil {
		return Blob{}, Checksums{}, err
	}
	u, err := s.receive(ctx, body, size, o.Checksums, false, false)
	if err != nil {
		return Blob{}, Checksums{}, err
	}
	out, err := s.writePages(ctx, p, r, []piece{u.piece}, &u, &o, nil)
	s.discardUnless(err, &u)
	return out, u.sums, err
}

// ClearPages clears the pages of r (x-ms-page-write: clear): they read as zeros again and no
// longer count as written.
func (s *Service) ClearPages(ctx context.Context, p Path, r ByteRange, o PageWriteOptions) (Blob, error) {
	if err := notSnapshot(p); err != nil {
		return Blob{}, err
	}
	if err := validatePageRange(r); err != nil {
		return Blob{}, err
	}
	return s.writePages(ctx, p, r, nil, nil, &o, nil)
}

// writePages puts pieces one after the other at the pages of r (none: a clear); u, when not
// nil, is the upload they come from; guard, when not nil, adds the conditions on a copy
// source.
func (s *Service) writePages(ctx context.Context, p Path, r ByteRange, pieces []piece, u *upload, o *PageWriteOptions, guard func(*batch) error) (Blob, error) {
	var out Blob
	err := s.update(ctx, func() ([]store.Mutation, error) {
		if u != nil {
			if err := s.fresh(u); err != nil {
				return nil, err
			}
		}
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if err := s.checkPageWrite(&st, r, o, now); err != nil {
			return nil, err
		}
		var b batch
		if guard != nil {
			if err := guard(&b); err != nil {
				return nil, err
			}
		}
		if err := s.clearPages(ctx, &st, r.Start, r.End+1, &b); err != nil {
			return nil, err
		}
		if pieces == nil {
			st.b.Clears = addClear(st.b.Clears, clearedPages{Start: r.Start, End: r.End + 1, Ticks: s.nextTicks(0)})
		}
		st.b.Lease = st.b.Lease.afterWrite(now)
		s.touchBlob(&st.b)
		end := r.Start
		for _, pc := range pieces {
			end += pc.Len
			b.add(putExtent(st.b.Content, extent{End: end, piece: pc}, st.b.ETag)...)
		}
		m, err := s.put(&st, &st.b)
		if err != nil {
			return nil, err
		}
		b.add(m...)
		out = st.public(p, now)
		return b.m, nil
	})
	return out, err
}

// clearPages adds to b the mutations removing bytes from to end of st's page content:
// extents inside go, extents across an edge are trimmed to what lies outside.
func (s *Service) clearPages(ctx context.Context, st *blobState, from, end int64, b *batch) error {
	version := s.nextTicks(0)
	content := st.b.Content
	return s.scanExtents(ctx, content, from, func(e extent) (bool, error) {
		start := e.start()
		if start >= end {
			return false, nil
		}
		b.add(deleteExtent(content, e, version)...)
		if start < from {
			b.add(putExtent(content, extent{End: from, piece: e.slice(0, from-start)}, version)...)
		}
		if e.End > end {
			b.add(putExtent(content, extent{End: e.End, piece: e.slice(end-start, e.End-end)}, version)...)
		}
		return true, nil
	})
}

// PageRange is an inclusive range of bytes in Get Page Ranges.
type PageRange struct {
	Start, End int64
}

// PageRangesOptions is one Get Page Ranges request: an optional range, and PrevSnapshot for
// the changes since that snapshot of the blob. MaxResults (0: no limit) bounds the ranges
// of one answer, PageRange and ClearRange entries together; Marker is a previous answer's
// NextMarker.
type PageRangesOptions struct {
	Range        *ByteRange
	PrevSnapshot string
	Marker       string
	MaxResults   int
	LeaseID      string
	Conditions   Conditions
}

// PageRanges is Get Page Ranges' answer: the written ranges (with PrevSnapshot: the ranges
// written since), sorted and merged, and with PrevSnapshot the ranges cleared since.
// NextMarker is empty unless MaxResults cut the answer short.
type PageRanges struct {
	Blob       Blob
	Ranges     []PageRange
	Cleared    []PageRange
	NextMarker string
}

// A page ranges marker is the offset the next answer starts at, base64url-encoded: opaque to
// clients and safe in a URL.
func encodePageMarker(offset int64) string {
	return base64.RawURLEncoding.EncodeToString(strconv.AppendInt(nil, offset, 10))
}

func decodePageMarker(marker string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(marker)
	n, perr := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || perr != nil || n < 0 || n%PageSize != 0 {
		return 0, azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. marker %q was not returned by Get Page Ranges.", marker)
	}
	return n, nil
}

// span is a stretch [start, end) of a page content and the piece there.
type span struct {
	start, end int64
	piece
}

// GetPageRanges lists the pages of a page blob (or snapshot) that hold written data, within
// o.Range if given; with o.PrevSnapshot, those that differ from that snapshot of the same
// blob (409 PreviousSnapshotNotFound if it does not exist).
func (s *Service) GetPageRanges(ctx context.Context, p Path, o PageRangesOptions) (PageRanges, error) {
	st, err := s.loadExisting(ctx, p)
	if err != nil {
		return PageRanges{}, err
	}
	now := s.Now()
	if err := checkReadAccess(&st, o.LeaseID, o.Conditions, now); err != nil {
		return PageRanges{}, err
	}
	if st.b.Type != PageBlob {
		return PageRanges{}, azerr.Newf(azerr.InvalidBlobType, "The blob type is invalid for this operation. Get Page Ranges applies to page blobs; this is a %s.", st.b.Type)
	}
	if err := notIncrementalBase(&st); err != nil {
		return PageRanges{}, err
	}
	// A range that starts or ends inside a page is widened to whole pages: the real
	// service answers bytes=0-1022 with the page range 0-1023 (azblob's TestPutGetPages).
	from, end := int64(0), st.b.Size
	if r := o.Range; r != nil {
		from = r.Start &^ (PageSize - 1)
		if r.End >= 0 {
			end = min(end, (r.End+PageSize)&^(PageSize-1))
		}
	}
	if o.Marker != "" {
		m, err := decodePageMarker(o.Marker)
		if err != nil {
			return PageRanges{}, err
		}
		from = max(from, m)
	}
	out := PageRanges{Blob: st.public(p, now), Ranges: []PageRange{}}
	if o.PrevSnapshot == "" {
		// Read only as many extents as the answer needs, and one more.
		err := s.scanExtents(ctx, st.b.Content, from, func(e extent) (bool, error) {
			start, stop := max(e.start(), from), min(e.End, end)
			switch n := len(out.Ranges); {
			case start >= end:
				return false, nil
			case stop <= start:
			case n > 0 && out.Ranges[n-1].End+1 >= start:
				out.Ranges[n-1].End = max(out.Ranges[n-1].End, stop-1)
			case o.MaxResults > 0 && n == o.MaxResults:
				out.NextMarker = encodePageMarker(start)
				return false, nil
			default:
				out.Ranges = append(out.Ranges, PageRange{Start: start, End: stop - 1})
			}
			return true, nil
		})
		return out, err
	}
	cur, err := s.pageSpans(ctx, st.b.Content, from, end)
	if err != nil {
		return PageRanges{}, err
	}
	snap, err := canonicalSnapshot(o.PrevSnapshot)
	if err != nil {
		return PageRanges{}, err
	}
	prec, err := s.get(ctx, snapshotKey(st.space, p.Name, snap))
	if err != nil {
		return PageRanges{}, err
	}
	if prec == nil {
		return PageRanges{}, azerr.New(azerr.PreviousSnapshotNotFound)
	}
	prevBlob, err := decodeBlob(prec)
	if err != nil {
		return PageRanges{}, err
	}
	prev, err := s.pageSpans(ctx, prevBlob.Content, from, end)
	if err != nil {
		return PageRanges{}, err
	}
	out.Cleared = []PageRange{}
	diffSpans(prev, cur, func(start, end int64, written bool) {
		if written {
			out.Ranges = appendRange(out.Ranges, start, end)
		} else {
			out.Cleared = appendRange(out.Cleared, start, end)
		}
	})
	snapTime, _ := time.Parse(snapshotLayout, snap)
	out.Cleared = clearedSince(out.Cleared, st.b.Clears, ticksOf(snapTime), cur, from, end)
	if o.MaxResults > 0 && len(out.Ranges)+len(out.Cleared) > o.MaxResults {
		out.Ranges, out.Cleared, out.NextMarker = firstRanges(out.Ranges, out.Cleared, o.MaxResults)
	}
	return out, nil
}

// firstRanges keeps the first n of two sorted, disjoint lists of ranges taken together, and
// returns the marker of the first range left out.
func firstRanges(written, cleared []PageRange, n int) ([]PageRange, []PageRange, string) {
	i, j := 0, 0
	for i+j < n {
		if j == len(cleared) || i < len(written) && written[i].Start < cleared[j].Start {
			i++
		} else {
			j++
		}
	}
	next := int64(-1)
	if i < len(written) {
		next = written[i].Start
	}
	if j < len(cleared) && (next < 0 || cleared[j].Start < next) {
		next = cleared[j].Start
	}
	return written[:i], cleared[:j], encodePageMarker(next)
}

// pageSpans returns the written stretches of a page content within [from, end).
func (s *Service) pageSpans(ctx context.Context, content string, from, end int64) ([]span, error) {
	var out []span
	err := s.scanExtents(ctx, content, from, func(e extent) (bool, error) {
		start := e.start()
		if start >= end {
			return false, nil
		}
		a, b := max(start, from), min(e.End, end)
		out = append(out, span{start: a, end: b, piece: e.slice(a-start, b-a)})
		return true, nil
	})
	return out, err
}

// appendRange adds [start, end) to sorted ranges, merging it with the last one when they
// touch.
func appendRange(ranges []PageRange, start, end int64) []PageRange {
	if n := len(ranges); n > 0 && ranges[n-1].End+1 >= start {
		ranges[n-1].End = max(ranges[n-1].End, end-1)
		return ranges
	}
	return append(ranges, PageRange{Start: start, End: end - 1})
}

// diffSpans calls fn, in order, for each stretch where cur differs from prev: written when cur
// has bytes there that prev did not have (or other bytes), cleared when prev had bytes and cur
// has none. Bytes are the same when they come from the same place of the same object: a
// snapshot shares its pieces with the blob until the blob is written again.
func diffSpans(prev, cur []span, fn func(start, end int64, written bool)) {
	var points []int64
	for _, sp := range prev {
		points = append(points, sp.start, sp.end)
	}
	for _, sp := range cur {
		points = append(points, sp.start, sp.end)
	}
	slices.Sort(points)
	points = slices.Compact(points)
	i, j := 0, 0
	for k := 0; k+1 < len(points); k++ {
		x, y := points[k], points[k+1]
		for i < len(prev) && prev[i].end <= x {
			i++
		}
		for j < len(cur) && cur[j].end <= x {
			j++
		}
		var a, c *span
		if i < len(prev) && prev[i].start <= x {
			a = &prev[i]
		}
		if j < len(cur) && cur[j].start <= x {
			c = &cur[j]
		}
		switch {
		case c != nil && (a == nil || !samePlace(a, c, x)):
			fn(x, y, true)
		case c == nil && a != nil:
			fn(x, y, false)
		}
	}
}

func samePlace(a, b *span, x int64) bool {
	if a.Obj == "" || b.Obj == "" {
		return a.Obj == b.Obj
	}
	return a.Obj == b.Obj && a.Off+(x-a.start) == b.Off+(x-b.start)
}

// A page blob keeps a log of the ranges cleared in it (blobRecord.Clears), because Azure's
// page range diff reports pages cleared since the earlier snapshot as ClearRange even when
// they were empty then too, which comparing the two contents cannot tell (the Python SDK's
// test_get_page_ranges_diff: pages written and cleared after the snapshot are a ClearRange).
// Each entry holds when (ticks) it was cleared; a snapshot keeps the log as it was.

// clearedPages is a cleared range [Start, End) and the ticks of its last clear.
type clearedPages struct {
	Start int64 `json:"s"`
	End   int64 `json:"e"`
	Ticks int64 `json:"t"`
}

// maxClears bounds the log. Past it, the two entries closest together become one, which
// covers the pages between them too: reporting an empty page as cleared changes nothing for
// a client that applies the diff.
const maxClears = 64

// addClear returns log with c added: a new slice (a snapshot may share the old one), sorted,
// entries that touch merged (keeping the later ticks), at most maxClears long.
func addClear(log []clearedPages, c clearedPages) []clearedPages {
	all := append(append(make([]clearedPages, 0, len(log)+1), log...), c)
	slices.SortFunc(all, func(a, b clearedPages) int { return cmp.Compare(a.Start, b.Start) })
	out := all[:0]
	for _, e := range all {
		if n := len(out); n > 0 && e.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, e.End)
			out[n-1].Ticks = max(out[n-1].Ticks, e.Ticks)
			continue
		}
		out = append(out, e)
	}
	for len(out) > maxClears {
		closest := 0
		for i := 1; i+1 < len(out); i++ {
			if out[i+1].Start-out[i].End < out[closest+1].Start-out[closest].End {
				closest = i
			}
		}
		out[closest].End = out[closest+1].End
		out[closest].Ticks = max(out[closest].Ticks, out[closest+1].Ticks)
		out = slices.Delete(out, closest+1, closest+2)
	}
	return out
}

// clearedSince adds to cleared (a diff's ClearRanges, sorted) the pages of [from, end) the log
// says were cleared after ticks and that hold no bytes now (cur: the written spans, sorted).
func clearedSince(cleared []PageRange, log []clearedPages, ticks int64, cur []span, from, end int64) []PageRange {
	var extra []PageRange
	for _, c := range log {
		if c.Ticks <= ticks {
			continue
		}
		start, stop := max(c.Start, from), min(c.End, end)
		for _, sp := range cur {
			if start >= stop {
				break
			}
			if sp.end <= start || sp.start >= stop {
				continue
			}
			if sp.start > start {
				extra = append(extra, PageRange{Start: start, End: sp.start - 1})
			}
			start = sp.end
		}
		if start < stop {
			extra = append(extra, PageRange{Start: start, End: stop - 1})
		}
	}
	if len(extra) == 0 {
		return cleared
	}
	all := append(cleared, extra...)
	slices.SortFunc(all, func(a, b PageRange) int { return cmp.Compare(a.Start, b.Start) })
	out := []PageRange{}
	for _, r := range all {
		out = appendRange(out, r.Start, r.End+1)
	}
	return out
}
