package table

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/odata"
)

func TestKeyRangesOfNamesBoundTheLowerCasedKeys(t *testing.T) {
	for _, tc := range []struct {
		filter string
		want   []keyRange
	}{
		{"", []keyRange{{endUnbounded: true}}},
		{"TableName eq 'MyTable'", []keyRange{{start: "mytable", end: "mytable\x00"}}},
		// The recorded prefix query: only zzza… keys are read, zzzb4 is not.
		{"TableName ge 'zzza' and TableName lt 'zzzb'", []keyRange{{start: "zzza", end: "zzzb"}}},
		// A prefix query as the Python SDK writes it (name_starts_with).
		{"TableName ge 'Abc' and TableName lt 'Abd'", []keyRange{{start: "abc", end: "abd"}}},
		// Upper-case names sort before lower-case ones but their keys do not: 'Zebra' < 'b'
		// yet its key 'zebra' > 'b', so a bound below 'b' cannot end the key range at 'b'.
		{"TableName lt 'b'", []keyRange{{start: "", end: "{"}}},
		{"TableName eq 'a' or TableName eq 'A'", []keyRange{{start: "a", end: "a\x00"}}},
		{"TableName ge 'a_' and TableName lt 'a`'", nil}, // no name holds '_'
		{"TableName gt 'm'", []keyRange{{start: "m\x00", endUnbounded: true}}},
		{"TableName eq 'x' and TableName eq 'y'", nil},
	} {
		f, err := odata.ParseFilter(tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		got := keyRangesOfNames(f.TableNameRanges())
		if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: got %+v, want %+v", tc.filter, got, tc.want)
		}
	}
}

// TestKeyRangesOfNamesAreSound draws table names and name intervals at random: the key of
// every name inside an interval must lie inside the key ranges planned for it.
func TestKeyRangesOfNamesAreSound(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const alphabet = "09AZaz_bBmMyY`{["
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	name := func() string {
		const letters = "aAbBmMyYzZ09"
		var b strings.Builder
		b.WriteByte("aAbBzZ"[r.IntN(6)])
		for range 2 + r.IntN(3) {
			b.WriteByte(letters[r.IntN(len(letters))])
		}
		return b.String()
	}
	for range 20000 {
		lo, hi := word(r.IntN(4)), word(r.IntN(4))
		in := odata.StringRange{Start: lo, End: hi, EndUnbounded: r.IntN(5) == 0}
		if !in.EndUnbounded && lo >= hi {
			continue
		}
		ranges := keyRangesOfNames([]odata.StringRange{in})
		for range 20 {
			n := name()
			if n < lo || !in.EndUnbounded && n >= hi {
				continue
			}
			key := strings.ToLower(n)
			inside := false
			for _, kr := range ranges {
				if key >= kr.start && (kr.endUnbounded || key < kr.end) {
					inside = true
				}
			}
			if !inside {
				t.Fatalf("name %q in [%q, %q) has key %q outside %+v", n, lo, hi, key, ranges)
			}
		}
	}
}

func TestQueryTablesPagesStopAtTheLastMatch(t *testing.T) {
	ctx := context.Background()
	s := newTestService(t)
	for _, name := range []string{"zzza0", "zzza1", "zzza2", "zzza3", "zzzb4", "Zzza5"} {
		if _, err := s.CreateTable(ctx, "acct", name); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := odata.ParseFilter("TableName ge 'zzza' and TableName lt 'zzzb'")
	p1, err := s.QueryTables(ctx, "acct", TableQuery{Filter: f, Top: 2})
	if err != nil || len(p1.Tables) != 2 || p1.Tables[1].Name != "zzza1" || p1.NextTableName != "zzza2" {
		t.Fatalf("page 1: %+v %v", p1, err)
	}
	p2, err := s.QueryTables(ctx, "acct", TableQuery{Filter: f, Top: 2, NextTableName: p1.NextTableName})
	if err != nil || len(p2.Tables) != 2 || p2.Tables[1].Name != "zzza3" || p2.NextTableName != "" {
		t.Fatalf("page 2: %+v %v", p2, err)
	}
	// Zzza5 is keyed zzza5, inside the key range, but its name sorts before 'zzza': it is read
	// and left out, and it does not make the service promise another page.
	all, err := s.QueryTables(ctx, "acct", TableQuery{Filter: f})
	if err != nil || len(all.Tables) != 4 || all.NextTableName != "" {
		t.Fatalf("all: %+v %v", all, err)
	}
	upper, _ := odata.ParseFilter("TableName eq 'Zzza5'")
	one, err := s.QueryTables(ctx, "acct", TableQuery{Filter: upper})
	if err != nil || len(one.Tables) != 1 || one.Tables[0].Name != "Zzza5" {
		t.Fatalf("Zzza5: %+v %v", one, err)
	}
}
