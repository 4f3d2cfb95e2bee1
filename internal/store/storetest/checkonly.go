package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/store"
)

// A check-only mutation decides whether its commit applies, as any Expect does, and writes
// nothing at its key whatever its Delete, Value and Version say.
func testCheckOnlyConditionsTheCommitAndWritesNothing(t *testing.T, s store.Store) {
	tests := []struct {
		name    string
		expect  store.Expect
		present bool
		holds   bool
	}{
		{"AnythingOnAbsent", store.Expect{}, false, true},
		{"AbsentOnAbsent", store.Expect{Kind: store.ExpectAbsent}, false, true},
		{"AbsentOnPresent", store.Expect{Kind: store.ExpectAbsent}, true, false},
		{"PresentOnAbsent", store.Expect{Kind: store.ExpectPresent}, false, false},
		{"PresentOnPresent", store.Expect{Kind: store.ExpectPresent}, true, true},
		{"VersionOnMatching", store.Expect{Kind: store.ExpectVersion, Version: 7}, true, true},
		{"VersionOnOther", store.Expect{Kind: store.ExpectVersion, Version: 8}, true, false},
	}
	for n, tc := range tests {
		for _, del := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/delete=%v", tc.name, del), func(t *testing.T) {
				partition := fmt.Sprintf("check%02d-%v", n, del)
				checked := store.Key{Space: "c", Partition: partition, Row: "checked"}
				written := store.Key{Space: "c", Partition: partition, Row: "written"}
				old := store.Record{Key: checked, Version: 7, Value: []byte("old")}
				if tc.present {
					put(t, s, checked, old.Version, string(old.Value))
				}
				err := s.Commit(t.Context(), []store.Mutation{
					{Key: written, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 1, Value: []byte("w")},
					{Key: checked, Expect: tc.expect, CheckOnly: true, Delete: del, Version: 9, Value: []byte("new")},
				})
				var cf *store.ConditionFailedError
				switch {
				case tc.holds && err != nil:
					t.Fatalf("Commit: %v, want success", err)
				case !tc.holds && (!errors.As(err, &cf) || cf.Index != 1):
					t.Fatalf("Commit: %v, want ConditionFailedError with Index 1", err)
				}
				got, found := get(t, s, checked)
				if found != tc.present || found && !sameRecord(got, old) {
					t.Errorf("the checked key changed: found=%v %+v", found, got)
				}
				if _, wrote := get(t, s, written); wrote != tc.holds {
					t.Errorf("the other mutation applied: %v, want %v", wrote, tc.holds)
				}
			})
		}
	}
}

// A commit that checks a record is ordered against commits that change it: once a commit
// deleting the record has returned, no commit conditioned on the record's old version can
// still apply. This is what keeps an entity write from landing in the space of a table
// deleted while it was in flight.
func testCheckOnlyCommitsAreOrderedAgainstChangesOfTheCheckedKey(t *testing.T, s store.Store) {
	guard := store.Key{Space: "g", Partition: "tables", Row: "t"}
	put(t, s, guard, 1, "table")
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				err := s.Commit(t.Context(), []store.Mutation{
					{Key: store.Key{Space: "g-data", Partition: fmt.Sprint("w", w), Row: fmt.Sprint(i)}, Version: 1, Value: []byte("e")},
					{Key: guard, CheckOnly: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: 1}},
				})
				var cf *store.ConditionFailedError
				switch {
				case err == nil:
					written.Add(1)
				case errors.As(err, &cf):
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	for written.Load() < 20 && !t.Failed() {
		time.Sleep(time.Millisecond) // let the writers commit a few before the deletion
	}
	if err := s.Commit(t.Context(), []store.Mutation{{Key: guard, Delete: true, Expect: store.Expect{Kind: store.ExpectVersion, Version: 1}}}); err != nil {
		t.Fatal(err)
	}
	atDeletion := len(scanAll(t, s, store.SpaceRange("g-data")))
	close(stop)
	wg.Wait()
	after := len(scanAll(t, s, store.SpaceRange("g-data")))
	if after != atDeletion {
		t.Errorf("%d records were written after the checked record was deleted", after-atDeletion)
	}
	if int64(after) != written.Load() {
		t.Errorf("%d commits succeeded, %d records stored", written.Load(), after)
	}
}
