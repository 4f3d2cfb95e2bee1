package odata

import (
	"slices"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestParseSelectListsNames(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ", nil},
		{"*", nil},
		{" * ", nil},
		{"PartitionKey,RowKey,Age", []string{"PartitionKey", "RowKey", "Age"}},
		{"age, sex", []string{"age", "sex"}}, // Python sends select=["age, sex"]
		{" Name ", []string{"Name"}},
		{"A,B,A", []string{"A", "B"}},
		{"A,*", nil},
		{"Größe,_x1", []string{"Größe", "_x1"}},
	}
	for _, c := range cases {
		got, err := ParseSelect(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseSelect(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestParseSelectRejectsNonNames(t *testing.T) {
	many := make([]string, maxSelect+1)
	for i := range many {
		many[i] = "p" + strings.Repeat("x", i)
	}
	for _, in := range []string{"a,,b", "a,", ",a", "a b", "a-b", "1a", "a/b", "'a'", "a\xff", strings.Join(many, ",")} {
		_, err := ParseSelect(in)
		if e := azerr.As(err); err == nil || e.Status != 400 || e.Code != azerr.InvalidInput {
			t.Errorf("ParseSelect(%q) err = %v, want 400 InvalidInput", in, err)
		}
	}
	if _, err := ParseSelect(strings.Join(many[:maxSelect], ",")); err != nil {
		t.Errorf("%d names rejected: %v", maxSelect, err)
	}
}

func TestParseTopAcceptsOneToThousand(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "2": 2, "1000": 1000, "0010": 10} {
		if got, err := ParseTop(in); got != want || err != nil {
			t.Errorf("ParseTop(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "1001", "2147483647", "99999999999999999999", "-1", "+5", " 5", "5 ", "abc", "1.5", "1e3"} {
		_, err := ParseTop(in)
		if e := azerr.As(err); err == nil || e.Status != 400 || e.Code != azerr.InvalidInput || !strings.Contains(e.Message, "'"+in+"'") {
			t.Errorf("ParseTop(%q) err = %v, want 400 InvalidInput naming the value", in, err)
		}
	}
}
