// Package blob is the Blob service itself — containers, block, append and page blobs,
// leases, snapshots, copies, conditions and listings — written against the store contracts
// and free of HTTP. The HTTP layer decodes requests into calls on Service and encodes what
// it returns; every failure a client should see is an *azerr.Error.
//
// # Storage layout
//
// Records (store.Store) hold everything but large bytes; objects (store.Objects) hold those.
// The spaces, all prefixed so that they never meet the Table service's:
//
//	\x00blobcontainers  partition account, row container name: the container record
//	\x00blobcontainersdeleted
//	                    partition account, row container name + "!" + version: a
//	                    soft-deleted container (containersoftdelete.go)
//	b/<acct>/<container>/<random>
//	                    one space per container incarnation, partition blob name, rows:
//	                    rowSnapshot+timestamp (snapshots, oldest first), rowVersion+version
//	                    id (previous versions, oldest first), rowBase (the blob), rowStaging
//	                    (its uncommitted blocks' header), in that order
//	\x00blobextents     partition content id, row end offset + index: one piece of a blob's
//	                    bytes (extents.go)
//	\x00blobblocks      partition staging id, row block id: an uncommitted block
//	\x00blobrefs        partition object id, row holder: one reference to an object
//	\x00blobgarbage     row object id: an object that lost a reference (version: when)
//	\x00blobdead        row content or staging id: pieces no blob reaches any more
//	\x00blobstaged      row space + blob name: blobs with uncommitted blocks (for expiry)
//	\x00blobdeleted     row space: a deleted container whose blobs are still to be reclaimed,
//	                    version when; a soft-deleted container's value names its record
//	\x00blobsoftdeleted row expiry + space + blob name + row: a soft-deleted blob or snapshot,
//	                    due for removal at expiry (softdelete.go)
//	\x00blobtags        partition account, row tag key + value + container + blob name +
//	                    space: the tag index, value the blob's tags (tagindex.go)
//
// Every change is one store Commit conditioned on the versions of the records it read
// (update), so several front-ends over one shared store see one namespace, leases included.
// References to objects are records written in the same commits as what holds them; an
// object is deleted only after its last reference has been gone for Grace (gc.go).
package blob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/serviceprops"
	"github.com/tabula-dev/tabula/internal/store"
)

const (
	containersSpace = "\x00blobcontainers"
	// deletedContainersSpace holds soft-deleted containers (containersoftdelete.go).
	deletedContainersSpace = "\x00blobcontainersdeleted"
	extentsSpace           = "\x00blobextents"
	blocksSpace            = "\x00blobblocks"
	refsSpace              = "\x00blobrefs"
	garbageSpace           = "\x00blobgarbage"
	deadSpace              = "\x00blobdead"
	stagedSpace            = "\x00blobstaged"
	deletedSpace           = "\x00blobdeleted"
	softDeletedSpace       = "\x00blobsoftdeleted"
	tagIndexSpace          = "\x00blobtags"
)

// Rows of a blob's partition in its container's space. Snapshots sort before the blob, as
// List Blobs returns them.
const (
	rowSnapshot = "\x01" // + snapshot timestamp
	rowBase     = "\x02"
	rowStaging  = "\x03"
)

// Service serves every account Tabula hosts from one store and its objects. Several
// Services (front-ends) may share a store: nothing they rely on is kept in memory.
type Service struct {
	store   store.Store
	objects store.Objects
	props   *serviceprops.Store

	// Now is the clock of every time-driven rule (lease expiry and breaks, reclamation,
	// uncommitted block expiry). Tests replace it; it must not go backwards by much.
	Now func() time.Time

	// Grace is how long bytes stay readable after the last blob reaching them was
	// overwritten or deleted, so that a download in progress never loses them, and how long
	// a deleted container's space waits before it is reclaimed, so that a write that read
	// the container just before it was deleted has landed. It should exceed the time any
	// request takes.
	Grace time.Duration

	// OrphanGrace is how old an object must be before SweepOrphans may delete it for want of
	// references; an upload older than half of it is refused rather than referenced.
	OrphanGrace time.Duration

	// RehydrateAfter is how long a blob moved out of the Archive tier stays there, being
	// rehydrated (Azure takes up to 15 hours, or 1 with High priority).
	RehydrateAfter time.Duration

	// Versioning tells the accounts whose blobs keep previous versions (versions.go); nil
	// for none. Every front-end over one store must be given the same.
	Versioning func(account string) bool

	// Immutable tells the containers with immutable storage with versioning, whose blob
	// versions take immutability policies and legal holds (immutability.go); nil for none.
	// Their accounts must keep versions.
	Immutable func(account, container string) bool

	// Premium tells the premium accounts, whose page blobs have disk tiers (premium.go); nil
	// for none.
	Premium func(account string) bool

	// ContainerRetention is the number of days an account keeps its deleted containers,
	// restorable (containersoftdelete.go); nil or 0 for none.
	ContainerRetention func(account string) int

	// CopyWait is how long Copy Blob waits for the bytes of a source on another server before
	// it answers pending and goes on copying after the answer (pending.go).
	CopyWait time.Duration

	// CopyEnded, when not nil, hears of each pending copy this process ended, success or
	// failed (the request that started it was answered long before): for the server's log.
	CopyEnded func(CopyEnd)

	// copies are the pending copies this process is doing.
	copies copyJobs

	// lastTicks makes the versions and ETags this process hands out strictly increasing.
	lastTicks atomic.Int64

	// containers caches containers' spaces over an exclusive store; nil otherwise.
	containers *containerCache
	// exclusive says no other process can have the store open (store.Exclusive).
	exclusive bool

	// retentions caches each account's DeleteRetentionPolicy (softdelete.go).
	retentions sync.Map // account → cachedRetention
}

// DefaultRehydrateAfter is RehydrateAfter unless the server says otherwise: long enough for an
// application to see a rehydration pending, short enough not to stall a test run.
const DefaultRehydrateAfter = 10 * time.Second

// New returns a Service over st, keeping large bytes in objects (a backend's Store is both).
func New(st store.Store, objects store.Objects) *Service {
	s := &Service{
		store:          st,
		objects:        objects,
		props:          serviceprops.NewStore(st, auth.Blob),
		Now:            time.Now,
		Grace:          10 * time.Minute,
		OrphanGrace:    24 * time.Hour,
		RehydrateAfter: DefaultRehydrateAfter,
		CopyWait:       DefaultCopyWait,
	}
	if _, exclusive := st.(store.Exclusive); exclusive {
		s.containers, s.exclusive = newContainerCache(), true
	}
	return s
}

// ticksAtUnixEpoch is 1970-01-01 in .NET ticks (100 ns since 0001-01-01): Azure's ETags are
// such ticks in hexadecimal, and versions use the same scale.
const ticksAtUnixEpoch = 621355968000000000

func ticksOf(t time.Time) int64 { return t.UnixNano()/100 + ticksAtUnixEpoch }

func timeOfTicks(ticks int64) time.Time { return time.Unix(0, (ticks-ticksAtUnixEpoch)*100).UTC() }

// nextTicks returns a tick count later than every one this process handed out before and
// later than after, at or after the clock's.
func (s *Service) nextTicks(after int64) int64 {
	for {
		last := s.lastTicks.Load()
		next := ticksOf(s.Now())
		if next <= last {
			next = last + 1
		}
		if next <= after {
			next = after + 1
		}
		if s.lastTicks.CompareAndSwap(last, next) {
			return next
		}
	}
}

// maxCommitAttempts bounds the retries of a change whose reads were overtaken by another
// writer. Each attempt reads and judges again, so only pathological contention exhausts it.
const maxCommitAttempts = 64

// update applies one change: attempt reads what the change depends on, judges the request
// against it and returns the mutations applying it, each conditioned on what was read. If
// another writer changed any of it in between, the commit fails and attempt runs again on the
// new state, so a request is always judged against the state its commit applies to.
func (s *Service) update(ctx context.Context, attempt func() ([]store.Mutation, error)) error {
	for range maxCommitAttempts {
		mutations, err := attempt()
		if err != nil {
			return err
		}
		err = s.commit(ctx, mutations)
		var cf *store.ConditionFailedError
		if errors.As(err, &cf) {
			continue
		}
		return err
	}
	return azerr.Newf(azerr.ServerBusy, "The resource is being written by too many clients at once. Please retry your request.")
}

// get returns the record at k, or nil when there is none.
func (s *Service) get(ctx context.Context, k store.Key) (*store.Record, error) {
	rec, err := s.store.Get(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// expectRead conditions a mutation on the record read at its key: still that version, or
// still absent when rec is nil.
func expectRead(rec *store.Record) store.Expect {
	if rec == nil {
		return store.Expect{Kind: store.ExpectAbsent}
	}
	return store.Expect{Kind: store.ExpectVersion, Version: rec.Version}
}

// unchanged is a mutation that leaves the record at k as it was read (rec, nil when absent):
// a commit including it applies only if nothing changed that record since (the store has no
// check-only mutations, so a present record is rewritten as it is).
func unchanged(k store.Key, rec *store.Record) store.Mutation {
	if rec == nil {
		return store.Mutation{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Delete: true}
	}
	return store.Mutation{Key: k, Expect: expectRead(rec), Value: rec.Value, Version: rec.Version}
}

// jsonValue encodes a record value.
func jsonValue(v any) ([]byte, error) { return json.Marshal(v) }

// randomID returns 32 random hex digits: content, staging and space ids.
func randomID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand documentation)
	return hex.EncodeToString(b[:])
}

// ServiceProperties returns the account's Blob service settings (Get Blob Service
// Properties), the defaults when never set.
func (s *Service) ServiceProperties(ctx context.Context, account string) (serviceprops.Properties, error) {
	return s.props.Get(ctx, account)
}

// SetServiceProperties replaces the account's Blob service settings with what update makes
// of the current ones (Azure keeps what a request omits).
func (s *Service) SetServiceProperties(ctx context.Context, account string, update func(*serviceprops.Properties)) error {
	defer s.retentions.Delete(account)
	return s.props.Update(ctx, account, func(p *serviceprops.Properties) error {
		update(p)
		return nil
	})
}
