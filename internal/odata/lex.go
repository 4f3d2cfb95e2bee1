package odata

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/edm"
)

type tokKind uint8

const (
	tokEOF     tokKind = iota
	tokIdent           // a name: property, keyword or operator, told apart by the parser
	tokLiteral         // a constant; token.lit holds its value
	tokNull            // the literal null, which the Table service does not accept
	tokLParen
	tokRParen
	tokComma
	tokSlash
	tokMinus // unary minus not followed by a digit: arithmetic, which is not supported
)

type token struct {
	kind       tokKind
	start, end int    // byte offsets into the filter
	text       string // the filter's text from start to end
	lit        literal
}

// lexer produces the tokens of a filter on demand, so that the first error reported is the
// first one a left-to-right reading meets, as with the service's parser.
type lexer struct {
	src string
	pos int
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c < utf8.RuneSelf {
			if c != ' ' && (c < '\t' || c > '\r') {
				return
			}
			l.pos++
			continue
		}
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		l.pos += size
	}
}

func (l *lexer) tok(kind tokKind, start int) token {
	return token{kind: kind, start: start, end: l.pos, text: l.src[start:l.pos]}
}

func (l *lexer) next() (token, error) {
	l.skipSpace()
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tokEOF, start: start, end: start}, nil
	}
	switch c := l.src[start]; {
	case c == '(':
		l.pos++
		return l.tok(tokLParen, start), nil
	case c == ')':
		l.pos++
		return l.tok(tokRParen, start), nil
	case c == ',':
		l.pos++
		return l.tok(tokComma, start), nil
	case c == '/':
		l.pos++
		return l.tok(tokSlash, start), nil
	case c == '\'':
		return l.stringLiteral(start)
	case isDigit(c):
		return l.number(start)
	case c == '-':
		l.pos++
		if l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			return l.number(start)
		}
		if end := l.identEnd(l.pos); l.src[l.pos:end] == "INF" {
			l.pos = end
			t := l.tok(tokLiteral, start)
			t.lit = doubleLiteral(math.Inf(-1))
			return t, nil
		}
		return l.tok(tokMinus, start), nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[start:])
	if !isIdentStart(r) {
		return token{}, invalidCharacter(l.src, r, start)
	}
	return l.identifier(start)
}

func isIdentStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
}

// isIdentPart admits what C# admits in identifiers, the rule Table property names follow.
func isIdentPart(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) ||
		unicode.In(r, unicode.Nl, unicode.Mn, unicode.Mc, unicode.Pc, unicode.Cf)
}

// identEnd returns the end of the identifier starting at pos (pos itself if there is none).
func (l *lexer) identEnd(pos int) int {
	for first := true; pos < len(l.src); first = false {
		r, size := utf8.DecodeRuneInString(l.src[pos:])
		if first && !isIdentStart(r) || !first && !isIdentPart(r) {
			break
		}
		pos += size
	}
	return pos
}

func (l *lexer) identifier(start int) (token, error) {
	l.pos = l.identEnd(start)
	t := l.tok(tokIdent, start)
	if l.pos < len(l.src) && l.src[l.pos] == '\'' {
		// A name immediately followed by a quote is a typed literal: datetime'...'. Its
		// prefix is matched case-insensitively, as the OData library does.
		switch prefix := strings.ToLower(t.text); prefix {
		case "datetime", "guid", "binary", "x", "datetimeoffset", "time":
			return l.typedLiteral(start, prefix)
		}
	}
	// Boolean literals are read in any case (True, FALSE): Azure accepts them so, as Azure
	// Storage Explorer relies on (Azure/Azurite#1947, fixed for Azure parity in
	// Azure/Azurite#1959). This is the only case-insensitive word; the type prefixes above
	// (datetime'...', X'...') and the number suffixes (L, D, M, F) were already, as in the
	// OData library's lexer, while null, INF, NaN, operators and keywords stay lower-case
	// or exactly as spelled there.
	switch {
	case strings.EqualFold(t.text, "true"):
		t.kind, t.lit = tokLiteral, boolLiteral(true)
	case strings.EqualFold(t.text, "false"):
		t.kind, t.lit = tokLiteral, boolLiteral(false)
	}
	switch t.text {
	case "null":
		t.kind = tokNull
	case "INF":
		t.kind, t.lit = tokLiteral, doubleLiteral(math.Inf(1))
	case "NaN":
		t.kind, t.lit = tokLiteral, doubleLiteral(math.NaN())
	}
	return t, nil
}

// quoted scans a single-quoted body starting at the quote at l.pos, with two quotes standing
// for one, and returns the unescaped body; ok is false when the closing quote is missing.
func (l *lexer) quoted() (body string, ok bool) {
	l.pos++ // opening quote
	segStart := l.pos
	var b strings.Builder // used only once a doubled quote is seen
	escaped := false
	for {
		i := strings.IndexByte(l.src[l.pos:], '\'')
		if i < 0 {
			l.pos = len(l.src)
			return "", false
		}
		q := l.pos + i
		if q+1 < len(l.src) && l.src[q+1] == '\'' {
			escaped = true
			b.WriteString(l.src[segStart : q+1]) // the segment and one quote
			l.pos = q + 2
			segStart = l.pos
			continue
		}
		l.pos = q + 1
		if !escaped {
			return l.src[segStart:q], true
		}
		b.WriteString(l.src[segStart:q])
		return b.String(), true
	}
}

func (l *lexer) stringLiteral(start int) (token, error) {
	s, ok := l.quoted()
	if !ok {
		return token{}, parseErrorf(l.src, len(l.src), "There is an unterminated string literal at position %d in '%s'.")
	}
	t := l.tok(tokLiteral, start)
	t.lit = literal{typ: edm.String, str: s}
	return t, nil
}

func (l *lexer) typedLiteral(start int, prefix string) (token, error) {
	l.pos = l.identEnd(start)
	body, ok := l.quoted()
	if !ok {
		return token{}, parseErrorf(l.src, len(l.src), "There is an unterminated literal at position %d in '%s'.")
	}
	t := l.tok(tokLiteral, start)
	switch prefix {
	case "datetimeoffset", "time":
		// Well-formed OData, but of types the Table service does not store: the literal
		// keeps no type and binding rejects it.
	case "datetime":
		ticks, ok := parseDateTime(body)
		if !ok {
			return token{}, unrecognizedLiteral(l.src, "Edm.DateTime", t.text, start)
		}
		t.lit = literal{typ: edm.DateTime, i: int64(ticks)}
	case "guid":
		g, ok := parseGUID(body)
		if !ok {
			return token{}, unrecognizedLiteral(l.src, "Edm.Guid", t.text, start)
		}
		t.lit = literal{typ: edm.Guid, str: g}
	default: // binary, x
		b, ok := parseHex(body)
		if !ok {
			return token{}, unrecognizedLiteral(l.src, "Edm.Binary", t.text, start)
		}
		t.lit = literal{typ: edm.Binary, bin: b}
	}
	return t, nil
}

// number scans a numeric literal the way the OData library does: digits, an optional
// fraction and exponent (which make it a Double), then an optional type suffix: L for Int64,
// D for Double, M for Decimal and F for Single.
// start is at the first digit or at a leading minus sign.
func (l *lexer) number(start int) (token, error) {
	src := l.src
	l.digits()
	typ := edm.Int32
	if l.pos < len(src) && src[l.pos] == '.' {
		typ = edm.Double
		l.pos++
		if err := l.requireDigit(); err != nil {
			return token{}, err
		}
		l.digits()
	}
	if l.pos < len(src) && (src[l.pos] == 'E' || src[l.pos] == 'e') {
		typ = edm.Double
		l.pos++
		if l.pos < len(src) && (src[l.pos] == '+' || src[l.pos] == '-') {
			l.pos++
		}
		if err := l.requireDigit(); err != nil {
			return token{}, err
		}
		l.digits()
	}
	numEnd := l.pos
	if l.pos < len(src) {
		switch src[l.pos] {
		case 'L', 'l':
			l.pos++
			t := l.tok(tokLiteral, start)
			v, err := strconv.ParseInt(src[start:numEnd], 10, 64)
			if typ != edm.Int32 || err != nil {
				return token{}, unrecognizedLiteral(src, "Edm.Int64", t.text, start)
			}
			t.lit = intLiteral(edm.Int64, v)
			return t, nil
		case 'D', 'd':
			l.pos++
			typ = edm.Double
		case 'M', 'm', 'F', 'f':
			// Edm.Decimal and Edm.Single, which the Table service does not store: the
			// literal keeps no type and binding rejects it.
			l.pos++
			return l.tok(tokLiteral, start), nil
		}
	}
	t := l.tok(tokLiteral, start)
	if typ == edm.Double {
		v, err := strconv.ParseFloat(src[start:numEnd], 64)
		if err != nil || math.IsInf(v, 0) {
			return token{}, unrecognizedLiteral(src, "Edm.Double", t.text, start)
		}
		t.lit = doubleLiteral(v)
		return t, nil
	}
	// An unsuffixed integer is an Int32; one that does not fit is rejected rather than
	// widened, as the service does ("Unrecognized 'Edm.Int32' literal" is what users of the
	// real service report for epoch-millisecond constants without the L suffix).
	v, err := strconv.ParseInt(src[start:numEnd], 10, 32)
	if err != nil {
		return token{}, unrecognizedLiteral(src, "Edm.Int32", t.text, start)
	}
	t.lit = intLiteral(edm.Int32, v)
	return t, nil
}

func (l *lexer) digits() {
	for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		l.pos++
	}
}

func (l *lexer) requireDigit() error {
	if l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		return nil
	}
	return parseErrorf(l.src, l.pos, "A digit was expected at position %d in '%s'.")
}
