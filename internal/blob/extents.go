package blob

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tabula-dev/tabula/internal/store"
)

// A blob's bytes, unless they are few enough to live in its record (inlineLimit), are a
// content: an ordered set of extents, each a piece of bytes placed at an offset. A content
// belongs to exactly one blob record (a blob or a snapshot); snapshots and copies get their
// own content whose pieces refer to the same objects. Block blobs' contents never change once
// committed; append blobs' grow at the end; page blobs' are rewritten in place.
//
// An extent is the record Key{extentsSpace, content id, row}, where row is the extent's end
// offset (8 bytes big-endian) and an index (4 bytes big-endian) that orders extents ending at
// the same offset (empty blocks). Keying by end lets a read find the extent holding offset a
// with one scan from end a+1.

// piece is a run of Len bytes: bytes Off to Off+Len of object Obj, or zeros when Obj is
// empty. Extents never hold bytes themselves, so that a commit of a block list, a snapshot or
// a copy carries references only, whatever the size of the blob.
type piece struct {
	Len int64
	Obj string
	Off int64
}

func (p piece) slice(from, n int64) piece {
	if p.Obj == "" {
		return piece{Len: n}
	}
	return piece{Len: n, Obj: p.Obj, Off: p.Off + from}
}

// extent is a piece placed in a content. For block blobs, Block is the id of the block the
// piece starts (nil for the pieces continuing a block, and for blobs written by Put Blob,
// which have no committed blocks).
type extent struct {
	End   int64
	Index uint32
	Block []byte
	piece
}

func (e extent) start() int64 { return e.End - e.Len }

func extentRow(end int64, index uint32) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(end))
	binary.BigEndian.PutUint32(b[8:], index)
	return string(b[:])
}

func extentKey(content string, end int64, index uint32) store.Key {
	return store.Key{Space: extentsSpace, Partition: content, Row: extentRow(end, index)}
}

func (e extent) key(content string) store.Key { return extentKey(content, e.End, e.Index) }

// holder names the reference an extent holds on its object (refs.go).
func (e extent) holder(content string) string { return "x" + content + extentRow(e.End, e.Index) }

// Piece encoding, shared by extents and uncommitted blocks:
//
//	kind byte (pieceZeros or pieceObject; | pieceBlockStart with a block id)
//	[uvarint len(block id), block id]   when pieceBlockStart
//	uvarint Len
//	[uvarint len(Obj), Obj, uvarint Off] when pieceObject
const (
	pieceZeros      = 0
	pieceObject     = 2
	pieceBlockStart = 0x80
)

var errCorruptPiece = errors.New("blob: corrupt piece encoding")

func appendPiece(dst []byte, block []byte, p piece) []byte {
	kind := byte(pieceZeros)
	if p.Obj != "" {
		kind = pieceObject
	}
	if block != nil {
		kind |= pieceBlockStart
	}
	dst = append(dst, kind)
	if block != nil {
		dst = binary.AppendUvarint(dst, uint64(len(block)))
		dst = append(dst, block...)
	}
	dst = binary.AppendUvarint(dst, uint64(p.Len))
	if p.Obj != "" {
		dst = binary.AppendUvarint(dst, uint64(len(p.Obj)))
		dst = append(dst, p.Obj...)
		dst = binary.AppendUvarint(dst, uint64(p.Off))
	}
	return dst
}

// decodePiece reads one piece from b, copying what it keeps, and returns the rest of b.
func decodePiece(b []byte) (block []byte, p piece, rest []byte, err error) {
	if len(b) == 0 {
		return nil, p, nil, errCorruptPiece
	}
	kind := b[0]
	b = b[1:]
	uvarint := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			err = errCorruptPiece
			return 0
		}
		b = b[n:]
		return v
	}
	take := func(n uint64) []byte {
		if err != nil || n > uint64(len(b)) {
			err = errCorruptPiece
			return nil
		}
		out := append([]byte{}, b[:n]...)
		b = b[n:]
		return out
	}
	if kind&pieceBlockStart != 0 {
		block = take(uvarint())
	}
	p.Len = int64(uvarint())
	switch kind &^ pieceBlockStart {
	case pieceZeros:
	case pieceObject:
		if p.Obj = string(take(uvarint())); p.Obj == "" {
			err = errCorruptPiece
		}
		p.Off = int64(uvarint())
	default:
		err = errCorruptPiece
	}
	return block, p, b, err
}

func decodeExtent(rec store.Record) (extent, error) {
	if len(rec.Key.Row) != 12 {
		return extent{}, fmt.Errorf("extent %s has a corrupt key", rec.Key)
	}
	block, p, rest, err := decodePiece(rec.Value)
	if err == nil && len(rest) != 0 {
		err = errCorruptPiece
	}
	if err != nil {
		return extent{}, fmt.Errorf("extent %s: %w", rec.Key, err)
	}
	row := []byte(rec.Key.Row)
	return extent{
		End:   int64(binary.BigEndian.Uint64(row[:8])),
		Index: binary.BigEndian.Uint32(row[8:]),
		Block: block,
		piece: p,
	}, nil
}

// scanExtents calls fn for the extents of content ending after from, in order, until fn
// returns false or an error.
func (s *Service) scanExtents(ctx context.Context, content string, from int64, fn func(extent) (bool, error)) error {
	r := store.PartitionRange(extentsSpace, content)
	r.Start.Row = extentRow(from+1, 0)
	return s.store.Scan(ctx, r, func(rec store.Record) (bool, error) {
		e, err := decodeExtent(rec)
		if err != nil {
			return false, err
		}
		return fn(e)
	})
}

// allExtents returns every extent of content, in order.
func (s *Service) allExtents(ctx context.Context, content string) ([]extent, error) {
	var out []extent
	err := s.scanExtents(ctx, content, -1, func(e extent) (bool, error) {
		out = append(out, e)
		return true, nil
	})
	return out, err
}

// putExtent returns the mutations adding e to content: the extent and, for an object piece,
// its reference.
func putExtent(content string, e extent, version int64) []store.Mutation {
	m := []store.Mutation{{Key: e.key(content), Value: appendPiece(nil, e.Block, e.piece), Version: version}}
	if e.Obj != "" {
		m = append(m, putRef(e.Obj, e.holder(content), version))
	}
	return m
}

// deleteExtent returns the mutations removing e from content: the extent and, for an object
// piece, its reference, the object then becoming garbage if nothing else refers to it.
func deleteExtent(content string, e extent, version int64) []store.Mutation {
	m := []store.Mutation{{Key: e.key(content), Delete: true}}
	if e.Obj != "" {
		m = append(m, dropRef(e.Obj, e.holder(content), version)...)
	}
	return m
}
