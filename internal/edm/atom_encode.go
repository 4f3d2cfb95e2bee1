package edm

import (
	"encoding/base64"
	"github.com/tabula-dev/tabula/internal/xmltext"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// AppendAtomProperties appends e's m:properties element as the Table service writes it in an
// Atom entry: one line per property, CRLF-ended, indent before the m:properties tags and two
// more spaces before each property. PartitionKey, RowKey and Timestamp come first, then the
// custom properties in stored order. With sel non-nil only the properties it names are
// written (the keys and Timestamp too only if named), and a named property the entity lacks
// is written as <d:Name m:null="true" />, once.
//
// Every value but a string carries its m:type, the keys never do; values are formatted as
// .NET's XmlConvert writes them (AppendAtomValue).
func AppendAtomProperties(dst []byte, e *Entity, sel []string, indent string) []byte {
	dst = append(dst, indent...)
	dst = append(dst, "<m:properties>\r\n"...)
	inner := indent + "  "
	all := sel == nil
	if all || selected(sel, "PartitionKey") {
		dst = AppendAtomValue(dst, inner, "PartitionKey", &Value{Type: String, Str: e.PartitionKey})
	}
	if all || selected(sel, "RowKey") {
		dst = AppendAtomValue(dst, inner, "RowKey", &Value{Type: String, Str: e.RowKey})
	}
	if all || selected(sel, "Timestamp") {
		dst = AppendAtomValue(dst, inner, "Timestamp", &Value{Type: DateTime, Int: int64(e.Timestamp)})
	}
	for i := range e.Properties {
		p := &e.Properties[i]
		if all || selected(sel, p.Name) {
			dst = AppendAtomValue(dst, inner, p.Name, &p.Value)
		}
	}
	if !all {
		for i, name := range sel {
			switch name {
			case "PartitionKey", "RowKey", "Timestamp":
				continue
			}
			if _, ok := e.Get(name); ok || selected(sel[:i], name) {
				continue
			}
			dst = append(dst, inner...)
			dst = append(dst, "<d:"...)
			dst = append(dst, name...)
			dst = append(dst, " m:null=\"true\" />\r\n"...)
		}
	}
	dst = append(dst, indent...)
	return append(dst, "</m:properties>\r\n"...)
}

// AppendAtomValue appends one property line, <d:Name m:type="Edm.Int32">5</d:Name> and CRLF,
// after indent. Strings carry no m:type and get xml:space="preserve" when they start or end
// with white space (as recorded from the real service), so that readers keep it; other values
// are written as XmlConvert writes them: Int32, Int64 in decimal, Boolean true or false,
// Double in the shortest form that reads back exactly (5, 2.5, 1E+20, NaN, INF, -INF),
// DateTime with its fraction trimmed, Guid in lower case, Binary in base64.
func AppendAtomValue(dst []byte, indent, name string, v *Value) []byte {
	dst = append(dst, indent...)
	dst = append(dst, "<d:"...)
	dst = append(dst, name...)
	switch v.Type {
	case String:
		if hasOuterSpace(v.Str) {
			dst = append(dst, ` xml:space="preserve"`...)
		}
		dst = append(dst, '>')
		dst = xmltext.AppendText(dst, v.Str)
	case Boolean, Int32, Int64, Double, DateTime, Guid, Binary:
		dst = append(dst, ` m:type="`...)
		dst = append(dst, v.Type.Name()...)
		dst = append(dst, `">`...)
		dst = appendAtomScalar(dst, v)
	default:
		// Not a valid Value; keep the document well-formed.
		return append(dst, " m:null=\"true\" />\r\n"...)
	}
	dst = append(dst, "</d:"...)
	dst = append(dst, name...)
	return append(dst, ">\r\n"...)
}

func appendAtomScalar(dst []byte, v *Value) []byte {
	switch v.Type {
	case Boolean:
		if v.Int != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Int32, Int64:
		return strconv.AppendInt(dst, v.Int, 10)
	case Double:
		switch f := v.Float; {
		case math.IsNaN(f):
			return append(dst, "NaN"...)
		case math.IsInf(f, 1):
			return append(dst, "INF"...)
		case math.IsInf(f, -1):
			return append(dst, "-INF"...)
		default:
			return appendDoubleText(dst, f, false)
		}
	case DateTime:
		return Ticks(v.Int).AppendText(dst, false)
	case Guid:
		return xmltext.AppendText(dst, v.Str)
	case Binary:
		return base64.StdEncoding.AppendEncode(dst, v.Bin)
	}
	return dst
}

// hasOuterSpace reports whether s starts or ends with white space.
func hasOuterSpace(s string) bool {
	if s == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(first) || unicode.IsSpace(last)
}
