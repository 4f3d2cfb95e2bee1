package edm

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestLookupBinaryFindsWhatUnmarshalFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		e := randEntity(rng)
		b := e.MarshalBinary()
		var full Entity
		if err := UnmarshalBinary(b, &full); err != nil {
			t.Fatal(err)
		}
		for _, p := range full.Properties {
			v, found, err := LookupBinary(b, p.Name)
			if err != nil || !found || !sameValue(v, p.Value) {
				t.Fatalf("LookupBinary(%q) = %+v, %v, %v; want %+v", p.Name, v, found, err, p.Value)
			}
		}
		if _, found, err := LookupBinary(b, "NoSuchProperty_"); found || err != nil {
			t.Fatalf("a missing property was found (%v)", err)
		}
	}
}

func sameValue(a, b Value) bool {
	if len(a.Bin) == 0 && len(b.Bin) == 0 {
		a.Bin, b.Bin = nil, nil
	}
	if a.Type == Double && a.Float != a.Float && b.Float != b.Float {
		return true // NaN
	}
	return reflect.DeepEqual(a, b)
}

func TestLookupBinaryRejectsCorruptRecords(t *testing.T) {
	e := Entity{Properties: []Property{{Name: "A", Value: Value{Type: String, Str: "hello"}}, {Name: "B", Value: Value{Type: Int32, Int: 7}}}}
	b := e.MarshalBinary()
	for cut := 1; cut < len(b)-1; cut++ {
		if _, found, err := LookupBinary(b[:cut], "B"); found && err == nil {
			t.Fatalf("a record cut at %d bytes still yielded B", cut)
		}
	}
}
