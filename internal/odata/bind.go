package odata

import "github.com/tabula-dev/tabula/internal/edm"

// maxComparisons bounds the comparisons of one filter. The documentation allows 15 "discrete
// comparisons", but no recording shows the service enforcing that, and generated filters
// (lists of RowKey eq ... or ...) routinely exceed it; rejecting only far larger filters keeps
// those working while bounding the work of a Match (spec odata-query.md §2.5).
const maxComparisons = 100

type opKind uint8

const (
	opEq opKind = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

func parseOp(s string) (opKind, bool) {
	switch s {
	case "eq":
		return opEq, true
	case "ne":
		return opNe, true
	case "lt":
		return opLt, true
	case "le":
		return opLe, true
	case "gt":
		return opGt, true
	case "ge":
		return opGe, true
	}
	return 0, false
}

// mirrored is the operator that gives the same result with the operands swapped, so that
// `5 lt Age` becomes `Age gt 5`.
func (o opKind) mirrored() opKind {
	switch o {
	case opLt:
		return opGt
	case opLe:
		return opGe
	case opGt:
		return opLt
	case opGe:
		return opLe
	}
	return o
}

// negated is the operator whose result is the complement. This holds for every comparison
// whose property is present, because values of mismatched types compare too (property first).
func (o opKind) negated() opKind {
	switch o {
	case opEq:
		return opNe
	case opNe:
		return opEq
	case opLt:
		return opGe
	case opLe:
		return opGt
	case opGt:
		return opLe
	}
	return opLt
}

// holds reports whether the operator accepts a three-way comparison result.
func (o opKind) holds(c int) bool {
	switch o {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	}
	return c >= 0
}

// sysProp identifies the properties every entity has, which MatchEntity reads from the
// entity's fields and KeyRanges plans with.
type sysProp uint8

const (
	sysNone sysProp = iota
	sysPartitionKey
	sysRowKey
	sysTimestamp
)

func sysPropOf(name string) sysProp {
	switch name {
	case "PartitionKey":
		return sysPartitionKey
	case "RowKey":
		return sysRowKey
	case "Timestamp":
		return sysTimestamp
	}
	return sysNone
}

// comparison is `property op literal`; a filter with the literal first is stored mirrored.
type comparison struct {
	name string
	sys  sysProp
	op   opKind
	lit  literal
}

type nodeKind uint8

const (
	nodeConst nodeKind = iota
	nodeCmp
	nodeNot
	nodeAnd
	nodeOr
)

// node is a bound filter: conditions over comparisons. Constants are folded away while
// building, so a constant only ever appears as the whole filter.
type node struct {
	kind        nodeKind
	val         bool // nodeConst
	cmp         comparison
	left, right *node // nodeNot uses left
}

func constNode(v bool) *node { return &node{kind: nodeConst, val: v} }

func notNode(a *node) *node {
	switch a.kind {
	case nodeConst:
		return constNode(!a.val)
	case nodeNot:
		return a.left
	}
	return &node{kind: nodeNot, left: a}
}

func andNode(a, b *node) *node {
	switch {
	case a.kind == nodeConst && a.val, b.kind == nodeConst && !b.val:
		return b
	case b.kind == nodeConst && b.val, a.kind == nodeConst && !a.val:
		return a
	}
	return &node{kind: nodeAnd, left: a, right: b}
}

func orNode(a, b *node) *node {
	switch {
	case a.kind == nodeConst && !a.val, b.kind == nodeConst && b.val:
		return b
	case b.kind == nodeConst && !b.val, a.kind == nodeConst && a.val:
		return a
	}
	return &node{kind: nodeOr, left: a, right: b}
}

// binder applies the Table service's rules to a well-formed expression, left to right: a
// condition is a comparison between a property and a constant, a bare property, true or
// false, or and/or/not of conditions.
type binder struct {
	src         string
	comparisons int
}

func (b *binder) condition(e *expr) (*node, error) {
	switch e.kind {
	case exprOr, exprAnd:
		l, err := b.condition(e.args[0])
		if err != nil {
			return nil, err
		}
		r, err := b.condition(e.args[1])
		if err != nil {
			return nil, err
		}
		if e.kind == exprOr {
			return orNode(l, r), nil
		}
		return andNode(l, r), nil
	case exprNot:
		n, err := b.condition(e.args[0])
		if err != nil {
			return nil, err
		}
		return notNode(n), nil
	case exprCompare:
		return b.compare(e)
	case exprProperty:
		// A bare property means `property eq true`. The service accepts it; on an entity
		// whose property is not Boolean it matches nothing (CloudStub's calibrated tests).
		return b.count(e.pos, comparison{name: e.name, op: opEq, lit: boolLiteral(true)})
	case exprLiteral:
		switch e.lit.typ {
		case edm.Boolean:
			return constNode(e.lit.i != 0), nil
		case 0:
			return nil, b.unsupported(e)
		}
		return nil, invalidFilter(b.src, e.pos, "a constant of type %s cannot stand alone as a condition", e.lit.typ.Name())
	}
	return nil, b.unsupported(e)
}

// unsupported explains why e, which is not a condition, cannot be an operand either: null,
// a function call, arithmetic, a path, or a literal of a type the service does not store.
func (b *binder) unsupported(e *expr) error {
	switch e.kind {
	case exprNull:
		return invalidFilter(b.src, e.pos, "the Table service does not store nulls, so 'null' cannot be compared")
	case exprCall:
		return notImplemented(b.src, e.pos, "The function '%s' is not supported", e.name)
	case exprArith:
		return notImplemented(b.src, e.pos, "Arithmetic ('%s') is not supported", e.name)
	case exprNegate:
		return notImplemented(b.src, e.pos, "Negation ('-') is not supported")
	case exprLiteral:
		return invalidFilter(b.src, e.pos, "the literal %s has a type the Table service does not store (Edm.Decimal, Edm.Single, Edm.DateTimeOffset or Edm.Time)", e.name)
	}
	return notImplemented(b.src, e.pos, "Property paths ('%s') are not supported", e.name)
}

// compare binds `left op right`: one side must be a property and the other a constant.
func (b *binder) compare(e *expr) (*node, error) {
	op, _ := parseOp(e.name)
	l, r := e.args[0], e.args[1]
	for _, side := range e.args {
		switch {
		case side.kind == exprProperty, side.kind == exprLiteral && side.lit.typ != 0:
		case side.kind == exprNot, side.kind == exprCompare, side.kind == exprAnd, side.kind == exprOr:
			hint := ""
			if side.kind == exprNot && side == l {
				hint = " (not binds tighter than comparisons: write not (A eq B))"
			}
			return nil, invalidFilter(b.src, e.pos, "an operand of '%s' is a condition, not a property or constant%s", e.name, hint)
		default:
			return nil, b.unsupported(side)
		}
	}
	switch {
	case l.kind == exprProperty && r.kind == exprLiteral:
		return b.count(e.pos, comparison{name: l.name, op: op, lit: r.lit})
	case l.kind == exprLiteral && r.kind == exprProperty:
		return b.count(e.pos, comparison{name: r.name, op: op.mirrored(), lit: l.lit})
	case l.kind == exprProperty:
		return nil, invalidFilter(b.src, r.pos, "properties can only be compared with constants, not with another property ('%s')", r.name)
	}
	return nil, invalidFilter(b.src, e.pos, "a comparison needs a property on one side, not two constants")
}

func (b *binder) count(at int, c comparison) (*node, error) {
	b.comparisons++
	if b.comparisons > maxComparisons {
		return nil, invalidFilter(b.src, at, "the filter has more than %d comparisons", maxComparisons)
	}
	c.sys = sysPropOf(c.name)
	return &node{kind: nodeCmp, cmp: c}, nil
}
