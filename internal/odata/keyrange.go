package odata

import "github.com/tabula-dev/tabula/internal/edm"

// KeyRange is a half-open interval [Start, End) over composite keys (PartitionKey, RowKey),
// ordered lexicographically with bytewise string comparison.
type KeyRange struct {
	StartPK, StartRK string // inclusive lower bound; ("","") is the beginning of the table
	EndPK, EndRK     string // exclusive upper bound, unless EndUnbounded
	EndUnbounded     bool
}

// Point reports whether the range holds exactly one key (PartitionKey eq 'x' and RowKey eq
// 'y') and which. Such a range is [(x, y), (x, y+"\x00")): no key lies strictly between y and
// y+"\x00".
func (r KeyRange) Point() (pk, rk string, ok bool) {
	n := len(r.StartRK)
	if r.EndUnbounded || r.EndPK != r.StartPK || len(r.EndRK) != n+1 ||
		r.EndRK[n] != 0 || r.EndRK[:n] != r.StartRK {
		return "", "", false
	}
	return r.StartPK, r.StartRK, true
}

// SinglePartition reports whether the range lies within one partition, StartPK: a RowKey
// range of it, or all of it, [(pk, ""), (pk+"\x00", "")).
func (r KeyRange) SinglePartition() bool {
	return !r.EndUnbounded && (r.EndPK == r.StartPK || r.EndPK == r.StartPK+"\x00" && r.EndRK == "")
}

// Contains reports whether the key (pk, rk) lies in the range.
func (r KeyRange) Contains(pk, rk string) bool {
	if pk < r.StartPK || pk == r.StartPK && rk < r.StartRK {
		return false
	}
	return r.EndUnbounded || pk < r.EndPK || pk == r.EndPK && rk < r.EndRK
}

// Planning works on sets of strings kept as sorted breakpoints: a string is in the set when
// an odd number of breakpoints are <= it. {"a", "b"} is [a, b); {"a"} is [a, ∞); {""} is
// every string; nil is none. Because "" is the least string and s+"\x00" the least string
// after s, every bound a comparison sets is a breakpoint: eq s is {s, s+"\x00"}.
type strSet []string

var allStrings = strSet{""}

func interval(lo, hi string, unbounded bool) strSet {
	switch {
	case unbounded:
		return strSet{lo}
	case lo >= hi:
		return nil
	}
	return strSet{lo, hi}
}

func complement(s strSet) strSet {
	if len(s) > 0 && s[0] == "" {
		return s[1:]
	}
	return append(strSet{""}, s...)
}

// comparisonSet is the set of strings a key compared by op with s can take.
func comparisonSet(op opKind, s string) strSet {
	next := s + "\x00"
	switch op {
	case opEq:
		return interval(s, next, false)
	case opNe:
		return complement(interval(s, next, false))
	case opLt:
		return interval("", s, false)
	case opLe:
		return interval("", next, false)
	case opGt:
		return interval(next, "", true)
	}
	return interval(s, "", true)
}

// combine returns the intersection (and) or union of two sets.
func combine(a, b strSet, and bool) strSet {
	var out strSet
	inA, inB, in := false, false, false
	for i, j := 0, 0; i < len(a) || j < len(b); {
		var x string
		if j == len(b) || i < len(a) && a[i] <= b[j] {
			x = a[i]
		} else {
			x = b[j]
		}
		if i < len(a) && a[i] == x {
			inA = !inA
			i++
		}
		if j < len(b) && b[j] == x {
			inB = !inB
			j++
		}
		v := inA || inB
		if and {
			v = inA && inB
		}
		if v != in {
			out = append(out, x)
			in = v
		}
	}
	return out
}

func equalSets(a, b strSet) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// keyMap describes a set of keys as a function from PartitionKey to the set of RowKeys
// allowed with it, constant on pieces: piece i covers the PartitionKeys from pieces[i].lo up
// to pieces[i+1].lo (the last one without end). pieces[0].lo is "" and the los increase.
// And and or combine two maps piece by piece, so the size of a plan grows with the number of
// key comparisons, never with the number of ways to combine them.
type keyMap []piece

type piece struct {
	lo   string
	rows strSet
}

func uniformMap(rows strSet) keyMap { return keyMap{{lo: "", rows: rows}} }

// partitionMap allows every RowKey with the PartitionKeys in pks and none with others.
func partitionMap(pks strSet) keyMap {
	var m keyMap
	if len(pks) == 0 || pks[0] != "" {
		m = append(m, piece{lo: ""})
	}
	for i, b := range pks {
		p := piece{lo: b}
		if i%2 == 0 {
			p.rows = allStrings
		}
		m = append(m, p)
	}
	return m
}

func combineMaps(a, b keyMap, and bool) keyMap {
	var out keyMap
	i, j, lo := 0, 0, ""
	for {
		rows := combine(a[i].rows, b[j].rows, and)
		if len(out) == 0 || !equalSets(out[len(out)-1].rows, rows) {
			out = append(out, piece{lo: lo, rows: rows})
		}
		moreA, moreB := i+1 < len(a), j+1 < len(b)
		switch {
		case moreA && (!moreB || a[i+1].lo <= b[j+1].lo):
			lo = a[i+1].lo
		case moreB:
			lo = b[j+1].lo
		default:
			return out
		}
		if moreA && a[i+1].lo == lo {
			i++
		}
		if moreB && b[j+1].lo == lo {
			j++
		}
	}
}

// keyRanges plans the scan for a parsed filter.
func keyRanges(root *node) []KeyRange {
	return planMap(root, false).ranges()
}

// planMap returns a superset of the keys of the entities n (or, when negated, not n) can
// match. Negation is pushed down to the comparisons, where it is exact for keys: keys are
// always present and every key comparison is a total order, so not (PartitionKey lt 'a') is
// PartitionKey ge 'a'. Comparisons of other properties allow every key either way.
func planMap(n *node, negated bool) keyMap {
	switch n.kind {
	case nodeConst:
		if n.val != negated {
			return uniformMap(allStrings)
		}
		return uniformMap(nil)
	case nodeNot:
		return planMap(n.left, !negated)
	case nodeAnd, nodeOr:
		and := (n.kind == nodeAnd) != negated
		return combineMaps(planMap(n.left, negated), planMap(n.right, negated), and)
	}
	c := &n.cmp
	if c.sys != sysPartitionKey && c.sys != sysRowKey {
		return uniformMap(allStrings)
	}
	op := c.op
	if negated {
		op = op.negated()
	}
	var set strSet
	if c.lit.typ == edm.String {
		set = comparisonSet(op, c.lit.str)
	} else if op.holds(-1) {
		// A key compared with a non-string constant is a type mismatch: the key sorts
		// first, so ne, lt and le hold for every key and eq, gt and ge for none.
		set = allStrings
	}
	if c.sys == sysPartitionKey {
		return partitionMap(set)
	}
	return uniformMap(set)
}

// ranges turns the map into sorted, disjoint key ranges. Where a piece holds a single
// PartitionKey, its RowKey set becomes exact ranges; a wider piece is scanned whole, starting
// at the least RowKey allowed in its first partition.
func (m keyMap) ranges() []KeyRange {
	var out []KeyRange
	add := func(r KeyRange) {
		if k := len(out) - 1; k >= 0 && !out[k].EndUnbounded && out[k].EndPK == r.StartPK && out[k].EndRK == r.StartRK {
			out[k].EndPK, out[k].EndRK, out[k].EndUnbounded = r.EndPK, r.EndRK, r.EndUnbounded
			return
		}
		out = append(out, r)
	}
	for k, p := range m {
		if len(p.rows) == 0 {
			continue
		}
		last := k+1 == len(m)
		var next string
		if !last {
			next = m[k+1].lo
		}
		if !last && next == p.lo+"\x00" {
			for i := 0; i < len(p.rows); i += 2 {
				r := KeyRange{StartPK: p.lo, StartRK: p.rows[i], EndPK: p.lo}
				if i+1 < len(p.rows) {
					r.EndRK = p.rows[i+1]
				} else {
					r.EndPK = next
				}
				add(r)
			}
			continue
		}
		add(KeyRange{StartPK: p.lo, StartRK: p.rows[0], EndPK: next, EndUnbounded: last})
	}
	return out
}
