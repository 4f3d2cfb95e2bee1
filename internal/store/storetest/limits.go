package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/store"
)

// longKeys returns keys as long as the Table service accepts (edm.MaxKeyLength UTF-16 code
// units each), in characters of 3 bytes of UTF-8 (CJK: 3 KiB per key, the most bytes a key
// can have) and of 4 (emoji: two code units each), some sharing all but their last
// characters (so that a backend storing a prefix of the key cannot tell them apart by it),
// beside short ones.
func longKeys(space string) []store.Key {
	cjk := varied(0x4E00, 0x9FFF, edm.MaxKeyLength, 1)
	cjkOther := cjk[:len(cjk)-len("日")] + "本"
	emoji := varied(0x1F300, 0x1FAFF, edm.MaxKeyLength/2, 2)
	emojiOther := emoji[:len(emoji)-len("😀")] + "😀"
	mixed := varied(0x4E00, 0x9FFF, edm.MaxKeyLength/2, 3) + varied(0x1F300, 0x1FAFF, edm.MaxKeyLength/4, 4)
	partitions := []string{cjk, cjkOther, emoji, emojiOther, mixed, "short"}
	rows := []string{cjk, cjkOther, emoji, emojiOther, mixed, "", "a", "日本"}
	var keys []store.Key
	for _, p := range partitions {
		for _, r := range rows {
			keys = append(keys, store.Key{Space: space, Partition: p, Row: r})
		}
	}
	return keys
}

// varied returns n characters drawn from [lo, hi] by a fixed pseudo-random sequence: text
// that, unlike a repeated character, does not compress (a database may compress a long key
// until it fits where the key itself would not).
func varied(lo, hi rune, n int, seed uint32) string {
	var sb strings.Builder
	x := seed
	for range n {
		x = x*1664525 + 1013904223
		sb.WriteRune(lo + rune(x>>8)%(hi-lo+1))
	}
	return sb.String()
}

func testKeysAsLongAsTheTableServiceAcceptsWork(t *testing.T, s store.Store) {
	const space = "t/devstoreaccount1/longkeys/0123456789abcdef"
	keys := longKeys(space)
	var all []store.Record
	for i, k := range keys {
		rec := store.Record{Key: k, Version: int64(i + 1), Value: []byte(k.Row[:min(len(k.Row), 9)])}
		commit(t, s, store.Mutation{Key: k, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: rec.Version, Value: rec.Value})
		all = append(all, rec)
	}
	// In one batch too, beside another space, with a condition on each key.
	var batch []store.Mutation
	for i, k := range keys[:6] {
		batch = append(batch, store.Mutation{Key: store.Key{Space: "other", Partition: k.Partition, Row: k.Row}, Expect: store.Expect{Kind: store.ExpectAbsent}, Version: int64(i)})
	}
	commit(t, s, batch...)
	slices.SortFunc(all, func(a, b store.Record) int { return a.Key.Compare(b.Key) })

	for _, want := range all {
		if got, ok := get(t, s, want.Key); !ok || !sameRecord(got, want) {
			t.Fatalf("Get of a %d-byte key: %v, %v", len(want.Key.Partition)+len(want.Key.Row), got.Version, ok)
		}
	}
	requireRecords(t, "SpaceRange", scanAll(t, s, store.SpaceRange(space)), all)
	for _, p := range []string{keys[0].Partition, keys[8].Partition, keys[16].Partition, "short"} {
		r := store.PartitionRange(space, p)
		requireRecords(t, "PartitionRange of a long partition", scanAll(t, s, r), within(all, r))
	}
	// Ranges starting and ending between keys that share all but their last characters.
	for _, from := range all {
		for _, to := range []store.Record{all[len(all)/2], all[len(all)-1]} {
			r := store.Range{Space: space, Start: from.Key, End: to.Key}
			requireRecords(t, "a range between long keys", scanAll(t, s, r), within(all, r))
		}
	}

	// Conditions, overwrites and deletions address the whole key, not a prefix of it.
	err := s.Commit(t.Context(), []store.Mutation{{Key: keys[1], Expect: store.Expect{Kind: store.ExpectAbsent}, Version: 99}})
	var cf *store.ConditionFailedError
	if !errors.As(err, &cf) || cf.Found == nil || cf.Found.Version != 2 {
		t.Fatalf("insert over an existing long key: %v, want a failed condition finding version 2", err)
	}
	commit(t, s, store.Mutation{Key: keys[1], Expect: store.Expect{Kind: store.ExpectVersion, Version: 2}, Delete: true})
	if _, ok := get(t, s, keys[1]); ok {
		t.Fatal("a deleted long key is still there")
	}
	if _, ok := get(t, s, keys[0]); !ok {
		t.Fatal("deleting a long key deleted another sharing its prefix")
	}
	if err := s.DeleteSpace(t.Context(), space); err != nil {
		t.Fatal(err)
	}
	if recs := scanAll(t, s, store.SpaceRange(space)); len(recs) != 0 {
		t.Fatalf("%d records left after DeleteSpace", len(recs))
	}
	if recs := scanAll(t, s, store.SpaceRange("other")); len(recs) != 6 {
		t.Fatalf("DeleteSpace of another space left %d of 6 records", len(recs))
	}
}
