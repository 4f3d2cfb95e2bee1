package odata

import (
	"errors"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/edm"
)

// FuzzParseFilter checks that ParseFilter never panics, fails only with a client error, and
// that a parsed filter can always be evaluated and plans sound key ranges: every entity it
// matches lies inside them. The entities probed are built from the filter's own string
// constants (and their neighbours in key order), so that plans are tested where they cut.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		"PartitionKey eq 'a' and RowKey ge 'x' and RowKey lt 'y'",
		"PartitionKey ge 'a' and PartitionKey lt 'b'",
		"(PartitionKey eq 'a' and RowKey eq '1') or (PartitionKey eq 'b' and RowKey eq '2')",
		"not (PartitionKey eq 'a' and RowKey eq '1')",
		"PartitionKey ne 'a' or not (RowKey lt 'm')",
		"'a' lt PartitionKey and RowKey le ''",
		"(Age gt 30 or Age lt 10) and not (Name eq 'x')",
		"LastName eq 'O''Brien'",
		"Total gt 9007199254740993L and AmountDue le 100.25 and Ratio lt 2.5e-3",
		"IsActive eq true or Flag",
		"IsActive eq True and not (Done eq FALSE) or TRUE",
		"CustomerSince eq datetime'2008-07-10T00:00:00Z' and Timestamp ge datetime'2021-01-01T00:00:00.0000000Z'",
		"GuidValue eq guid'a455c695-df98-5678-aaaa-81d3367e5a34'",
		"Blob eq X'0102FF' or B eq binary'00'",
		"(true and RowKey eq 'settings') and ((false or PartitionKey eq '1P23') or PartitionKey eq 'ABC')",
		"X eq NaN or Y lt -INF or Z gt INF",
		"aaa bbb ccc",
		"startswith(Name,'a') eq true",
		"Age add 1 gt -Age",
		"Name eq null",
		"A/B eq 'x'",
		"not not not A",
		"PartitionKey eq 'é\u00a0😀'",
		"((((((PartitionKey eq 'p'))))))",
		"PartitionKey eq 5 or RowKey gt true",
		"TableName ge 'zzza' and TableName lt 'zzzb'",
		"TableName eq 'x' or not (TableName lt 'm') and Other eq 1",
		"not (Other eq 1) and TableName ne 'q'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFilter(s)
		if err != nil {
			var e *azerr.Error
			if !errors.As(err, &e) {
				t.Fatalf("ParseFilter(%q): error %T is not *azerr.Error", s, err)
			}
			if !(e.Status == 400 && e.Code == azerr.InvalidInput || e.Status == 501 && e.Code == azerr.NotImplemented) {
				t.Fatalf("ParseFilter(%q): %d %s", s, e.Status, e.Code)
			}
			return
		}
		checkPlan(t, s, flt, probeEntities(flt))
		checkTableNamePlan(t, s, flt)
	})
}

// checkTableNamePlan checks that TableNameRanges is sound and exact on Query Tables rows: a
// table whose name is one of the filter's string constants, or a neighbour of one, matches
// exactly when its name lies in the planned ranges.
func checkTableNamePlan(t *testing.T, s string, f *Filter) {
	t.Helper()
	rs := f.TableNameRanges()
	for i := 1; i < len(rs); i++ {
		if rs[i-1].EndUnbounded || rs[i-1].End >= rs[i].Start || rs[i-1].Start >= rs[i-1].End {
			t.Fatalf("%q: ranges not sorted and disjoint: %+v", s, rs)
		}
	}
	names := []string{"", "\x00", "zz", "TableName"}
	if f != nil {
		for _, in := range f.prog {
			if in.lit.typ == edm.String {
				v := in.lit.str
				names = append(names, v, v+"\x00", v+"a")
				if len(v) > 0 {
					names = append(names, v[:len(v)-1])
				}
			}
		}
	}
	for _, name := range names {
		matched := f.Match(func(p string) (edm.Value, bool) {
			if p == "TableName" {
				return str(name), true
			}
			return edm.Value{}, false
		})
		inside := false
		for _, r := range rs {
			if name >= r.Start && (r.EndUnbounded || name < r.End) {
				inside = true
			}
		}
		if matched != inside {
			t.Fatalf("%q: table %q matches=%v but lies inside the planned ranges=%v (%+v)", s, name, matched, inside, rs)
		}
	}
}

// probeEntities returns entities whose keys are the filter's string constants, their
// successors and their prefixes, in all pairings, with properties of several types.
func probeEntities(f *Filter) []*edm.Entity {
	keys := []string{"", "\x00", "zz"}
	if f != nil {
		for _, in := range f.prog {
			if in.lit.typ == edm.String {
				s := in.lit.str
				keys = append(keys, s, s+"\x00", s+"a")
				if len(s) > 0 {
					keys = append(keys, s[:len(s)-1])
				}
			}
		}
	}
	if len(keys) > 40 {
		keys = keys[:40]
	}
	props := []edm.Property{
		prop("Age", i32(31)), prop("Name", str("x")), prop("Flag", boolean(true)),
		prop("Total", i64(9007199254740993)), prop("AmountDue", dbl(100.25)),
		prop("Blob", binary(1, 2, 0xff)), prop("CustomerSince", datetime("2008-07-10T00:00:00Z")),
	}
	var es []*edm.Entity
	for i, pk := range keys {
		for j, rk := range keys {
			es = append(es, &edm.Entity{PartitionKey: pk, RowKey: rk, Properties: props[:(i+j)%len(props)]})
		}
	}
	return es
}
