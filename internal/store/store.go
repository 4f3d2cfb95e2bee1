// Package store defines the ordered key-value contract every Tabula storage backend implements.
//
// The Table service is written against this contract alone. It is deliberately small: point
// reads, ordered range scans, and atomic conditional commits. Backends: store/pebble (the
// embedded default) and store/postgres (PostgreSQL, shared by several front-ends). Every
// backend must pass the suite in store/storetest.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Key addresses one record. Keys are ordered lexicographically by (Space, Partition, Row),
// each component compared bytewise, so that every partition of a space is one contiguous range
// and a space is one contiguous range of partitions.
//
// Space is an opaque keyspace name chosen by the service (one per Azure table, plus a few
// system spaces); Partition and Row carry the Azure PartitionKey and RowKey. Components may be
// empty and may hold any bytes.
type Key struct {
	Space     string
	Partition string
	Row       string
}

// Compare orders keys as the store does: -1, 0 or +1.
func (k Key) Compare(o Key) int {
	if c := strings.Compare(k.Space, o.Space); c != 0 {
		return c
	}
	if c := strings.Compare(k.Partition, o.Partition); c != 0 {
		return c
	}
	return strings.Compare(k.Row, o.Row)
}

func (k Key) String() string { return fmt.Sprintf("%q/%q/%q", k.Space, k.Partition, k.Row) }

// Record is a stored value with its version. Version is chosen by the writer (the service uses
// the entity Timestamp in ticks) and is what conditional commits compare; the store never
// invents or changes it.
type Record struct {
	Key     Key
	Version int64
	Value   []byte
}

// Range is the half-open interval [Start, End) of keys within one Space. A zero Start.Partition
// and Start.Row mean "from the beginning of the space"; Unbounded End means "to the end of the
// space". Start and End must have the same Space as the range.
type Range struct {
	Space        string
	Start        Key
	End          Key
	EndUnbounded bool
	// Limit, when positive, says the caller expects to stop after about that many records:
	// a backend that reads ahead in pages (over a network) reads no more than Limit in its
	// first. It is only a hint: Scan still yields every record of the range while fn asks
	// for more.
	Limit int
}

// SpaceRange is the range covering all of space.
func SpaceRange(space string) Range {
	return Range{Space: space, Start: Key{Space: space}, EndUnbounded: true}
}

// PartitionRange is the range covering exactly one partition of space.
func PartitionRange(space, partition string) Range {
	return Range{
		Space: space,
		Start: Key{Space: space, Partition: partition},
		// The smallest key greater than every (partition, row) is (partition+"\x00", "").
		End: Key{Space: space, Partition: partition + "\x00"},
	}
}

// Contains reports whether k lies inside r.
func (r Range) Contains(k Key) bool {
	if k.Space != r.Space || k.Compare(r.Start) < 0 {
		return false
	}
	return r.EndUnbounded || k.Compare(r.End) < 0
}

// Expect is the condition a Mutation places on the current record at its key. The zero value
// places no condition.
type Expect struct {
	Kind    ExpectKind
	Version int64 // for ExpectVersion
}

// ExpectKind selects what an Expect requires.
type ExpectKind uint8

const (
	ExpectAnything ExpectKind = iota // no condition
	ExpectAbsent                     // no record at the key
	ExpectPresent                    // some record at the key, any version
	ExpectVersion                    // a record at the key whose Version equals Expect.Version
)

// Holds reports whether e holds for the record at its key: present tells whether there is
// one, version is its Version (ignored when absent).
func (e Expect) Holds(present bool, version int64) bool {
	switch e.Kind {
	case ExpectAbsent:
		return !present
	case ExpectPresent:
		return present
	case ExpectVersion:
		return present && version == e.Version
	}
	return true
}

// Mutation writes or deletes the record at Key, provided Expect holds.
type Mutation struct {
	Key    Key
	Expect Expect
	Delete bool   // remove the record (a delete of an absent key is a no-op if Expect allows it)
	Value  []byte // the new value when !Delete
	// Version is the new record's version when !Delete.
	Version int64
}

// ErrNotFound is returned by Get when no record exists at the key.
var ErrNotFound = errors.New("store: record not found")

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("store: closed")

// ErrUnavailable is wrapped by errors meaning the backing storage cannot be reached right now
// (a database server down or unreachable). Nothing was applied; the caller may retry later.
// The service reports it to clients as 503 ServerBusy, which every SDK retries.
var ErrUnavailable = errors.New("store: unavailable")

// ErrFull is wrapped by errors of a Commit refused because the backing storage is (nearly)
// full. Nothing was applied. A backend refuses only commits that add data; commits that delete
// at least as many records as they write, and DeleteSpace, are still accepted, so that space
// can be freed through the service. Retrying succeeds once space has been freed. The service
// reports it as 503 ServerBusy.
var ErrFull = errors.New("store: storage full")

// ErrInDoubt is wrapped by errors of a Commit or DeleteSpace whose outcome is unknown: it may
// have been applied or not (a connection lost after COMMIT was sent, a write that did not
// finish in time). A later read tells. The service reports it as 500 OperationTimedOut, Azure's
// answer for an operation that "may or may not have succeeded".
var ErrInDoubt = errors.New("store: outcome unknown")

// ErrRefused is wrapped by errors meaning the backing storage refused the call for a reason
// that retrying cannot change (a limit of the database that the request exceeds, a schema or
// permission the database lacks). Nothing was applied. The service reports it as a client
// error (400), which SDKs do not retry, rather than as a 5xx they would retry in vain.
var ErrRefused = errors.New("store: refused")

// ConditionFailedError reports that a Commit applied nothing because the Expect of
// mutations[Index] did not hold; when several fail, Index is the lowest (Azure reports the
// first failing operation of a batch). Found tells what was there: nil if the key was absent.
type ConditionFailedError struct {
	Index int
	Found *Record
}

func (e *ConditionFailedError) Error() string {
	if e.Found == nil {
		return fmt.Sprintf("store: condition of mutation %d failed: key absent", e.Index)
	}
	return fmt.Sprintf("store: condition of mutation %d failed: found version %d", e.Index, e.Found.Version)
}

// Exclusive is implemented by a store that only one process can have open at a time
// (store/pebble locks its directory). Every change to its records then goes through that
// process, so what the process read stays true until it changes it itself: the service may
// keep records in memory.
type Exclusive interface {
	Store
	// ExclusiveToProcess only marks the store; it does nothing.
	ExclusiveToProcess()
}

// Writable is implemented by a store that can lose the ability to write while it still
// serves reads (store/pebble, once its disk has failed: it refuses writes until restarted).
type Writable interface {
	// CanWrite returns nil while commits may succeed, else why every commit will fail.
	CanWrite() error
}

// Store is the ordered key-value contract.
//
// Consistency: every method sees all commits that returned before it was called (linearizable
// single-key reads; a Scan reads one consistent snapshot). A reader may observe a commit shortly
// before that commit is durable (Pebble publishes before its WAL sync); a commit that depends
// on what it read is ordered after it, so a crash can never keep the dependent commit while
// losing the earlier one. Durability: once Commit returns nil the mutations survive a process
// crash or power loss (unless the store was opened in memory).
//
// All methods are safe for concurrent use. Byte slices returned by Get and in errors belong
// to the caller (Scan lends its values, see there), and no method retains the slices passed
// to it. Errors caused by the backing storage being unreachable wrap ErrUnavailable; by it
// being full, ErrFull; by a write whose outcome is unknown, ErrInDoubt; by a request it cannot
// store, ErrRefused.
type Store interface {
	// Get returns the record at key, or ErrNotFound.
	Get(ctx context.Context, key Key) (Record, error)

	// Scan calls fn for each record in r in ascending key order, from one snapshot taken when
	// Scan is called, until the range is exhausted, fn returns false, fn returns an error (which
	// Scan returns), or ctx is done (ctx.Err() is returned). fn may keep the record's Key and
	// Version, but its Value is only lent: valid until fn returns and never to be modified
	// (a backend may pass a view of its own buffers, so that a scan that keeps few of the
	// records it reads copies nothing). fn may call Get, Scan and Commit (but not Close).
	Scan(ctx context.Context, r Range, fn func(Record) (more bool, err error)) error

	// Commit applies mutations atomically: either every Expect holds against the current state
	// and all mutations are applied and durable, or none is applied and the error says why
	// (*ConditionFailedError for a failed Expect). Two mutations in one Commit must not share a
	// key. Conditions are checked and applied as one step: no other commit can interleave.
	// An empty Commit succeeds and does nothing.
	Commit(ctx context.Context, mutations []Mutation) error

	// DeleteSpace removes every record in space. It is atomic with respect to readers (they
	// see the space either whole or empty) and durable when it returns. The service calls it
	// only for spaces no longer reachable (a deleted table), so it may be slow on large spaces.
	DeleteSpace(ctx context.Context, space string) error

	// Close releases resources after in-flight calls have returned. Durable data remains.
	// A backend may bound how long it waits (store/pebble does, so that a failed or stalled
	// disk cannot hold up a shutdown): it then returns an error and may leave resources
	// behind (the process is expected to exit), never losing an acknowledged write.
	Close() error
}
