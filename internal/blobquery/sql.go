package blobquery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The SQL of Query Blob Contents, the part of it served here:
//
//	SELECT * | column [, column ...] FROM BlobStorage [WHERE condition] [;]
//
// A column is _N (the Nth field, from 1), a CSV header's name or a JSON record's key; a
// condition compares columns and literals (numbers, 'strings', true, false) with = <> != < <=
// > >=, joined by AND, OR and NOT and grouped by parentheses. Keywords are case-insensitive.

// Query is a parsed expression.
type Query struct {
	// Columns are the selected columns, nil for *.
	Columns []string
	Where   node
}

// node is a condition or an operand of one.
type node interface{}

type (
	column  struct{ name string }
	literal struct {
		text   string
		number *float64
		bool   *bool
	}
	comparison struct {
		op          string
		left, right node
	}
	logical struct {
		op          string // AND, OR
		left, right node
	}
	negation struct{ of node }
)

// Parse reads a query expression; a malformed one is an error saying where.
func Parse(expr string) (*Query, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	q := &Query{}
	if !p.keyword("SELECT") {
		return nil, p.fail("SELECT")
	}
	if p.peek() == "*" {
		p.next()
	} else {
		for {
			name, ok := p.columnName()
			if !ok {
				return nil, p.fail("a column")
			}
			q.Columns = append(q.Columns, name)
			if p.peek() != "," {
				break
			}
			p.next()
		}
	}
	if !p.keyword("FROM") {
		return nil, p.fail("FROM")
	}
	if !strings.EqualFold(p.next(), "BlobStorage") {
		return nil, fmt.Errorf("the query must select FROM BlobStorage")
	}
	if p.keyword("WHERE") {
		if q.Where, err = p.or(); err != nil {
			return nil, err
		}
	}
	if p.peek() == ";" {
		p.next()
	}
	if p.peek() != "" {
		return nil, fmt.Errorf("unexpected %q after the query", p.peek())
	}
	return q, nil
}

// lex splits an expression into words, numbers, 'strings' (kept quoted), "names" (kept
// quoted) and operators.
func lex(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c { // a doubled quote is one
						j++
						continue
					}
					break
				}
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated %c at %d", c, i)
			}
			out = append(out, s[i:j+1])
			i = j + 1
		case strings.ContainsRune("<>!=", rune(c)):
			j := i + 1
			if j < len(s) && (s[j] == '=' || c == '<' && s[j] == '>') {
				j++
			}
			out = append(out, s[i:j])
			i = j
		case strings.ContainsRune("*,();", rune(c)):
			out = append(out, s[i:i+1])
			i++
		default:
			j := i
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])) || s[j] == '_' || s[j] == '.' || s[j] == '-' && j == i || s[j] >= 0x80) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("unexpected %q at %d", c, i)
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out, nil
}

type parser struct {
	toks []string
	at   int
}

func (p *parser) peek() string {
	if p.at < len(p.toks) {
		return p.toks[p.at]
	}
	return ""
}

func (p *parser) next() string {
	t := p.peek()
	if t != "" {
		p.at++
	}
	return t
}

func (p *parser) keyword(k string) bool {
	if strings.EqualFold(p.peek(), k) {
		p.at++
		return true
	}
	return false
}

func (p *parser) fail(want string) error {
	if t := p.peek(); t != "" {
		return fmt.Errorf("expected %s, found %q", want, t)
	}
	return fmt.Errorf("expected %s at the end", want)
}

// columnName reads a column: a word that is no keyword or number, or a "quoted" name.
func (p *parser) columnName() (string, bool) {
	t := p.peek()
	switch {
	case t == "" || strings.ContainsAny(t[:1], "'*,();<>!=") || isKeyword(t):
		return "", false
	case t[0] == '"':
		p.next()
		return strings.ReplaceAll(t[1:len(t)-1], `""`, `"`), true
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return "", false
	}
	p.next()
	return t, true
}

func isKeyword(t string) bool {
	switch strings.ToUpper(t) {
	case "SELECT", "FROM", "WHERE", "AND", "OR", "NOT":
		return true
	}
	return false
}

func (p *parser) or() (node, error) {
	left, err := p.and()
	for err == nil && p.keyword("OR") {
		var right node
		if right, err = p.and(); err == nil {
			left = logical{op: "OR", left: left, right: right}
		}
	}
	return left, err
}

func (p *parser) and() (node, error) {
	left, err := p.not()
	for err == nil && p.keyword("AND") {
		var right node
		if right, err = p.not(); err == nil {
			left = logical{op: "AND", left: left, right: right}
		}
	}
	return left, err
}

func (p *parser) not() (node, error) {
	if p.keyword("NOT") {
		of, err := p.not()
		return negation{of}, err
	}
	return p.comparison()
}

func (p *parser) comparison() (node, error) {
	if p.peek() == "(" {
		p.next()
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, fmt.Errorf("expected )")
		}
		return n, nil
	}
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	switch op := p.peek(); op {
	case "=", "<>", "!=", "<", "<=", ">", ">=":
		p.next()
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		return comparison{op: op, left: left, right: right}, nil
	}
	return left, nil
}

func (p *parser) operand() (node, error) {
	t := p.peek()
	switch {
	case t == "":
		return nil, p.fail("an operand")
	case t[0] == '\'':
		p.next()
		return literal{text: strings.ReplaceAll(t[1:len(t)-1], "''", "'")}, nil
	case strings.EqualFold(t, "true") || strings.EqualFold(t, "false"):
		p.next()
		b := strings.EqualFold(t, "true")
		return literal{text: strings.ToLower(t), bool: &b}, nil
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		p.next()
		return literal{text: t, number: &f}, nil
	}
	if name, ok := p.columnName(); ok {
		return column{name}, nil
	}
	return nil, p.fail("an operand")
}

// errConversion is a record's value that its comparison cannot read as a number: a
// non-fatal InvalidTypeConversion, the record left out.
var errConversion = errors.New("Invalid type conversion.")

// row is one record's fields: by position and, where known, by name.
type row interface {
	field(name string) (string, bool)
}

// eval judges a condition on r.
func eval(n node, r row) (bool, error) {
	switch n := n.(type) {
	case logical:
		l, err := eval(n.left, r)
		if err != nil {
			return false, err
		}
		if n.op == "AND" && !l || n.op == "OR" && l {
			return l, nil
		}
		return eval(n.right, r)
	case negation:
		v, err := eval(n.of, r)
		return !v, err
	case comparison:
		return compare(n, r)
	case literal:
		return n.bool != nil && *n.bool, nil
	case column:
		v, ok := r.field(n.name)
		return ok && strings.EqualFold(v, "true"), nil
	}
	return false, nil
}

// compare compares as numbers when either side is a number literal (a field that is no
// number is errConversion), else as strings; a missing field compares false.
func compare(c comparison, r row) (bool, error) {
	value := func(n node) (string, *float64, bool) {
		switch n := n.(type) {
		case literal:
			return n.text, n.number, true
		case column:
			v, ok := r.field(n.name)
			return v, nil, ok
		}
		return "", nil, false
	}
	ls, ln, lok := value(c.left)
	rs, rn, rok := value(c.right)
	if !lok || !rok {
		return false, nil
	}
	var cmp int
	if ln != nil || rn != nil {
		a, b, err := numbers(ls, ln, rs, rn)
		if err != nil {
			return false, err
		}
		switch {
		case a < b:
			cmp = -1
		case a > b:
			cmp = 1
		}
	} else {
		cmp = strings.Compare(ls, rs)
	}
	switch c.op {
	case "=":
		return cmp == 0, nil
	case "<>", "!=":
		return cmp != 0, nil
	case "<":
		return cmp < 0, nil
	case "<=":
		return cmp <= 0, nil
	case ">":
		return cmp > 0, nil
	}
	return cmp >= 0, nil
}

func numbers(ls string, ln *float64, rs string, rn *float64) (float64, float64, error) {
	read := func(s string, n *float64) (float64, error) {
		if n != nil {
			return *n, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, errConversion
		}
		return f, nil
	}
	a, err := read(ls, ln)
	if err != nil {
		return 0, 0, err
	}
	b, err := read(rs, rn)
	return a, b, err
}
