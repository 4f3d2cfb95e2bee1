package odata

import "github.com/tabula-dev/tabula/internal/edm"

// StringRange is a half-open interval [Start, End) of strings in bytewise order; End is
// ignored when EndUnbounded.
type StringRange struct {
	Start, End   string
	EndUnbounded bool
}

// TableNameRanges returns sorted, disjoint intervals holding every TableName a table the
// filter matches can have. It plans for Query Tables rows, whose only property is TableName,
// a string that is always present: a comparison of any other property is false (and its
// negation true), exactly as Match evaluates it on such rows. A nil *Filter, or one that does
// not constrain TableName, yields one unbounded interval; an unsatisfiable one yields none.
// The plan is exact for the comparisons it reads, so a caller still evaluating Match on each
// row only pays for rows inside the intervals.
func (f *Filter) TableNameRanges() []StringRange {
	if f == nil {
		return []StringRange{{EndUnbounded: true}}
	}
	set := tableNameSet(f.root, false)
	out := make([]StringRange, 0, (len(set)+1)/2)
	for i := 0; i < len(set); i += 2 {
		r := StringRange{Start: set[i], EndUnbounded: i+1 == len(set)}
		if !r.EndUnbounded {
			r.End = set[i+1]
		}
		out = append(out, r)
	}
	return out
}

// tableNameSet is the set of TableNames for which n (or, when negated, not n) holds on a
// Query Tables row. Negation is pushed down to the comparisons, where it is exact: TableName
// is always present and totally ordered, and any other property is always absent.
func tableNameSet(n *node, negated bool) strSet {
	switch n.kind {
	case nodeConst:
		if n.val != negated {
			return allStrings
		}
		return nil
	case nodeNot:
		return tableNameSet(n.left, !negated)
	case nodeAnd, nodeOr:
		and := (n.kind == nodeAnd) != negated
		return combine(tableNameSet(n.left, negated), tableNameSet(n.right, negated), and)
	}
	c := &n.cmp
	if c.name != "TableName" {
		if negated {
			return allStrings
		}
		return nil
	}
	op := c.op
	if negated {
		op = op.negated()
	}
	if c.lit.typ == edm.String {
		return comparisonSet(op, c.lit.str)
	}
	// A type mismatch: the name sorts before the literal.
	if op.holds(-1) {
		return allStrings
	}
	return nil
}
