package pebble

import (
	"bytes"
	"math"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
)

// components holds key components that stress the encoding: empty, embedded and trailing
// 0x00, the escape bytes themselves, prefixes of one another, bytes ≥ 0x80 and multi-byte
// UTF-8.
var components = []string{
	"", "\x00", "\x00\x00", "\x00\x01", "\x00\xff", "\x01", "\xff", "\xff\xff",
	"a", "a\x00", "a\x00\x00", "a\x00b", "a\x01", "a\xff", "ab", "b",
	"\x80", "é", "日本", "\U0001F600",
}

func TestKeyEncodingIsPinned(t *testing.T) {
	// The encoding is the on-disk format: these bytes must never change.
	tests := []struct {
		key  store.Key
		want string
	}{
		{store.Key{}, "\x00\x01\x00\x01\x00\x01"},
		{store.Key{Space: "t", Partition: "p", Row: "r"}, "t\x00\x01p\x00\x01r\x00\x01"},
		{store.Key{Space: "t", Partition: "a\x00b", Row: "\x00"}, "t\x00\x01a\x00\xffb\x00\x01\x00\xff\x00\x01"},
		{store.Key{Space: "\xff", Partition: "é", Row: ""}, "\xff\x00\x01\xc3\xa9\x00\x01\x00\x01"},
	}
	for _, tc := range tests {
		if got := appendKey(nil, tc.key); string(got) != tc.want {
			t.Errorf("appendKey(%v) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestKeyEncodingOrdersLikeKeyCompareAndRoundTrips(t *testing.T) {
	var keys []store.Key
	for _, s := range components[:8] {
		for _, p := range components {
			for _, r := range components[8:] {
				keys = append(keys, store.Key{Space: s, Partition: p, Row: r})
			}
		}
	}
	encoded := make([][]byte, len(keys))
	for i, k := range keys {
		encoded[i] = appendKey(nil, k)
		got, err := decodeKey(encoded[i])
		if err != nil || got != k {
			t.Fatalf("decodeKey(appendKey(%v)) = %v, %v", k, got, err)
		}
	}
	for i := range keys {
		for j := range keys {
			if want, got := keys[i].Compare(keys[j]), bytes.Compare(encoded[i], encoded[j]); got != want {
				t.Fatalf("%v vs %v: encoded compare %d, Key.Compare %d", keys[i], keys[j], got, want)
			}
		}
	}
}

func TestRangeBoundsEncloseExactlyTheRange(t *testing.T) {
	for _, s := range components {
		for _, p := range components {
			for _, other := range components {
				for _, row := range []string{"", "\x00", "z", "\xff"} {
					k := store.Key{Space: other, Partition: p + row, Row: row}
					checkRangeBounds(t, store.SpaceRange(s), k)
					checkRangeBounds(t, store.PartitionRange(s, p), k)
					k.Space = s
					checkRangeBounds(t, store.PartitionRange(s, p), k)
				}
			}
		}
	}
}

// checkRangeBounds fails t unless k's encoding lies within the encoded bounds of r exactly
// when r contains k.
func checkRangeBounds(t *testing.T, r store.Range, k store.Key) {
	t.Helper()
	lower, upper, err := rangeBounds(r)
	if err != nil {
		t.Fatalf("rangeBounds(%+v): %v", r, err)
	}
	enc := appendKey(nil, k)
	inside := bytes.Compare(lower, enc) <= 0 && bytes.Compare(enc, upper) < 0
	if inside != r.Contains(k) {
		t.Fatalf("key %v: within encoded bounds of %+v = %v, Range.Contains = %v", k, r, inside, r.Contains(k))
	}
}

func TestRangeBoundsRejectKeysOfAnotherSpace(t *testing.T) {
	for _, r := range []store.Range{
		{Space: "t", Start: store.Key{Partition: "p"}, EndUnbounded: true},
		{Space: "t", Start: store.Key{Space: "t"}, End: store.Key{Space: "u"}},
	} {
		if _, _, err := rangeBounds(r); err == nil {
			t.Errorf("rangeBounds(%+v) accepted a bound outside the space", r)
		}
	}
}

func TestDecodeKeyRejectsCorruptEncodings(t *testing.T) {
	for _, b := range []string{
		"",
		"t",
		"t\x00",                               // escape at the end
		"t\x00\x02p\x00\x01r\x00\x01",         // unknown escape
		"t\x00\x01p\x00\x01",                  // two components
		"t\x00\x01p\x00\x01r\x00\x01x",        // trailing bytes
		"t\x00\x01p\x00\x01r\x00\x01\x00\x01", // four components
	} {
		if k, err := decodeKey([]byte(b)); err == nil {
			t.Errorf("decodeKey(%q) = %v, want an error", b, k)
		}
	}
}

func TestValueEncodingRoundTrips(t *testing.T) {
	for _, version := range []int64{math.MinInt64, -1, 0, 1, 638_000_000_000_000_000, math.MaxInt64} {
		for _, value := range [][]byte{nil, {0}, []byte("entity\x00\xff")} {
			b := make([]byte, versionLen+len(value))
			putValue(b, version, value)
			gotVersion, gotValue, err := decodeValue(b)
			if err != nil || gotVersion != version || !bytes.Equal(gotValue, value) {
				t.Errorf("decodeValue(putValue(%d, %q)) = %d, %q, %v", version, value, gotVersion, gotValue, err)
			}
		}
	}
	if _, _, err := decodeValue([]byte{1, 2, 3}); err == nil {
		t.Error("decodeValue accepted a value shorter than its version")
	}
}

func FuzzKeyEncoding(f *testing.F) {
	f.Add("t", "a", "", "t", "a\x00", "")
	f.Add("a", "", "\x00", "a\x00", "", "")
	f.Add("\xff", "é", "x", "\xff\x00", "", "\x00\xff")
	f.Fuzz(func(t *testing.T, s1, p1, r1, s2, p2, r2 string) {
		a := store.Key{Space: s1, Partition: p1, Row: r1}
		b := store.Key{Space: s2, Partition: p2, Row: r2}
		ea, eb := appendKey(nil, a), appendKey(nil, b)
		if got, want := bytes.Compare(ea, eb), a.Compare(b); got != want {
			t.Fatalf("%v vs %v: encoded compare %d, Key.Compare %d", a, b, got, want)
		}
		if got, err := decodeKey(ea); err != nil || got != a {
			t.Fatalf("decodeKey(appendKey(%v)) = %v, %v", a, got, err)
		}
		checkRangeBounds(t, store.SpaceRange(s1), b)
		checkRangeBounds(t, store.PartitionRange(s1, p1), b)
		if s1 == s2 {
			checkRangeBounds(t, store.Range{Space: s1, Start: a, End: store.Key{Space: s1, Partition: p2}}, b)
		}
	})
}

func BenchmarkKeyEncode(b *testing.B) {
	k := store.Key{
		Space:     "t_customers",
		Partition: "contoso-eu-west",
		Row:       "0f8fad5b-d9cb-469f-a165-70867728950e",
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = appendKey(buf[:0], k)
	}
	b.SetBytes(int64(len(buf)))
}
