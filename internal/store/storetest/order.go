package storetest

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
)

// tricky holds key components that catch encodings which are not bytewise: empty, 0x00 inside
// and at the end, prefixes of one another ("a" < "a\x00" < "a\x00b" < "a\x01" < "ab"), bytes
// ≥ 0x80 (which a signed or collating comparison misorders) and multi-byte UTF-8.
var tricky = []string{
	"", "\x00", "\x00\xff", "\x01", "a", "a\x00", "a\x00b", "a\x01", "ab", "b",
	"\x7f", "\x80", "\xff", "é", "日本", "\U0001F600",
}

// populateTricky writes one record for every (space, partition, row) drawn from tricky, with
// the key's text as value, and returns them in contract order.
func populateTricky(t *testing.T, s store.Store) []store.Record {
	t.Helper()
	var all []store.Record
	for _, space := range tricky {
		var ms []store.Mutation
		for _, partition := range tricky {
			for _, row := range tricky {
				k := store.Key{Space: space, Partition: partition, Row: row}
				ms = append(ms, store.Mutation{Key: k, Version: int64(len(all) + len(ms)), Value: []byte(k.String())})
			}
		}
		commit(t, s, ms...)
		for _, m := range ms {
			all = append(all, store.Record{Key: m.Key, Version: m.Version, Value: m.Value})
		}
	}
	slices.SortFunc(all, func(a, b store.Record) int { return a.Key.Compare(b.Key) })
	return all
}

// within returns the records of all (in order) that r contains.
func within(all []store.Record, r store.Range) []store.Record {
	var recs []store.Record
	for _, rec := range all {
		if r.Contains(rec.Key) {
			recs = append(recs, rec)
		}
	}
	return recs
}

func testScanOrdersKeysBytewiseByComponent(t *testing.T, s store.Store) {
	all := populateTricky(t, s)
	for _, space := range tricky {
		r := store.SpaceRange(space)
		requireRecords(t, "SpaceRange("+strconv.Quote(space)+")", scanAll(t, s, r), within(all, r))
		for _, partition := range tricky {
			r := store.PartitionRange(space, partition)
			requireRecords(t, "PartitionRange("+strconv.Quote(space)+", "+strconv.Quote(partition)+")", scanAll(t, s, r), within(all, r))
		}
	}
}

func testDistinctKeysAreDistinctRecords(t *testing.T, s store.Store) {
	// ("a\x00", "b") and ("a", "\x00b") are different keys; an encoding that merely
	// concatenates components would store them as one record.
	for _, want := range populateTricky(t, s) {
		got, ok := get(t, s, want.Key)
		if !ok || !sameRecord(got, want) {
			t.Fatalf("Get(%v) = %v@%d %q (found %v), want version %d %q",
				want.Key, got.Key, got.Version, got.Value, ok, want.Version, want.Value)
		}
	}
}

func testArbitraryRangesAreHalfOpen(t *testing.T, s store.Store) {
	all := populateTricky(t, s)

	// Start is included, End excluded, whether or not records exist at the bounds.
	r := store.Range{
		Space: "a",
		Start: store.Key{Space: "a", Partition: "a", Row: "a"},
		End:   store.Key{Space: "a", Partition: "a", Row: "b"},
	}
	var rows []string
	for _, rec := range scanAll(t, s, r) {
		rows = append(rows, rec.Key.Row)
	}
	if want := []string{"a", "a\x00", "a\x00b", "a\x01", "ab"}; !slices.Equal(rows, want) {
		t.Fatalf("rows in [a/a/a, a/a/b) = %q, want %q", rows, want)
	}

	// Bounds drawn from the stored components and from a few that are not stored.
	bounds := append(slices.Clone(tricky), "\x00\x00", "a\x00\x00", "aa", "c")
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return bounds[rng.IntN(len(bounds))] }
	for range 300 {
		space := tricky[rng.IntN(len(tricky))]
		r := store.Range{
			Space:        space,
			Start:        store.Key{Space: space, Partition: pick(), Row: pick()},
			End:          store.Key{Space: space, Partition: pick(), Row: pick()},
			EndUnbounded: rng.IntN(4) == 0,
		}
		if r.EndUnbounded {
			r.End = store.Key{}
		}
		requireRecords(t, formatRange(r), scanAll(t, s, r), within(all, r))
	}

	empty := store.Range{Space: "a", Start: store.Key{Space: "a", Partition: "b"}, End: store.Key{Space: "a", Partition: "b"}}
	requireRecords(t, "range with Start == End", scanAll(t, s, empty), nil)
	empty.Start.Partition = "c"
	requireRecords(t, "range with Start > End", scanAll(t, s, empty), nil)
}

func formatRange(r store.Range) string {
	if r.EndUnbounded {
		return "[" + r.Start.String() + ", end of space)"
	}
	return "[" + r.Start.String() + ", " + r.End.String() + ")"
}
