package odata

import (
	"bytes"
	"slices"

	"github.com/tabula-dev/tabula/internal/edm"
)

// Filter is a parsed $filter, compiled for evaluation. It is immutable and safe for
// concurrent use. A nil *Filter stands for "no filter": it matches every entity.
type Filter struct {
	// prog is the filter as a branch program: each instruction tests one comparison and
	// jumps to onTrue or onFalse, which are smaller indices or one of the two verdicts, so
	// evaluation always terminates and short-circuits exactly as and/or do.
	prog   []instr
	entry  int32
	ranges []KeyRange
	// root is the bound filter, kept for the plans only some callers ask for
	// (TableNameRanges).
	root *node
}

// Verdicts, as jump targets of the branch program.
const (
	verdictTrue  int32 = -1
	verdictFalse int32 = -2
)

type instr struct {
	comparison
	onTrue, onFalse int32
}

func compile(root *node) *Filter {
	f := &Filter{root: root}
	f.entry = f.emit(root, verdictTrue, verdictFalse)
	f.ranges = keyRanges(root)
	return f
}

// emit appends the instructions of n, which continue at t when n holds and at f otherwise,
// and returns n's first instruction (or a verdict when n is constant). The right operand is
// emitted before the left one, so every jump goes to an earlier instruction.
func (f *Filter) emit(n *node, t, fl int32) int32 {
	switch n.kind {
	case nodeConst:
		if n.val {
			return t
		}
		return fl
	case nodeNot:
		return f.emit(n.left, fl, t)
	case nodeAnd:
		r := f.emit(n.right, t, fl)
		return f.emit(n.left, r, fl)
	case nodeOr:
		r := f.emit(n.right, t, fl)
		return f.emit(n.left, t, r)
	}
	f.prog = append(f.prog, instr{comparison: n.cmp, onTrue: t, onFalse: fl})
	return int32(len(f.prog) - 1)
}

// Match evaluates the filter against one row; lookup returns a property's value or false when
// the row lacks it. lookup is asked for the system properties by name too (PartitionKey and
// RowKey as Edm.String, Timestamp as Edm.DateTime; TableName when filtering tables). Match
// never panics and does not allocate; lookup is called at most once per comparison the
// evaluation reaches.
func (f *Filter) Match(lookup func(name string) (edm.Value, bool)) bool {
	if f == nil {
		return true
	}
	pc := f.entry
	for pc >= 0 {
		in := &f.prog[pc]
		if v, ok := lookup(in.name); ok && in.test(&v) {
			pc = in.onTrue
		} else {
			pc = in.onFalse
		}
	}
	return pc == verdictTrue
}

// MatchEntity evaluates against an entity: PartitionKey and RowKey are Edm.String, Timestamp
// is Edm.DateTime, plus e.Properties. It does not allocate.
func (f *Filter) MatchEntity(e *edm.Entity) bool {
	if f == nil {
		return true
	}
	pc := f.entry
	for pc >= 0 {
		in := &f.prog[pc]
		var hit bool
		switch in.sys {
		case sysPartitionKey:
			v := edm.Value{Type: edm.String, Str: e.PartitionKey}
			hit = in.test(&v)
		case sysRowKey:
			v := edm.Value{Type: edm.String, Str: e.RowKey}
			hit = in.test(&v)
		case sysTimestamp:
			v := edm.Value{Type: edm.DateTime, Int: int64(e.Timestamp)}
			hit = in.test(&v)
		default:
			for i := range e.Properties {
				if e.Properties[i].Name == in.name {
					hit = in.test(&e.Properties[i].Value)
					break
				}
			}
		}
		if hit {
			pc = in.onTrue
		} else {
			pc = in.onFalse
		}
	}
	return pc == verdictTrue
}

// KeyRanges returns sorted, disjoint ranges whose union contains every entity the filter can
// match (it may contain more; the caller still evaluates Match on each). A nil *Filter, or a
// filter that constrains no key, yields one unbounded range. An unsatisfiable key condition
// may yield none. The slice is the caller's to keep. The plan assumes what holds for entities:
// every row has a PartitionKey and a RowKey (it does not apply to Query Tables rows).
func (f *Filter) KeyRanges() []KeyRange {
	if f == nil {
		return []KeyRange{{EndUnbounded: true}}
	}
	return slices.Clone(f.ranges)
}

// test evaluates the comparison against a property that is present.
func (c *comparison) test(v *edm.Value) bool {
	return c.op.holds(c.order(v))
}

// order compares a present property value with the literal: negative, zero or positive as
// the value sorts before, equal to or after it. Values of a type the literal does not
// compare with sort before it (see the package documentation).
func (c *comparison) order(v *edm.Value) int {
	l := &c.lit
	switch l.typ {
	case edm.String, edm.Guid:
		if v.Type != l.typ {
			return -1
		}
		switch {
		case v.Str == l.str:
			return 0
		case v.Str < l.str:
			return -1
		}
		return 1
	case edm.Int32:
		switch v.Type {
		case edm.Int32, edm.Int64:
			return compareInt(v.Int, l.i)
		case edm.Double:
			return compareFloat(v.Float, l.f)
		}
	case edm.Int64:
		switch v.Type {
		case edm.Int64:
			return compareInt(v.Int, l.i)
		case edm.Double:
			return compareFloat(v.Float, l.f)
		}
	case edm.Double:
		if v.Type == edm.Double {
			return compareFloat(v.Float, l.f)
		}
	case edm.Boolean, edm.DateTime:
		if v.Type == l.typ {
			return compareInt(v.Int, l.i)
		}
	case edm.Binary:
		if v.Type == edm.Binary {
			return bytes.Compare(v.Bin, l.bin)
		}
	}
	return -1
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
