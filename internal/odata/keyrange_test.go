package odata

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/edm"
)

// r builds a bounded range; u an unbounded one.
func r(spk, srk, epk, erk string) KeyRange {
	return KeyRange{StartPK: spk, StartRK: srk, EndPK: epk, EndRK: erk}
}

func u(spk, srk string) KeyRange { return KeyRange{StartPK: spk, StartRK: srk, EndUnbounded: true} }

func TestKeyRangesPlanScans(t *testing.T) {
	all := []KeyRange{u("", "")}
	cases := []struct {
		filter string
		want   []KeyRange
	}{
		{"Age gt 3", all},
		{"true", all},
		{"false", nil},
		{"RowKey eq '1'", []KeyRange{u("", "1")}}, // a RowKey alone constrains every partition
		{"not (RowKey eq '1')", all},
		{"Timestamp gt datetime'2021-01-01T00:00:00Z'", all},

		{"PartitionKey eq 'a'", []KeyRange{r("a", "", "a\x00", "")}},
		{"'a' eq PartitionKey", []KeyRange{r("a", "", "a\x00", "")}},
		{"PartitionKey eq ''", []KeyRange{r("", "", "\x00", "")}},
		{"PartitionKey eq 'a' and Age gt 3", []KeyRange{r("a", "", "a\x00", "")}},
		{"PartitionKey eq 'a' or Age gt 3", all},
		{"PartitionKey eq 'a' and RowKey eq '1'", []KeyRange{r("a", "1", "a", "1\x00")}},
		{"RowKey eq '1' and PartitionKey eq 'a'", []KeyRange{r("a", "1", "a", "1\x00")}},
		{"PartitionKey eq 'a' and RowKey ge 'x' and RowKey lt 'y'", []KeyRange{r("a", "x", "a", "y")}},
		{"PartitionKey eq 'a' and RowKey gt '1'", []KeyRange{r("a", "1\x00", "a\x00", "")}},
		{"PartitionKey eq 'a' and RowKey le '1'", []KeyRange{r("a", "", "a", "1\x00")}},
		{"PartitionKey eq 'a' and RowKey lt ''", nil},
		{"PartitionKey ge 'a' and PartitionKey lt 'b'", []KeyRange{r("a", "", "b", "")}},
		{"PartitionKey gt 'a' and PartitionKey le 'c'", []KeyRange{r("a\x00", "", "c\x00", "")}},
		{"PartitionKey ge 'a'", []KeyRange{u("a", "")}},
		{"PartitionKey lt 'a'", []KeyRange{r("", "", "a", "")}},
		{"PartitionKey ge 'a' and RowKey ge 'm'", []KeyRange{u("a", "m")}},
		{"PartitionKey ne 'a'", []KeyRange{r("", "", "a", ""), u("a\x00", "")}},
		{"not (PartitionKey lt 'm')", []KeyRange{u("m", "")}},
		{"not (PartitionKey ge 'a' and PartitionKey lt 'b')", []KeyRange{r("", "", "a", ""), u("b", "")}},
		{"(PartitionKey eq 'a' and RowKey eq '1') or (PartitionKey eq 'b' and RowKey eq '2')",
			[]KeyRange{r("a", "1", "a", "1\x00"), r("b", "2", "b", "2\x00")}},
		{"PartitionKey eq 'b' or PartitionKey eq 'a'", []KeyRange{r("a", "", "a\x00", ""), r("b", "", "b\x00", "")}},
		{"PartitionKey eq 'a' and (RowKey eq '3' or RowKey eq '1')",
			[]KeyRange{r("a", "1", "a", "1\x00"), r("a", "3", "a", "3\x00")}},
		{"PartitionKey eq 'a' and (RowKey lt '2' or RowKey ge '5')",
			[]KeyRange{r("a", "", "a", "2"), r("a", "5", "a\x00", "")}},
		{"PartitionKey eq 'a' and RowKey ge '1' or PartitionKey eq 'a' and RowKey lt '1'", []KeyRange{r("a", "", "a\x00", "")}},
		{"not (PartitionKey eq 'a' and RowKey eq '1')", []KeyRange{r("", "", "a", "1"), u("a", "1\x00")}},
		{"PartitionKey eq 'a' and PartitionKey eq 'b'", nil},
		{"PartitionKey eq 'a' and not (PartitionKey eq 'a')", nil},
		// Wider PartitionKey ranges are scanned whole, from the least RowKey allowed.
		{"PartitionKey ge 'p' and PartitionKey lt 'q' and (RowKey eq 'x' or PartitionKey eq 'p1')",
			[]KeyRange{r("p", "x", "p1\x00", ""), r("p1\x00", "x", "q", "")}},

		// A key compared with a non-string constant sorts first: lt holds for all, eq for none.
		{"PartitionKey eq 5", nil},
		{"PartitionKey lt 5", all},
		{"PartitionKey eq 'a' and RowKey gt true", nil},
		{"PartitionKey eq 'a' and RowKey ne true", []KeyRange{r("a", "", "a\x00", "")}},
		{"not (PartitionKey ge 5)", all},
		{"PartitionKey", nil}, // PartitionKey eq true
		{"not PartitionKey", all},
	}
	for _, c := range cases {
		got := mustParse(t, c.filter).KeyRanges()
		if !slices.Equal(got, c.want) {
			t.Errorf("KeyRanges(%s)\n got %s\nwant %s", c.filter, showRanges(got), showRanges(c.want))
		}
	}
}

func showRanges(rs []KeyRange) string {
	var b strings.Builder
	for _, r := range rs {
		if r.EndUnbounded {
			fmt.Fprintf(&b, "[(%q,%q), ∞) ", r.StartPK, r.StartRK)
		} else {
			fmt.Fprintf(&b, "[(%q,%q), (%q,%q)) ", r.StartPK, r.StartRK, r.EndPK, r.EndRK)
		}
	}
	return b.String()
}

func TestKeyRangesAreTheCallersToKeep(t *testing.T) {
	f := mustParse(t, "PartitionKey eq 'a'")
	f.KeyRanges()[0].StartPK = "changed"
	if got := f.KeyRanges()[0].StartPK; got != "a" {
		t.Errorf("KeyRanges shares its slice: StartPK = %q", got)
	}
}

func TestPointIdentifiesSingleKeyRanges(t *testing.T) {
	cases := []struct {
		r      KeyRange
		pk, rk string
		ok     bool
	}{
		{r("a", "1", "a", "1\x00"), "a", "1", true},
		{r("", "", "", "\x00"), "", "", true},
		{r("a", "1", "a", "1\x00\x00"), "", "", false},
		{r("a", "1", "a", "2"), "", "", false},
		{r("a", "1", "b", "1\x00"), "", "", false},
		{r("a", "", "a\x00", ""), "", "", false},
		{u("a", "1"), "", "", false},
	}
	for _, c := range cases {
		pk, rk, ok := c.r.Point()
		if pk != c.pk || rk != c.rk || ok != c.ok {
			t.Errorf("%s.Point() = %q, %q, %v; want %q, %q, %v", showRanges([]KeyRange{c.r}), pk, rk, ok, c.pk, c.rk, c.ok)
		}
	}
	pk, rk, ok := mustParse(t, "RowKey eq 'y' and PartitionKey eq 'x'").KeyRanges()[0].Point()
	if pk != "x" || rk != "y" || !ok {
		t.Errorf("point query planned as %q, %q, %v", pk, rk, ok)
	}
}

func TestContainsFollowsCompositeOrder(t *testing.T) {
	rg := r("a", "m", "c", "b")
	for _, c := range []struct {
		pk, rk string
		want   bool
	}{
		{"a", "l", false}, {"a", "m", true}, {"a", "z", true}, {"b", "", true},
		{"c", "a", true}, {"c", "b", false}, {"d", "", false}, {"", "z", false},
	} {
		if got := rg.Contains(c.pk, c.rk); got != c.want {
			t.Errorf("Contains(%q, %q) = %v", c.pk, c.rk, got)
		}
	}
	if !u("a", "m").Contains("zzz", "") || u("a", "m").Contains("a", "a") {
		t.Error("unbounded range")
	}
}

// checkPlan verifies the KeyRanges contract for f over entities: ranges are sorted and
// disjoint, and every entity f matches lies in one of them. It also checks that Match and
// MatchEntity agree.
func checkPlan(t *testing.T, filter string, f *Filter, entities []*edm.Entity) {
	t.Helper()
	rs := f.KeyRanges()
	for i := range rs {
		r := rs[i]
		if !r.EndUnbounded && !(r.StartPK < r.EndPK || r.StartPK == r.EndPK && r.StartRK < r.EndRK) {
			t.Fatalf("%s: empty range %s", filter, showRanges(rs[i:i+1]))
		}
		if i > 0 {
			p := rs[i-1]
			if p.EndUnbounded || p.EndPK > r.StartPK || p.EndPK == r.StartPK && p.EndRK > r.StartRK {
				t.Fatalf("%s: ranges out of order or overlapping: %s", filter, showRanges(rs))
			}
		}
	}
	for _, e := range entities {
		m := f.MatchEntity(e)
		if m != f.Match(lookupIn(e)) {
			t.Fatalf("%s: Match and MatchEntity disagree on (%q,%q)", filter, e.PartitionKey, e.RowKey)
		}
		if m && !slices.ContainsFunc(rs, func(r KeyRange) bool { return r.Contains(e.PartitionKey, e.RowKey) }) {
			t.Fatalf("%s matches (%q,%q) outside its KeyRanges %s", filter, e.PartitionKey, e.RowKey, showRanges(rs))
		}
	}
}

// keyAlphabet is small so that random filters and random entities meet often, and holds the
// edge cases of the successor arithmetic ("" and strings ending in \x00).
var keyAlphabet = []string{"", "\x00", "a", "a\x00", "aa", "ab", "b", "b\x00", "ba", "é"}

// randomFilter writes a random filter over PartitionKey, RowKey, a Boolean, an Int32 and
// constants, with every operator, both operand orders, not, and parentheses.
func randomFilter(rng *rand.Rand, depth int) string {
	if depth == 0 || rng.IntN(3) == 0 {
		quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
		var prop, lit string
		switch rng.IntN(10) {
		case 0:
			return []string{"true", "false", "Flag", "not Flag"}[rng.IntN(4)]
		case 1:
			prop, lit = "Age", fmt.Sprint(rng.IntN(5))
		case 2:
			prop, lit = []string{"PartitionKey", "RowKey"}[rng.IntN(2)], []string{"1", "true", "1.5", "X'00'"}[rng.IntN(4)]
		default:
			prop, lit = []string{"PartitionKey", "RowKey"}[rng.IntN(2)], quote(keyAlphabet[rng.IntN(len(keyAlphabet))])
		}
		op := ops[rng.IntN(len(ops))]
		if rng.IntN(4) == 0 {
			return lit + " " + op + " " + prop
		}
		return prop + " " + op + " " + lit
	}
	switch rng.IntN(4) {
	case 0:
		return "not (" + randomFilter(rng, depth-1) + ")"
	case 1:
		return "(" + randomFilter(rng, depth-1) + ")"
	case 2:
		return randomFilter(rng, depth-1) + " and " + randomFilter(rng, depth-1)
	}
	return randomFilter(rng, depth-1) + " or " + randomFilter(rng, depth-1)
}

func keyEntities() []*edm.Entity {
	var es []*edm.Entity
	for i, pk := range keyAlphabet {
		for j, rk := range keyAlphabet {
			es = append(es, &edm.Entity{PartitionKey: pk, RowKey: rk, Properties: []edm.Property{
				prop("Age", i32(int64((i+j)%5))),
				prop("Flag", boolean((i*j)%2 == 0)),
			}})
		}
	}
	return es
}

// TestKeyRangesContainEveryMatch is the property test: for random filters, every entity the
// filter matches lies inside its KeyRanges.
func TestKeyRangesContainEveryMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	entities := keyEntities()
	for range 3000 {
		s := randomFilter(rng, 4)
		f, err := ParseFilter(s)
		if err != nil {
			t.Fatalf("ParseFilter(%q): %v", s, err)
		}
		checkPlan(t, s, f, entities)
	}
}

// TestCompiledProgramAgreesWithTree checks the branch program against a direct recursive
// reading of the bound tree.
func TestCompiledProgramAgreesWithTree(t *testing.T) {
	var eval func(n *node, e *edm.Entity) bool
	eval = func(n *node, e *edm.Entity) bool {
		switch n.kind {
		case nodeConst:
			return n.val
		case nodeNot:
			return !eval(n.left, e)
		case nodeAnd:
			return eval(n.left, e) && eval(n.right, e)
		case nodeOr:
			return eval(n.left, e) || eval(n.right, e)
		}
		v, ok := lookupIn(e)(n.cmp.name)
		return ok && n.cmp.test(&v)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	entities := keyEntities()
	for range 2000 {
		s := randomFilter(rng, 4)
		p := parser{src: s, lex: lexer{src: s}}
		if err := p.advance(); err != nil {
			t.Fatal(err)
		}
		x, err := p.parseOr()
		if err != nil {
			t.Fatal(err)
		}
		b := binder{src: s}
		root, err := b.condition(x)
		if err != nil {
			t.Fatal(err)
		}
		f := compile(root)
		for _, e := range entities {
			if got, want := f.MatchEntity(e), eval(root, e); got != want {
				t.Fatalf("%s on (%q,%q): program %v, tree %v", s, e.PartitionKey, e.RowKey, got, want)
			}
		}
	}
}
