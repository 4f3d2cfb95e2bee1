package odata

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/edm"
)

func ticks(s string) edm.Ticks {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return edm.TicksOf(t)
}

func str(s string) edm.Value                  { return edm.Value{Type: edm.String, Str: s} }
func i32(v int64) edm.Value                   { return edm.Value{Type: edm.Int32, Int: v} }
func i64(v int64) edm.Value                   { return edm.Value{Type: edm.Int64, Int: v} }
func dbl(v float64) edm.Value                 { return edm.Value{Type: edm.Double, Float: v} }
func boolean(v bool) edm.Value                { return edm.Value{Type: edm.Boolean, Int: map[bool]int64{true: 1}[v]} }
func datetime(s string) edm.Value             { return edm.Value{Type: edm.DateTime, Int: int64(ticks(s))} }
func guid(s string) edm.Value                 { return edm.Value{Type: edm.Guid, Str: s} }
func binary(b ...byte) edm.Value              { return edm.Value{Type: edm.Binary, Bin: b} }
func prop(n string, v edm.Value) edm.Property { return edm.Property{Name: n, Value: v} }

// sample holds one property of every type, plus boundary values, for the matrix below.
var sample = &edm.Entity{
	PartitionKey: "pk1",
	RowKey:       "rk1",
	Timestamp:    ticks("2021-06-01T12:00:00Z"),
	Properties: []edm.Property{
		prop("Str", str("b")),
		prop("Empty", str("")),
		prop("Quote", str("O'Brien")),
		prop("Uni", str("é")),
		prop("I32", i32(3)),
		prop("Neg", i32(math.MinInt32)),
		prop("I64", i64(3)),
		prop("Big", i64(9007199254740993)),
		prop("Dbl", dbl(3)),
		prop("NotANumber", dbl(math.NaN())),
		prop("Bool", boolean(true)),
		prop("No", boolean(false)),
		prop("DT", datetime("2020-01-22T00:00:00Z")),
		prop("Frac", datetime("2020-01-22T00:00:00.1234567Z")),
		prop("Guid", guid("68260b3f-beab-45e2-b900-33e2b442e724")),
		prop("Bin", binary(0x03)),
		prop("Größe", i32(1)),
	},
}

// lookupIn adapts an entity to Match, the way a caller with a decoded row would.
func lookupIn(e *edm.Entity) func(string) (edm.Value, bool) {
	return func(name string) (edm.Value, bool) {
		switch name {
		case "PartitionKey":
			return str(e.PartitionKey), true
		case "RowKey":
			return str(e.RowKey), true
		case "Timestamp":
			return edm.Value{Type: edm.DateTime, Int: int64(e.Timestamp)}, true
		}
		return e.Get(name)
	}
}

func mustParse(t testing.TB, s string) *Filter {
	t.Helper()
	f, err := ParseFilter(s)
	if err != nil {
		t.Fatalf("ParseFilter(%q): %v", s, err)
	}
	return f
}

var ops = [6]string{"eq", "ne", "lt", "le", "gt", "ge"}

// TestComparisonMatrix compares each property type with each literal form under all six
// operators. want lists the outcome for eq ne lt le gt ge, T or F.
func TestComparisonMatrix(t *testing.T) {
	const mismatch = "FTTTFF" // another type: the property sorts before the literal
	const missing = "FFFFFF"
	rows := []struct {
		prop, literal, want string
	}{
		// Strings compare bytewise and case-sensitively.
		{"Str", "'b'", "TFFTFT"},
		{"Str", "'B'", "FTFFTT"},
		{"Str", "'bB'", "FTTTFF"},
		{"Str", "''", "FTFFTT"},
		{"Empty", "''", "TFFTFT"},
		{"Empty", "'a'", "FTTTFF"},
		{"Quote", "'O''Brien'", "TFFTFT"},
		{"Quote", "'O'''", "FTFFTT"},
		{"Uni", "'é'", "TFFTFT"},
		{"Uni", "'z'", "FTFFTT"},
		{"Str", "3", mismatch},
		{"Str", "3L", mismatch},
		{"Str", "3.0", mismatch},
		{"Str", "true", mismatch},
		{"Str", "datetime'2020-01-22T00:00:00Z'", mismatch},
		{"Str", "guid'68260b3f-beab-45e2-b900-33e2b442e724'", mismatch},
		{"Str", "X'03'", mismatch},

		// Int32 properties compare only with Int32 literals.
		{"I32", "2", "FTFFTT"},
		{"I32", "3", "TFFTFT"},
		{"I32", "4", "FTTTFF"},
		{"I32", "-5", "FTFFTT"},
		{"I32", "003", "TFFTFT"},
		{"I32", "2147483647", "FTTTFF"},
		{"I32", "3L", mismatch},
		{"I32", "2L", mismatch},
		{"I32", "3.0", mismatch},
		{"I32", "2.5", mismatch},
		{"I32", "3D", mismatch},
		{"I32", "'3'", mismatch},
		{"I32", "true", mismatch},
		{"Neg", "-2147483648", "TFFTFT"},
		{"Neg", "-2147483647", "FTTTFF"},

		// Int64 properties take Int32 literals too, widened.
		{"I64", "2", "FTFFTT"},
		{"I64", "3", "TFFTFT"},
		{"I64", "4", "FTTTFF"},
		{"I64", "3L", "TFFTFT"},
		{"I64", "2l", "FTFFTT"},
		{"I64", "3.0", mismatch},
		{"I64", "2.0", mismatch},
		{"I64", "'3'", mismatch},
		{"Big", "9007199254740993L", "TFFTFT"},
		{"Big", "9007199254740992L", "FTFFTT"},
		{"Big", "9223372036854775807L", "FTTTFF"},
		{"Big", "-9223372036854775808L", "FTFFTT"},
		{"Big", "2147483647", "FTFFTT"},

		// Double properties take every numeric literal, widened.
		{"Dbl", "2", "FTFFTT"},
		{"Dbl", "3", "TFFTFT"},
		{"Dbl", "4", "FTTTFF"},
		{"Dbl", "3L", "TFFTFT"},
		{"Dbl", "4L", "FTTTFF"},
		{"Dbl", "3.0", "TFFTFT"},
		{"Dbl", "3.0E0", "TFFTFT"},
		{"Dbl", "30e-1", "TFFTFT"},
		{"Dbl", "0.3E+1", "TFFTFT"},
		{"Dbl", "3D", "TFFTFT"},
		{"Dbl", "3d", "TFFTFT"},
		{"Dbl", "2.5e-3", "FTFFTT"},
		{"Dbl", "3.5", "FTTTFF"},
		{"Dbl", "-1E+20", "FTFFTT"},
		{"Dbl", "INF", "FTTTFF"},
		{"Dbl", "-INF", "FTFFTT"},
		{"Dbl", "NaN", "FTFFTT"},
		{"Dbl", "true", mismatch},
		{"Dbl", "'3'", mismatch},
		{"NotANumber", "NaN", "TFFTFT"},
		{"NotANumber", "0.0", "FTTTFF"},
		{"NotANumber", "-INF", "FTTTFF"},

		// Booleans: false < true.
		{"Bool", "true", "TFFTFT"},
		{"Bool", "false", "FTFFTT"},
		{"No", "false", "TFFTFT"},
		{"No", "true", "FTTTFF"},
		// Boolean literals are read in any case, as Azure reads them (Azure/Azurite#1947).
		{"Bool", "True", "TFFTFT"},
		{"Bool", "TRUE", "TFFTFT"},
		{"Bool", "truE", "TFFTFT"},
		{"Bool", "FALSE", "FTFFTT"},
		{"No", "False", "TFFTFT"},
		{"Bool", "1", mismatch},
		{"Bool", "'true'", mismatch},

		// DateTimes compare by 100 ns ticks, whatever the literal's spelling.
		{"DT", "datetime'2020-01-22T00:00:00Z'", "TFFTFT"},
		{"DT", "datetime'2019-01-22T00:00:00Z'", "FTFFTT"},
		{"DT", "datetime'2021-01-22T00:00:00Z'", "FTTTFF"},
		{"DT", "datetime'2020-01-22T00:00:00.0000000Z'", "TFFTFT"},
		{"DT", "datetime'2020-01-22T00:00:00.000000Z'", "TFFTFT"},
		{"DT", "datetime'2020-01-22T00:00:00.000Z'", "TFFTFT"},
		{"DT", "datetime'2020-01-22T00:00:00'", "TFFTFT"},
		{"DT", "datetime'2020-01-22T00:00Z'", "TFFTFT"},
		{"DT", "datetime'2020-01-22T01:00:00+01:00'", "TFFTFT"},
		{"DT", "datetime'2020-01-21T23:30:00-00:30'", "TFFTFT"},
		{"DT", "DateTime'2020-01-22T00:00:00Z'", "TFFTFT"},
		{"DT", "datetime'2020-01-22T00:00:00.0000001Z'", "FTTTFF"},
		{"DT", "datetime'1600-01-01T00:00:00Z'", "FTFFTT"},
		{"DT", "datetime'0001-01-01T00:00:00Z'", "FTFFTT"},
		{"DT", "datetime'9999-12-31T23:59:59.9999999Z'", "FTTTFF"},
		{"DT", "'2020-01-22T00:00:00Z'", mismatch},
		{"DT", "3", mismatch},
		{"Frac", "datetime'2020-01-22T00:00:00.1234567Z'", "TFFTFT"},
		{"Frac", "datetime'2020-01-22T00:00:00.12345678Z'", "TFFTFT"},
		{"Frac", "datetime'2020-01-22T00:00:00.1234566Z'", "FTFFTT"},
		{"Frac", "datetime'2020-01-22T00:00:00.123Z'", "FTFFTT"},

		// Guids: equal whatever the literal's case, ordered by canonical text.
		{"Guid", "guid'68260b3f-beab-45e2-b900-33e2b442e724'", "TFFTFT"},
		{"Guid", "guid'68260B3F-BEAB-45E2-B900-33E2B442E724'", "TFFTFT"},
		{"Guid", "GUID'68260b3f-beab-45e2-b900-33e2b442e724'", "TFFTFT"},
		{"Guid", "guid'58260b3f-beab-45e2-b900-33e2b442e724'", "FTFFTT"},
		{"Guid", "guid'78260b3f-beab-45e2-b900-33e2b442e724'", "FTTTFF"},
		{"Guid", "'68260b3f-beab-45e2-b900-33e2b442e724'", mismatch},

		// Binary: bytewise, a prefix first; hex in either case.
		{"Bin", "X'03'", "TFFTFT"},
		{"Bin", "x'03'", "TFFTFT"},
		{"Bin", "binary'03'", "TFFTFT"},
		{"Bin", "X'02'", "FTFFTT"},
		{"Bin", "X'0301'", "FTTTFF"},
		{"Bin", "X'FF'", "FTTTFF"},
		{"Bin", "X''", "FTFFTT"},
		{"Bin", "'03'", mismatch},

		// System properties.
		{"PartitionKey", "'pk1'", "TFFTFT"},
		{"PartitionKey", "'pk'", "FTFFTT"},
		{"PartitionKey", "'pk2'", "FTTTFF"},
		{"PartitionKey", "'PK1'", "FTFFTT"},
		{"PartitionKey", "1", mismatch},
		{"RowKey", "'rk1'", "TFFTFT"},
		{"RowKey", "'rk10'", "FTTTFF"},
		{"Timestamp", "datetime'2021-01-01T00:00:00Z'", "FTFFTT"},
		{"Timestamp", "datetime'2021-06-01T12:00:00.0000000Z'", "TFFTFT"},
		{"Timestamp", "'2021-06-01T12:00:00Z'", mismatch},

		{"Größe", "1", "TFFTFT"},

		// A property the entity lacks fails every comparison, ne included.
		{"Nope", "'x'", missing},
		{"Nope", "3", missing},
		{"Nope", "true", missing},
		{"Nope", "datetime'2020-01-22T00:00:00Z'", missing},
		{"str", "'b'", missing}, // names are case-sensitive
	}
	for _, r := range rows {
		for i, op := range ops {
			filter := r.prop + " " + op + " " + r.literal
			want := r.want[i] == 'T'
			f := mustParse(t, filter)
			if got := f.MatchEntity(sample); got != want {
				t.Errorf("MatchEntity(%s) = %v, want %v", filter, got, want)
			}
			if got := f.Match(lookupIn(sample)); got != want {
				t.Errorf("Match(%s) = %v, want %v", filter, got, want)
			}
		}
	}
}

// TestLiteralFirstMirrorsTheOperator checks that `5 lt Age` means `Age gt 5`.
func TestLiteralFirstMirrorsTheOperator(t *testing.T) {
	cases := []struct {
		filter string
		want   bool
	}{
		{"3 eq I32", true},
		{"2 lt I32", true},
		{"4 lt I32", false},
		{"3 le I32", true},
		{"4 gt I32", true},
		{"3 ge I32", true},
		{"2 ge I32", false},
		{"3 ne I32", false},
		{"'b' eq Str", true},
		{"'a' lt Str", true},
		{"'c' le Str", false},
		{"datetime'2019-01-01T00:00:00Z' lt DT", true},
		{"'pk1' eq PartitionKey", true},
		{"3.0 gt I32", true}, // I32 lt 3.0: a mismatch, the property sorts first
		{"'x' eq Nope", false},
	}
	for _, c := range cases {
		if got := mustParse(t, c.filter).MatchEntity(sample); got != c.want {
			t.Errorf("%s = %v, want %v", c.filter, got, c.want)
		}
	}
}

func TestLogicAndPrecedence(t *testing.T) {
	cases := []struct {
		filter string
		want   bool
	}{
		// and binds tighter than or.
		{"Str eq 'b' or I32 eq 99 and Bool eq false", true},
		{"(Str eq 'b' or I32 eq 99) and Bool eq false", false},
		{"Str eq 'x' or I32 eq 3 and Bool eq true", true},
		{"Str eq 'x' and I32 eq 3 or Bool eq true", true},
		{"Str eq 'x' and (I32 eq 3 or Bool eq true)", false},
		{"I32 gt 1 and I32 lt 5 and Dbl ge 3 and Str ne 'a'", true},
		{"I32 gt 5 or I32 lt 1 or Str eq 'nope' or Bool eq false", false},
		{"((((I32 eq 3))))", true},

		// not, with and without a space before the parenthesis.
		{"not (Str eq 'b')", false},
		{"not(Str eq 'b')", false},
		{"not (Str eq 'x')", true},
		{"not not (Str eq 'b')", true},
		{"not (Str eq 'x') and not (I32 eq 4)", true},
		{"not (Str eq 'b' or I32 eq 4)", false},
		{"(Age gt 30 or Age lt 10) and not (Name eq 'x')", false},

		// Two-valued logic: a missing property fails the comparison, so not succeeds.
		{"not (Nope eq 1)", true},
		{"not (Nope ne 1)", true},
		{"Nope ne 1 or not (Nope eq 1)", true},

		// Mismatched types are not "unknown" either.
		{"not (Str lt 3)", false},
		{"not (Str gt 3)", true},

		// Bare properties mean `property eq true`.
		{"Bool", true},
		{"No", false},
		{"not Bool", false},
		{"not No", true},
		{"(Bool)", true},
		{"Bool and I32 eq 3", true},
		{"Str", false},
		{"not Str", true},
		{"Nope", false},
		{"not Nope", true},

		// true and false stand as conditions (the .NET SDK's LINQ translator emits them).
		{"true", true},
		{"false", false},
		{"not true", false},
		{"(true and RowKey eq 'rk1') and ((false or PartitionKey eq 'x') or PartitionKey eq 'pk1')", true},
		{"false or false or I32 eq 3", true},
		{"true and false", false},
		{"TRUE and not FALSE", true},
		{"(True)", true},

		// Tokens may touch parentheses and string literals; any whitespace separates.
		{"(PartitionKey eq 'pk1')or(Bool eq false)", true},
		{"(Bool eq true)", true},
		{"PartitionKey eq 'pk1'and RowKey eq 'rk1'", true},
		{"  Str   eq\t'b'  ", true},
		{"Str\neq\r\n'b'", true},
		{"Str\u00a0eq\u3000'b'", true},

		// Keywords are contextual: they can name properties.
		{"not (and eq 1)", true},
	}
	for _, c := range cases {
		f := mustParse(t, c.filter)
		if got := f.MatchEntity(sample); got != c.want {
			t.Errorf("MatchEntity(%s) = %v, want %v", c.filter, got, c.want)
		}
		if got := f.Match(lookupIn(sample)); got != c.want {
			t.Errorf("Match(%s) = %v, want %v", c.filter, got, c.want)
		}
	}
}

func TestEmptyFilterMatchesEverything(t *testing.T) {
	for _, s := range []string{"", " ", "\t\n"} {
		f, err := ParseFilter(s)
		if err != nil || f != nil {
			t.Fatalf("ParseFilter(%q) = %v, %v; want nil, nil", s, f, err)
		}
		if !f.MatchEntity(sample) || !f.Match(lookupIn(sample)) {
			t.Errorf("nil filter does not match")
		}
		if got := f.KeyRanges(); len(got) != 1 || got[0] != (KeyRange{EndUnbounded: true}) {
			t.Errorf("nil filter KeyRanges = %v", got)
		}
	}
}

// TestMatchStopsAtTheDecidingComparison checks short-circuiting: comparisons after the
// outcome is known are not looked up.
func TestMatchStopsAtTheDecidingComparison(t *testing.T) {
	cases := []struct {
		filter string
		looked string
	}{
		{"A eq 1 and B eq 1 and C eq 1", "A"},      // A fails
		{"Z eq 1 or B eq 1 or C eq 1", "Z"},        // Z holds
		{"(A eq 1 or Z eq 1) and B eq 2", "A Z B"}, // A fails, Z holds, B decides
		{"not (Z eq 1) or A eq 1", "Z A"},          // not fails on Z, A decides
		{"A eq 1 and (B eq 1 or C eq 1) or Z eq 1", "A Z"},
	}
	for _, c := range cases {
		var looked []string
		mustParse(t, c.filter).Match(func(name string) (edm.Value, bool) {
			looked = append(looked, name)
			if name == "Z" {
				return i32(1), true
			}
			return i32(0), true
		})
		if got := strings.Join(looked, " "); got != c.looked {
			t.Errorf("%s looked up %q, want %q", c.filter, got, c.looked)
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	f := mustParse(t, "PartitionKey eq 'pk1' and (Str eq 'b' or I32 gt 2) and not (Bin eq X'01') and Timestamp ge datetime'2020-01-01T00:00:00Z'")
	lookup := lookupIn(sample)
	if n := testing.AllocsPerRun(100, func() { f.MatchEntity(sample) }); n != 0 {
		t.Errorf("MatchEntity allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { f.Match(lookup) }); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}
