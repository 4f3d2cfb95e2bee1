package blob

import (
	"fmt"
	"strings"
)

// Tag expressions (blob.md §9.9): the where of Find Blobs by Tags and the x-ms-if-tags
// condition. A comparison is a tag key — "quoted", or a bare identifier — an operator and a
// 'quoted' value; comparisons join with AND. A condition also takes <>, OR (binding looser
// than AND) and parentheses; a where takes @container = 'name' (at account level) and allows
// one lower and one upper bound per key. Keys and values follow the tag rules (ValidateTags).
// Every comparison is on strings, bytewise; a blob without the key fails it, whatever the
// operator.

// tagNode is a parsed tag expression: a comparison, or the AND or OR of its parts.
type tagNode struct {
	cmp *tagComparison
	and []*tagNode
	or  []*tagNode
}

type tagComparison struct {
	key, op, value string // key "@container" compares the container name
}

// containerKey is the pseudo-key of a where's container scope.
const containerKeyword = "@container"

// tagExprMode is the dialect being parsed.
type tagExprMode uint8

const (
	whereInAccount   tagExprMode = iota // Find Blobs by Tags of the account
	whereInContainer                    // Find Blobs by Tags of one container
	ifTagsCondition                     // x-ms-if-tags
)

// maxTagComparisons bounds an expression: a blob has at most 10 tags, and nothing useful needs
// more than a few comparisons of each.
const maxTagComparisons = 64

type tagParser struct {
	src   string
	pos   int
	mode  tagExprMode
	count int
}

// parseTagExpr parses an expression of mode, or says in words what is wrong with it.
func parseTagExpr(src string, mode tagExprMode) (*tagNode, error) {
	p := &tagParser{src: src, mode: mode}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.pos < len(p.src) {
		return nil, fmt.Errorf("unexpected %q at offset %d", p.rest(), p.pos)
	}
	if mode != ifTagsCondition {
		if err := checkWhere(n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (p *tagParser) rest() string {
	r := p.src[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "…"
	}
	return r
}

func (p *tagParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// keyword consumes the word kw (case-insensitive) if it comes next as a whole word.
func (p *tagParser) keyword(kw string) bool {
	p.skipSpace()
	end := p.pos + len(kw)
	if end > len(p.src) || !strings.EqualFold(p.src[p.pos:end], kw) {
		return false
	}
	if end < len(p.src) && isIdentChar(p.src[end]) {
		return false
	}
	p.pos = end
	return true
}

func (p *tagParser) or() (*tagNode, error) {
	first, err := p.and()
	if err != nil {
		return nil, err
	}
	parts := []*tagNode{first}
	for p.keyword("OR") {
		if p.mode != ifTagsCondition {
			return nil, fmt.Errorf("OR is allowed in x-ms-if-tags only")
		}
		next, err := p.and()
		if err != nil {
			return nil, err
		}
		parts = append(parts, next)
	}
	if len(parts) == 1 {
		return first, nil
	}
	return &tagNode{or: parts}, nil
}

func (p *tagParser) and() (*tagNode, error) {
	first, err := p.term()
	if err != nil {
		return nil, err
	}
	parts := []*tagNode{first}
	for p.keyword("AND") {
		next, err := p.term()
		if err != nil {
			return nil, err
		}
		parts = append(parts, next)
	}
	if len(parts) == 1 {
		return first, nil
	}
	return &tagNode{and: parts}, nil
}

func (p *tagParser) term() (*tagNode, error) {
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '(' {
		if p.mode != ifTagsCondition {
			return nil, fmt.Errorf("parentheses are allowed in x-ms-if-tags only")
		}
		p.pos++
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.skipSpace(); p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, fmt.Errorf("a parenthesis is not closed")
		}
		p.pos++
		return n, nil
	}
	if p.count++; p.count > maxTagComparisons {
		return nil, fmt.Errorf("more than %d comparisons", maxTagComparisons)
	}
	key, err := p.key()
	if err != nil {
		return nil, err
	}
	op, err := p.operator()
	if err != nil {
		return nil, err
	}
	value, err := p.value()
	if err != nil {
		return nil, err
	}
	if key == containerKeyword && op != "=" {
		return nil, fmt.Errorf("@container takes = only")
	}
	return &tagNode{cmp: &tagComparison{key: key, op: op, value: value}}, nil
}

func (p *tagParser) key() (string, error) {
	p.skipSpace()
	switch {
	case p.pos >= len(p.src):
		return "", fmt.Errorf("a tag key is missing at the end")
	case p.src[p.pos] == '"':
		end := strings.IndexByte(p.src[p.pos+1:], '"')
		if end < 0 {
			return "", fmt.Errorf("a quoted tag key is not closed")
		}
		key := p.src[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		if len(key) < 1 || len(key) > MaxTagKeyLength || !tagText(key) {
			return "", fmt.Errorf("%q is not a tag key (1 to %d characters from a-z, A-Z, 0-9, space and +-./:=_)", key, MaxTagKeyLength)
		}
		return key, nil
	case p.src[p.pos] == '@':
		if !strings.HasPrefix(p.src[p.pos:], containerKeyword) || p.mode != whereInAccount {
			return "", fmt.Errorf("@container is allowed in a where of the account only")
		}
		p.pos += len(containerKeyword)
		return containerKeyword, nil
	}
	start := p.pos
	for p.pos < len(p.src) && isIdentChar(p.src[p.pos]) {
		p.pos++
	}
	key := p.src[start:p.pos]
	if key == "" || key[0] >= '0' && key[0] <= '9' || len(key) > MaxTagKeyLength {
		return "", fmt.Errorf("expected a tag key at offset %d, found %q (quote keys with double quotes)", start, p.rest())
	}
	return key, nil
}

func isIdentChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func (p *tagParser) operator() (string, error) {
	p.skipSpace()
	for _, op := range []string{"<>", ">=", "<=", "=", ">", "<"} {
		if strings.HasPrefix(p.src[p.pos:], op) {
			if op == "<>" && p.mode != ifTagsCondition {
				return "", fmt.Errorf("<> is allowed in x-ms-if-tags only")
			}
			if op == "=" && p.pos+1 < len(p.src) && p.src[p.pos+1] == '=' {
				return "", fmt.Errorf("== is not an operator; use =")
			}
			p.pos += len(op)
			return op, nil
		}
	}
	return "", fmt.Errorf("expected an operator (=, >, >=, <, <=) at offset %d, found %q", p.pos, p.rest())
}

func (p *tagParser) value() (string, error) {
	p.skipSpace()
	if p.pos >= len(p.src) || p.src[p.pos] != '\'' {
		return "", fmt.Errorf("expected a value in single quotes at offset %d", p.pos)
	}
	end := strings.IndexByte(p.src[p.pos+1:], '\'')
	if end < 0 {
		return "", fmt.Errorf("a quoted value is not closed")
	}
	v := p.src[p.pos+1 : p.pos+1+end]
	p.pos += end + 2
	if len(v) > MaxTagValueLength || !tagText(v) {
		return "", fmt.Errorf("%q is not a tag value (at most %d characters from a-z, A-Z, 0-9, space and +-./:=_)", v, MaxTagValueLength)
	}
	return v, nil
}

// checkWhere applies a where's own rules: at least one tag is compared, and no key has two
// bounds on one side ("Rank" > '1' AND "Rank" >= '2').
func checkWhere(n *tagNode) error {
	lower, upper := map[string]bool{}, map[string]bool{}
	tags := 0
	for _, c := range n.comparisons() {
		if c.key == containerKeyword {
			continue
		}
		tags++
		side := lower
		switch c.op {
		case "<", "<=":
			side = upper
		case "=":
			continue
		}
		if side[c.key] {
			return fmt.Errorf("%q has two bounds on one side", c.key)
		}
		side[c.key] = true
	}
	if tags == 0 {
		return fmt.Errorf("no tag is compared")
	}
	return nil
}

// comparisons returns the comparisons of n, in order.
func (n *tagNode) comparisons() []*tagComparison {
	if n.cmp != nil {
		return []*tagComparison{n.cmp}
	}
	var out []*tagComparison
	for _, part := range append(n.and, n.or...) {
		out = append(out, part.comparisons()...)
	}
	return out
}

// matches judges n on a blob of container with tags.
func (n *tagNode) matches(container string, tags Tags) bool {
	switch {
	case n.cmp != nil:
		return n.cmp.matches(container, tags)
	case n.and != nil:
		for _, part := range n.and {
			if !part.matches(container, tags) {
				return false
			}
		}
		return true
	}
	for _, part := range n.or {
		if part.matches(container, tags) {
			return true
		}
	}
	return false
}

func (c *tagComparison) matches(container string, tags Tags) bool {
	v, ok := tags[c.key]
	if c.key == containerKeyword {
		v, ok = container, true
	}
	if !ok {
		return false
	}
	switch c.op {
	case "=":
		return v == c.value
	case "<>":
		return v != c.value
	case ">":
		return v > c.value
	case ">=":
		return v >= c.value
	case "<":
		return v < c.value
	}
	return v <= c.value
}
