// Package blobquery runs Query Blob Contents: a SQL expression over a blob of CSV or JSON
// records, its results framed as Avro records (data, errors, progress, end) the SDKs read.
package blobquery

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Format is a side's serialization: Kind "delimited" (CSV), "json", for the output "arrow"
// (arrow.go), for the input "parquet" (parquet.go), and the delimited settings (single
// characters; "" for none), the JSON record separator or the Arrow schema.
type Format struct {
	Kind            string
	ColumnSeparator string
	FieldQuote      string
	RecordSeparator string
	EscapeChar      string
	HasHeaders      bool
	Arrow           []ArrowField
}

// DefaultFormat is the input a request without InputSerialization gets: comma-separated,
// double-quoted, newline-ended records without headers.
var DefaultFormat = Format{Kind: "delimited", ColumnSeparator: ",", FieldQuote: `"`, RecordSeparator: "\n"}

// Check tells why a format cannot be served, nil when it can.
func (f Format) Check(side string) error {
	switch {
	case f.Kind == "delimited" || f.Kind == "json":
		return nil
	case f.Kind == "arrow" && side == "output":
		return nil // CheckArrowSchema judges the schema
	case f.Kind == "parquet" && side == "input":
		return nil
	case f.Kind == "arrow" || f.Kind == "parquet":
		return fmt.Errorf("%s serialization %s is not one Azure serves (CSV and JSON are, and Arrow output, Parquet input)", side, f.Kind)
	}
	return fmt.Errorf("%s serialization %q is not delimited, json, arrow or parquet", side, f.Kind)
}

// progressEvery is how many bytes are scanned between progress records.
const progressEvery = 4 << 20

// resultChunk is the most data one result record holds.
const resultChunk = 1 << 20

// Run answers q over the total bytes of body into w: result records, a non-fatal error
// record for each record a condition could not judge (left out), a fatal one where the input
// cannot be read further, progress every 4 MiB and at the end, and the end record. It fails
// only when writing fails.
//
// The stream is framed as the service frames it (the Python SDK's recordings): each stretch
// of input between progress records gives its output as data records (one at the least, even
// empty, before anything else of the stretch), then the stretch's errors, then its progress.
// Nothing follows a fatal error but the last progress and the end.
func Run(w io.Writer, body io.Reader, total int64, q *Query, in, out Format) error {
	aw, err := newAvroWriter(w)
	if err != nil {
		return err
	}
	counted := &countingReader{r: body}
	src := bufio.NewReaderSize(counted, 64<<10)
	var records recordReader
	var unreadable *parseError // the input as a whole, before any record
	switch in.Kind {
	case "json":
		records = &jsonReader{r: src, sep: in.RecordSeparator, afterScalar: -1}
	case "parquet":
		pr, err := newParquetReader(src, total)
		if err != nil && !errors.As(err, &unreadable) {
			return err
		}
		records = pr
	default:
		records = &csvReader{r: src, f: in}
	}
	var buf bytes.Buffer
	var arrow *arrowStream
	var batch *arrowBatch // rows for arrow, which go to buf when flushed
	if out.Kind == "arrow" {
		arrow = newArrowStream(out.Arrow)
		batch = arrow.newBatch()
	}
	wroteData := false // in this stretch
	flush := func() error {
		if arrow != nil && (batch.rows > 0 || !arrow.started) {
			buf.Write(arrow.encode(batch))
			batch = arrow.newBatch()
		}
		if buf.Len() == 0 && wroteData {
			return nil
		}
		wroteData = true
		err := aw.result(buf.Bytes())
		buf.Reset()
		return err
	}
	type failure struct {
		fatal             bool
		name, description string
		position          int64
	}
	var failures []failure
	// endStretch writes the stretch's data, errors and progress.
	endStretch := func(scanned int64) error {
		if err := flush(); err != nil {
			return err
		}
		for _, f := range failures {
			if err := aw.failure(f.fatal, f.name, f.description, f.position); err != nil {
				return err
			}
		}
		failures, wroteData = failures[:0], false
		return aw.progress(scanned, total)
	}
	wroteHeader := false
	nextProgress := int64(progressEvery)
	for unreadable == nil {
		rec, err := records.next()
		if err == io.EOF {
			break
		}
		var fatal *parseError
		if errors.As(err, &fatal) {
			failures = append(failures, failure{true, fatal.name, fatal.description, fatal.position})
			break
		}
		if err != nil {
			return err
		}
		if r, ok := rec.(*jsonRecord); ok && r.scalar {
			// A JSON value that is no object is a record without fields: an empty line
			// (the JS SDK's live "fatal error event" test reads "\n" for "100,…"), and no
			// row of an Arrow schema.
			if arrow != nil {
				failures = append(failures, failure{false, "InvalidTypeConversion", "The row does not fit the arrow output schema: the record has no fields.", rec.position()})
				continue
			}
			buf.WriteString(out.RecordSeparator)
			continue
		}
		if q.Where != nil {
			ok, err := eval(q.Where, rec)
			if err == errConversion {
				failures = append(failures, failure{false, "InvalidTypeConversion", errConversion.Error(), rec.position()})
				continue
			}
			if !ok {
				continue
			}
		}
		names, values, missing := project(q, rec)
		if missing != "" && in.Kind != "json" {
			// A row without a selected column is left out, with a non-fatal error (the
			// Python SDK's recording of test_quick_query_iter_records_with_nonfatal_error_handler).
			failures = append(failures, failure{false, "InvalidColumnOrdinal", "Column ordinal does not exist in row.", rec.position()})
			continue
		}
		switch {
		case arrow != nil:
			if err := arrow.add(batch, texts(values)); err != nil {
				failures = append(failures, failure{false, "InvalidTypeConversion", "The row does not fit the arrow output schema: " + err.Error() + ".", rec.position()})
				continue
			}
		case out.Kind == "json":
			writeJSON(&buf, names, values, out)
		default:
			if out.HasHeaders && !wroteHeader {
				writeCSV(&buf, names, out)
			}
			writeCSV(&buf, texts(values), out)
		}
		wroteHeader = true
		if buf.Len() >= resultChunk || batch != nil && batch.bytes >= resultChunk {
			if err := flush(); err != nil {
				return err
			}
		}
		if counted.n >= nextProgress {
			if err := endStretch(min(counted.n, total)); err != nil {
				return err
			}
			nextProgress = counted.n + progressEvery
		}
	}
	if unreadable != nil {
		failures = append(failures, failure{true, unreadable.name, unreadable.description, unreadable.position})
	}
	if err := endStretch(total); err != nil {
		return err
	}
	return aw.end(total)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// record is one input record.
type record interface {
	row
	position() int64
	all() (names []string, values []value)
}

type recordReader interface {
	next() (record, error) // io.EOF after the last
}

// value is a field's text and, from JSON, its JSON text; absent marks a selected column the
// record does not have.
type value struct {
	text   string
	json   json.RawMessage // nil: not from JSON
	absent bool
}

func texts(vs []value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.text
	}
	return out
}

// project selects q's columns of rec; missing names the first the record lacks, whose value
// is then absent (a JSON answer leaves it out).
func project(q *Query, rec record) (names []string, values []value, missing string) {
	if q.Columns == nil {
		names, values = rec.all()
		return names, values, ""
	}
	have, all := rec.all()
	values = make([]value, len(q.Columns))
	for i, c := range q.Columns {
		values[i].absent = true
		if idx, ok := position(c); ok && idx < len(all) {
			values[i] = all[idx]
			continue
		}
		for j, n := range have {
			if strings.EqualFold(n, c) {
				values[i] = all[j]
				break
			}
		}
		if values[i].absent && missing == "" {
			missing = c
		}
	}
	return q.Columns, values, missing
}

// position reads _N, the Nth field counted from 1.
func position(name string) (int, bool) {
	if len(name) < 2 || name[0] != '_' {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	return n - 1, err == nil && n > 0
}

func writeCSV(buf *bytes.Buffer, fields []string, f Format) {
	for i, field := range fields {
		if i > 0 {
			buf.WriteString(f.ColumnSeparator)
		}
		if f.FieldQuote != "" && (strings.Contains(field, f.ColumnSeparator) || strings.Contains(field, f.RecordSeparator) || strings.Contains(field, f.FieldQuote)) {
			buf.WriteString(f.FieldQuote + strings.ReplaceAll(field, f.FieldQuote, f.FieldQuote+f.FieldQuote) + f.FieldQuote)
			continue
		}
		buf.WriteString(field)
	}
	buf.WriteString(f.RecordSeparator)
}

func writeJSON(buf *bytes.Buffer, names []string, values []value, f Format) {
	buf.WriteByte('{')
	written := 0
	for i, n := range names {
		if values[i].absent {
			continue // {"name2":"x"} selected for name is {} (the Python SDK's recordings)
		}
		if written > 0 {
			buf.WriteByte(',')
		}
		written++
		key, _ := json.Marshal(n)
		buf.Write(key)
		buf.WriteByte(':')
		if v := values[i]; v.json != nil {
			buf.Write(v.json)
		} else {
			s, _ := json.Marshal(v.text)
			buf.Write(s)
		}
	}
	buf.WriteByte('}')
	buf.WriteString(f.RecordSeparator)
}

// parseError stops a query: the input cannot be read on from position. name is the error
// record's: ParseError for input where a record should begin, InternalError for a record
// that cannot be read.
type parseError struct {
	name        string
	description string
	position    int64
}

func (e *parseError) Error() string { return e.description }

// --- CSV ---

type csvReader struct {
	r       *bufio.Reader
	f       Format
	pos     int64
	headers []string
	started bool
}

type csvRecord struct {
	fields  []string
	headers []string
	start   int64
}

func (r *csvRecord) position() int64 { return r.start }

func (r *csvRecord) field(name string) (string, bool) {
	if i, ok := position(name); ok {
		if i < len(r.fields) {
			return r.fields[i], true
		}
		return "", false
	}
	for i, h := range r.headers {
		if strings.EqualFold(h, name) && i < len(r.fields) {
			return r.fields[i], true
		}
	}
	return "", false
}

func (r *csvRecord) all() ([]string, []value) {
	names := make([]string, len(r.fields))
	values := make([]value, len(r.fields))
	for i, f := range r.fields {
		names[i] = "_" + strconv.Itoa(i+1)
		if i < len(r.headers) {
			names[i] = r.headers[i]
		}
		values[i] = value{text: f}
	}
	return names, values
}

func (c *csvReader) next() (record, error) {
	if !c.started {
		c.started = true
		if c.f.HasHeaders {
			h, _, err := c.line()
			if err != nil {
				return nil, err
			}
			c.headers = h
		}
	}
	fields, start, err := c.line()
	if err != nil {
		return nil, err
	}
	return &csvRecord{fields: fields, headers: c.headers, start: start}, nil
}

// line reads one record's fields.
func (c *csvReader) line() ([]string, int64, error) {
	sep, rec, quote, esc := first(c.f.ColumnSeparator), first(c.f.RecordSeparator), first(c.f.FieldQuote), first(c.f.EscapeChar)
	start := c.pos
	var fields []string
	var cur []byte
	inQuote, any := false, false
	for {
		b, err := c.r.ReadByte()
		if err == io.EOF {
			if !any {
				return nil, start, io.EOF
			}
			return append(fields, string(cur)), start, nil
		}
		if err != nil {
			return nil, start, err
		}
		c.pos++
		any = true
		switch {
		case esc >= 0 && int(b) == esc:
			nb, err := c.r.ReadByte()
			if err == nil {
				c.pos++
				cur = append(cur, nb)
			}
		case quote >= 0 && int(b) == quote:
			if inQuote {
				if nb, err := c.r.Peek(1); err == nil && int(nb[0]) == quote {
					c.r.ReadByte()
					c.pos++
					cur = append(cur, b)
					continue
				}
			}
			inQuote = !inQuote
		case !inQuote && int(b) == sep:
			fields = append(fields, string(cur))
			cur = nil
		case !inQuote && int(b) == rec:
			if b == '\n' && len(cur) > 0 && cur[len(cur)-1] == '\r' {
				cur = cur[:len(cur)-1] // a newline ends a CRLF record too, as on Azure
			}
			return append(fields, string(cur)), start, nil
		default:
			cur = append(cur, b)
		}
	}
}

// first is a separator's byte, -1 for none.
func first(s string) int {
	if s == "" {
		return -1
	}
	return int(s[0])
}

// --- JSON ---

type jsonReader struct {
	r       *bufio.Reader
	sep     string
	pos     int64
	pending []*jsonRecord // the rest of a top-level array
	// afterScalar is the start of the scalar just read, -1 after anything else: an error
	// right after a scalar is reported at the scalar's position.
	afterScalar int64
}

type jsonRecord struct {
	names  []string
	values []value
	start  int64
	scalar bool // a JSON value that is no object: a record without fields
}

func (r *jsonRecord) position() int64          { return r.start }
func (r *jsonRecord) all() ([]string, []value) { return r.names, r.values }

func (r *jsonRecord) field(name string) (string, bool) {
	for i, n := range r.names {
		if n == name {
			return r.values[i].text, true
		}
	}
	if i, ok := position(name); ok && i < len(r.values) {
		return r.values[i].text, true
	}
	return "", false
}

func (j *jsonReader) next() (record, error) {
	if len(j.pending) > 0 {
		r := j.pending[0]
		j.pending = j.pending[1:]
		return r, nil
	}
	for {
		b, err := j.r.ReadByte()
		if err != nil {
			return nil, err
		}
		if b == ' ' || b == '\t' || b == '\r' || b == '\n' || strings.IndexByte(j.sep, b) >= 0 {
			j.pos++
			continue
		}
		start := j.pos
		j.pos++
		if b != '{' && b != '[' {
			return j.scalar(b, start)
		}
		j.afterScalar = -1
		raw, err := j.value(b, start)
		if err != nil {
			return nil, err
		}
		if b == '{' {
			return decodeObject(raw, start)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, unreadable(start)
		}
		for _, it := range items {
			rec, err := decodeObject(it, start)
			if err != nil {
				return nil, err
			}
			j.pending = append(j.pending, rec)
		}
		return j.next()
	}
}

// scalar reads input that does not open an object or array, from its first byte b at start:
// a JSON scalar (a number, string, true, false, null) is a record without fields, as the
// service reads "100,200" (an empty line, then a fatal error at the comma); anything else is
// a fatal ParseError naming the byte, at the position of the scalar before it if there was one.
func (j *jsonReader) scalar(b byte, start int64) (record, error) {
	token := []byte{b}
	inString, escaped := b == '"', false
	for {
		next, err := j.r.Peek(1)
		if err != nil {
			break
		}
		c := next[0]
		if !inString && strings.IndexByte(",:{}[] \t\r\n", c) >= 0 {
			break
		}
		_, _ = j.r.ReadByte()
		j.pos++
		token = append(token, c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		}
	}
	if json.Valid(token) {
		j.afterScalar = start
		return &jsonRecord{start: start, scalar: true}, nil
	}
	position := start
	if j.afterScalar >= 0 {
		position = j.afterScalar
	}
	return nil, &parseError{"ParseError", fmt.Sprintf("Unexpected token '%c' at [byte: %d]. Expecting tokens '{', or '['.", b, start), position}
}

// unreadable is the fatal error of a record that opened as an object or array but cannot be
// read: the service's own words (the Python SDK's recording of
// test_quick_query_readall_with_fatal_error_handler, for {name: owner}).
func unreadable(start int64) error {
	return &parseError{"InternalError", "Internal parse exception.", start}
}

// value reads the rest of an object or array that opened with open.
func (j *jsonReader) value(open byte, start int64) ([]byte, error) {
	raw := []byte{open}
	depth, inString, escaped := 1, false, false
	for depth > 0 {
		b, err := j.r.ReadByte()
		if err == io.EOF {
			return nil, unreadable(start)
		}
		if err != nil {
			return nil, err
		}
		j.pos++
		raw = append(raw, b)
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case !inString && (b == '{' || b == '['):
			depth++
		case !inString && (b == '}' || b == ']'):
			depth--
		}
	}
	return raw, nil
}

// decodeObject reads an object's members in their order.
func decodeObject(raw []byte, start int64) (*jsonRecord, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	bad := unreadable(start)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, bad
	}
	rec := &jsonRecord{start: start}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, bad
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, bad
		}
		text := string(v)
		var s string
		if json.Unmarshal(v, &s) == nil {
			text = s
		}
		compact := new(bytes.Buffer)
		if json.Compact(compact, v) == nil {
			v = compact.Bytes()
		}
		rec.names = append(rec.names, key)
		rec.values = append(rec.values, value{text: text, json: v})
	}
	return rec, nil
}
