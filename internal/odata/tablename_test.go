package odata

import (
	"reflect"
	"testing"
)

func TestTableNameRangesPlanTheNamesAFilterAllows(t *testing.T) {
	unbounded := []StringRange{{EndUnbounded: true}}
	for _, tc := range []struct {
		filter string
		want   []StringRange
	}{
		{"", unbounded},
		{"TableName eq 'mytable'", []StringRange{{Start: "mytable", End: "mytable\x00"}}},
		{"TableName ge 'zzza' and TableName lt 'zzzb'", []StringRange{{Start: "zzza", End: "zzzb"}}},
		{"TableName gt 'm'", []StringRange{{Start: "m\x00", EndUnbounded: true}}},
		{"TableName eq 'a' or TableName eq 'c'", []StringRange{{Start: "a", End: "a\x00"}, {Start: "c", End: "c\x00"}}},
		{"not (TableName lt 'b')", []StringRange{{Start: "b", EndUnbounded: true}}},
		{"TableName ne 'b'", []StringRange{{Start: "", End: "b"}, {Start: "b\x00", EndUnbounded: true}}},
		// Tables have no other property: comparing one is false, its negation true.
		{"Other eq 1", nil},
		{"TableName eq 'a' or Other eq 1", []StringRange{{Start: "a", End: "a\x00"}}},
		{"not (Other eq 1) and TableName le 'b'", []StringRange{{Start: "", End: "b\x00"}}},
		// A name compared with a non-string sorts before it.
		{"TableName lt 5", unbounded},
		{"TableName gt 5", nil},
		{"false", nil},
	} {
		f := mustParse(t, tc.filter)
		if got := f.TableNameRanges(); !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: got %+v, want %+v", tc.filter, got, tc.want)
		}
	}
}
