package blob

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func (e *env) createPageBlob(name string, size int64) {
	e.Helper()
	if _, _, err := e.s.PutBlob(e.ctx, path(name), nil, 0, PutBlobOptions{Type: PageBlob, PageBlobSize: size}); err != nil {
		e.Fatal(err)
	}
}

// writePages writes pages [first, last] filled with fill.
func (e *env) writePages(name string, first, last int64, fill byte) {
	e.Helper()
	n := (last - first + 1) * PageSize
	body := bytes.Repeat([]byte{fill}, int(n))
	r := ByteRange{first * PageSize, (last+1)*PageSize - 1}
	if _, _, err := e.s.PutPages(e.ctx, path(name), r, bytes.NewReader(body), n, PageWriteOptions{}); err != nil {
		e.Fatalf("PutPages %d-%d: %v", first, last, err)
	}
}

func (e *env) clearPages(name string, first, last int64) {
	e.Helper()
	if _, err := e.s.ClearPages(e.ctx, path(name), ByteRange{first * PageSize, (last+1)*PageSize - 1}, PageWriteOptions{}); err != nil {
		e.Fatalf("ClearPages %d-%d: %v", first, last, err)
	}
}

// pageRanges describes Get Page Ranges in pages: "0-1 4-4", and "clear 2-3" for cleared ones.
func (e *env) pageRanges(p Path, prev string) string {
	e.Helper()
	r, err := e.s.GetPageRanges(e.ctx, p, PageRangesOptions{PrevSnapshot: prev})
	if err != nil {
		e.Fatalf("GetPageRanges: %v", err)
	}
	out := ""
	for _, pr := range r.Ranges {
		out += fmt.Sprintf("%d-%d ", pr.Start/PageSize, pr.End/PageSize)
	}
	for _, pr := range r.Cleared {
		out += fmt.Sprintf("clear %d-%d ", pr.Start/PageSize, pr.End/PageSize)
	}
	return out
}

// pageFills returns the fill byte of each page of a page blob ("." for zeros).
func (e *env) pageFills(p Path) string {
	e.Helper()
	got := e.read(p)
	out := ""
	for i := 0; i < len(got); i += PageSize {
		page := got[i : i+PageSize]
		if page[0] == 0 {
			out += "."
		} else {
			out += string(page[0])
		}
		if !bytes.Equal(page, bytes.Repeat(page[:1], PageSize)) {
			out += "!"
		}
	}
	return out
}

// Put Page and Clear Page overwrite, trim and split what they overlap; unwritten pages read
// as zeros; Get Page Ranges lists written pages merged.
func TestPageWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createPageBlob("disk", 10*PageSize)
		if got := e.pageFills(path("disk")); got != ".........." {
			t.Fatalf("new page blob: %s", got)
		}
		steps := []struct {
			do     func()
			fills  string
			ranges string
		}{
			{func() { e.writePages("disk", 1, 3, 'a') }, ".aaa......", "1-3 "},
			{func() { e.writePages("disk", 4, 5, 'b') }, ".aaabb....", "1-5 "},
			{func() { e.writePages("disk", 2, 4, 'c') }, ".acccb....", "1-5 "},
			{func() { e.clearPages("disk", 3, 3) }, ".ac.cb....", "1-2 4-5 "},
			{func() { e.writePages("disk", 9, 9, 'z') }, ".ac.cb...z", "1-2 4-5 9-9 "},
			{func() { e.clearPages("disk", 0, 9) }, "..........", ""},
			{func() { e.writePages("disk", 0, 9, 'f') }, "ffffffffff", "0-9 "},
		}
		for i, s := range steps {
			s.do()
			if got := e.pageFills(path("disk")); got != s.fills {
				t.Fatalf("step %d: pages %s, want %s", i, got, s.fills)
			}
			if got := e.pageRanges(path("disk"), ""); got != s.ranges {
				t.Fatalf("step %d: ranges %q, want %q", i, got, s.ranges)
			}
		}
		e.collect()
		if n := len(e.objects()); n != 1 {
			t.Errorf("%d objects for one page write in force, want 1", n)
		}
	})
}

func TestPageWriteRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createPageBlob("disk", 4*PageSize)
		put := func(r ByteRange, n int64, o PageWriteOptions) error {
			_, _, err := e.s.PutPages(e.ctx, path("disk"), r, bytes.NewReader(make([]byte, n)), n, o)
			return err
		}
		wantCode(t, put(ByteRange{1, PageSize}, PageSize, PageWriteOptions{}), 400, azerr.InvalidHeaderValue)
		wantCode(t, put(ByteRange{0, PageSize - 2}, PageSize-1, PageWriteOptions{}), 400, azerr.InvalidHeaderValue)
		wantCode(t, put(ByteRange{0, PageSize - 1}, PageSize*2, PageWriteOptions{}), 400, azerr.InvalidHeaderValue)
		wantCode(t, put(ByteRange{4 * PageSize, 5*PageSize - 1}, PageSize, PageWriteOptions{}), 416, azerr.InvalidPageRange)
		wantCode(t, put(ByteRange{0, 8<<20 - 1}, 8<<20, PageWriteOptions{}), 413, azerr.RequestBodyTooLarge)
		wantCode(t, put(ByteRange{0, PageSize - 1}, PageSize, PageWriteOptions{IfSequenceNumberLT: ptr[int64](0)}), 412, azerr.SequenceNumberConditionNotMet)
		if err := put(ByteRange{0, PageSize - 1}, PageSize, PageWriteOptions{IfSequenceNumberEQ: ptr[int64](0), IfSequenceNumberLE: ptr[int64](0)}); err != nil {
			t.Fatal(err)
		}
		e.putBlob("block", []byte("x"))
		_, err := e.s.ClearPages(e.ctx, path("block"), ByteRange{0, PageSize - 1}, PageWriteOptions{})
		wantCode(t, err, 409, azerr.InvalidBlobType)
		_, err = e.s.GetPageRanges(e.ctx, path("block"), PageRangesOptions{})
		wantCode(t, err, 409, azerr.InvalidBlobType)
		_, _, err = e.s.PutBlob(e.ctx, path("odd"), nil, 0, PutBlobOptions{Type: PageBlob, PageBlobSize: 1000})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
		_, _, err = e.s.PutBlob(e.ctx, path("odd"), bytes.NewReader([]byte("x")), 1, PutBlobOptions{Type: PageBlob, PageBlobSize: 512})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
	})
}

// Resizing and sequence numbers, through Set Blob Properties.
func TestPageBlobResizeAndSequenceNumber(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createPageBlob("disk", 4*PageSize)
		e.writePages("disk", 0, 3, 'a')
		b, err := e.s.SetBlobProperties(e.ctx, path("disk"), SetBlobPropertiesOptions{Size: ptr[int64](2*PageSize + PageSize)})
		if err != nil || b.Size != 3*PageSize {
			t.Fatalf("shrink: %+v, %v", b, err)
		}
		b, err = e.s.SetBlobProperties(e.ctx, path("disk"), SetBlobPropertiesOptions{Size: ptr[int64](6 * PageSize)})
		if err != nil || b.Size != 6*PageSize {
			t.Fatalf("grow: %+v, %v", b, err)
		}
		if got := e.pageFills(path("disk")); got != "aaa..." {
			t.Errorf("after shrinking and growing: %s (pages cut off must not come back)", got)
		}
		if got := e.pageRanges(path("disk"), ""); got != "0-2 " {
			t.Errorf("ranges %q", got)
		}
		_, err = e.s.SetBlobProperties(e.ctx, path("disk"), SetBlobPropertiesOptions{Size: ptr[int64](100)})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
		seq := []struct {
			action SequenceAction
			n      *int64
			want   string
			seq    int64
		}{
			{SequenceUpdate, ptr[int64](5), "ok", 5},
			{SequenceMax, ptr[int64](3), "ok", 5},
			{SequenceMax, ptr[int64](9), "ok", 9},
			{SequenceIncrement, nil, "ok", 10},
			{SequenceIncrement, ptr[int64](1), "400 InvalidHeaderValue", 10},
			{SequenceUpdate, nil, "400 MissingRequiredHeader", 10},
			{"sideways", ptr[int64](1), "400 InvalidHeaderValue", 10},
		}
		for _, s := range seq {
			b, err := e.s.SetBlobProperties(e.ctx, path("disk"), SetBlobPropertiesOptions{SequenceAction: s.action, SequenceNumber: s.n})
			if got := codeOf(err); got != s.want {
				t.Fatalf("%s %v: %s, want %s", s.action, s.n, got, s.want)
			}
			if err == nil && b.SequenceNumber != s.seq {
				t.Errorf("%s: sequence number %d, want %d", s.action, b.SequenceNumber, s.seq)
			}
		}
		e.putBlob("block", []byte("x"))
		_, err = e.s.SetBlobProperties(e.ctx, path("block"), SetBlobPropertiesOptions{Size: ptr[int64](512)})
		wantCode(t, err, 400, azerr.InvalidHeaderValue)
	})
}

// Get Page Ranges with a previous snapshot lists what changed since: pages written again
// and pages cleared.
func TestPageRangesDiff(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createPageBlob("disk", 10*PageSize)
		e.writePages("disk", 0, 5, 'a')
		snap := e.snapshot("disk")
		if got := e.pageRanges(path("disk"), snap); got != "" {
			t.Errorf("no change since the snapshot: %q", got)
		}
		e.writePages("disk", 2, 2, 'b')
		e.clearPages("disk", 4, 4)
		e.writePages("disk", 8, 9, 'c')
		if got := e.pageRanges(path("disk"), snap); got != "2-2 8-9 clear 4-4 " {
			t.Errorf("diff %q", got)
		}
		if got := e.pageFills(snapshotPath("disk", snap)); got != "aaaaaa...." {
			t.Errorf("snapshot pages %s", got)
		}
		_, err := e.s.GetPageRanges(e.ctx, path("disk"), PageRangesOptions{PrevSnapshot: "2001-01-01T00:00:00Z"})
		wantCode(t, err, 409, azerr.PreviousSnapshotNotFound)
		r, err := e.s.GetPageRanges(e.ctx, path("disk"), PageRangesOptions{Range: &ByteRange{PageSize + 10, 3*PageSize - 1}})
		// Whole pages, even for a range that starts or ends inside one.
		if err != nil || len(r.Ranges) != 1 || r.Ranges[0] != (PageRange{PageSize, 3*PageSize - 1}) {
			t.Errorf("ranges within a range: %+v, %v", r.Ranges, err)
		}
		r, err = e.s.GetPageRanges(e.ctx, path("disk"), PageRangesOptions{Range: &ByteRange{0, 2*PageSize - 2}})
		if err != nil || len(r.Ranges) != 1 || r.Ranges[0] != (PageRange{0, 2*PageSize - 1}) {
			t.Errorf("bytes=0-1022: %+v, %v", r.Ranges, err)
		}
	})
}

// Pages cleared since a snapshot are a ClearRange even when they held nothing at the
// snapshot (the Python SDK's test_get_page_ranges_diff), unless written again since; a clear
// before the snapshot is not reported; a diff between two snapshots sees the clears between
// them.
func TestPageRangesDiffReportsClears(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.createPageBlob("disk", 12*PageSize)
		e.clearPages("disk", 10, 11) // before every snapshot: never reported
		snap1 := e.snapshot("disk")
		e.writePages("disk", 0, 2, 'a')
		snap2 := e.snapshot("disk")
		e.clearPages("disk", 1, 1)
		e.clearPages("disk", 5, 6) // empty at both snapshots
		e.clearPages("disk", 8, 8)
		e.writePages("disk", 8, 8, 'b') // cleared, then written again
		if got := e.pageRanges(path("disk"), snap1); got != "0-0 2-2 8-8 clear 1-1 clear 5-6 " {
			t.Errorf("diff from the first snapshot %q", got)
		}
		if got := e.pageRanges(path("disk"), snap2); got != "8-8 clear 1-1 clear 5-6 " {
			t.Errorf("diff from the second snapshot %q", got)
		}
		snap3 := e.snapshot("disk")
		if got := e.pageRanges(path("disk"), snap3); got != "" {
			t.Errorf("no change since the last snapshot: %q", got)
		}
		if got := e.pageRanges(snapshotPath("disk", snap3), snap2); got != "8-8 clear 1-1 clear 5-6 " {
			t.Errorf("diff between two snapshots %q", got)
		}
		if got := e.pageFills(path("disk")); got != "a.a.....b..." {
			t.Errorf("pages %s", got)
		}
	})
}

// The clear log stays short: past maxClears entries, the closest two become one.
func TestClearLogIsBounded(t *testing.T) {
	var log []clearedPages
	for i := range int64(200) {
		log = addClear(log, clearedPages{Start: i * 4 * PageSize, End: i*4*PageSize + PageSize, Ticks: i + 1})
	}
	if len(log) != maxClears {
		t.Fatalf("%d entries", len(log))
	}
	covered := map[int64]bool{}
	for i, c := range log {
		if i > 0 && c.Start < log[i-1].End {
			t.Fatalf("entries %d and %d overlap: %+v", i-1, i, log)
		}
		for p := c.Start; p < c.End; p += PageSize {
			covered[p/PageSize] = true
		}
	}
	for i := range int64(200) {
		if !covered[i*4] {
			t.Fatalf("page %d was cleared and is not in the log", i*4)
		}
	}
	if log[len(log)-1].Ticks != 200 {
		t.Errorf("the last entry's ticks %d", log[len(log)-1].Ticks)
	}
}
