// Package xmltext writes XML character data and attribute values the way Azure Storage does,
// and the way every SDK's XML reader reads back: &, < and > as entities and nothing else as a
// character reference that a reader might leave undecoded (the JS SDKs' reader decodes the five
// named entities only, so a quote written as &#34;, or a newline as &#xA;, would reach their
// users as those characters' references).
package xmltext

import "unicode/utf8"

// AppendText appends s escaped as XML character data: &, < and > as entities, and CR as
// &#xD; so that XML's line-end normalisation cannot turn "\r\n" into "\n". Newlines and tabs
// stay literal, as the Table service writes them in error messages and property values.
// Characters XML 1.0 cannot hold (other C0 controls, U+FFFE, U+FFFF) are written as character
// references, which the lenient readers of the OData client libraries accept; invalid UTF-8
// (only a corrupt record could hold it) becomes U+FFFD.
func AppendText(dst []byte, s string) []byte { return appendXMLEscaped(dst, s, false) }

// AppendAttr is AppendText for an attribute value in double quotes: it also escapes the
// quote and writes tab and newline as references, which attribute normalisation would
// otherwise turn into spaces.
func AppendAttr(dst []byte, s string) []byte { return appendXMLEscaped(dst, s, true) }

func appendXMLEscaped(dst []byte, s string, attr bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
				i++
				start = i
				continue
			}
			if r == 0xFFFE || r == 0xFFFF {
				dst = append(dst, s[start:i]...)
				dst = appendCharRef(dst, r)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		var esc string
		switch {
		case c == '&':
			esc = "&amp;"
		case c == '<':
			esc = "&lt;"
		case c == '>':
			esc = "&gt;"
		case c == '"' && attr:
			esc = "&quot;"
		case c == '\r':
			esc = "&#xD;"
		case (c == '\n' || c == '\t') && attr:
			if c == '\n' {
				esc = "&#xA;"
			} else {
				esc = "&#x9;"
			}
		case c < 0x20 && c != '\n' && c != '\t':
			dst = append(dst, s[start:i]...)
			dst = appendCharRef(dst, rune(c))
			i++
			start = i
			continue
		default:
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, esc...)
		i++
		start = i
	}
	return append(dst, s[start:]...)
}

// appendCharRef writes r as a hexadecimal character reference, &#x1;.
func appendCharRef(dst []byte, r rune) []byte {
	const upperHex = "0123456789ABCDEF"
	dst = append(dst, "&#x"...)
	started := false
	for shift := 28; shift >= 0; shift -= 4 {
		d := (r >> uint(shift)) & 0xF
		if d == 0 && !started && shift > 0 {
			continue
		}
		started = true
		dst = append(dst, upperHex[d])
	}
	return append(dst, ';')
}
