package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/edm"
)

// row is an entity as the service returned it.
type row struct {
	edm.Entity          // Timestamp zero when the response had none ($select)
	hasPK, hasRK bool   // the keys were in the response (a $select may leave them out)
	etag         string // odata.etag, "" if none
}

// decodeRow reads one entity object of a response (any metadata level; minimal or full keep
// every type, since only Int32, Double, String and Boolean go unannotated and JSON tells those
// apart: 5 is Int32, 5.0 Double).
func decodeRow(raw []byte) (row, error) {
	d, err := edm.DecodeJSON(raw) // skips Timestamp and the odata.* members
	if err != nil {
		return row{}, fmt.Errorf("reading an entity in the response: %w", err)
	}
	var meta struct {
		Timestamp string `json:"Timestamp"`
		ETag      string `json:"odata.etag"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return row{}, fmt.Errorf("reading an entity in the response: %w", err)
	}
	r := row{Entity: d.Entity, hasPK: d.HasPartitionKey, hasRK: d.HasRowKey, etag: meta.ETag}
	if meta.Timestamp != "" {
		if r.Timestamp, err = edm.ParseDateTime(meta.Timestamp); err != nil {
			return row{}, fmt.Errorf("reading an entity in the response: Timestamp %q: %w", meta.Timestamp, err)
		}
	}
	return r, nil
}

// decodeEntities reads the entities of a Query Entities response body.
func decodeEntities(body []byte) ([]row, error) {
	var page struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("reading the query response: %w", err)
	}
	rows := make([]row, len(page.Value))
	for i, raw := range page.Value {
		var err error
		if rows[i], err = decodeRow(raw); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// jsonOptions say what appendEntityJSON writes besides the properties.
type jsonOptions struct {
	etag      bool // "odata.etag", when known
	timestamp bool // "Timestamp", when known
}

// appendEntityJSON appends r as one JSON object, without a newline: odata.etag (if asked),
// PartitionKey, RowKey, Timestamp (if asked), then the custom properties in order. Every value
// whose type JSON does not tell is annotated: Int64, DateTime, Guid, Binary and Double (a
// Double without its annotation would read back as Int32 once a tool such as jq or the Go SDK
// writes 5.0 as 5). Strings, Booleans and Int32s need none. This is the form export writes
// and import reads.
func appendEntityJSON(dst []byte, r *row, o jsonOptions) []byte {
	w := jsonWriter{dst: append(dst, '{')}
	if o.etag && r.etag != "" {
		w.name("odata.etag")
		w.dst = appendJSONString(w.dst, r.etag)
	}
	if r.hasPK {
		w.name("PartitionKey")
		w.dst = appendJSONString(w.dst, r.PartitionKey)
	}
	if r.hasRK {
		w.name("RowKey")
		w.dst = appendJSONString(w.dst, r.RowKey)
	}
	if o.timestamp && r.Timestamp != 0 {
		w.annotation("Timestamp", edm.DateTime)
		w.name("Timestamp")
		w.dst = append(w.dst, '"')
		w.dst = r.Timestamp.AppendText(w.dst, true)
		w.dst = append(w.dst, '"')
	}
	for i := range r.Properties {
		p := &r.Properties[i]
		switch p.Value.Type {
		case edm.String, edm.Boolean, edm.Int32:
		default:
			w.annotation(p.Name, p.Value.Type)
		}
		w.name(p.Name)
		w.dst = appendValueJSON(w.dst, &p.Value)
	}
	return append(w.dst, '}')
}

// appendValueJSON appends v as the Table service writes it in JSON.
func appendValueJSON(dst []byte, v *edm.Value) []byte {
	switch v.Type {
	case edm.String, edm.Guid:
		return appendJSONString(dst, v.Str)
	case edm.Boolean:
		return strconv.AppendBool(dst, v.Int != 0)
	case edm.Int32:
		return strconv.AppendInt(dst, v.Int, 10)
	case edm.Int64:
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, v.Int, 10)
		return append(dst, '"')
	case edm.Double:
		f := v.Float
		switch {
		case math.IsNaN(f):
			return append(dst, `"NaN"`...)
		case math.IsInf(f, 1):
			return append(dst, `"Infinity"`...)
		case math.IsInf(f, -1):
			return append(dst, `"-Infinity"`...)
		}
		return append(dst, formatDouble(f)...)
	case edm.DateTime:
		dst = append(dst, '"')
		dst = edm.Ticks(v.Int).AppendText(dst, false)
		return append(dst, '"')
	case edm.Binary:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bin)
		return append(dst, '"')
	}
	return append(dst, "null"...)
}

// formatDouble writes a finite double in the fewest digits that read back exactly, with ".0"
// on integral values so that it looks like a double even without its annotation.
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	for i := 0; i < len(s); i++ {
		if s[i] == '.' || s[i] == 'e' {
			return s
		}
	}
	return s + ".0"
}

// jsonWriter writes the members of one JSON object, inserting the commas.
type jsonWriter struct {
	dst  []byte
	more bool
}

func (w *jsonWriter) name(name string) {
	if w.more {
		w.dst = append(w.dst, ',')
	}
	w.more = true
	w.dst = appendJSONString(w.dst, name)
	w.dst = append(w.dst, ':')
}

func (w *jsonWriter) annotation(name string, t edm.Type) {
	w.name(name + "@odata.type")
	w.dst = appendJSONString(w.dst, t.Name())
}

// appendJSONString appends s as a JSON string. Unlike encoding/json it leaves <, > and & as
// they are: the output is read by people and tools, not embedded in HTML.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20 || c == 0x7f:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			dst = append(dst, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return append(dst, '"')
}
