package blob

import (
	"context"
	"io"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// AppendBlockOptions are the conditions of Append Block and Seal.
type AppendBlockOptions struct {
	LeaseID    string
	Conditions Conditions
	// MaxSize is x-ms-blob-condition-maxsize: the blob must not grow beyond it.
	MaxSize *int64
	// AppendPosition is x-ms-blob-condition-appendpos: the blob's size must be this.
	AppendPosition *int64
	// Checksums are the body's Content-MD5 or x-ms-content-crc64.
	Checksums Checksums
}

// AppendResult is what Append Block answers: the blob after the append and the offset the
// block was written at (x-ms-blob-append-offset).
type AppendResult struct {
	Blob   Blob
	Offset int64
	Sums   Checksums
}

// AppendBlock appends size bytes of body (1 byte to 100 MiB) to an append blob. Appends to
// one blob are atomic and ordered: each is judged against the size it lands at.
func (s *Service) AppendBlock(ctx context.Context, p Path, body io.Reader, size int64, o AppendBlockOptions) (AppendResult, error) {
	if err := notSnapshot(p); err != nil {
		return AppendResult{}, err
	}
	if size <= 0 {
		return AppendResult{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. Append Block needs a body (Content-Length: %d).", size)
	}
	if size > MaxAppendBlockSize {
		return AppendResult{}, azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. Append Block takes at most %d bytes.", MaxAppendBlockSize)
	}
	if err := o.Checksums.validate(); err != nil {
		return AppendResult{}, err
	}
	u, err := s.receive(ctx, body, size, o.Checksums, false, false)
	if err != nil {
		return AppendResult{}, err
	}
	out, err := s.appendPieces(ctx, p, []piece{u.piece}, &u, &o, nil)
	s.discardUnless(err, &u)
	out.Sums = u.sums
	return out, err
}

// appendPieces appends pieces as one block; u, when not nil, is the upload they come from;
// guard, when not nil, adds the conditions on a copy source.
func (s *Service) appendPieces(ctx context.Context, p Path, pieces []piece, u *upload, o *AppendBlockOptions, guard func(*batch) error) (AppendResult, error) {
	size := piecesLen(pieces)
	var out AppendResult
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
		if err := s.checkAppend(&st, o, now); err != nil {
			return nil, err
		}
		if o.MaxSize != nil && st.b.Size+size > *o.MaxSize {
			return nil, azerr.New(azerr.MaxBlobSizeConditionNotMet)
		}
		if st.b.Blocks >= MaxAppendBlocks {
			return nil, azerr.Newf(azerr.BlockCountExceedsLimit, "The committed block count cannot exceed the maximum limit of %d blocks.", MaxAppendBlocks)
		}
		var b batch
		if guard != nil {
			if err := guard(&b); err != nil {
				return nil, err
			}
		}
		out.Offset = st.b.Size
		st.b.Lease = st.b.Lease.afterWrite(now)
		s.touchBlob(&st.b)
		for _, pc := range pieces {
			st.b.Size += pc.Len
			b.add(putExtent(st.b.Content, extent{End: st.b.Size, Index: st.b.Pieces, piece: pc}, st.b.ETag)...)
			st.b.Pieces++
		}
		st.b.Blocks++
		m, err := s.put(&st, &st.b)
		if err != nil {
			return nil, err
		}
		b.add(m...)
		out.Blob = st.public(p, now)
		return b.m, nil
	})
	return out, err
}

// checkAppend judges an append or seal against an existing blob: its kind (409
// InvalidBlobType), seal (409 BlobIsSealed), lease, conditions, then the append position
// (412 AppendPositionConditionNotMet).
func (s *Service) checkAppend(st *blobState, o *AppendBlockOptions, now time.Time) error {
	if st.b.Type != AppendBlob {
		return azerr.Newf(azerr.InvalidBlobType, "The blob type is invalid for this operation. This operation applies to append blobs; this is a %s.", st.b.Type)
	}
	if err := s.checkWriteAccess(st, o.LeaseID, o.Conditions, modify, now); err != nil {
		return err
	}
	if err := st.b.checkMutable(now); err != nil {
		return err
	}
	if st.b.Sealed {
		return azerr.New(azerr.BlobIsSealed)
	}
	if o.AppendPosition != nil && st.b.Size != *o.AppendPosition {
		return azerr.New(azerr.AppendPositionConditionNotMet)
	}
	return nil
}

// SealBlob seals an append blob: later appends fail with 409 BlobIsSealed. Sealing a sealed
// blob succeeds again.
func (s *Service) SealBlob(ctx context.Context, p Path, o AppendBlockOptions) (Blob, error) {
	if err := notSnapshot(p); err != nil {
		return Blob{}, err
	}
	var out Blob
	err := s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadExisting(ctx, p)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if st.b.Sealed && st.b.Type == AppendBlob {
			out = st.public(p, now)
			return nil, nil
		}
		if err := s.checkAppend(&st, &o, now); err != nil {
			return nil, err
		}
		st.b.Sealed = true
		st.b.Lease = st.b.Lease.afterWrite(now)
		s.touchBlob(&st.b)
		m, err := s.put(&st, &st.b)
		out = st.public(p, now)
		return m, err
	})
	return out, err
}
