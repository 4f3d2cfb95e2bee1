package edm

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Metadata is the JSON metadata level of a response (odata=nometadata, minimalmetadata or
// fullmetadata).
type Metadata uint8

const (
	NoMetadata Metadata = iota
	MinimalMetadata
	FullMetadata
)

// EncodeOptions says how to write an entity in a response.
type EncodeOptions struct {
	Metadata Metadata
	// MetadataURL, if non-empty, is written first as "odata.metadata" (single-entity
	// responses) under minimal and full metadata.
	MetadataURL string
	// BaseURL is the service root, e.g. "http://127.0.0.1:10002/devstoreaccount1", for
	// odata.id.
	BaseURL string
	// Account and Table make odata.type "{account}.{table}"; Table is the name as created.
	Account string
	Table   string
	// Select is nil for every property. Otherwise only the listed properties are written
	// (PartitionKey, RowKey and Timestamp too only if listed), and a listed property the
	// entity lacks is written as null. The odata.* members are written regardless.
	Select []string
}

// AppendJSON appends e to dst as one JSON object in the requested metadata level, members in
// the real service's order: odata.metadata, odata.type, odata.id, odata.etag, odata.editLink,
// PartitionKey, RowKey, Timestamp@odata.type (full only), Timestamp, then the custom properties
// in stored order, each annotation right before its value. A nil opts means no metadata.
//
// Values are formatted as the service does (data-model.md §6.1): Int64 as an annotated string,
// Double always looking like a double (5 → 5.0) with NaN and ±Infinity as annotated strings,
// DateTime with its fraction trimmed (Timestamp always with 7 digits), Guid lowercase, Binary
// as standard base64. Under nometadata there are no annotations at all.
func AppendJSON(dst []byte, e *Entity, opts *EncodeOptions) []byte {
	var o EncodeOptions
	if opts != nil {
		o = *opts
	}
	annotate := o.Metadata == MinimalMetadata || o.Metadata == FullMetadata
	full := o.Metadata == FullMetadata
	w := jsonObject{dst: append(slices.Grow(dst, jsonSizeHint(e, &o)), '{')}

	if annotate && o.MetadataURL != "" {
		w.stringMember("odata.metadata", o.MetadataURL)
	}
	if full {
		w.name("odata.type")
		w.dst = append(w.dst, '"')
		w.dst = appendStringContent(w.dst, o.Account)
		w.dst = append(w.dst, '.')
		w.dst = appendStringContent(w.dst, o.Table)
		w.dst = append(w.dst, '"')
		w.name("odata.id")
		w.dst = append(w.dst, '"')
		w.dst = appendStringContent(w.dst, o.BaseURL)
		w.dst = append(w.dst, '/')
		w.dst = appendEditLink(w.dst, o.Table, e)
		w.dst = append(w.dst, '"')
	}
	if annotate {
		w.name("odata.etag")
		w.dst = appendETagJSON(w.dst, e.Timestamp)
	}
	if full {
		w.name("odata.editLink")
		w.dst = append(w.dst, '"')
		w.dst = appendEditLink(w.dst, o.Table, e)
		w.dst = append(w.dst, '"')
	}

	all := o.Select == nil
	if all || selected(o.Select, "PartitionKey") {
		w.stringMember("PartitionKey", e.PartitionKey)
	}
	if all || selected(o.Select, "RowKey") {
		w.stringMember("RowKey", e.RowKey)
	}
	if all || selected(o.Select, "Timestamp") {
		if full {
			w.stringMember("Timestamp@odata.type", "Edm.DateTime")
		}
		w.name("Timestamp")
		w.dst = append(w.dst, '"')
		w.dst = e.Timestamp.AppendText(w.dst, true)
		w.dst = append(w.dst, '"')
	}
	for i := range e.Properties {
		p := &e.Properties[i]
		if all || selected(o.Select, p.Name) {
			w.property(p.Name, &p.Value, annotate)
		}
	}
	if !all {
		// Selected properties the entity lacks are written as null, once each.
		for i, name := range o.Select {
			switch name {
			case "PartitionKey", "RowKey", "Timestamp":
				continue
			}
			if _, ok := e.Get(name); ok || selected(o.Select[:i], name) {
				continue
			}
			w.name(name)
			w.dst = append(w.dst, "null"...)
		}
	}
	return append(w.dst, '}')
}

// jsonSizeHint is about what AppendJSON writes for e, erring high unless strings need escapes,
// so that a new buffer is allocated once rather than grown step by step.
func jsonSizeHint(e *Entity, o *EncodeOptions) int {
	keys := len(e.PartitionKey) + len(e.RowKey)
	// The braces, odata.etag, the keys and Timestamp.
	n := 160 + len(o.MetadataURL) + keys
	if o.Metadata == FullMetadata {
		// odata.type, odata.id and odata.editLink (the last two with the keys again) and
		// Timestamp's annotation.
		n += 150 + len(o.Account) + len(o.BaseURL) + 3*len(o.Table) + 2*keys
	}
	for i := range e.Properties {
		p := &e.Properties[i]
		// The name twice, for an annotation, and room for any scalar value.
		n += 2*len(p.Name) + 64 + len(p.Value.Str) + base64.StdEncoding.EncodedLen(len(p.Value.Bin))
	}
	return n
}

func selected(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// jsonObject writes the members of one JSON object, inserting the commas.
type jsonObject struct {
	dst  []byte
	more bool
}

// name writes a member name and its colon.
func (w *jsonObject) name(name string) {
	if w.more {
		w.dst = append(w.dst, ',')
	}
	w.more = true
	w.dst = append(w.dst, '"')
	w.dst = appendStringContent(w.dst, name)
	w.dst = append(w.dst, '"', ':')
}

func (w *jsonObject) stringMember(name, value string) {
	w.name(name)
	w.dst = appendString(w.dst, value)
}

// annotation writes "<name>@odata.type":"<typ>".
func (w *jsonObject) annotation(name string, typ Type) {
	if w.more {
		w.dst = append(w.dst, ',')
	}
	w.more = true
	w.dst = append(w.dst, '"')
	w.dst = appendStringContent(w.dst, name)
	w.dst = append(w.dst, `@odata.type":"`...)
	w.dst = append(w.dst, typ.Name()...)
	w.dst = append(w.dst, '"')
}

// property writes one custom property, preceded by its annotation when the type cannot be
// inferred from the JSON value and annotate is set.
func (w *jsonObject) property(name string, v *Value, annotate bool) {
	switch v.Type {
	case String:
		w.name(name)
		w.dst = appendString(w.dst, v.Str)
	case Boolean:
		w.name(name)
		if v.Int != 0 {
			w.dst = append(w.dst, "true"...)
		} else {
			w.dst = append(w.dst, "false"...)
		}
	case Int32:
		w.name(name)
		w.dst = strconv.AppendInt(w.dst, v.Int, 10)
	case Int64:
		if annotate {
			w.annotation(name, Int64)
		}
		w.name(name)
		w.dst = append(w.dst, '"')
		w.dst = strconv.AppendInt(w.dst, v.Int, 10)
		w.dst = append(w.dst, '"')
	case Double:
		f := v.Float
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			w.name(name)
			w.dst = appendDouble(w.dst, f)
			break
		}
		if annotate {
			w.annotation(name, Double)
		}
		w.name(name)
		switch {
		case math.IsNaN(f):
			w.dst = append(w.dst, `"NaN"`...)
		case f > 0:
			w.dst = append(w.dst, `"Infinity"`...)
		default:
			w.dst = append(w.dst, `"-Infinity"`...)
		}
	case DateTime:
		if annotate {
			w.annotation(name, DateTime)
		}
		w.name(name)
		w.dst = append(w.dst, '"')
		w.dst = Ticks(v.Int).AppendText(w.dst, false)
		w.dst = append(w.dst, '"')
	case Guid:
		if annotate {
			w.annotation(name, Guid)
		}
		w.name(name)
		w.dst = appendString(w.dst, v.Str)
	case Binary:
		if annotate {
			w.annotation(name, Binary)
		}
		w.name(name)
		w.dst = append(w.dst, '"')
		w.dst = base64.StdEncoding.AppendEncode(w.dst, v.Bin)
		w.dst = append(w.dst, '"')
	default:
		// Not a valid Value; keep the document well-formed.
		w.name(name)
		w.dst = append(w.dst, "null"...)
	}
}

// appendDouble writes a finite double so that every JSON reader sees a floating-point number,
// in the form .NET's round-trip format gives and the service writes: the shortest digits that
// read back exactly, fixed notation for decimal exponents -4..14 (.NET's "G" rule) with ".0" added to integral
// values (5 → 5.0), and otherwise a mantissa with E+XX/E-XX (1E+20, 1.5E-07). Python and Go
// clients read a bare 5 as Int32, so the ".0" matters.
func appendDouble(dst []byte, f float64) []byte { return appendDoubleText(dst, f, true) }

// appendDoubleText is appendDouble, adding ".0" to integral values in fixed notation only when
// pointZero is set: Atom writes Edm.Double as .NET's round-trip format does (5 → 5), its
// m:type attribute telling readers the type.
func appendDoubleText(dst []byte, f float64, pointZero bool) []byte {
	var buf [32]byte
	sci := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // e.g. "-1.2345e+20"
	e := len(sci) - 1
	for sci[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range sci[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if sci[e+1] == '-' {
		exp = -exp
	}
	if exp > -5 && exp < 15 {
		return appendFixed(dst, sci[:e], exp, pointZero)
	}
	dst = append(dst, sci[:e]...)
	dst = append(dst, 'E', sci[e+1])
	if exp < 0 {
		exp = -exp
	}
	if exp < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}

// appendFixed writes mantissa×10^exp, given as strconv's shortest 'e' format writes it
// ("-1.2345", exp 2), in fixed notation: the digits strconv's 'f' format would write ("-123.45"),
// with ".0" added to integral values when pointZero is set.
func appendFixed(dst, mantissa []byte, exp int, pointZero bool) []byte {
	if mantissa[0] == '-' {
		dst = append(dst, '-')
		mantissa = mantissa[1:]
	}
	var buf [24]byte
	digits := append(buf[:0], mantissa[0])
	if len(mantissa) > 2 {
		digits = append(digits, mantissa[2:]...) // after the point
	}
	switch {
	case exp < 0:
		dst = append(dst, "0.0000"[:1-exp]...) // "0." and -exp-1 zeros
		return append(dst, digits...)
	case len(digits) <= exp+1:
		dst = append(dst, digits...)
		for range exp + 1 - len(digits) {
			dst = append(dst, '0')
		}
		if !pointZero {
			return dst
		}
		return append(dst, '.', '0')
	default:
		dst = append(dst, digits[:exp+1]...)
		dst = append(dst, '.')
		return append(dst, digits[exp+1:]...)
	}
}

// appendETagJSON writes ETag(t) as a JSON string without building it first:
// "W/\"datetime'2021-08-02T18%3A01%3A40.1925388Z'\"".
func appendETagJSON(dst []byte, t Ticks) []byte {
	dst = append(dst, `"W/\"datetime'`...)
	dst = appendETagTime(dst, t)
	return append(dst, `'\""`...)
}

// appendEditLink writes {table}(PartitionKey='pk',RowKey='rk') as JSON string content, with
// quotes in the keys doubled as in OData key literals.
func appendEditLink(dst []byte, table string, e *Entity) []byte {
	dst = appendStringContent(dst, table)
	dst = append(dst, "(PartitionKey='"...)
	dst = appendKeyLiteral(dst, e.PartitionKey)
	dst = append(dst, "',RowKey='"...)
	dst = appendKeyLiteral(dst, e.RowKey)
	return append(dst, "')"...)
}

func appendKeyLiteral(dst []byte, key string) []byte {
	for {
		i := strings.IndexByte(key, '\'')
		if i < 0 {
			return appendStringContent(dst, key)
		}
		dst = appendStringContent(dst, key[:i+1])
		dst = append(dst, '\'')
		key = key[i+1:]
	}
}

// appendString writes s as a JSON string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendStringContent(dst, s)
	return append(dst, '"')
}

// jsonPlain marks the bytes that appear in a JSON string as themselves and need no UTF-8 check:
// printable ASCII other than quote and backslash.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendStringContent writes s escaped for the inside of a JSON string: quote, backslash and
// the control characters escaped, everything else as UTF-8. Invalid UTF-8 (which only a
// corrupt record could hold) becomes U+FFFD, so the output is always valid JSON.
func appendStringContent(dst []byte, s string) []byte {
	start := 0 // s[start:i] is plain and not yet copied
	i := 0
	for {
		for i+8 <= len(s) && plain8(s[i:]) {
			i += 8
		}
		for i < len(s) && jsonPlain[s[i]] {
			i++
		}
		if i == len(s) {
			return append(dst, s[start:]...)
		}
		if c := s[i]; c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			dst = appendEscape(dst, c)
			i++
			start = i
			continue
		}
		// A run of non-ASCII bytes is valid UTF-8 exactly when it is valid on its own, as
		// ASCII bytes are never part of a multi-byte sequence: check whole runs at once.
		end := i + 1
		for end < len(s) && s[end] >= utf8.RuneSelf {
			end++
		}
		if utf8.ValidString(s[i:end]) {
			i = end
			continue
		}
		for i < end {
			r, size := utf8.DecodeRuneInString(s[i:end])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				start = i + 1
			}
			i += size
		}
	}
}

// appendEscape writes the escape sequence for an ASCII byte that jsonPlain rejects.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether the first 8 bytes of s are all plain in the sense of jsonPlain,
// testing them at once (the "has a byte less than n" and "has a zero byte" bit tricks). It is
// small enough to inline, and the []byte conversion is only read, so it compiles to one load.
func plain8(s string) bool {
	v := binary.LittleEndian.Uint64([]byte(s[:8]))
	control := (v - ones*0x20) &^ v
	return (v|control|zeroByte(v^ones*'"')|zeroByte(v^ones*'\\'))&highs == 0
}

// zeroByte has the high bit of some byte set if v has a zero byte.
func zeroByte(v uint64) uint64 { return (v - ones) &^ v }
