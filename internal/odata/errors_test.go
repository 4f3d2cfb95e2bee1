package odata

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// TestMalformedFiltersAreRejected pins status, code and message. Messages in quotes are exact
// (the real service's wording where it is known); the others must contain msg.
func TestMalformedFiltersAreRejected(t *testing.T) {
	const (
		bad     = http.StatusBadRequest
		invalid = azerr.InvalidInput
		notImpl = azerr.NotImplemented
	)
	cases := []struct {
		filter string
		status int
		code   azerr.Code
		msg    string // exact when it starts with "=", else a substring
	}{
		// Wordings recorded from the real service.
		{"aaa bbb ccc", bad, invalid, "=Syntax error at position 7 in 'aaa bbb ccc'."},
		{"property1 eq 1'invalid'", bad, invalid, "=Syntax error at position 23 in 'property1 eq 1'invalid''."},

		// Syntax, in the OData library's words; positions are UTF-16 code units.
		{"PartitionKey eq 'a", bad, invalid, "=There is an unterminated string literal at position 18 in 'PartitionKey eq 'a'."},
		{"PartitionKey eq 'it''s", bad, invalid, "=There is an unterminated string literal at position 22 in 'PartitionKey eq 'it''s'."},
		{"PartitionKey eq", bad, invalid, "=Expression expected at position 15 in 'PartitionKey eq'."},
		{"A eq 1 and", bad, invalid, "=Expression expected at position 10 in 'A eq 1 and'."},
		{"()", bad, invalid, "=Expression expected at position 1 in '()'."},
		{"(", bad, invalid, "=Expression expected at position 1 in '('."},
		{"(PartitionKey eq 'a'", bad, invalid, "=')' or operator expected at position 20 in '(PartitionKey eq 'a''."},
		{"(A eq 1 B eq 2)", bad, invalid, "=')' or operator expected at position 8 in '(A eq 1 B eq 2)'."},
		{"PartitionKey eq 'a')", bad, invalid, "=Syntax error at position 20 in 'PartitionKey eq 'a')'."},
		{"PartitionKey Eq 'a'", bad, invalid, "=Syntax error at position 15 in 'PartitionKey Eq 'a''."},
		{"A eq 1 Or B eq 2", bad, invalid, "=Syntax error at position 9 in 'A eq 1 Or B eq 2'."},
		{"A eq 1 AND B eq 2", bad, invalid, "Syntax error at position 10"},
		{"Name eq \"x\"", bad, invalid, "=Syntax error: character '\"' is not valid at position 8 in 'Name eq \"x\"'."},
		{"Age eq .5", bad, invalid, "=Syntax error: character '.' is not valid at position 7 in 'Age eq .5'."},
		{"Age = 5", bad, invalid, "character '=' is not valid at position 4"},
		{"A eq %d", bad, invalid, "=Syntax error: character '%' is not valid at position 5 in 'A eq %d'."},
		{"Age eq 1.", bad, invalid, "=A digit was expected at position 9 in 'Age eq 1.'."},
		{"Age eq 1e", bad, invalid, "=A digit was expected at position 9 in 'Age eq 1e'."},
		{"Age eq 1e+x", bad, invalid, "=A digit was expected at position 10 in 'Age eq 1e+x'."},
		{"Größe eq 'ü' x", bad, invalid, "=Syntax error at position 14 in 'Größe eq 'ü' x'."},
		{"'😀' eq A B", bad, invalid, "=Syntax error at position 11 in ''😀' eq A B'."},
		{"Name eq foo'bar'", bad, invalid, "=Syntax error at position 16 in 'Name eq foo'bar''."},

		// Literals whose text is not a value of their type.
		{"Age eq 2147483648", bad, invalid, "=Unrecognized 'Edm.Int32' literal '2147483648' at '7' in 'Age eq 2147483648'."},
		{"Age eq -2147483649", bad, invalid, "Unrecognized 'Edm.Int32' literal '-2147483649'"},
		{"Age eq 9223372036854775808L", bad, invalid, "Unrecognized 'Edm.Int64' literal '9223372036854775808L'"},
		{"Age eq 1.5L", bad, invalid, "Unrecognized 'Edm.Int64' literal '1.5L'"},
		{"Age eq 1e999", bad, invalid, "Unrecognized 'Edm.Double' literal '1e999'"},
		{"D eq datetime'2020-13-01T00:00:00Z'", bad, invalid, "=Unrecognized 'Edm.DateTime' literal 'datetime'2020-13-01T00:00:00Z'' at '5' in 'D eq datetime'2020-13-01T00:00:00Z''."},
		{"D eq datetime'2021-02-29T00:00:00Z'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'0000-01-01T00:00:00Z'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'2020-01-01T24:00:00Z'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'2020-01-01T00:00:60Z'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'2020-01-01'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'2020-01-01T00:00:00.Z'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'2020-01-01T00:00:00z'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'2020-01-01 00:00:00Z'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'9999-12-31T23:59:59-01:00'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'0001-01-01T00:30:00+01:00'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime'2020-01-01T00:00:00+15:00'", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"D eq datetime''", bad, invalid, "Unrecognized 'Edm.DateTime'"},
		{"G eq guid'68260b3f-beab-45e2-b900-33e2b442e72'", bad, invalid, "Unrecognized 'Edm.Guid'"},
		{"G eq guid'68260b3fbeab45e2b90033e2b442e724'", bad, invalid, "Unrecognized 'Edm.Guid'"},
		{"G eq guid'{68260b3f-beab-45e2-b900-33e2b442e7}'", bad, invalid, "Unrecognized 'Edm.Guid'"},
		{"B eq X'0'", bad, invalid, "=Unrecognized 'Edm.Binary' literal 'X'0'' at '5' in 'B eq X'0''."},
		{"B eq binary'zz'", bad, invalid, "Unrecognized 'Edm.Binary'"},
		{"B eq X'01", bad, invalid, "=There is an unterminated literal at position 9 in 'B eq X'01'."},

		// Well-formed OData the Table service does not evaluate.
		{"Name eq null", bad, invalid, "'null' cannot be compared at position 8"},
		{"null eq Name", bad, invalid, "'null'"},
		{"Name eq Other", bad, invalid, "not with another property ('Other') at position 8"},
		{"A eq TRUTH", bad, invalid, "another property ('TRUTH')"},
		{"1 eq 1", bad, invalid, "not two constants at position 2"},
		{"not Age eq 1", bad, invalid, "an operand of 'eq' is a condition, not a property or constant (not binds tighter than comparisons: write not (A eq B)) at position 8"},
		{"Age eq 1 eq true", bad, invalid, "an operand of 'eq' is a condition, not a property or constant at position 9"},
		{"(A eq 1) eq true", bad, invalid, "an operand of 'eq' is a condition"},
		{"A eq (B eq 1)", bad, invalid, "an operand of 'eq' is a condition"},
		{"A eq (B or C)", bad, invalid, "an operand of 'eq' is a condition"},
		{"5", bad, invalid, "a constant of type Edm.Int32 cannot stand alone"},
		{"'x'", bad, invalid, "Edm.String cannot stand alone"},
		{"not 'x'", bad, invalid, "cannot stand alone"},
		{"Age eq 2.5m", bad, invalid, "the literal 2.5m has a type the Table service does not store"},
		{"Age eq 2.5F", bad, invalid, "the literal 2.5F has a type"},
		{"D eq datetimeoffset'2020-01-01T00:00:00Z'", bad, invalid, "the literal datetimeoffset'2020-01-01T00:00:00Z' has a type"},
		{"D eq time'PT1H'", bad, invalid, "the literal time'PT1H' has a type"},
		{"1m", bad, invalid, "the literal 1m has a type"},
		{"D eq time'PT1H' or (", bad, invalid, "Expression expected at position 20"},

		// Recognised but not implemented: 501, as the service answers startswith.
		{"startswith(Name,'a')", http.StatusNotImplemented, notImpl, "=The requested operation is not implemented on the specified resource. The function 'startswith' is not supported at position 0 in 'startswith(Name,'a')'."},
		{"startswith (Name, 'a') eq true", http.StatusNotImplemented, notImpl, "function 'startswith'"},
		{"PartitionKey eq 'a' and substringof('x', Name)", http.StatusNotImplemented, notImpl, "function 'substringof'"},
		{"Age add 1 gt 5", http.StatusNotImplemented, notImpl, "Arithmetic ('add')"},
		{"Age mod 2 eq 0", http.StatusNotImplemented, notImpl, "Arithmetic ('mod')"},
		{"-Age lt 5", http.StatusNotImplemented, notImpl, "Negation"},
		{"Address/City eq 'x'", http.StatusNotImplemented, notImpl, "Property paths ('Address/City')"},
		{"Address/'x' eq 1", bad, invalid, "=An identifier was expected at position 8 in 'Address/'x' eq 1'."},
		{"Address/ eq 'x'", bad, invalid, "=Syntax error at position 15 in 'Address/ eq 'x''."},
		{"concat('a' 'b') eq 'ab'", bad, invalid, "=')' or ',' expected at position 11 in 'concat('a' 'b') eq 'ab''."},
		{"length(Name) gt 3", http.StatusNotImplemented, notImpl, "function 'length'"},
		{"Age sub 1 gt 5", http.StatusNotImplemented, notImpl, "Arithmetic ('sub')"},
		{"Age mul 2 gt 5 or", bad, invalid, "Expression expected at position 17"},

		// Syntax errors anywhere win over the binding errors before them.
		{"Name eq null and (", bad, invalid, "=Expression expected at position 18 in 'Name eq null and ('."},
		{"startswith(Name,'a') eq true Or", bad, invalid, "Syntax error at position 31"},
	}
	for _, c := range cases {
		f, err := ParseFilter(c.filter)
		if err == nil {
			t.Errorf("ParseFilter(%q) = %v, want an error", c.filter, f)
			continue
		}
		var e *azerr.Error
		if !errors.As(err, &e) {
			t.Errorf("ParseFilter(%q) error %T is not *azerr.Error", c.filter, err)
			continue
		}
		if e.Status != c.status || e.Code != c.code {
			t.Errorf("ParseFilter(%q) = %d %s, want %d %s (%s)", c.filter, e.Status, e.Code, c.status, c.code, e.Message)
		}
		if exact, ok := strings.CutPrefix(c.msg, "="); ok {
			if e.Message != exact {
				t.Errorf("ParseFilter(%q) message\n got %s\nwant %s", c.filter, e.Message, exact)
			}
		} else if !strings.Contains(e.Message, c.msg) {
			t.Errorf("ParseFilter(%q) message %q does not contain %q", c.filter, e.Message, c.msg)
		}
	}
}

func TestComparisonLimit(t *testing.T) {
	terms := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = "RowKey eq 'r'"
		}
		return strings.Join(parts, " or ")
	}
	if _, err := ParseFilter(terms(maxComparisons)); err != nil {
		t.Errorf("%d comparisons rejected: %v", maxComparisons, err)
	}
	_, err := ParseFilter(terms(maxComparisons + 1))
	if e := azerr.As(err); err == nil || e.Code != azerr.InvalidInput || !strings.Contains(e.Message, "more than 100 comparisons") {
		t.Errorf("%d comparisons: err = %v", maxComparisons+1, err)
	}
	// Bare properties count as comparisons, constants do not.
	if _, err := ParseFilter(strings.Repeat("true or ", 500) + "B"); err != nil {
		t.Errorf("constants counted as comparisons: %v", err)
	}
}

func TestNestingLimit(t *testing.T) {
	ok := strings.Repeat("(", maxDepth) + "A eq 1" + strings.Repeat(")", maxDepth)
	if _, err := ParseFilter(ok); err != nil {
		t.Errorf("depth %d rejected: %v", maxDepth, err)
	}
	for _, s := range []string{
		strings.Repeat("(", maxDepth+1) + "A eq 1" + strings.Repeat(")", maxDepth+1),
		strings.Repeat("not ", maxDepth+1) + "A",
		strings.Repeat("(not ", maxDepth) + "A" + strings.Repeat(")", maxDepth),
	} {
		_, err := ParseFilter(s)
		if e := azerr.As(err); err == nil || e.Code != azerr.InvalidInput || !strings.Contains(e.Message, "more than 200 deep") {
			t.Errorf("deep filter: err = %v", err)
		}
	}
}
