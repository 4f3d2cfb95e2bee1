package insight

import "strings"

// Shape is a $filter with its values replaced by '?' and its spacing normalised, so that
// queries differing only in the values they look for are judged together:
//
//	PartitionKey eq 'p1' and Price gt 10.5  →  PartitionKey eq ? and Price gt ?
//
// It reads literals as the Table service's OData does: quoted strings (with ” inside),
// typed literals (datetime'…', guid'…', X'…', binary'…'), numbers with an optional L or
// exponent, true and false. It never fails: what it does not recognise it keeps.
func Shape(filter string) string {
	var b strings.Builder
	b.Grow(len(filter))
	pendingSpace := false
	emit := func(s string) {
		if pendingSpace && b.Len() > 0 {
			b.WriteByte(' ')
		}
		pendingSpace = false
		b.WriteString(s)
	}
	for i := 0; i < len(filter); {
		c := filter[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			pendingSpace = true
			i++
		case c == '\'':
			i = skipQuoted(filter, i)
			emit("?")
		case isIdentStart(c):
			j := i
			for j < len(filter) && isIdentPart(filter[j]) {
				j++
			}
			word := filter[i:j]
			if j < len(filter) && filter[j] == '\'' && isTypedLiteralPrefix(word) {
				j = skipQuoted(filter, j)
				emit("?")
			} else if strings.EqualFold(word, "true") || strings.EqualFold(word, "false") {
				emit("?")
			} else {
				emit(word)
			}
			i = j
		case c >= '0' && c <= '9' || (c == '-' || c == '.') && i+1 < len(filter) && filter[i+1] >= '0' && filter[i+1] <= '9':
			j := i + 1
			for j < len(filter) && (isIdentPart(filter[j]) || filter[j] == '.' || (filter[j] == '+' || filter[j] == '-') && (filter[j-1] == 'e' || filter[j-1] == 'E')) {
				j++
			}
			emit("?")
			i = j
		default:
			emit(string(c))
			i++
		}
	}
	return b.String()
}

// skipQuoted returns the index after the quoted literal starting at filter[i] == '\”; a
// doubled quote is part of the literal. An unterminated literal runs to the end.
func skipQuoted(filter string, i int) int {
	for j := i + 1; j < len(filter); j++ {
		if filter[j] == '\'' {
			if j+1 < len(filter) && filter[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(filter)
}

func isTypedLiteralPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "datetime", "guid", "x", "binary":
		return true
	}
	return false
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
