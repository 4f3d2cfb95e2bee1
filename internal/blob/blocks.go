package blob

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/store"
)

// Uncommitted blocks. Put Block stages a block under its blob's staging (stagingRecord):
// Key{blocksSpace, staging id, block id} holds the block's pieces, each holding a reference
// to its object. Put Block List makes chosen blocks the blob's content and discards the
// staging whole; Put Blob and Delete Blob discard it too, and Collect does a week after the
// last Put Block.

// uncommittedBlockExpiry is how long uncommitted blocks outlive their last Put Block.
const uncommittedBlockExpiry = 7 * 24 * time.Hour

func blockKey(staging string, id []byte) store.Key {
	return store.Key{Space: blocksSpace, Partition: staging, Row: string(id)}
}

// blockHolder names the reference piece i of an uncommitted block holds.
func blockHolder(staging string, id []byte, i int) string {
	return "u" + staging + string(id) + string(binary.BigEndian.AppendUint32(nil, uint32(i)))
}

func encodeBlock(pieces []piece) []byte {
	out := binary.AppendUvarint(nil, uint64(len(pieces)))
	for _, p := range pieces {
		out = appendPiece(out, nil, p)
	}
	return out
}

func decodeBlock(rec store.Record) ([]piece, error) {
	n, k := binary.Uvarint(rec.Value)
	if k <= 0 || n > uint64(len(rec.Value)) {
		return nil, fmt.Errorf("uncommitted block %s is corrupt", rec.Key)
	}
	b := rec.Value[k:]
	pieces := make([]piece, 0, n)
	for range n {
		_, p, rest, err := decodePiece(b)
		if err != nil {
			return nil, fmt.Errorf("uncommitted block %s: %w", rec.Key, err)
		}
		pieces = append(pieces, p)
		b = rest
	}
	return pieces, nil
}

func piecesLen(pieces []piece) int64 {
	var n int64
	for _, p := range pieces {
		n += p.Len
	}
	return n
}

// validateBlockID checks a block id (decoded from base64 by the HTTP layer): 1 to 64 bytes,
// else 400 InvalidBlockId.
func validateBlockID(id []byte) error {
	if len(id) == 0 || len(id) > MaxBlockIDLength {
		return azerr.Newf(azerr.InvalidBlockID, "The specified block ID is invalid. The block ID must be Base64-encoded, and at most %d bytes before encoding; this one has %d.", MaxBlockIDLength, len(id))
	}
	return nil
}

// PutBlock stages size bytes of body as block id of blob p, replacing a staged block of the
// same id. The blob need not exist: if it does not, it then has only uncommitted blocks,
// invisible to reads and to listings without uncommitted blobs. A leased blob needs its lease
// id; Put Block takes no conditions. It returns the body's checksums.
func (s *Service) PutBlock(ctx context.Context, p Path, id []byte, body io.Reader, size int64, leaseID string, sent Checksums) (Checksums, error) {
	if err := notSnapshot(p); err != nil {
		return Checksums{}, err
	}
	if err := validateBlockID(id); err != nil {
		return Checksums{}, err
	}
	if err := sent.validate(); err != nil {
		return Checksums{}, err
	}
	if size <= 0 {
		return Checksums{}, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format. A block must not be empty (Content-Length: %d).", size)
	}
	if size > MaxBlockSize {
		return Checksums{}, azerr.Newf(azerr.RequestBodyTooLarge, "The request body is too large and exceeds the maximum permissible limit. A block holds at most %d bytes.", int64(MaxBlockSize))
	}
	if size > inlineLimit {
		// Judge what can be judged before receiving a large body.
		if _, err := s.stageBlock(ctx, p, id, nil, leaseID); err != nil {
			return Checksums{}, err
		}
	}
	u, err := s.receive(ctx, body, size, sent, false, false)
	if err != nil {
		return Checksums{}, err
	}
	err = s.update(ctx, func() ([]store.Mutation, error) {
		if err := s.fresh(&u); err != nil {
			return nil, err
		}
		return s.stageBlock(ctx, p, id, []piece{u.piece}, leaseID)
	})
	s.discardUnless(err, &u)
	return u.sums, err
}

// stageBlock returns the mutations staging pieces as block id of p, after judging the request
// against the current state. With nil pieces it only judges.
func (s *Service) stageBlock(ctx context.Context, p Path, id []byte, pieces []piece, leaseID string) ([]store.Mutation, error) {
	st, err := s.loadBlob(ctx, p)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	if st.exists() {
		if st.b.Type != BlockBlob {
			return nil, azerr.Newf(azerr.InvalidBlobType, "The blob type is invalid for this operation. Put Block applies to block blobs; this is a %s.", st.b.Type)
		}
		if err := st.b.Lease.checkAccess(now, leaseID, true, blobLease); err != nil {
			return nil, err
		}
		// AzCopy's users see Azure refuse blocks for an archived blob (azure-storage-azcopy#993:
		// "409 This operation is not permitted on an archived blob.. When Staging block").
		if st.b.archived(now) {
			return nil, azerr.New(azerr.BlobArchived)
		}
	} else if leaseID != "" {
		return nil, azerr.New(azerr.LeaseNotPresentWithBlobOperation)
	}
	sk := stagingKey(st.space, p.Name)
	srec, err := s.get(ctx, sk)
	if err != nil {
		return nil, err
	}
	staging := stagingRecord{ID: randomID(), Created: now.UnixNano()}
	if srec != nil {
		if staging, err = decodeStaging(srec); err != nil {
			return nil, err
		}
	}
	// Only the blocks waiting to be committed must share a length: after a commit, new
	// blocks may take ids of another length (azblob's recorded
	// TestBlobPutBlockListModifyBlob stages 3-byte ids on a blob committed with longer ones).
	idLen := staging.IDLen
	if idLen != 0 && idLen != len(id) {
		return nil, azerr.Newf(azerr.InvalidBlobOrBlock, "The specified blob or block content is invalid. All block ids of a blob must have the same length: this one has %d bytes, the blob's have %d.", len(id), idLen)
	}
	var old *store.Record
	if srec != nil {
		if old, err = s.get(ctx, blockKey(staging.ID, id)); err != nil {
			return nil, err
		}
	}
	if old == nil && staging.Count >= MaxUncommittedBlocks {
		return nil, azerr.Newf(azerr.BlockCountExceedsLimit, "The uncommitted block count cannot exceed the maximum limit of %d blocks.", MaxUncommittedBlocks)
	}
	if pieces == nil {
		return nil, nil
	}
	version := s.nextTicks(0)
	var b batch
	b.add(unchanged(st.key, st.rec))
	if old != nil {
		oldPieces, err := decodeBlock(*old)
		if err != nil {
			return nil, err
		}
		for i, op := range oldPieces {
			if op.Obj != "" {
				b.add(dropRef(op.Obj, blockHolder(staging.ID, id, i), version)...)
			}
		}
	} else {
		staging.Count++
	}
	if srec == nil {
		b.add(store.Mutation{Key: stagedIndexKey(st.space, p.Name), Value: []byte{}, Version: version})
	}
	staging.IDLen = len(id)
	staging.LastPut = now.UnixNano()
	value, err := jsonValue(&staging)
	if err != nil {
		return nil, err
	}
	var after int64
	if srec != nil {
		after = srec.Version
	}
	b.add(store.Mutation{Key: sk, Expect: expectRead(srec), Value: value, Version: s.nextTicks(after)})
	b.add(store.Mutation{Key: blockKey(staging.ID, id), Expect: expectRead(old), Value: encodeBlock(pieces), Version: version})
	for i, pc := range pieces {
		if pc.Obj != "" {
			b.add(putRef(pc.Obj, blockHolder(staging.ID, id, i), version))
		}
	}
	return b.m, nil
}

// BlockListKind says where Put Block List looks for a block.
type BlockListKind uint8

const (
	Latest      BlockListKind = iota // the uncommitted block, else the committed one
	Committed                        // the committed block only
	Uncommitted                      // the uncommitted block only
)

// BlockListEntry is one element of a Put Block List body, in document order.
type BlockListEntry struct {
	Kind BlockListKind
	ID   []byte
}

// CommitBlockListOptions is one Put Block List request besides its list. Properties and
// Metadata replace the blob's (ContentMD5 is stored unchecked; the content type defaults to
// application/octet-stream).
type CommitBlockListOptions struct {
	Properties ContentProperties
	Metadata   Metadata
	Tags       Tags
	Tier       string
	LeaseID    string
	Conditions Conditions
	// EncryptionScope is the scope the request names (x-ms-encryption-scope, or its SAS's
	// ses), "" for none: the container's default then applies (scopes.go).
	EncryptionScope string
	// Protection is the immutability policy and legal hold the new version takes.
	Protection Protection
}

// committedBlock is a block of a blob's committed list: its id and pieces.
type committedBlock struct {
	id     []byte
	pieces []piece
}

// PutBlockList commits a block blob: its content becomes the listed blocks in order, each
// taken from the uncommitted blocks, the committed ones, or either (Latest), and every
// uncommitted block is discarded, all in one commit. A block that is not where the list
// says is 400 InvalidBlockList; more than 50,000 entries 400 BlockListTooLong. An existing
// blob keeps its creation time, snapshots and held lease (whose id the request must carry);
// If-None-Match: * on an existing blob is 409 BlobAlreadyExists.
func (s *Service) PutBlockList(ctx context.Context, p Path, list []BlockListEntry, o CommitBlockListOptions) (Blob, error) {
	if err := notSnapshot(p); err != nil {
		return Blob{}, err
	}
	if len(list) > MaxBlockListEntries {
		return Blob{}, azerr.Newf(azerr.BlockListTooLong, "The block list may not contain more than %d blocks; this one has %d.", MaxBlockListEntries, len(list))
	}
	for _, e := range list {
		if len(e.ID) == 0 || len(e.ID) > MaxBlockIDLength {
			return Blob{}, azerr.Newf(azerr.InvalidBlockList, "The specified block list is invalid. Block ids are 1 to %d bytes; one has %d.", MaxBlockIDLength, len(e.ID))
		}
	}
	put := PutBlobOptions{Type: BlockBlob, Properties: o.Properties, Metadata: o.Metadata, Tags: o.Tags, Tier: o.Tier}
	if err := s.validatePut(p, 0, &put); err != nil {
		return Blob{}, err
	}
	var out Blob
	err := s.update(ctx, func() ([]store.Mutation, error) {
		st, err := s.loadBlob(ctx, p)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		if st.exists() && st.b.Type != BlockBlob {
			return nil, azerr.Newf(azerr.InvalidBlobType, "The blob type is invalid for this operation. Put Block List applies to block blobs; this is a %s.", st.b.Type)
		}
		if err := s.checkWriteAccess(&st, o.LeaseID, o.Conditions, create, now); err != nil {
			return nil, err
		}
		srec, staging, err := s.loadStaging(ctx, &st)
		if err != nil {
			return nil, err
		}
		if !st.exists() && srec != nil {
			// Blocks staged for a blob not committed yet make an uncommitted blob, last
			// modified by its last Put Block, which the time conditions see (azblob's
			// recorded TestBlobPutBlockListIfModifiedSince* tests).
			c := Conditions{IfModifiedSince: o.Conditions.IfModifiedSince, IfUnmodifiedSince: o.Conditions.IfUnmodifiedSince}
			if err := c.checkWrite(true, "", time.Unix(0, staging.LastPut), nil, create, azerr.ConditionNotMet); err != nil {
				return nil, err
			}
		}
		blocks, err := s.resolveBlockList(ctx, &st, staging, list)
		if err != nil {
			return nil, err
		}
		var b batch
		s.retireStaging(&st, srec, staging, &b)
		scope, err := st.scopeFor(o.EncryptionScope)
		if err != nil {
			return nil, err
		}
		next := blobRecord{
			Scope:       scope,
			Type:        BlockBlob,
			Props:       put.Properties,
			Metadata:    o.Metadata,
			Tags:        o.Tags,
			Tier:        put.Tier,
			TierChanged: tierChangedAt(put.Tier, now),
			Created:     now.UnixNano(),
			Content:     randomID(),
			Blocks:      len(blocks),
			KeySHA:      o.Conditions.customerKey(),
		}
		if err := s.keepReplaced(ctx, p, &st, &next, o.Protection, now, &b); err != nil {
			return nil, err
		}
		if st.exists() {
			next.Created = st.b.Created
			next.Lease = st.b.Lease.afterWrite(now)
			next.ETag = st.b.ETag
		}
		s.touchBlob(&next)
		for _, blk := range blocks {
			next.IDLen = len(blk.id)
			for i, pc := range blk.pieces {
				e := extent{End: next.Size + pc.Len, Index: next.Pieces, piece: pc}
				if i == 0 {
					e.Block = blk.id
				}
				b.add(putExtent(next.Content, e, next.ETag)...)
				next.Size += pc.Len
				next.Pieces++
			}
		}
		m, err := s.put(&st, &next)
		if err != nil {
			return nil, err
		}
		b.add(m...)
		st.b = next
		out = st.public(p, now)
		return b.m, nil
	})
	return out, err
}

// resolveBlockList finds the pieces of each listed block. The uncommitted blocks it reads
// (of staging, nil when there is none) stay as read as long as the staging record, on which
// retireStaging conditions the commit; the committed ones as long as the blob record.
func (s *Service) resolveBlockList(ctx context.Context, st *blobState, staging *stagingRecord, list []BlockListEntry) ([]committedBlock, error) {
	var uncommitted, committed map[string][]piece
	needCommitted := false
	for _, e := range list {
		if e.Kind != Uncommitted {
			needCommitted = true
		}
	}
	if staging != nil {
		uncommitted = make(map[string][]piece)
		err := s.store.Scan(ctx, store.PartitionRange(blocksSpace, staging.ID), func(rec store.Record) (bool, error) {
			pieces, err := decodeBlock(rec)
			uncommitted[rec.Key.Row] = pieces
			return err == nil, err
		})
		if err != nil {
			return nil, err
		}
	}
	if needCommitted && st.exists() && st.b.Blocks > 0 {
		blocks, err := s.committedBlocks(ctx, st.b.Content)
		if err != nil {
			return nil, err
		}
		committed = make(map[string][]piece, len(blocks))
		for _, blk := range blocks {
			committed[string(blk.id)] = blk.pieces
		}
	}
	out := make([]committedBlock, len(list))
	for i, e := range list {
		pieces, ok := []piece(nil), false
		if e.Kind != Committed {
			pieces, ok = uncommitted[string(e.ID)]
		}
		if !ok && e.Kind != Uncommitted {
			pieces, ok = committed[string(e.ID)]
		}
		if !ok {
			return nil, azerr.Newf(azerr.InvalidBlockList, "The specified block list is invalid. Block %x is not among the %s blocks.", e.ID, e.Kind)
		}
		out[i] = committedBlock{id: e.ID, pieces: pieces}
	}
	if len(out) > MaxCommittedBlocks {
		return nil, azerr.New(azerr.BlockCountExceedsLimit)
	}
	return out, nil
}

func (k BlockListKind) String() string {
	return [...]string{"uncommitted or committed", "committed", "uncommitted"}[k]
}

// committedBlocks returns a block blob content's committed blocks, in order.
func (s *Service) committedBlocks(ctx context.Context, content string) ([]committedBlock, error) {
	var out []committedBlock
	err := s.scanExtents(ctx, content, -1, func(e extent) (bool, error) {
		if e.Block != nil {
			out = append(out, committedBlock{id: e.Block})
		}
		if len(out) == 0 {
			return false, nil // a blob written by Put Blob: no blocks
		}
		last := &out[len(out)-1]
		last.pieces = append(last.pieces, e.piece)
		return true, nil
	})
	return out, err
}

// BlockListType is Get Block List's blocklisttype.
type BlockListType string

const (
	CommittedBlocks   BlockListType = "committed"
	UncommittedBlocks BlockListType = "uncommitted"
	AllBlocks         BlockListType = "all"
)

// Block is one entry of Get Block List.
type Block struct {
	ID   []byte
	Size int64
}

// BlockList is Get Block List's answer. Committed and Uncommitted are nil when not asked
// for. Blob is nil when the blob has only uncommitted blocks (no ETag to report).
type BlockList struct {
	Committed   []Block
	Uncommitted []Block
	Blob        *Blob
}

// GetBlockList lists a block blob's committed blocks (for a snapshot too), its uncommitted
// blocks, or both. A blob written by Put Blob has no committed blocks. 404 BlobNotFound when
// there is neither blob nor uncommitted block; 409 InvalidBlobType for other kinds. ifTags is
// x-ms-if-tags, judged on the blob's tags (none before its first commit).
func (s *Service) GetBlockList(ctx context.Context, p Path, which BlockListType, leaseID, ifTags string) (BlockList, error) {
	switch which {
	case CommittedBlocks, UncommittedBlocks, AllBlocks:
	default:
		return BlockList{}, azerr.Newf(azerr.InvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid. blocklisttype %q is not committed, uncommitted or all.", which)
	}
	st, err := s.loadBlob(ctx, p)
	if err != nil {
		return BlockList{}, err
	}
	now := s.Now()
	var staging *stagingRecord
	if p.Snapshot == "" && p.VersionID == "" {
		if _, staging, err = s.loadStaging(ctx, &st); err != nil {
			return BlockList{}, err
		}
	}
	if !st.exists() && staging == nil {
		return BlockList{}, azerr.New(azerr.BlobNotFound)
	}
	var out BlockList
	if st.exists() {
		if st.b.Type != BlockBlob {
			return BlockList{}, azerr.Newf(azerr.InvalidBlobType, "The blob type is invalid for this operation. Get Block List applies to block blobs; this is a %s.", st.b.Type)
		}
		if err := checkReadAccess(&st, leaseID, Conditions{IfTags: ifTags}, now); err != nil {
			return BlockList{}, err
		}
		b := st.public(p, now)
		out.Blob = &b
	} else if leaseID != "" {
		return BlockList{}, azerr.New(azerr.LeaseNotPresentWithBlobOperation)
	} else if err := (Conditions{IfTags: ifTags}).checkTags(nil); err != nil {
		return BlockList{}, err
	}
	if which != UncommittedBlocks {
		out.Committed = []Block{}
		if st.exists() && st.b.Blocks > 0 {
			blocks, err := s.committedBlocks(ctx, st.b.Content)
			if err != nil {
				return BlockList{}, err
			}
			for _, blk := range blocks {
				out.Committed = append(out.Committed, Block{ID: blk.id, Size: piecesLen(blk.pieces)})
			}
		}
	}
	if which != CommittedBlocks {
		out.Uncommitted = []Block{}
		if staging != nil {
			err := s.store.Scan(ctx, store.PartitionRange(blocksSpace, staging.ID), func(rec store.Record) (bool, error) {
				pieces, err := decodeBlock(rec)
				out.Uncommitted = append(out.Uncommitted, Block{ID: []byte(rec.Key.Row), Size: piecesLen(pieces)})
				return err == nil, err
			})
			if err != nil {
				return BlockList{}, err
			}
		}
	}
	return out, nil
}
