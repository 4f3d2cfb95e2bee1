package table

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tabula-dev/tabula/internal/metrics"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/store"
)

// WriteKind names the entity write operations of the Table service.
type WriteKind uint8

const (
	Insert          WriteKind = iota + 1 // Insert Entity: fails if the entity exists
	Replace                              // Update Entity: the entity must exist; properties replaced
	Merge                                // Merge Entity: the entity must exist; properties merged
	InsertOrReplace                      // Insert Or Replace Entity
	InsertOrMerge                        // Insert Or Merge Entity
	Delete                               // Delete Entity: the entity must exist
)

func (k WriteKind) String() string {
	return [...]string{"", "Insert", "Replace", "Merge", "InsertOrReplace", "InsertOrMerge", "Delete"}[k]
}

// Write is one entity write. Entity carries the keys and, except for Delete, the properties.
// IfMatch is the precondition of Replace, Merge and Delete.
type Write struct {
	Kind    WriteKind
	Entity  edm.Entity
	IfMatch ETagCondition
}

// ETagCondition is an If-Match value: * (Any), one entity version (Timestamp), or an ETag this
// service never issued (Unmatched), which no entity satisfies.
type ETagCondition struct {
	Any       bool
	Unmatched bool
	Timestamp edm.Ticks
}

// Holds reports whether the condition accepts an entity whose version is v.
func (c ETagCondition) Holds(v int64) bool {
	return c.Any || !c.Unmatched && int64(c.Timestamp) == v
}

// ParseIfMatch reads an If-Match header value: "*" or one entity tag, weak (W/"...") or strong
// ("..."). A tag as this service issues them, W/"datetime'...'" (colons percent-encoded or not,
// since some clients unescape it), names an entity version. Any other well-formed tag — W/"wrong",
// "abc", W/"" — is a version no entity has: the write then fails 412 (Azure and the old storage
// emulator answer so, Azure/Azurite#1229), not 400: ConditionNotMet, where a datetime tag
// that is not the entity's is UpdateConditionNotSatisfied. Only a value that
// is not one entity tag at all — a bare token like MalformedETag, a list, stray characters — is
// 400 InvalidInput, with the text the storage emulator gives (Azure/Azurite#1829).
func ParseIfMatch(v string) (ETagCondition, error) {
	v = strings.TrimSpace(v)
	if v == "*" {
		return ETagCondition{Any: true}, nil
	}
	inner, ok := entityTagValue(v)
	if !ok {
		return ETagCondition{}, azerr.Newf(azerr.InvalidInput, "The etag value '%s' specified in one of the request headers is not valid. Please make sure only one etag value is specified and is valid.", v)
	}
	if stamp, ok := strings.CutPrefix(inner, "datetime'"); ok {
		if stamp, ok = strings.CutSuffix(stamp, "'"); ok {
			stamp = strings.ReplaceAll(strings.ReplaceAll(stamp, "%3A", ":"), "%3a", ":")
			if ts, err := edm.ParseDateTime(stamp); err == nil {
				return ETagCondition{Timestamp: ts}, nil
			}
		}
	}
	return ETagCondition{Unmatched: true}, nil
}

// entityTagValue reads one RFC 9110 entity-tag, [W/]"etagc*", and returns what is between its
// quotes. etagc is any visible ASCII character but the quote, or any non-ASCII byte.
func entityTagValue(v string) (string, bool) {
	v = strings.TrimPrefix(v, "W/")
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	for i := 0; i < len(inner); i++ {
		if c := inner[i]; c == '"' || c < 0x21 || c == 0x7F {
			return "", false
		}
	}
	return inner, true
}

// OperationError is the failure of one operation of an entity group transaction: Index is its
// zero-based position, reported to clients as the "Index:" prefix of the message.
type OperationError struct {
	Index int
	Err   *azerr.Error
}

func (e *OperationError) Error() string { return fmt.Sprintf("operation %d: %v", e.Index, e.Err) }

// MaxBatchOperations is Azure's limit of operations in one entity group transaction.
const MaxBatchOperations = 100

// maxCommitAttempts bounds the retries of a write whose optimistic read was overtaken by a
// concurrent writer. Each retry re-reads and re-checks the client's own conditions, so only
// pathological contention exhausts it.
const maxCommitAttempts = 64

// Write performs one entity write and returns the entity as stored (for Delete, the keys only).
func (s *Service) Write(ctx context.Context, t Table, w Write) (edm.Entity, error) {
	out, err := s.ExecuteBatch(ctx, t, []Write{w})
	var oe *OperationError
	if errors.As(err, &oe) {
		return edm.Entity{}, oe.Err
	}
	if err != nil {
		return edm.Entity{}, err
	}
	return out[0], nil
}

// ValidateBatch applies the entity-group-transaction rules that need no stored data: 1 to 100
// operations, one PartitionKey, each entity at most once. It is called by ExecuteBatch; the
// HTTP layer may call it earlier to reject a batch before decoding every operation.
func ValidateBatch(writes []Write) error {
	if len(writes) == 0 {
		return azerr.Newf(azerr.InvalidInput, "The batch request contains no operations.")
	}
	if len(writes) > MaxBatchOperations {
		return &OperationError{Index: 0, Err: azerr.Newf(azerr.InvalidInput, "The batch request operation exceeds the maximum %d changes per change set.", MaxBatchOperations)}
	}
	if len(writes) == 1 {
		return nil
	}
	seen := make(map[string]struct{}, len(writes))
	pk := writes[0].Entity.PartitionKey
	for i, w := range writes {
		if w.Entity.PartitionKey != pk {
			return &OperationError{Index: i, Err: azerr.New(azerr.CommandsInBatchActOnDifferentPartitions)}
		}
		if _, dup := seen[w.Entity.RowKey]; dup {
			return &OperationError{Index: i, Err: azerr.New(azerr.InvalidDuplicateRow)}
		}
		seen[w.Entity.RowKey] = struct{}{}
	}
	return nil
}

// ExecuteBatch applies writes to one partition of t atomically: all of them or none. It returns
// the entities as stored, in order. A failing operation is reported as *OperationError; the
// remaining errors are infrastructure failures.
//
// Concurrency is optimistic: the current entities are read, the new ones computed and the
// commit is conditioned on the versions read. If another writer got in between, everything is
// re-read and re-checked, so the client's own If-Match conditions are always judged against
// the state the commit applies to.
func (s *Service) ExecuteBatch(ctx context.Context, t Table, writes []Write) ([]edm.Entity, error) {
	if err := ValidateBatch(writes); err != nil {
		return nil, err
	}
	for i := range writes {
		if writes[i].Kind != Delete {
			if err := writes[i].Entity.Validate(); err != nil {
				return nil, &OperationError{Index: i, Err: azerr.As(err)}
			}
		}
	}
	if s.tables != nil {
		name := nameOf(t.Account, t.Name)
		lock := s.tables.deletionLock(name)
		lock.RLock()
		defer lock.RUnlock()
		// The table may have been deleted, or deleted and created again, since t was read.
		current, err := s.Table(ctx, t.Account, t.Name)
		if err != nil {
			return nil, err
		}
		t = current
	}
	keys := make([]store.Key, len(writes))
	for i, w := range writes {
		keys[i] = store.Key{Space: t.Space, Partition: w.Entity.PartitionKey, Row: w.Entity.RowKey}
	}
	current := make([]*store.Record, len(writes))
	mutations := make([]store.Mutation, len(writes))
	results := make([]edm.Entity, len(writes))
	for attempt := 0; attempt < maxCommitAttempts; attempt++ {
		var newest edm.Ticks
		for i, k := range keys {
			current[i] = nil
			if writes[i].Kind == Insert || writes[i].Kind == InsertOrReplace && s.clock != nil {
				// An insert needs nothing from the current entity: its ExpectAbsent condition
				// is the existence check, made atomically by the commit. Nor does an insert
				// or replace, once its Timestamp is sure to be later than the replaced
				// entity's without reading it (clock.go): it is written unconditionally.
				continue
			}
			rec, err := s.store.Get(ctx, k)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return nil, err
			default:
				current[i] = &rec
				newest = max(newest, edm.Ticks(rec.Version))
			}
		}
		ts, err := s.entityTimestamp(ctx, newest)
		if err != nil {
			return nil, err
		}
		for i, w := range writes {
			e, err := apply(w, current[i], ts)
			if err != nil {
				return nil, &OperationError{Index: i, Err: azerr.As(err)}
			}
			m := store.Mutation{Key: keys[i], Expect: store.Expect{Kind: store.ExpectAbsent}}
			switch {
			case current[i] != nil:
				m.Expect = store.Expect{Kind: store.ExpectVersion, Version: current[i].Version}
			case w.Kind == InsertOrReplace && s.clock != nil:
				m.Expect = store.Expect{} // not read: whatever is there is replaced
			}
			if w.Kind == Delete {
				m.Delete = true
			} else {
				m.Value = e.MarshalBinary()
				m.Version = int64(ts)
			}
			mutations[i] = m
			results[i] = e
		}
		err = s.store.Commit(ctx, mutations)
		var cf *store.ConditionFailedError
		if errors.As(err, &cf) {
			if writes[cf.Index].Kind == Insert {
				// Every other operation's own conditions were judged before the commit, and
				// the store names the lowest failing mutation: this insert is the first
				// operation that cannot succeed.
				return nil, &OperationError{Index: cf.Index, Err: azerr.New(azerr.EntityAlreadyExists)}
			}
			continue // another writer changed an entity this batch read: judge again
		}
		if err != nil {
			return nil, err
		}
		metrics.EntitiesWritten.Add(float64(len(writes)))
		return results, nil
	}
	return nil, azerr.Newf(azerr.ServerBusy, "The partition is being written by too many clients at once. Please retry your request.")
}

// apply computes the result of w on the current record (nil when absent) at timestamp ts.
func apply(w Write, cur *store.Record, ts edm.Ticks) (edm.Entity, error) {
	exists := cur != nil
	switch w.Kind {
	case Replace, Merge, Delete:
		if !exists {
			return edm.Entity{}, azerr.New(azerr.ResourceNotFound)
		}
		if !w.IfMatch.Holds(cur.Version) {
			if w.IfMatch.Unmatched {
				// A tag not of the service's datetime form is no version at all: the
				// generic 412, as the legacy Go SDK's recordings of Update and Merge Entity
				// with W/"datetime''…''" show Azure answer.
				return edm.Entity{}, azerr.New(azerr.ConditionNotMet)
			}
			return edm.Entity{}, azerr.New(azerr.UpdateConditionNotSatisfied)
		}
	}
	e := w.Entity
	e.Timestamp = ts
	if w.Kind == Delete {
		return e, nil
	}
	if exists && (w.Kind == Merge || w.Kind == InsertOrMerge) {
		var old edm.Entity
		if err := decodeRecord(*cur, &old); err != nil {
			return edm.Entity{}, err
		}
		e.Properties = mergeProperties(old.Properties, w.Entity.Properties)
		if err := e.Validate(); err != nil {
			return edm.Entity{}, err
		}
	}
	return e, nil
}

// mergeProperties overlays update on base: a property in update replaces (value and type) the
// one of the same name in base, new ones are appended, and base's others are kept in order.
func mergeProperties(base, update []edm.Property) []edm.Property {
	out := make([]edm.Property, len(base), len(base)+len(update))
	copy(out, base)
	for _, p := range update {
		replaced := false
		for i := range out {
			if out[i].Name == p.Name {
				out[i].Value = p.Value
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, p)
		}
	}
	return out
}

// decodeRecord reads a stored entity. The store key and version are authoritative for the
// keys and Timestamp.
func decodeRecord(rec store.Record, e *edm.Entity) error {
	if err := edm.UnmarshalBinary(rec.Value, e); err != nil {
		return fmt.Errorf("entity %s is corrupt: %w", rec.Key, err)
	}
	e.PartitionKey = rec.Key.Partition
	e.RowKey = rec.Key.Row
	e.Timestamp = edm.Ticks(rec.Version)
	return nil
}

// Entity reads one entity: the point query. A missing entity is 404 ResourceNotFound.
func (s *Service) Entity(ctx context.Context, t Table, pk, rk string) (edm.Entity, error) {
	rec, err := s.store.Get(ctx, store.Key{Space: t.Space, Partition: pk, Row: rk})
	if err == nil {
		metrics.EntitiesScanned.WithLabelValues(string(PlanPoint)).Inc()
	}
	if errors.Is(err, store.ErrNotFound) {
		return edm.Entity{}, azerr.New(azerr.ResourceNotFound)
	}
	if err != nil {
		return edm.Entity{}, err
	}
	// rec.Value was copied for this call alone, so the entity may alias it instead of
	// copying it again.
	var e edm.Entity
	if err := edm.UnmarshalBinaryShared(rec.Value, &e); err != nil {
		return edm.Entity{}, fmt.Errorf("entity %s is corrupt: %w", rec.Key, err)
	}
	e.PartitionKey, e.RowKey, e.Timestamp = pk, rk, edm.Ticks(rec.Version)
	metrics.EntitiesRead.Inc()
	return e, nil
}
