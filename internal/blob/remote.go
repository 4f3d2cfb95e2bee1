package blob

import (
	"context"
	"io"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Copies from other servers. A copy source that is not a blob of this server is read by the
// HTTP layer (SourceOptions.Fetch): the service judges the destination first, as Azure does
// before it reads a source, then fetches the source once, receives its bytes as an upload (in
// memory when small, else streamed into an object nothing refers to yet), and commits the
// write as the operation would with a request body, judging the destination again. A fetch
// that fails, ends short or does not check out stores nothing: its upload is discarded and
// the destination is as it was.

// RemoteSource is a copy source on another server as its GET answered: the bytes of the range
// asked for, and what the answer says of the blob.
type RemoteSource struct {
	// Body yields the bytes; the service closes it. A Body that fails, or ends before Size
	// bytes, fails the operation with its error.
	Body io.ReadCloser
	// Size is how many bytes Body yields, -1 when the source did not say.
	Size int64
	// Type is the source's x-ms-blob-type, "" for a source that is not an Azure blob.
	Type BlobType
	// Properties are the content properties the answer carried (ContentMD5 nil when it carried
	// none), Metadata its x-ms-meta-* headers.
	Properties ContentProperties
	Metadata   Metadata
	// Sealed (x-ms-blob-sealed) and Blocks (x-ms-blob-committed-block-count) describe an
	// append blob.
	Sealed bool
	Blocks int
	// Pages, when not nil, are the written ranges of a page blob of BlobSize bytes: Body then
	// yields their bytes alone, one range after the other (Size in all), and the copy's other
	// pages are empty.
	Pages    []ByteRange
	BlobSize int64
}

// copySize is the size of the blob a copy of src received as u makes.
func copySize(src *RemoteSource, u *upload) int64 {
	if src.Pages != nil {
		return src.BlobSize
	}
	return u.Len
}

// Fetch reads a copy source on another server: the bytes of r (nil: all of them). Its errors
// are the operation's answer, built by the HTTP layer (CannotVerifyCopySource with the
// source's status when the source refused, for one).
type Fetch func(ctx context.Context, r *ByteRange) (*RemoteSource, error)

// MaxSyncCopySize is the largest source Copy Blob From URL (x-ms-requires-sync) copies.
const MaxSyncCopySize = 256 << 20

// maxBlockBlobSize is the largest block blob: 50,000 blocks of the largest size.
const maxBlockBlobSize = MaxCommittedBlocks * MaxBlockSize

// errSyncCopyTooLarge is Azure's answer to a synchronous copy of a source over 256 MiB, 409
// CannotVerifyCopySource (azure-sdk-for-go issue 19880 quotes both).
func errSyncCopyTooLarge(int64) error {
	e := azerr.Newf(azerr.CannotVerifyCopySource, "The source request body for synchronous copy is too large and exceeds the maximum permissible limit (256MB).")
	e.Status = 409
	return e
}

// fetchUpload judges the destination (judge), then fetches r of the source and receives its
// bytes: at most limit of them (else tooLarge, given the size, -1 when only reading showed it),
// checked against sums (x-ms-source-content-md5 and -crc64), in memory when inline says so of
// the source and they are few. The upload's sums hold the MD5 when withMD5 or sums has one.
func (s *Service) fetchUpload(ctx context.Context, fetch Fetch, r *ByteRange, limit int64, tooLarge func(n int64) error, sums Checksums,
	withMD5 bool, inline func(*RemoteSource) bool, judge func() error) (*RemoteSource, upload, error) {
	if err := judge(); err != nil {
		return nil, upload{}, err
	}
	src, err := fetch(ctx, r)
	if err != nil {
		return nil, upload{}, err
	}
	if src.Size > limit {
		src.Body.Close()
		return nil, upload{}, tooLarge(src.Size)
	}
	u, err := s.receiveSource(ctx, src, limit, tooLarge, sums, withMD5, inline(src))
	return src, u, err
}

// receiveSource receives the bytes of src, at most limit (src.Size is known not to exceed
// it), as fetchUpload describes, and closes its body.
func (s *Service) receiveSource(ctx context.Context, src *RemoteSource, limit int64, tooLarge func(n int64) error, sums Checksums,
	withMD5, inline bool) (upload, error) {
	defer src.Body.Close()
	body := io.Reader(src.Body)
	if src.Size < 0 {
		body = &capped{r: src.Body, left: limit, tooLarge: func() error { return tooLarge(-1) }}
	}
	u, err := s.receive(ctx, body, src.Size, Checksums{}, inline, withMD5 || sums.MD5 != nil)
	if err != nil {
		return upload{}, err
	}
	if u.Obj != "" && u.Len == 0 {
		// An empty source of unknown length: no object to refer to.
		s.discard(&u)
		u.data = []byte{}
	}
	if err := compareSourceSums(u.sums, sums); err != nil {
		s.discard(&u)
		return upload{}, err
	}
	return u, nil
}

// capped passes on at most left bytes of r; a byte more is tooLarge's error.
type capped struct {
	r        io.Reader
	left     int64
	tooLarge func() error
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			return 0, c.tooLarge()
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// replaceFromRemote replaces dst with a blob of the bytes fetch reads (the whole source, at
// most limit bytes), as copyInto does with a source of this server: build makes the record
// (type, properties, metadata, tags, ...) of the source and the upload; the content is the
// upload's. The destination's lease and conditions are judged before the fetch and again at
// commit.
func (s *Service) replaceFromRemote(ctx context.Context, dst Path, fetch Fetch, limit int64, tooLarge func(int64) error, sums Checksums,
	leaseID string, cond Conditions, scope string, pr Protection, build buildFromRemote) (Blob, error) {
	src, u, err := s.fetchUpload(ctx, fetch, nil, limit, tooLarge, sums, true, blockSource, s.judgeDestination(ctx, dst, leaseID, cond))
	if err != nil {
		return Blob{}, err
	}
	return s.commitRemote(ctx, dst, src, &u, leaseID, cond, scope, pr, build)
}

// buildFromRemote makes the record of a copy of src received as u (next.Size is the copy's
// size, copySize).
type buildFromRemote func(src *RemoteSource, u *upload, next *blobRecord, now time.Time) error

// judgeDestination is the check of a copy's destination dst before its source is read.
func (s *Service) judgeDestination(ctx context.Context, dst Path, leaseID string, cond Conditions) func() error {
	return func() error {
		st, err := s.loadBlob(ctx, dst)
		if err != nil {
			return err
		}
		return s.checkCopyDestination(&st, leaseID, cond, s.Now())
	}
}

// blockSource tells the sources whose small copies are kept inline: those that are not Azure
// page or append blobs.
func blockSource(src *RemoteSource) bool { return src.Type == "" || src.Type == BlockBlob }

// commitRemote replaces dst with the copy of src received as u, judging the destination
// again; u's object is discarded if the commit is refused.
func (s *Service) commitRemote(ctx context.Context, dst Path, src *RemoteSource, u *upload, leaseID string, cond Conditions, scope string, pr Protection, build buildFromRemote) (Blob, error) {
	var out Blob
	err := s.update(ctx, func() ([]store.Mutation, error) {
		if err := s.fresh(u); err != nil {
			return nil, err
		}
		st, err := s.loadBlob(ctx, dst)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if err := s.checkCopyDestination(&st, leaseID, cond, now); err != nil {
			return nil, err
		}
		next := blobRecord{Size: copySize(src, u)}
		if err := build(src, u, &next, now); err != nil {
			return nil, err
		}
		holdUpload(&next, u)
		var b batch
		if err := s.replaceWith(ctx, dst, &st, &next, cond, scope, pr, now, &b); err != nil {
			return nil, err
		}
		addUploadExtent(&b, &next, u, src)
		st.b = next
		out = st.public(dst, now)
		return b.m, nil
	})
	s.discardUnless(err, u)
	return out, err
}

// holdUpload makes next, a new blob of u.Len bytes, hold u's bytes: inline for a small
// block blob, else as content of its own, whose one extent addUploadExtent writes once next
// has its ETag.
func holdUpload(next *blobRecord, u *upload) {
	if next.Type == BlockBlob && u.Obj == "" {
		next.data, next.Content, next.Pieces = u.data, "", 0
		return
	}
	next.data = nil
	if next.Content == "" {
		next.Content = randomID()
	}
	if u.Obj != "" && next.Type != PageBlob {
		next.Pieces = 1
	}
}

// addUploadExtent adds to b the extent of next's content that u's object is, or for a page
// blob of src's written ranges, one extent for each range, in the object one after the other.
func addUploadExtent(b *batch, next *blobRecord, u *upload, src *RemoteSource) {
	if u.Obj == "" {
		return
	}
	if src.Pages == nil {
		b.add(putExtent(next.Content, extent{End: u.Len, piece: u.piece}, next.ETag)...)
		return
	}
	var off int64
	for _, r := range src.Pages {
		n := r.End - r.Start + 1
		b.add(putExtent(next.Content, extent{End: r.End + 1, piece: u.piece.slice(off, n)}, next.ETag)...)
		off += n
	}
}

// remoteType is the type a copy of src with n bytes takes: the source's, when it is an Azure
// page blob (whole pages) or append blob, else a block blob.
func remoteType(src *RemoteSource, n int64) BlobType {
	if src.Pages != nil {
		return PageBlob
	}
	switch {
	case src.Type == PageBlob && n%PageSize == 0, src.Type == AppendBlob:
		return src.Type
	}
	return BlockBlob
}

// remoteProperties are the content properties a blob copied whole from src (received as u)
// takes: the source's, with Azure's default Content-Type when it sent none, and the MD5 of
// the bytes when it sent no Content-MD5, as a Put Blob of them would store.
func remoteProperties(src *RemoteSource, u *upload) ContentProperties {
	p := src.Properties
	if p.ContentType == "" {
		p.ContentType = defaultContentType
	}
	if p.ContentMD5 == nil && src.Pages == nil {
		p.ContentMD5 = u.sums.MD5
	}
	return p
}
