package table

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// countingStore counts the reads of entities made through it; it stays exclusive.
type countingStore struct {
	*pebble.Store
	entityGets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, k store.Key) (store.Record, error) {
	if len(k.Space) > 2 && k.Space[:2] == "t/" {
		s.entityGets.Add(1)
	}
	return s.Store.Get(ctx, k)
}

func upsert(t *testing.T, s *Service, tbl Table, kind WriteKind, rk, value string) edm.Entity {
	t.Helper()
	e := edm.Entity{PartitionKey: "p", RowKey: rk, Properties: []edm.Property{{Name: "V", Value: edm.Value{Type: edm.String, Str: value}}}}
	out, err := s.Write(context.Background(), tbl, Write{Kind: kind, Entity: e})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInsertOrReplaceOverAnExclusiveStoreReadsNothingAndStillMovesTheETag(t *testing.T) {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{Store: st}
	s := New(cs)
	ctx := context.Background()
	tbl, err := s.CreateTable(ctx, "acct", "things")
	if err != nil {
		t.Fatal(err)
	}
	first := upsert(t, s, tbl, InsertOrReplace, "r", "one")
	second := upsert(t, s, tbl, InsertOrReplace, "r", "two")
	if n := cs.entityGets.Load(); n != 0 {
		t.Errorf("two inserts or replaces read entities %d times, want none", n)
	}
	if second.Timestamp <= first.Timestamp {
		t.Errorf("replaced entity's Timestamp %v is not later than %v", second.Timestamp, first.Timestamp)
	}
	got, err := s.Entity(ctx, tbl, "p", "r")
	if err != nil || got.Timestamp != second.Timestamp || got.Properties[0].Value.Str != "two" {
		t.Fatalf("read back %+v, %v; want the second write", got, err)
	}
	// The old ETag no longer matches.
	_, err = s.Write(ctx, tbl, Write{Kind: Replace, Entity: got, IfMatch: ETagCondition{Timestamp: first.Timestamp}})
	var e *azerr.Error
	if !errors.As(err, &e) || e.Code != azerr.UpdateConditionNotSatisfied {
		t.Errorf("replace with the first ETag: %v, want UpdateConditionNotSatisfied", err)
	}
}

func TestTimestampsStayLaterThanStoredOnesAfterARestartWithTheClockSetBack(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	open := func(clock time.Time) (*Service, *pebble.Store) {
		st, err := pebble.Open(dir, pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := New(st)
		s.now = func() time.Time { return clock }
		return s, st
	}
	s, st := open(now)
	ctx := context.Background()
	tbl, err := s.CreateTable(ctx, "acct", "things")
	if err != nil {
		t.Fatal(err)
	}
	before := upsert(t, s, tbl, InsertOrReplace, "r", "before")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Restarted with the system clock an hour behind.
	s, st = open(now.Add(-time.Hour))
	defer st.Close()
	after := upsert(t, s, tbl, InsertOrReplace, "r", "after")
	if after.Timestamp <= before.Timestamp {
		t.Fatalf("after the restart an insert or replace got Timestamp %v, not later than the replaced %v", after.Timestamp, before.Timestamp)
	}
	inserted := upsert(t, s, tbl, Insert, "new", "x")
	if inserted.Timestamp <= after.Timestamp {
		t.Errorf("Timestamps went back: %v after %v", inserted.Timestamp, after.Timestamp)
	}
	// The floor moved ahead of what was handed out, by a lease, not per write.
	rec, err := st.Get(ctx, clockKey)
	if err != nil || edm.Ticks(rec.Version) < inserted.Timestamp {
		t.Errorf("stored floor %v, %v; want at least %v", edm.Ticks(rec.Version), err, inserted.Timestamp)
	}
}
