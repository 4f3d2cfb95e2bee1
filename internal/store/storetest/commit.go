package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
)

func testGetReturnsWhatWasCommitted(t *testing.T, s store.Store) {
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	put(t, s, k, 1, "first")
	if got, _ := get(t, s, k); got.Version != 1 || string(got.Value) != "first" {
		t.Fatalf("after first write: %d %q, want 1 %q", got.Version, got.Value, "first")
	}
	put(t, s, k, 2, "second")
	if got, _ := get(t, s, k); got.Version != 2 || string(got.Value) != "second" {
		t.Fatalf("after overwrite: %d %q, want 2 %q", got.Version, got.Value, "second")
	}
}

func testGetOfAbsentKeyReturnsErrNotFound(t *testing.T, s store.Store) {
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	if _, err := s.Get(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get in an empty store: %v, want ErrNotFound", err)
	}
	put(t, s, k, 1, "v")
	for _, near := range []store.Key{
		{Space: "t", Partition: "p", Row: "r\x00"},
		{Space: "t", Partition: "p", Row: ""},
		{Space: "t", Partition: "p\x00", Row: "r"},
		{Space: "t", Partition: "", Row: "r"},
		{Space: "t\x00", Partition: "p", Row: "r"},
		{Space: "", Partition: "p", Row: "r"},
	} {
		if _, err := s.Get(t.Context(), near); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%v) next to the only record %v: %v, want ErrNotFound", near, k, err)
		}
	}
}

func testVersionAndValueRoundTrip(t *testing.T, s store.Store) {
	versions := []int64{math.MinInt64, -1, 0, 1, 1<<53 + 1, 638_000_000_000_000_000, math.MaxInt64}
	values := [][]byte{nil, {}, {0}, {0, 0xff, 0x80, 0}, []byte("é日本"), bytes.Repeat([]byte{0xA5, 0}, 512<<10)}
	var want []store.Record
	for i, v := range versions {
		for j, value := range values {
			k := store.Key{Space: "t", Partition: "p", Row: fmt.Sprintf("%02d-%02d", i, j)}
			commit(t, s, store.Mutation{Key: k, Version: v, Value: value})
			want = append(want, store.Record{Key: k, Version: v, Value: value})
		}
	}
	for _, w := range want {
		if got, ok := get(t, s, w.Key); !ok || !sameRecord(got, w) {
			t.Errorf("Get(%v) = version %d, %d bytes; want version %d, %d bytes", w.Key, got.Version, len(got.Value), w.Version, len(w.Value))
		}
	}
	requireRecords(t, "Scan", scanAll(t, s, store.PartitionRange("t", "p")), want)
}

func testExpectDecidesWhetherCommitApplies(t *testing.T, s store.Store) {
	const existing = 7
	tests := []struct {
		name    string
		expect  store.Expect
		present bool // whether a record (version existing) is there before the commit
		holds   bool
	}{
		{"AnythingOnAbsent", store.Expect{}, false, true},
		{"AnythingOnPresent", store.Expect{}, true, true},
		{"AbsentOnAbsent", store.Expect{Kind: store.ExpectAbsent}, false, true},
		{"AbsentOnPresent", store.Expect{Kind: store.ExpectAbsent}, true, false},
		{"PresentOnAbsent", store.Expect{Kind: store.ExpectPresent}, false, false},
		{"PresentOnPresent", store.Expect{Kind: store.ExpectPresent}, true, true},
		{"VersionOnAbsent", store.Expect{Kind: store.ExpectVersion, Version: existing}, false, false},
		{"VersionOnMatching", store.Expect{Kind: store.ExpectVersion, Version: existing}, true, true},
		{"VersionOnOther", store.Expect{Kind: store.ExpectVersion, Version: existing + 1}, true, false},
		{"Version0OnAbsent", store.Expect{Kind: store.ExpectVersion, Version: 0}, false, false},
	}
	for n, tc := range tests {
		for _, variant := range []struct {
			name              string
			del               bool
			bystanderExpected bool
		}{{"Write", false, false}, {"Delete", true, false}, {"WriteBesideAnotherCondition", false, true}} {
			del := variant.del
			t.Run(tc.name+variant.name, func(t *testing.T) {
				// Each case has its own partition; a bystander write precedes the conditional
				// mutation in the same commit and must share its fate. In one variant the
				// bystander has a condition of its own (which holds), as in a batch where a
				// store may check conditions together.
				partition := fmt.Sprintf("case%02d-%s", n, variant.name)
				target := store.Key{Space: "t", Partition: partition, Row: "target"}
				bystander := store.Key{Space: "t", Partition: partition, Row: "bystander"}
				old := store.Record{Key: target, Version: existing, Value: []byte("old")}
				if tc.present {
					put(t, s, target, old.Version, string(old.Value))
				}
				var bystanderExpect store.Expect
				if variant.bystanderExpected {
					bystanderExpect.Kind = store.ExpectAbsent
				}
				err := s.Commit(t.Context(), []store.Mutation{
					{Key: bystander, Expect: bystanderExpect, Version: 1, Value: []byte("bystander")},
					{Key: target, Expect: tc.expect, Delete: del, Version: 9, Value: []byte("new")},
				})

				got, found := get(t, s, target)
				_, bystanderWritten := get(t, s, bystander)
				if tc.holds {
					if err != nil {
						t.Fatalf("Commit: %v, want success", err)
					}
					if want := !del; found != want || (found && (got.Version != 9 || string(got.Value) != "new")) {
						t.Fatalf("after commit: found=%v %d %q, want found=%v version 9 %q", found, got.Version, got.Value, want, "new")
					}
					if !bystanderWritten {
						t.Fatal("bystander mutation of a successful commit not applied")
					}
					return
				}

				var cf *store.ConditionFailedError
				if !errors.As(err, &cf) {
					t.Fatalf("Commit: %v, want *ConditionFailedError", err)
				}
				if cf.Index != 1 {
					t.Errorf("ConditionFailedError.Index = %d, want 1", cf.Index)
				}
				switch {
				case !tc.present && cf.Found != nil:
					t.Errorf("ConditionFailedError.Found = %+v, want nil for an absent key", *cf.Found)
				case tc.present && (cf.Found == nil || !sameRecord(*cf.Found, old)):
					t.Errorf("ConditionFailedError.Found = %+v, want %+v", cf.Found, old)
				}
				if found != tc.present || (found && !sameRecord(got, old)) {
					t.Errorf("failed commit changed the target: found=%v %+v", found, got)
				}
				if bystanderWritten {
					t.Error("failed commit applied its bystander mutation")
				}
			})
		}
	}
}

// When several conditions fail, the error names the lowest failing mutation, whatever the
// order of their keys.
func testLowestFailingConditionIsReported(t *testing.T, s store.Store) {
	key := func(row string) store.Key { return store.Key{Space: "low", Partition: "p", Row: row} }
	for _, row := range []string{"a", "b", "c", "d", "e"} {
		put(t, s, key(row), 1, row+"1")
	}
	// Mutations in descending key order; those of "d" (index 1) and "b" (index 3) fail.
	ms := []store.Mutation{
		{Key: key("e"), Expect: store.Expect{Kind: store.ExpectVersion, Version: 1}, Version: 2, Value: []byte("e2")},
		{Key: key("d"), Expect: store.Expect{Kind: store.ExpectVersion, Version: 5}, Version: 2, Value: []byte("d2")},
		{Key: key("c"), Expect: store.Expect{Kind: store.ExpectPresent}, Version: 2, Value: []byte("c2")},
		{Key: key("b"), Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 2, Value: []byte("b2")},
		{Key: key("a"), Expect: store.Expect{Kind: store.ExpectVersion, Version: 1}, Delete: true},
		{Key: key("aa"), Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 2, Value: []byte("aa2")},
	}
	err := s.Commit(t.Context(), ms)
	var cf *store.ConditionFailedError
	if !errors.As(err, &cf) || cf.Index != 1 {
		t.Fatalf("Commit returned %v, want ConditionFailedError with Index 1", err)
	}
	if want := (store.Record{Key: key("d"), Version: 1, Value: []byte("d1")}); cf.Found == nil || !sameRecord(*cf.Found, want) {
		t.Errorf("ConditionFailedError.Found = %+v, want %+v", cf.Found, want)
	}
	var want []store.Record
	for _, row := range []string{"a", "b", "c", "d", "e"} {
		want = append(want, store.Record{Key: key(row), Version: 1, Value: []byte(row + "1")})
	}
	requireRecords(t, "after the failed commit", scanAll(t, s, store.SpaceRange("low")), want)
}

func testFailedConditionAppliesNoMutation(t *testing.T, s store.Store) {
	a := store.Key{Space: "x", Partition: "p", Row: "a"}
	b := store.Key{Space: "x", Partition: "q", Row: "b"}
	c := store.Key{Space: "y", Partition: "p", Row: "c"}
	put(t, s, a, 1, "a1")
	put(t, s, b, 1, "b1")
	before := append(scanAll(t, s, store.SpaceRange("x")), scanAll(t, s, store.SpaceRange("y"))...)

	// Mutations across partitions and spaces, writes and deletes; the one at failAt fails.
	for failAt := range 4 {
		ms := []store.Mutation{
			{Key: a, Expect: store.Expect{Kind: store.ExpectVersion, Version: 1}, Version: 2, Value: []byte("a2")},
			{Key: b, Expect: store.Expect{Kind: store.ExpectPresent}, Delete: true},
			{Key: c, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 1, Value: []byte("c1")},
			{Key: store.Key{Space: "y", Partition: "q", Row: "d"}, Version: 1, Value: []byte("d1")},
		}
		ms[failAt].Expect = store.Expect{Kind: store.ExpectVersion, Version: 99}
		err := s.Commit(t.Context(), ms)
		var cf *store.ConditionFailedError
		if !errors.As(err, &cf) || cf.Index != failAt {
			t.Fatalf("mutation %d failing: Commit returned %v, want ConditionFailedError with Index %d", failAt, err, failAt)
		}
		after := append(scanAll(t, s, store.SpaceRange("x")), scanAll(t, s, store.SpaceRange("y"))...)
		requireRecords(t, fmt.Sprintf("state after mutation %d failed", failAt), after, before)
	}
}

func testDeleteRemovesRecord(t *testing.T, s store.Store) {
	neighbours := []store.Key{
		{Space: "t", Partition: "p", Row: "r\x00"},
		{Space: "t", Partition: "p\x00", Row: "r"},
		{Space: "t", Partition: "p", Row: ""},
	}
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	for _, n := range neighbours {
		put(t, s, n, 1, "neighbour")
	}
	put(t, s, k, 1, "v")

	commit(t, s, store.Mutation{Key: k, Delete: true})
	if _, ok := get(t, s, k); ok {
		t.Fatal("Get found a deleted record")
	}
	for _, rec := range scanAll(t, s, store.SpaceRange("t")) {
		if rec.Key == k {
			t.Fatal("Scan returned a deleted record")
		}
	}
	for _, n := range neighbours {
		if _, ok := get(t, s, n); !ok {
			t.Errorf("deleting %v removed neighbour %v", k, n)
		}
	}

	// Deleting an absent key is a no-op when Expect allows it, and fails when it asks for a
	// record.
	commit(t, s, store.Mutation{Key: k, Delete: true})
	err := s.Commit(t.Context(), []store.Mutation{{Key: k, Delete: true, Expect: store.Expect{Kind: store.ExpectPresent}}})
	var cf *store.ConditionFailedError
	if !errors.As(err, &cf) || cf.Found != nil {
		t.Fatalf("ExpectPresent delete of a deleted key: %v, want ConditionFailedError with Found nil", err)
	}

	// A deleted key is absent, so it can be inserted again.
	commit(t, s, store.Mutation{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 2, Value: []byte("again")})
	if got, ok := get(t, s, k); !ok || got.Version != 2 || string(got.Value) != "again" {
		t.Fatalf("re-inserted record: %+v (found %v)", got, ok)
	}
}

func testEmptyCommitSucceeds(t *testing.T, s store.Store) {
	if err := s.Commit(t.Context(), nil); err != nil {
		t.Fatalf("Commit(nil) = %v", err)
	}
}

func testReadersNeverSeePartOfACommit(t *testing.T, s store.Store) {
	// Every commit writes version n to two rows of one partition and to a record in another
	// space. A Scan of the partition must see both rows at the same version; a Get of the
	// other space after a Get of the first row must see at least that row's version (the
	// Gets are linearizable, so seeing half a commit is the only way to see less).
	const commits = 100
	r1 := store.Key{Space: "x", Partition: "p", Row: "r1"}
	r2 := store.Key{Space: "x", Partition: "p", Row: "r2"}
	other := store.Key{Space: "y", Partition: "q", Row: "r"}
	writeAll := func(n int64) {
		var ms []store.Mutation
		for _, k := range []store.Key{r1, r2, other} {
			ms = append(ms, store.Mutation{Key: k, Version: n, Value: []byte("v")})
		}
		commit(t, s, ms...)
	}
	writeAll(0)

	// The readers run beside the test goroutine, so they report with Errorf and stop.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stopped(done) {
			var recs []store.Record
			err := s.Scan(t.Context(), store.PartitionRange("x", "p"), func(rec store.Record) (bool, error) {
				recs = append(recs, rec)
				return true, nil
			})
			if err != nil {
				t.Errorf("Scan: %v", err)
				return
			}
			if len(recs) != 2 || recs[0].Version != recs[1].Version {
				t.Errorf("Scan saw part of a commit: %s", formatRecords(recs))
				return
			}
		}
	})
	wg.Go(func() {
		for !stopped(done) {
			first, err := s.Get(t.Context(), r1)
			if err != nil {
				t.Errorf("Get(%v): %v", r1, err)
				return
			}
			second, err := s.Get(t.Context(), other)
			if err != nil {
				t.Errorf("Get(%v): %v", other, err)
				return
			}
			if second.Version < first.Version {
				t.Errorf("Get saw %v at version %d, then %v at older version %d", r1, first.Version, other, second.Version)
				return
			}
		}
	})
	defer func() {
		close(done)
		wg.Wait()
	}()
	for n := int64(1); n <= commits && !t.Failed(); n++ {
		writeAll(n)
	}
}

func testReturnedSlicesBelongToCaller(t *testing.T, s store.Store) {
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	put(t, s, k, 1, "original")
	check := func(after string) {
		t.Helper()
		if got, _ := get(t, s, k); string(got.Value) != "original" {
			t.Fatalf("after %s, stored value is %q", after, got.Value)
		}
	}

	rec, _ := get(t, s, k)
	clear(rec.Value)
	check("zeroing the value returned by Get")

	err := s.Commit(t.Context(), []store.Mutation{{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}}})
	var cf *store.ConditionFailedError
	if !errors.As(err, &cf) || cf.Found == nil {
		t.Fatalf("Commit: %v, want ConditionFailedError with Found", err)
	}
	clear(cf.Found.Value)
	check("zeroing ConditionFailedError.Found.Value")
}

func testCommitDoesNotRetainMutationSlices(t *testing.T, s store.Store) {
	k := store.Key{Space: "t", Partition: "p", Row: "r"}
	value := []byte("original")
	commit(t, s, store.Mutation{Key: k, Version: 1, Value: value})
	copy(value, "CHANGED!")
	if got, _ := get(t, s, k); string(got.Value) != "original" {
		t.Fatalf("changing the caller's slice after Commit changed the stored value to %q", got.Value)
	}
}
