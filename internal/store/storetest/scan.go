package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
)

// populateRows writes rows r000…r(n-1) to partition p of space t, each at version i, and
// returns them in order.
func populateRows(t *testing.T, s store.Store, n int) []store.Record {
	t.Helper()
	var ms []store.Mutation
	var recs []store.Record
	for i := range n {
		k := store.Key{Space: "t", Partition: "p", Row: fmt.Sprintf("r%03d", i)}
		ms = append(ms, store.Mutation{Key: k, Version: int64(i), Value: []byte(k.Row)})
		recs = append(recs, store.Record{Key: k, Version: int64(i), Value: []byte(k.Row)})
	}
	commit(t, s, ms...)
	return recs
}

func testScanReadsOneSnapshot(t *testing.T, s store.Store) {
	before := populateRows(t, s, 100)
	row := func(name string) store.Key { return store.Key{Space: "t", Partition: "p", Row: name} }

	// Once the scan has started, commit changes ahead of it: an update, a delete and two
	// inserts. None of them may show.
	var got []store.Record
	err := s.Scan(t.Context(), store.PartitionRange("t", "p"), func(rec store.Record) (bool, error) {
		if len(got) == 0 {
			commit(t, s,
				store.Mutation{Key: row("r050"), Version: 1000, Value: []byte("updated")},
				store.Mutation{Key: row("r060"), Delete: true},
				store.Mutation{Key: row("r070x"), Version: 1001, Value: []byte("inserted")},
				store.Mutation{Key: row("r999"), Version: 1002, Value: []byte("inserted")},
			)
		}
		rec.Value = bytes.Clone(rec.Value) // lent only for the call
		got = append(got, rec)
		return true, nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	requireRecords(t, "Scan with commits during it", got, before)

	after := scanAll(t, s, store.PartitionRange("t", "p"))
	if len(after) != len(before)+1 {
		t.Fatalf("a later Scan does not see the commit: %s", formatRecords(after))
	}
}

// Limit is a hint: a scan that asks for more gets every record, from one snapshot.
func testScanLimitIsOnlyAHint(t *testing.T, s store.Store) {
	before := populateRows(t, s, 50)
	r := store.PartitionRange("t", "p")
	r.Limit = 3
	var got []store.Record
	err := s.Scan(t.Context(), r, func(rec store.Record) (bool, error) {
		if len(got) == 0 {
			commit(t, s, store.Mutation{Key: store.Key{Space: "t", Partition: "p", Row: "r040"}, Delete: true})
		}
		rec.Value = bytes.Clone(rec.Value) // lent only for the call
		got = append(got, rec)
		return true, nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	requireRecords(t, "Scan with Limit 3 asking for every record", got, before)
}

func testScanStopsWhenFnReturnsFalse(t *testing.T, s store.Store) {
	populateRows(t, s, 10)
	calls := 0
	err := s.Scan(t.Context(), store.SpaceRange("t"), func(store.Record) (bool, error) {
		calls++
		return calls < 3, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Scan = %v after %d calls, want nil after 3", err, calls)
	}
}

func testScanReturnsFnError(t *testing.T, s store.Store) {
	populateRows(t, s, 10)
	errStop := errors.New("stop here")
	calls := 0
	err := s.Scan(t.Context(), store.SpaceRange("t"), func(store.Record) (bool, error) {
		calls++
		if calls == 2 {
			return true, errStop
		}
		return true, nil
	})
	if !errors.Is(err, errStop) || calls != 2 {
		t.Fatalf("Scan = %v after %d calls, want fn's error after 2", err, calls)
	}
}

func testScanStopsWhenContextIsDone(t *testing.T, s store.Store) {
	populateRows(t, s, 10)

	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := s.Scan(ctx, store.SpaceRange("t"), func(store.Record) (bool, error) {
		calls++
		if calls == 2 {
			cancel()
		}
		return true, nil
	})
	if !errors.Is(err, context.Canceled) || calls != 2 {
		t.Fatalf("Scan cancelled during the second call = %v after %d calls, want context.Canceled after 2", err, calls)
	}

	calls = 0
	err = s.Scan(ctx, store.SpaceRange("t"), func(store.Record) (bool, error) {
		calls++
		return true, nil
	})
	if !errors.Is(err, context.Canceled) || calls != 0 {
		t.Fatalf("Scan with a cancelled context = %v after %d calls, want context.Canceled and no calls", err, calls)
	}
}

func testScanKeysMayBeRetained(t *testing.T, s store.Store) {
	// Values are lent to fn, but keys and versions are fn's to keep: they are compared only
	// after Scan has returned, so a backend that reuses key memory shows up here.
	want := populateRows(t, s, 300)
	var keys []store.Key
	var versions []int64
	err := s.Scan(t.Context(), store.SpaceRange("t"), func(rec store.Record) (bool, error) {
		keys, versions = append(keys, rec.Key), append(versions, rec.Version)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(want) {
		t.Fatalf("Scan returned %d records, want %d", len(keys), len(want))
	}
	for i := range want {
		if keys[i] != want[i].Key || versions[i] != want[i].Version {
			t.Fatalf("record %d kept as %s v%d, want %s v%d", i, keys[i], versions[i], want[i].Key, want[i].Version)
		}
	}
}
