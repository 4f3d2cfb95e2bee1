package odata

import (
	"math"
	"time"

	"github.com/tabula-dev/tabula/internal/edm"
)

// literal is a constant of a filter, converted once at parse time into the representation
// edm.Value uses for its type, so that evaluation compares without converting.
type literal struct {
	typ edm.Type
	str string  // String; Guid in canonical lowercase form
	i   int64   // Int32, Int64; Boolean as 0 or 1; DateTime in ticks
	f   float64 // Double; for Int32 and Int64 the same value, for comparing with Double properties
	bin []byte  // Binary
}

func boolLiteral(b bool) literal {
	if b {
		return literal{typ: edm.Boolean, i: 1}
	}
	return literal{typ: edm.Boolean}
}

func intLiteral(typ edm.Type, v int64) literal {
	return literal{typ: typ, i: v, f: float64(v)}
}

func doubleLiteral(v float64) literal {
	return literal{typ: edm.Double, f: v}
}

// parseGUID accepts the 8-4-4-4-12 hexadecimal form in either case and returns it in
// lowercase, the form edm.Value holds Guids in.
func parseGUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			b[i] = c + ('a' - 'A')
		default:
			return "", false
		}
	}
	return string(b), true
}

// parseHex decodes the body of X'..' and binary'..': pairs of hexadecimal digits in either
// case. The body may be empty (a zero-length Binary).
func parseHex(s string) ([]byte, bool) {
	if len(s)%2 != 0 {
		return nil, false
	}
	out := make([]byte, len(s)/2)
	for i := range out {
		hi, ok1 := hexDigit(s[2*i])
		lo, ok2 := hexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		out[i] = hi<<4 | lo
	}
	return out, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// parseDateTime reads the body of a datetime'..' literal: YYYY-MM-DDThh:mm[:ss[.fffffff]]
// followed by Z, a ±hh:mm offset (converted to UTC) or nothing (taken as UTC) — the formats
// accepted for Edm.DateTime property values (spec data-model.md §6.2). Digits beyond the
// seventh fractional one are truncated, the 100 ns resolution of Edm.DateTime (UNSURE: the
// spec recommends truncation; no recording shows what the service does).
func parseDateTime(s string) (edm.Ticks, bool) {
	p := dtScanner{s: s}
	year := p.digits(4)
	ok := p.expect('-')
	month := p.digits(2)
	ok = p.expect('-') && ok
	day := p.digits(2)
	ok = p.expect('T') && ok
	hour := p.digits(2)
	ok = p.expect(':') && ok
	minute := p.digits(2)
	second, frac := 0, int64(0)
	if p.peek(':') {
		p.pos++
		second = p.digits(2)
		if p.peek('.') {
			p.pos++
			n := 0
			for p.pos < len(s) && isDigit(s[p.pos]) {
				if n < 7 {
					frac = frac*10 + int64(s[p.pos]-'0')
				}
				n++
				p.pos++
			}
			if n == 0 {
				return 0, false
			}
			for ; n < 7; n++ {
				frac *= 10
			}
		}
	}
	offsetMinutes := 0
	switch {
	case p.peek('Z'):
		p.pos++
	case p.peek('+') || p.peek('-'):
		sign := 1
		if s[p.pos] == '-' {
			sign = -1
		}
		p.pos++
		oh := p.digits(2)
		ok = p.expect(':') && ok
		om := p.digits(2)
		if oh > 14 || om > 59 {
			return 0, false
		}
		offsetMinutes = sign * (oh*60 + om)
	}
	if !ok || p.bad || p.pos != len(s) {
		return 0, false
	}
	if year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59 {
		return 0, false
	}
	if day > daysIn(time.Month(month), year) {
		return 0, false
	}
	// A constant may lie before the first instant the service stores (edm.MinDateTime), as
	// long as it is a .NET DateTime: from 0001-01-01, where Ticks count from, to
	// edm.MaxDateTime.
	t := edm.TicksOf(time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC))
	t += edm.Ticks(frac) - edm.Ticks(offsetMinutes)*60*10_000_000
	if t < 0 || t > edm.MaxDateTime {
		return 0, false
	}
	return t, true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dtScanner reads fixed-width fields; any malformed field sets bad, so the caller checks once.
type dtScanner struct {
	s   string
	pos int
	bad bool
}

func (p *dtScanner) digits(n int) int {
	v := 0
	for range n {
		if p.pos >= len(p.s) || !isDigit(p.s[p.pos]) {
			p.bad = true
			return 0
		}
		v = v*10 + int(p.s[p.pos]-'0')
		p.pos++
	}
	return v
}

func (p *dtScanner) peek(c byte) bool { return p.pos < len(p.s) && p.s[p.pos] == c }

func (p *dtScanner) expect(c byte) bool {
	if p.peek(c) {
		p.pos++
		return true
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// compareFloat orders doubles as .NET's Double.CompareTo does: NaN equals NaN and sorts below
// every other value, so that the order is total and `not` stays the exact complement.
func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	}
	return 1
}
