package odata

// Parsing happens in two passes, as in the service's OData library: the syntax pass below
// reads the whole OData expression grammar (functions and arithmetic included) into an expr
// tree, and only a filter that is well-formed reaches the binding pass (bind.go), which
// applies the Table service's rules. A syntax error anywhere therefore wins over, say, a null
// comparison earlier in the filter, as with the service.

// maxDepth bounds nesting by parentheses, function calls, `not` and unary minus.
// LINQ-generated filters parenthesise every binary operator, so nesting grows with the number
// of comparisons; the bound sits well above maxComparisons.
const maxDepth = 200

type exprKind uint8

const (
	exprOr exprKind = iota
	exprAnd
	exprCompare  // args[0] op args[1]
	exprArith    // add, sub, mul, div, mod
	exprNot      // args[0]
	exprNegate   // unary minus, args[0]
	exprLiteral  // lit, and its text in name; lit.typ is 0 for types the service does not store
	exprNull     // the literal null
	exprProperty // name
	exprPath     // name/..., a navigation or complex-property path
	exprCall     // name(args...)
)

// expr is the syntax tree of a filter. pos is the byte offset of the token that names the
// node: the operator of a binary or unary node, the first token of others.
type expr struct {
	kind exprKind
	pos  int
	name string // the name of a property, path or function; an operator; a literal's text
	lit  literal
	args []*expr
}

type parser struct {
	src   string
	lex   lexer
	tok   token
	depth int
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) isKeyword(kw string) bool { return p.tok.kind == tokIdent && p.tok.text == kw }

// ParseFilter parses an OData $filter as the Table service accepts it. Errors are *azerr.Error
// (400 InvalidInput) with a message that says what is wrong and where (e.g. position/token);
// constructs the service recognises but does not implement (functions such as startswith,
// arithmetic, property paths) are 501 NotImplemented, as the real service answers them.
//
// An empty or all-blank filter filters nothing and yields a nil *Filter, on which every
// method works (the service accepts `$filter=`, see Azure/Azurite#1573).
//
// Keywords and operators are lower-case only: the service answers `Or` with a syntax error
// (Azure/Azurite#2512). The boolean literals are the exception: true, True and TRUE are one
// literal (Azure/Azurite#1947), so no property named True can be referred to. `not` binds tighter than a comparison, as in the OData
// grammar, so `not A eq 1` compares `not A` and is rejected; write `not (A eq 1)`. A bare
// property is a condition meaning `property eq true`, and true and false may stand as
// conditions (the .NET SDK's LINQ translator emits them, Azure/Azurite#1787).
func ParseFilter(s string) (*Filter, error) {
	p := parser{src: s, lex: lexer{src: s}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, nil
	}
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, syntaxError(s, p.tok.end)
	}
	b := binder{src: s}
	root, err := b.condition(e)
	if err != nil {
		return nil, err
	}
	return compile(root), nil
}

// binary parses left-associative chains of the operators accepted by isOp, each operand
// parsed by next.
func (p *parser) binary(kind exprKind, isOp func(string) bool, next func() (*expr, error)) (*expr, error) {
	left, err := next()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tokIdent && isOp(p.tok.text) {
		op := p.tok
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := next()
		if err != nil {
			return nil, err
		}
		left = &expr{kind: kind, pos: op.start, name: op.text, args: []*expr{left, right}}
	}
	return left, nil
}

func (p *parser) parseOr() (*expr, error) {
	return p.binary(exprOr, func(s string) bool { return s == "or" }, p.parseAnd)
}

func (p *parser) parseAnd() (*expr, error) {
	return p.binary(exprAnd, func(s string) bool { return s == "and" }, p.parseComparison)
}

func (p *parser) parseComparison() (*expr, error) {
	return p.binary(exprCompare, func(s string) bool { _, ok := parseOp(s); return ok }, p.parseAdditive)
}

func (p *parser) parseAdditive() (*expr, error) {
	return p.binary(exprArith, func(s string) bool { return s == "add" || s == "sub" }, p.parseMultiplicative)
}

func (p *parser) parseMultiplicative() (*expr, error) {
	return p.binary(exprArith, func(s string) bool { return s == "mul" || s == "div" || s == "mod" }, p.parseUnary)
}

func (p *parser) enter(at int) error {
	p.depth++
	if p.depth > maxDepth {
		return invalidFilter(p.src, at, "the filter nests more than %d deep", maxDepth)
	}
	return nil
}

func (p *parser) parseUnary() (*expr, error) {
	kind := exprNot
	switch {
	case p.isKeyword("not"):
	case p.tok.kind == tokMinus:
		kind = exprNegate
	default:
		return p.parsePrimary()
	}
	op := p.tok
	if err := p.enter(op.start); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	arg, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	p.depth--
	return &expr{kind: kind, pos: op.start, name: op.text, args: []*expr{arg}}, nil
}

func (p *parser) parsePrimary() (*expr, error) {
	t := p.tok
	switch t.kind {
	case tokLParen:
		if err := p.enter(t.start); err != nil {
			return nil, err
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, parseErrorf(p.src, p.tok.start, "')' or operator expected at position %d in '%s'.")
		}
		p.depth--
		return e, p.advance()
	case tokLiteral:
		return &expr{kind: exprLiteral, pos: t.start, name: t.text, lit: t.lit}, p.advance()
	case tokNull:
		return &expr{kind: exprNull, pos: t.start}, p.advance()
	case tokIdent:
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch p.tok.kind {
		case tokLParen:
			return p.parseCall(t)
		case tokSlash:
			return p.parsePath(t)
		}
		return &expr{kind: exprProperty, pos: t.start, name: t.text}, nil
	}
	return nil, parseErrorf(p.src, t.start, "Expression expected at position %d in '%s'.")
}

// parseCall reads the arguments of name(...); p.tok is the opening parenthesis.
func (p *parser) parseCall(name token) (*expr, error) {
	if err := p.enter(p.tok.start); err != nil {
		return nil, err
	}
	call := &expr{kind: exprCall, pos: name.start, name: name.text}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for p.tok.kind != tokRParen {
		arg, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		call.args = append(call.args, arg)
		switch p.tok.kind {
		case tokComma:
			if err := p.advance(); err != nil {
				return nil, err
			}
		case tokRParen:
		default:
			return nil, parseErrorf(p.src, p.tok.start, "')' or ',' expected at position %d in '%s'.")
		}
	}
	p.depth--
	return call, p.advance()
}

// parsePath reads first/second/...; p.tok is the first slash.
func (p *parser) parsePath(first token) (*expr, error) {
	path := &expr{kind: exprPath, pos: first.start, name: first.text}
	for p.tok.kind == tokSlash {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokIdent {
			return nil, parseErrorf(p.src, p.tok.start, "An identifier was expected at position %d in '%s'.")
		}
		path.name += "/" + p.tok.text
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	return path, nil
}
