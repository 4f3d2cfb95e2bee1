package edm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestValidateKeyAllowsUpTo1024UTF16Units(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"", true},
		{strings.Repeat("k", 1024), true},
		{strings.Repeat("k", 1025), false},
		{strings.Repeat("é", 1024), true}, // 2048 bytes, 1024 units
		{strings.Repeat("é", 1025), false},
		{strings.Repeat("😀", 512), true}, // each is a surrogate pair
		{strings.Repeat("😀", 512) + "k", false},
	} {
		err := ValidateKey("RowKey", tc.key)
		if tc.ok {
			if err != nil {
				t.Errorf("%d bytes: %v", len(tc.key), err)
			}
			continue
		}
		requireAzErr(t, err, 400, azerr.PropertyValueTooLarge, "The property value exceeds the maximum allowed size (64KB).")
	}
}

func TestValidateKeyRejectsDisallowedCharacters(t *testing.T) {
	var bad []string
	for c := rune(0); c <= 0x1F; c++ {
		bad = append(bad, string(c))
	}
	for c := rune(0x7F); c <= 0x9F; c++ {
		bad = append(bad, string(c))
	}
	bad = append(bad, "/", `\`, "#", "?", "a/b", "é?", "😀\u0085", "ok\xff")
	for _, k := range bad {
		err := ValidateKey("PartitionKey", k)
		requireAzErr(t, err, 400, azerr.OutOfRangeInput, fmt.Sprintf("The 'PartitionKey' parameter of value '%s' is out of range.", k))
	}
	for _, k := range []string{" ", "a b", "'", `"`, "%", "+", "&", "~", "é€😀", "\u00a0", "\u2028", "\ufffd", "*", "()"} {
		if err := ValidateKey("RowKey", k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
}

func TestValidateChecksPropertyNames(t *testing.T) {
	valid := []string{"a", "A", "_", "_1", "a1", "Name", "名字", "éclair", "Ωmega", "aé\u0301", "a‿b", "Ⅻ", strings.Repeat("n", 255), strings.Repeat("名", 255)}
	for _, name := range valid {
		e := Entity{Properties: []Property{{name, Value{Type: Int32}}}}
		if err := e.Validate(); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	e := Entity{Properties: []Property{{strings.Repeat("n", 256), Value{Type: Int32}}}}
	requireAzErr(t, e.Validate(), 400, azerr.PropertyNameTooLong, "The property name exceeds the maximum allowed length (255).")
	e = Entity{Properties: []Property{{strings.Repeat("😀", 128), Value{Type: Int32}}}} // 256 units
	requireAzErr(t, e.Validate(), 400, azerr.PropertyNameTooLong, "")

	invalid := []string{"", "1x", "a-b", "a b", "a.b", "odata.etag", "a@odata.type", "$x", "x$", "\u0301a", "a\u200bb", "a\x00", "tab\t", "\xff", "😀", "PartitionKey", "RowKey", "Timestamp"}
	for _, name := range invalid {
		e := Entity{Properties: []Property{{name, Value{Type: Int32}}}}
		requireAzErr(t, e.Validate(), 400, azerr.PropertyNameInvalid, "The property name is invalid")
	}
}

func TestValidateAllows252CustomProperties(t *testing.T) {
	e := Entity{}
	for i := range 253 {
		e.Properties = append(e.Properties, Property{fmt.Sprintf("P%d", i), Value{Type: Boolean}})
	}
	requireAzErr(t, e.Validate(), 400, azerr.TooManyProperties, "The entity contains more properties than allowed.")
	e.Properties = e.Properties[:252]
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateLimitsStringAndBinaryValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Value
		ok   bool
	}{
		{"32K chars", Value{Type: String, Str: strings.Repeat("s", 32768)}, true},
		{"32K+1 chars", Value{Type: String, Str: strings.Repeat("s", 32769)}, false},
		{"32K 2-byte chars", Value{Type: String, Str: strings.Repeat("é", 32768)}, true},
		{"16K pairs", Value{Type: String, Str: strings.Repeat("😀", 16384)}, true},
		{"16K pairs + 1", Value{Type: String, Str: strings.Repeat("😀", 16384) + "s"}, false},
		{"64 KiB", Value{Type: Binary, Bin: make([]byte, 65536)}, true},
		{"64 KiB + 1", Value{Type: Binary, Bin: make([]byte, 65537)}, false},
	} {
		e := Entity{Properties: []Property{{"V", tc.v}}}
		err := e.Validate()
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		requireAzErr(t, err, 400, azerr.PropertyValueTooLarge, "The property value exceeds the maximum allowed size (64KB).")
	}
}

func TestValidateRejectsPropertiesWithoutAType(t *testing.T) {
	e := Entity{Properties: []Property{{"V", Value{}}}}
	requireAzErr(t, e.Validate(), 400, azerr.InvalidInput, "Property 'V' has no valid type")
}

func TestSizeCountsAsThePublishedApproximation(t *testing.T) {
	e := fixtureEntity()
	// 4 + 2*(2+2), then per property 8 + 2*len(name) + value.
	want := 4 + 8 +
		(8 + 6 + 4) + // Age Int32
		(8 + 10 + 8) + // Price Double
		(8 + 6 + 8) + // Big Int64
		(8 + 8 + 8) + // When DateTime
		(8 + 4 + 16) + // Id Guid
		(8 + 8 + 3 + 4) + // Blob Binary
		(8 + 10 + 8) + // Ratio Double
		(8 + 8 + 2 + 4) + // Name String "x"
		(8 + 4 + 1) // Ok Boolean
	if got := e.Size(); got != want {
		t.Fatalf("Size() = %d, want %d", got, want)
	}
	e = Entity{PartitionKey: "😀", RowKey: "é"}
	if got, want := e.Size(), 4+2*(2+1); got != want {
		t.Fatalf("Size() with non-BMP key = %d, want %d", got, want)
	}
}

func TestSizeOverIsExactAboveItsThresholdAndABoundBelow(t *testing.T) {
	// "é" is two UTF-8 bytes and one UTF-16 unit: the bound counts it twice.
	e := Entity{PartitionKey: "é", RowKey: "r", Properties: []Property{{"S", Value{Type: String, Str: strings.Repeat("é", 1000)}}}}
	exact, bound := e.Size(), e.sizeBound()
	if bound <= exact {
		t.Fatalf("bound %d not above the exact size %d: the test shows nothing", bound, exact)
	}
	for _, n := range []int{0, exact - 1, exact, bound - 1} {
		if got := e.SizeOver(n); got != exact {
			t.Errorf("SizeOver(%d) = %d, want the exact %d", n, got, exact)
		}
	}
	for _, n := range []int{bound, bound + 1, 1 << 20} {
		if got := e.SizeOver(n); got < exact || got > n {
			t.Errorf("SizeOver(%d) = %d, want between the exact %d and %d", n, got, exact, n)
		}
	}
}

func TestValidateAllowsEntitiesUpTo1MiB(t *testing.T) {
	// Eight 32K-character strings are 8*(8+2*2+65536+4) = 524,416 bytes; binaries fill the rest.
	// With "é" (two UTF-8 bytes, one UTF-16 unit) the strings' UTF-8 length overstates their
	// size, and the limit must still be judged on the UTF-16 count.
	for _, char := range []string{"s", "é"} {
		t.Run(char, func(t *testing.T) { testValidateAllowsEntitiesUpTo1MiB(t, char) })
	}
}

func testValidateAllowsEntitiesUpTo1MiB(t *testing.T, char string) {
	build := func(total int) Entity {
		e := Entity{PartitionKey: "p", RowKey: "r"}
		for i := range 8 {
			e.Properties = append(e.Properties, Property{fmt.Sprintf("S%d", i), Value{Type: String, Str: strings.Repeat(char, 32768)}})
		}
		for i := 0; e.Size() < total; i++ {
			name := fmt.Sprintf("B%d", i)
			room := total - e.Size() - (8 + 2*len(name) + 4)
			e.Properties = append(e.Properties, Property{name, Value{Type: Binary, Bin: make([]byte, min(room, MaxBinaryLength))}})
		}
		if e.Size() != total {
			t.Fatalf("built %d bytes, want %d", e.Size(), total)
		}
		return e
	}
	e := build(MaxEntitySize)
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	e = build(MaxEntitySize + 1)
	requireAzErr(t, e.Validate(), 400, azerr.EntityTooLarge, "The entity is larger than the maximum allowed size (1MB).")
}

func TestValidateChecksKeysFirst(t *testing.T) {
	e := Entity{PartitionKey: "a#b", Properties: []Property{{"1bad", Value{Type: Int32}}}}
	requireAzErr(t, e.Validate(), 400, azerr.OutOfRangeInput, "'PartitionKey'")
	e = Entity{RowKey: strings.Repeat("r", 1025)}
	requireAzErr(t, e.Validate(), 400, azerr.PropertyValueTooLarge, "")
}
