// Package storetest is the contract suite every store.Store backend must pass. It tests only
// what the store package promises, so that a backend passing it can replace another.
//
// A backend's tests call Run:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openEmptyStore(t) })
//	}
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
)

// Run runs the contract suite, one subtest per behaviour. open must return a new, empty store
// each time it is called and fail t if it cannot; Run closes every store it opens when the
// subtest ends (a store the subtest already closed is fine), so open only needs to clean up
// what outlives the store, such as its directory.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		test func(t *testing.T, s store.Store)
	}{
		{"ScanOrdersKeysBytewiseByComponent", testScanOrdersKeysBytewiseByComponent},
		{"DistinctKeysAreDistinctRecords", testDistinctKeysAreDistinctRecords},
		{"ArbitraryRangesAreHalfOpen", testArbitraryRangesAreHalfOpen},
		{"KeysAsLongAsTheTableServiceAcceptsWork", testKeysAsLongAsTheTableServiceAcceptsWork},
		{"GetReturnsWhatWasCommitted", testGetReturnsWhatWasCommitted},
		{"GetOfAbsentKeyReturnsErrNotFound", testGetOfAbsentKeyReturnsErrNotFound},
		{"VersionAndValueRoundTrip", testVersionAndValueRoundTrip},
		{"ExpectDecidesWhetherCommitApplies", testExpectDecidesWhetherCommitApplies},
		{"FailedConditionAppliesNoMutation", testFailedConditionAppliesNoMutation},
		{"LowestFailingConditionIsReported", testLowestFailingConditionIsReported},
		{"DeleteRemovesRecord", testDeleteRemovesRecord},
		{"EmptyCommitSucceeds", testEmptyCommitSucceeds},
		{"ReadersNeverSeePartOfACommit", testReadersNeverSeePartOfACommit},
		{"ScanReadsOneSnapshot", testScanReadsOneSnapshot},
		{"ScanLimitIsOnlyAHint", testScanLimitIsOnlyAHint},
		{"ScanStopsWhenFnReturnsFalse", testScanStopsWhenFnReturnsFalse},
		{"ScanReturnsFnError", testScanReturnsFnError},
		{"ScanStopsWhenContextIsDone", testScanStopsWhenContextIsDone},
		{"ScanKeysMayBeRetained", testScanKeysMayBeRetained},
		{"DeleteSpaceLeavesOtherSpacesIntact", testDeleteSpaceLeavesOtherSpacesIntact},
		{"DeleteSpaceIsAtomicForReaders", testDeleteSpaceIsAtomicForReaders},
		{"ConditionalIncrementsAreExact", testConditionalIncrementsAreExact},
		{"ExactlyOneConcurrentInsertWins", testExactlyOneConcurrentInsertWins},
		{"WritersOfDifferentPartitionsAllSucceed", testWritersOfDifferentPartitionsAllSucceed},
		{"ReturnedSlicesBelongToCaller", testReturnedSlicesBelongToCaller},
		{"CommitDoesNotRetainMutationSlices", testCommitDoesNotRetainMutationSlices},
		{"CloseWaitsForInFlightCalls", testCloseWaitsForInFlightCalls},
		{"CallsAfterCloseReturnErrClosed", testCallsAfterCloseReturnErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tc.test(t, s)
		})
	}
}

// put unconditionally writes one record.
func put(t *testing.T, s store.Store, k store.Key, version int64, value string) {
	t.Helper()
	commit(t, s, store.Mutation{Key: k, Version: version, Value: []byte(value)})
}

// commit commits ms and fails t if that fails.
func commit(t *testing.T, s store.Store, ms ...store.Mutation) {
	t.Helper()
	if err := s.Commit(t.Context(), ms); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// get returns the record at k, or ok=false if there is none.
func get(t *testing.T, s store.Store, k store.Key) (rec store.Record, ok bool) {
	t.Helper()
	rec, err := s.Get(t.Context(), k)
	if errors.Is(err, store.ErrNotFound) {
		return store.Record{}, false
	}
	if err != nil {
		t.Fatalf("Get(%v): %v", k, err)
	}
	if rec.Key != k {
		t.Fatalf("Get(%v) returned the record of %v", k, rec.Key)
	}
	return rec, true
}

// scanAll returns every record in r.
func scanAll(t *testing.T, s store.Store, r store.Range) []store.Record {
	t.Helper()
	var recs []store.Record
	err := s.Scan(t.Context(), r, func(rec store.Record) (bool, error) {
		rec.Value = bytes.Clone(rec.Value) // lent only for the call
		recs = append(recs, rec)
		return true, nil
	})
	if err != nil {
		t.Fatalf("Scan(%+v): %v", r, err)
	}
	return recs
}

// requireRecords fails t unless got equals want, record by record and in order. Nil and
// empty values are equal: the contract does not tell them apart.
func requireRecords(t *testing.T, what string, got, want []store.Record) {
	t.Helper()
	if sameRecords(got, want) {
		return
	}
	t.Fatalf("%s:\ngot  %s\nwant %s", what, formatRecords(got), formatRecords(want))
}

func sameRecords(a, b []store.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameRecord(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameRecord(a, b store.Record) bool {
	return a.Key == b.Key && a.Version == b.Version && bytes.Equal(a.Value, b.Value)
}

func formatRecords(recs []store.Record) string {
	const limit = 20
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d records [", len(recs))
	for i, r := range recs {
		if i == limit {
			sb.WriteString(" …")
			break
		}
		fmt.Fprintf(&sb, " %v@%d=%q", r.Key, r.Version, truncate(r.Value))
	}
	sb.WriteString(" ]")
	return sb.String()
}

func truncate(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// stopped reports whether done is closed.
func stopped(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
