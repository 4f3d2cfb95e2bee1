package store

import (
	"context"
	"io"
	"time"
)

// Objects keeps large immutable byte sequences — the blocks, pages and appended chunks of
// blobs — beside the records, for values too large to travel through Commit. An object is
// written once, read by range any number of times, and deleted once nothing refers to it. The
// store does not know who refers to an object: the service keeps references in records and
// decides when to delete. Every backend implements Objects; the suite in store/storetest
// covers it.
//
// Durability is the records' promise: an object is durable when PutObject returns nil, and a
// deletion when DeleteObjects returns nil. All methods are safe for concurrent use. A backend's
// Store implements Objects too; once its Close has begun, every method returns ErrClosed, and
// readers returned earlier may fail with an error.
type Objects interface {
	// PutObject stores the bytes r yields until io.EOF as a new object and returns its id,
	// chosen by the store and never reused (an ASCII string of at most 64 bytes), and its
	// size. Memory use is bounded whatever the
	// size. If r fails or ctx ends first, the error is returned and no object is visible to
	// ReadObject; what the attempt wrote may remain until ScanObjects reports it.
	PutObject(ctx context.Context, r io.Reader) (id string, size int64, err error)

	// ReadObject returns a reader of the n bytes of object id starting at off, which must lie
	// within the object (off ≥ 0, n ≥ 0, off+n ≤ size; otherwise ReadObject returns an error
	// other than ErrNotFound). It returns ErrNotFound when there is no such object, including
	// for an id the store never returned. The reader must be closed; reading an object deleted
	// after ReadObject returned may fail with an error but never yields other bytes.
	ReadObject(ctx context.Context, id string, off, n int64) (io.ReadCloser, error)

	// DeleteObjects removes the objects; ids that do not exist are ignored.
	DeleteObjects(ctx context.Context, ids []string) error

	// ScanObjects calls fn with the id and size of every object whose writing began before
	// before, in no particular order, until fn returns false or an error (which ScanObjects
	// returns). It lets a sweeper find objects that a crash left unreferenced. Besides objects,
	// it reports what failed PutObject calls left and what PutObject calls in progress have
	// stored so far — what a crash at that moment would leave — with the bytes stored as
	// size; such ids are never readable, and DeleteObjects removes them. A sweeper must
	// therefore pass a before old enough that no PutObject begun earlier is still running or
	// has a caller yet to record its id.
	ScanObjects(ctx context.Context, before time.Time, fn func(id string, size int64) (more bool, err error)) error
}

// Backend is a store that keeps both records and objects: what every service needs of its
// storage. Every backend is one.
type Backend interface {
	Store
	Objects
}
