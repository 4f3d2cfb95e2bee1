package edm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// requireAzErr fails unless err is an *azerr.Error with the given status and code, and, when
// msgPart is not empty, a message containing it.
func requireAzErr(t *testing.T, err error, status int, code azerr.Code, msgPart string) {
	t.Helper()
	var ae *azerr.Error
	if !errors.As(err, &ae) {
		t.Fatalf("got error %v (%T), want *azerr.Error %d %s", err, err, status, code)
	}
	if ae.Status != status || ae.Code != code {
		t.Fatalf("got %d %s (%q), want %d %s", ae.Status, ae.Code, ae.Message, status, code)
	}
	if msgPart != "" && !strings.Contains(ae.Message, msgPart) {
		t.Fatalf("message %q does not contain %q", ae.Message, msgPart)
	}
}

func valueEqual(a, b Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case String, Guid:
		return a.Str == b.Str
	case Boolean, Int32, Int64, DateTime:
		return a.Int == b.Int
	case Double:
		if math.IsNaN(a.Float) {
			return math.IsNaN(b.Float)
		}
		return math.Float64bits(a.Float) == math.Float64bits(b.Float) // tells -0 from 0
	case Binary:
		return bytes.Equal(a.Bin, b.Bin)
	}
	return false
}

// diffEntities describes how got differs from want, or returns "".
func diffEntities(got, want *Entity) string {
	switch {
	case got.PartitionKey != want.PartitionKey:
		return fmt.Sprintf("PartitionKey %q, want %q", got.PartitionKey, want.PartitionKey)
	case got.RowKey != want.RowKey:
		return fmt.Sprintf("RowKey %q, want %q", got.RowKey, want.RowKey)
	case got.Timestamp != want.Timestamp:
		return fmt.Sprintf("Timestamp %v, want %v", got.Timestamp, want.Timestamp)
	case len(got.Properties) != len(want.Properties):
		return fmt.Sprintf("%d properties, want %d:\n got %+v\nwant %+v", len(got.Properties), len(want.Properties), got.Properties, want.Properties)
	}
	for i := range got.Properties {
		g, w := got.Properties[i], want.Properties[i]
		if g.Name != w.Name || !valueEqual(g.Value, w.Value) {
			return fmt.Sprintf("property %d is %q %+v, want %q %+v", i, g.Name, g.Value, w.Name, w.Value)
		}
	}
	return ""
}

// stringRunes mixes the characters that stress JSON escaping and UTF-16 counting.
var stringRunes = []rune("aZ09 _-.'\"\\/\x00\x01\x1f\x7f\u0080\u009féß€\u2028\u2029\ufeff\ufffd名字😀𝄞")

func randString(r *rand.Rand, maxLen int) string {
	n := r.IntN(maxLen + 1)
	var b strings.Builder
	for range n {
		b.WriteRune(stringRunes[r.IntN(len(stringRunes))])
	}
	return b.String()
}

var (
	nameStart = []rune("abcXYZ_éŽдΩ名")
	namePart  = []rune("abcXYZ_0189éŽдΩ名\u0301")
)

func randName(r *rand.Rand) string {
	var b strings.Builder
	b.WriteRune(nameStart[r.IntN(len(nameStart))])
	for range r.IntN(12) {
		b.WriteRune(namePart[r.IntN(len(namePart))])
	}
	return b.String()
}

func randGuid(r *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 36)
	for i := range b {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b[i] = '-'
		} else {
			b[i] = hex[r.IntN(16)]
		}
	}
	return string(b)
}

var specialDoubles = []float64{0, math.Copysign(0, -1), 5, -3, 0.1, 1e15, 1e-5, 1e-7, 123456789012345678, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}

func randValue(r *rand.Rand) Value {
	switch t := Type(1 + r.IntN(8)); t {
	case String:
		return Value{Type: t, Str: randString(r, 20)}
	case Boolean:
		return Value{Type: t, Int: int64(r.IntN(2))}
	case Int32:
		return Value{Type: t, Int: int64(int32(r.Uint32()))}
	case Int64:
		return Value{Type: t, Int: int64(r.Uint64())}
	case Double:
		if r.IntN(3) == 0 {
			return Value{Type: t, Float: specialDoubles[r.IntN(len(specialDoubles))]}
		}
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) {
			f = math.NaN() // payloads other than the canonical NaN do not survive "NaN"
		}
		return Value{Type: t, Float: f}
	case DateTime:
		return Value{Type: t, Int: int64(MinDateTime) + r.Int64N(int64(MaxDateTime-MinDateTime)+1)}
	case Guid:
		return Value{Type: t, Str: randGuid(r)}
	default:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return Value{Type: Binary, Bin: b}
	}
}

// randEntity returns an entity with unique, valid property names and any values.
func randEntity(r *rand.Rand) Entity {
	e := Entity{
		PartitionKey: randString(r, 10),
		RowKey:       randString(r, 10),
		Timestamp:    MinDateTime + Ticks(r.Int64N(int64(MaxDateTime-MinDateTime))),
	}
	seen := map[string]bool{}
	for range r.IntN(15) {
		name := randName(r)
		if seen[name] {
			continue
		}
		seen[name] = true
		e.Properties = append(e.Properties, Property{Name: name, Value: randValue(r)})
	}
	return e
}

// fixtureEntity is the entity of json-format.md §3.
func fixtureEntity() Entity {
	return Entity{
		PartitionKey: "p1",
		RowKey:       "r1",
		Timestamp:    TicksOf(time.Date(2021, 8, 2, 18, 1, 40, 192538800, time.UTC)),
		Properties: []Property{
			{"Age", Value{Type: Int32, Int: 23}},
			{"Price", Value{Type: Double, Float: 9}},
			{"Big", Value{Type: Int64, Int: 9007199254740993}},
			{"When", Value{Type: DateTime, Int: int64(TicksOf(time.Date(2008, 7, 10, 0, 0, 0, 0, time.UTC)))}},
			{"Id", Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
			{"Blob", Value{Type: Binary, Bin: []byte{1, 2, 3}}},
			{"Ratio", Value{Type: Double, Float: math.NaN()}},
			{"Name", Value{Type: String, Str: "x"}},
			{"Ok", Value{Type: Boolean, Int: 1}},
		},
	}
}

// requireAzErrStatus checks that err is an *azerr.Error with the given status.
func requireAzErrStatus(t *testing.T, err error, status int) {
	t.Helper()
	var ae *azerr.Error
	if !errors.As(err, &ae) || ae.Status != status {
		t.Fatalf("got error %v (%T), want an *azerr.Error with status %d", err, err, status)
	}
}
