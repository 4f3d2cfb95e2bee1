package blob

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// ByteRange is an inclusive range of bytes as Range and x-ms-range give it: bytes=Start-End,
// or bytes=Start- when End is negative.
type ByteRange struct {
	Start, End int64
}

// ParseRange reads a Range or x-ms-range value. It reports false for anything but
// "bytes=S-E" (S ≤ E) and "bytes=S-", which Get Blob then ignores, as Azure does.
func ParseRange(v string) (ByteRange, bool) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !ok {
		return ByteRange{}, false
	}
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return ByteRange{}, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return ByteRange{}, false
	}
	if last == "" {
		return ByteRange{Start: start, End: -1}, true
	}
	end, err := strconv.ParseInt(last, 10, 64)
	if err != nil || end < start {
		return ByteRange{}, false
	}
	return ByteRange{Start: start, End: end}, true
}

// GetBlobOptions is one Get Blob request.
type GetBlobOptions struct {
	// Range selects bytes (nil: the whole blob).
	Range *ByteRange
	// RangeMD5 and RangeCRC64 (x-ms-range-get-content-md5 / -crc64) ask for the checksum of
	// the range returned, which must be given and at most 4 MiB.
	RangeMD5, RangeCRC64 bool
	LeaseID              string
	Conditions           Conditions
}

// Download is a Get Blob answer: the blob, the bytes Offset to Offset+Count of it in Body,
// Partial when a range was asked for (206, Content-Range: bytes Offset-(Offset+Count-1)/Size),
// and the range checksum asked for. Body streams from storage with bounded memory; the caller
// must close it. A failure while streaming (storage unreachable) is returned by Body.Read.
type Download struct {
	Blob       Blob
	Offset     int64
	Count      int64
	Partial    bool
	RangeMD5   []byte
	RangeCRC64 []byte
	Body       io.ReadCloser
}

// GetBlob reads a blob or snapshot. A range starting at or beyond the blob's size (any range
// of an empty blob) is 416 InvalidRange, with the Content-Range: bytes */size header clients
// use to learn the size.
func (s *Service) GetBlob(ctx context.Context, p Path, o GetBlobOptions) (Download, error) {
	if (o.RangeMD5 || o.RangeCRC64) && (o.Range == nil || o.Range.End < 0 || o.Range.End-o.Range.Start+1 > MaxRangeChecksumSize) {
		return Download{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. A range checksum needs a range of at most %d bytes.", MaxRangeChecksumSize)
	}
	if o.RangeMD5 && o.RangeCRC64 {
		return Download{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. x-ms-range-get-content-md5 and x-ms-range-get-content-crc64 cannot both be given.")
	}
	st, err := s.loadExisting(ctx, p)
	if err != nil {
		return Download{}, err
	}
	now := s.Now()
	if err := checkReadAccess(&st, o.LeaseID, o.Conditions, now); err != nil {
		return Download{}, err
	}
	if st.b.archived(now) {
		return Download{}, azerr.New(azerr.BlobArchived)
	}
	if err := notIncrementalBase(&st); err != nil {
		return Download{}, err
	}
	d := Download{Blob: st.public(p, now), Count: st.b.Size}
	if r := o.Range; r != nil {
		if r.Start >= st.b.Size {
			e := azerr.New(azerr.InvalidRange)
			e.Header = http.Header{"Content-Range": {fmt.Sprintf("bytes */%d", st.b.Size)}}
			return Download{}, e
		}
		end := st.b.Size - 1
		if r.End >= 0 {
			end = min(r.End, end)
		}
		d.Offset, d.Count, d.Partial = r.Start, end-r.Start+1, true
	}
	d.Body = s.contentBody(ctx, &st.b, d.Offset, d.Count)
	if o.RangeMD5 || o.RangeCRC64 {
		data, err := io.ReadAll(d.Body)
		d.Body.Close()
		if err != nil {
			return Download{}, err
		}
		if o.RangeMD5 {
			sum := md5.Sum(data)
			d.RangeMD5 = sum[:]
		} else {
			d.RangeCRC64 = binary.LittleEndian.AppendUint64(nil, crc64.Checksum(data, crc64Table))
		}
		d.Body = io.NopCloser(bytes.NewReader(data))
	}
	return d, nil
}

// contentBody streams n bytes of b from off.
func (s *Service) contentBody(ctx context.Context, b *blobRecord, off, n int64) io.ReadCloser {
	if b.Content == "" {
		return io.NopCloser(bytes.NewReader(b.data[off : off+n]))
	}
	return &contentReader{ctx: ctx, s: s, content: b.Content, sparse: b.Type == PageBlob, pos: off, end: off + n}
}

// contentReader reads bytes pos to end of a content, fetching its extents a batch at a time
// and opening one object range at a time, so memory stays bounded whatever the size. Gaps
// between extents are zeros in a page blob and a corruption anywhere else.
type contentReader struct {
	ctx     context.Context
	s       *Service
	content string
	sparse  bool
	pos     int64
	end     int64

	pending []extent
	src     io.ReadCloser // the object range being read
	left    int64         // bytes left in src
	zeros   int64
	err     error
}

// readBatch is how many extents a reader fetches at a time.
const readBatch = 128

var zeroPage [32 << 10]byte

func (r *contentReader) Read(p []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if r.pos >= r.end {
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		switch {
		case r.zeros > 0:
			n := int(min(int64(len(p)), r.zeros, int64(len(zeroPage))))
			copy(p, zeroPage[:n])
			r.zeros -= int64(n)
			r.pos += int64(n)
			return n, nil
		case r.src != nil:
			n, err := r.src.Read(p[:min(int64(len(p)), r.left)])
			r.left -= int64(n)
			r.pos += int64(n)
			if r.left == 0 {
				r.src.Close()
				r.src = nil
			} else if err != nil {
				r.err = unexpectedEOF(err)
			}
			if n > 0 || r.err != nil {
				return n, r.err
			}
			continue
		}
		if err := r.next(); err != nil {
			r.err = err
		}
	}
}

// WriteTo copies the rest of the bytes to w, handing each object range to w whole through
// io.Copy rather than through Read's buffer: a range of a file on disk (the embedded store's
// readers) then reaches a socket by sendfile(2), copied by the kernel. It stops at the first
// error of either side.
func (r *contentReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if r.err != nil {
			return total, r.err
		}
		if r.pos >= r.end {
			return total, nil
		}
		switch {
		case r.zeros > 0:
			n, err := w.Write(zeroPage[:min(r.zeros, int64(len(zeroPage)))])
			total += int64(n)
			r.zeros -= int64(n)
			r.pos += int64(n)
			if err != nil {
				r.err = err
			}
		case r.src != nil:
			want := r.left
			n, err := io.Copy(w, r.src)
			total += n
			r.left -= n
			r.pos += n
			r.src.Close()
			r.src = nil
			switch {
			case err != nil:
				r.err = err
			case n < want:
				r.err = io.ErrUnexpectedEOF
			case n > want: // a source never yields more than ReadObject was asked for
				r.err = fmt.Errorf("blob content %s yielded %d bytes where %d were due", r.content, n, want)
			}
		default:
			if err := r.next(); err != nil {
				r.err = err
			}
		}
	}
}

// next sets up the source of the bytes at pos.
func (r *contentReader) next() error {
	if len(r.pending) == 0 {
		err := r.s.scanExtents(r.ctx, r.content, r.pos, func(e extent) (bool, error) {
			if e.start() >= r.end {
				return false, nil
			}
			r.pending = append(r.pending, e)
			return len(r.pending) < readBatch, nil
		})
		if err != nil {
			return err
		}
		if len(r.pending) == 0 {
			if !r.sparse {
				return fmt.Errorf("blob content %s has no bytes at offset %d", r.content, r.pos)
			}
			r.zeros = r.end - r.pos
			return nil
		}
	}
	e := r.pending[0]
	if e.End <= r.pos { // an empty block at this offset
		r.pending = r.pending[1:]
		return nil
	}
	if start := e.start(); start > r.pos {
		if !r.sparse {
			return fmt.Errorf("blob content %s has no bytes at offset %d", r.content, r.pos)
		}
		r.zeros = min(start, r.end) - r.pos
		return nil
	}
	r.pending = r.pending[1:]
	from := r.pos - e.start()
	n := min(e.End, r.end) - r.pos
	part := e.slice(from, n)
	if part.Obj == "" {
		r.zeros = n
		return nil
	}
	rc, err := r.s.objects.ReadObject(r.ctx, part.Obj, part.Off, part.Len)
	if err != nil {
		return fmt.Errorf("reading object %s of blob content %s: %w", part.Obj, r.content, err)
	}
	r.src, r.left = rc, n
	return nil
}

func (r *contentReader) Close() error {
	if r.src != nil {
		r.src.Close()
		r.src = nil
	}
	if r.err == nil {
		r.err = errors.New("blob: read after close")
	}
	return nil
}
