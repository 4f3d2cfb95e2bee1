package blobquery

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	flatbuffers "github.com/google/flatbuffers/go"
)

// Arrow output (OutputSerialization of Type arrow): the results as an Apache Arrow IPC stream
// of the schema the request gives (ArrowConfiguration), in the service's own layout, which
// two recordings of the real service pin byte for byte (the JS SDK's live test "query should
// work with arrow output configurations", the Python SDK's test_quick_query_output_in_arrow_format):
// the schema message and an empty record batch first, then each batch of rows after an
// end-of-stream marker. Each field's flatbuffer tables are built in the order those bytes
// show (the type, then the name, then the children), and every table's fields in flatc's
// order (largest first), so that the same request gives the same bytes.
//
// A result row must have as many columns as the schema has fields; each value is converted
// to its field's type (an empty one is null). A row that does not fit is left out, with a
// non-fatal error, as a row a condition cannot judge is.

// ArrowField is one field of an Arrow output schema: Type (Int64, Bool, Timestamp[ms],
// String, Double or Decimal, in any case), Name, and a decimal's Precision and Scale.
type ArrowField struct {
	Type      string
	Name      string
	Precision int
	Scale     int
}

// arrowType is a field's type as the encoder knows it.
type arrowType int

const (
	arrowInt64 arrowType = iota + 1
	arrowBool
	arrowTimestampMS
	arrowString
	arrowDouble
	arrowDecimal
)

var arrowTypes = map[string]arrowType{
	"int64": arrowInt64, "bool": arrowBool, "timestamp[ms]": arrowTimestampMS,
	"string": arrowString, "double": arrowDouble, "decimal": arrowDecimal,
}

// CheckArrowSchema tells why an Arrow output schema cannot be served, nil when it can.
func CheckArrowSchema(fields []ArrowField) error {
	if len(fields) == 0 {
		return fmt.Errorf("the arrow output serialization has no schema fields")
	}
	for i, f := range fields {
		t, ok := arrowTypes[strings.ToLower(f.Type)]
		switch {
		case !ok:
			return fmt.Errorf("arrow field %d has type %q, not Int64, Bool, Timestamp[ms], String, Double or Decimal", i+1, f.Type)
		case t == arrowDecimal && (f.Precision < 1 || f.Precision > 38 || f.Scale < 0 || f.Scale > f.Precision):
			return fmt.Errorf("arrow field %d is a decimal of precision %d and scale %d; the precision must be 1 to 38 and the scale 0 to the precision", i+1, f.Precision, f.Scale)
		}
	}
	return nil
}

// Flatbuffer enums and slots of Arrow's Schema.fbs and Message.fbs.
const (
	fbMetadataV5 = 4

	fbHeaderSchema      = 1
	fbHeaderRecordBatch = 3

	fbTypeInt           = 2
	fbTypeFloatingPoint = 3
	fbTypeUtf8          = 5
	fbTypeBool          = 6
	fbTypeDecimal       = 7
	fbTypeTimestamp     = 10

	fbPrecisionDouble = 2
	fbUnitMillisecond = 1
)

// arrowStream encodes the messages of one Arrow output.
type arrowStream struct {
	fields  []ArrowField
	types   []arrowType
	started bool // the schema and the empty batch have been written
}

func newArrowStream(fields []ArrowField) *arrowStream {
	s := &arrowStream{fields: fields}
	for _, f := range fields {
		s.types = append(s.types, arrowTypes[strings.ToLower(f.Type)])
	}
	return s
}

// arrowBatch is rows converted to their fields' types, column by column.
type arrowBatch struct {
	rows  int
	cols  []arrowColumn
	bytes int // about what the body will take
}

type arrowColumn struct {
	valid []bool
	ints  []int64 // Int64, Timestamp[ms], Bool (0/1)
	flts  []float64
	strs  []string
	decs  []*big.Int
	nulls int
}

func (s *arrowStream) newBatch() *arrowBatch {
	return &arrowBatch{cols: make([]arrowColumn, len(s.fields))}
}

// add converts a row's values to the schema and appends them, or tells why it cannot.
func (s *arrowStream) add(b *arrowBatch, values []string) error {
	if len(values) != len(s.fields) {
		return fmt.Errorf("the row has %d columns; the arrow output schema has %d fields", len(values), len(s.fields))
	}
	type cell struct {
		null bool
		i    int64
		f    float64
		s    string
		d    *big.Int
	}
	cells := make([]cell, len(values))
	for i, v := range values {
		if v == "" {
			cells[i].null = true
			continue
		}
		var err error
		switch s.types[i] {
		case arrowInt64:
			cells[i].i, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		case arrowBool:
			var t bool
			t, err = strconv.ParseBool(strings.ToLower(strings.TrimSpace(v)))
			if t {
				cells[i].i = 1
			}
		case arrowTimestampMS:
			cells[i].i, err = parseTimestampMS(strings.TrimSpace(v))
		case arrowDouble:
			cells[i].f, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
		case arrowString:
			cells[i].s = v
		case arrowDecimal:
			cells[i].d, err = parseDecimal(strings.TrimSpace(v), s.fields[i].Precision, s.fields[i].Scale)
		}
		if err != nil {
			return fmt.Errorf("%q in column %d is not a %s", v, i+1, s.fields[i].Type)
		}
	}
	for i, c := range cells {
		col := &b.cols[i]
		col.valid = append(col.valid, !c.null)
		if c.null {
			col.nulls++
		}
		switch s.types[i] {
		case arrowString:
			col.strs = append(col.strs, c.s)
			b.bytes += len(c.s) + 4
		case arrowDouble:
			col.flts = append(col.flts, c.f)
			b.bytes += 8
		case arrowDecimal:
			col.decs = append(col.decs, c.d)
			b.bytes += 16
		default:
			col.ints = append(col.ints, c.i)
			b.bytes += 8
		}
	}
	b.rows++
	return nil
}

// parseTimestampMS reads milliseconds since the Unix epoch, or an RFC 3339 time.
func parseTimestampMS(v string) (int64, error) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("not a time")
}

// parseDecimal reads a decimal's unscaled value. UNSURE: the one value recorded, 400 into a
// decimal of precision 4 and scale 2, came back as the unscaled 400 (4.00): an integer is
// taken as the unscaled value, as there; a number with a fraction is scaled (1.5 is 150).
func parseDecimal(v string, precision, scale int) (*big.Int, error) {
	// No decimal of precision 38 needs more, and a long text or a large exponent
	// (1e100000) costs milliseconds a value to read.
	if len(v) > 80 {
		return nil, fmt.Errorf("too long")
	}
	if i := strings.IndexAny(v, "eE"); i >= 0 {
		if exp, err := strconv.Atoi(v[i+1:]); err != nil || exp > 80 || exp < -80 {
			return nil, fmt.Errorf("an exponent out of range")
		}
	}
	var d *big.Int
	if n, ok := new(big.Int).SetString(v, 10); ok {
		d = n
	} else {
		r, ok := new(big.Rat).SetString(v)
		if !ok {
			return nil, fmt.Errorf("not a number")
		}
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		if !r.IsInt() {
			return nil, fmt.Errorf("more digits than the scale")
		}
		d = r.Num()
	}
	if new(big.Int).Abs(d).Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)) >= 0 {
		return nil, fmt.Errorf("more digits than the precision")
	}
	return d, nil
}

// encode is what the batch adds to the stream: the schema and an empty batch the first
// time, then the batch's rows, if any, after an end-of-stream marker.
func (s *arrowStream) encode(b *arrowBatch) []byte {
	var out []byte
	if !s.started {
		s.started = true
		out = appendMessage(out, s.schemaMessage(), nil)
		out = appendMessage(out, s.batchMessage(s.newBatch(), nil, 0), nil)
	}
	if b == nil || b.rows == 0 {
		return out
	}
	out = append(out, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0)
	body, buffers := s.body(b)
	return appendMessage(out, s.batchMessage(b, buffers, len(body)), body)
}

// appendMessage frames a flatbuffer message and its body: the continuation marker, the
// metadata's length padded to 8 bytes, the metadata, the body.
func appendMessage(out, meta, body []byte) []byte {
	padded := (len(meta) + 7) &^ 7
	out = append(out, 0xff, 0xff, 0xff, 0xff)
	out = binary.LittleEndian.AppendUint32(out, uint32(padded))
	out = append(out, meta...)
	out = append(out, make([]byte, padded-len(meta))...)
	return append(out, body...)
}

// schemaMessage is the Message holding the Schema.
func (s *arrowStream) schemaMessage() []byte {
	fb := flatbuffers.NewBuilder(256)
	offsets := make([]flatbuffers.UOffsetT, len(s.fields))
	for i, f := range s.fields {
		typeType, typ := s.fieldType(fb, i)
		name := fb.CreateString(f.Name)
		fb.StartVector(4, 0, 4)
		children := fb.EndVector(0)
		fb.StartObject(7)
		fb.PrependUOffsetTSlot(5, children, 0)
		fb.PrependUOffsetTSlot(3, typ, 0)
		fb.PrependUOffsetTSlot(0, name, 0)
		fb.PrependByteSlot(2, typeType, 0)
		fb.PrependBoolSlot(1, true, false)
		offsets[i] = fb.EndObject()
	}
	fb.StartVector(4, len(offsets), 4)
	for i := len(offsets) - 1; i >= 0; i-- {
		fb.PrependUOffsetT(offsets[i])
	}
	fields := fb.EndVector(len(offsets))
	fb.StartObject(4)
	fb.PrependUOffsetTSlot(1, fields, 0)
	schema := fb.EndObject()
	return finishMessage(fb, fbHeaderSchema, schema, 0)
}

// fieldType builds field i's type table and returns it with its union tag.
func (s *arrowStream) fieldType(fb *flatbuffers.Builder, i int) (byte, flatbuffers.UOffsetT) {
	switch s.types[i] {
	case arrowInt64:
		fb.StartObject(2)
		fb.PrependInt32Slot(0, 64, 0)
		fb.PrependBoolSlot(1, true, false)
		return fbTypeInt, fb.EndObject()
	case arrowBool:
		fb.StartObject(0)
		return fbTypeBool, fb.EndObject()
	case arrowTimestampMS:
		fb.StartObject(2)
		fb.PrependInt16Slot(0, fbUnitMillisecond, 0)
		return fbTypeTimestamp, fb.EndObject()
	case arrowString:
		fb.StartObject(0)
		return fbTypeUtf8, fb.EndObject()
	case arrowDouble:
		fb.StartObject(1)
		fb.PrependInt16Slot(0, fbPrecisionDouble, 0)
		return fbTypeFloatingPoint, fb.EndObject()
	}
	fb.StartObject(3)
	fb.PrependInt32Slot(2, 128, 128)
	fb.PrependInt32Slot(1, int32(s.fields[i].Scale), 0)
	fb.PrependInt32Slot(0, int32(s.fields[i].Precision), 0)
	return fbTypeDecimal, fb.EndObject()
}

// arrowBuffer is a body buffer's place: offset and length.
type arrowBuffer struct{ offset, length int64 }

// body lays out the batch's buffers, each padded to 8 bytes: per column its validity bitmap
// (none without nulls), then its offsets (strings) and its values.
func (s *arrowStream) body(b *arrowBatch) ([]byte, []arrowBuffer) {
	var body []byte
	var buffers []arrowBuffer
	add := func(p []byte) {
		start := len(body)
		body = append(body, p...)
		body = append(body, make([]byte, (len(p)+7)&^7-len(p))...)
		buffers = append(buffers, arrowBuffer{int64(start), int64(len(body) - start)})
	}
	for i := range b.cols {
		c := &b.cols[i]
		if c.nulls == 0 {
			buffers = append(buffers, arrowBuffer{int64(len(body)), 0})
		} else {
			bitmap := make([]byte, (b.rows+7)/8)
			for r, ok := range c.valid {
				if ok {
					bitmap[r/8] |= 1 << (r % 8)
				}
			}
			add(bitmap)
		}
		switch s.types[i] {
		case arrowString:
			offsets := make([]byte, 0, 4*(b.rows+1))
			var data []byte
			offsets = binary.LittleEndian.AppendUint32(offsets, 0)
			for _, v := range c.strs {
				data = append(data, v...)
				offsets = binary.LittleEndian.AppendUint32(offsets, uint32(len(data)))
			}
			add(offsets)
			add(data)
		case arrowDouble:
			data := make([]byte, 0, 8*b.rows)
			for _, v := range c.flts {
				data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
			}
			add(data)
		case arrowDecimal:
			data := make([]byte, 0, 16*b.rows)
			for _, v := range c.decs {
				data = appendDecimal128(data, v)
			}
			add(data)
		case arrowBool:
			bits := make([]byte, (b.rows+7)/8)
			for r, v := range c.ints {
				if v != 0 {
					bits[r/8] |= 1 << (r % 8)
				}
			}
			add(bits)
		default:
			data := make([]byte, 0, 8*b.rows)
			for _, v := range c.ints {
				data = binary.LittleEndian.AppendUint64(data, uint64(v))
			}
			add(data)
		}
	}
	return body, buffers
}

// appendDecimal128 appends v (nil: a null's zeros) as a little-endian two's complement
// 128-bit integer.
func appendDecimal128(out []byte, v *big.Int) []byte {
	var word [16]byte
	if v != nil {
		u := new(big.Int).Set(v)
		if u.Sign() < 0 {
			u.Add(u, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		be := u.FillBytes(make([]byte, 16))
		for i := range 16 {
			word[i] = be[15-i]
		}
	}
	return append(out, word[:]...)
}

// batchMessage is the Message holding a RecordBatch of b with its buffers and body length.
func (s *arrowStream) batchMessage(b *arrowBatch, buffers []arrowBuffer, bodyLen int) []byte {
	fb := flatbuffers.NewBuilder(256)
	if buffers == nil {
		// An empty batch: every buffer empty, three for a string column, two for others.
		for _, t := range s.types {
			buffers = append(buffers, arrowBuffer{}, arrowBuffer{})
			if t == arrowString {
				buffers = append(buffers, arrowBuffer{})
			}
		}
	}
	fb.StartVector(16, len(b.cols), 8)
	for i := len(b.cols) - 1; i >= 0; i-- {
		fb.Prep(8, 16)
		fb.PrependInt64(int64(b.cols[i].nulls))
		fb.PrependInt64(int64(b.rows))
	}
	nodes := fb.EndVector(len(b.cols))
	fb.StartVector(16, len(buffers), 8)
	for i := len(buffers) - 1; i >= 0; i-- {
		fb.Prep(8, 16)
		fb.PrependInt64(buffers[i].length)
		fb.PrependInt64(buffers[i].offset)
	}
	bufs := fb.EndVector(len(buffers))
	fb.StartObject(5)
	fb.PrependInt64Slot(0, int64(b.rows), 0)
	fb.PrependUOffsetTSlot(2, bufs, 0)
	fb.PrependUOffsetTSlot(1, nodes, 0)
	batch := fb.EndObject()
	return finishMessage(fb, fbHeaderRecordBatch, batch, bodyLen)
}

// finishMessage wraps header in a Message and finishes the buffer.
func finishMessage(fb *flatbuffers.Builder, headerType byte, header flatbuffers.UOffsetT, bodyLen int) []byte {
	fb.StartObject(5)
	fb.PrependInt64Slot(3, int64(bodyLen), 0)
	fb.PrependUOffsetTSlot(2, header, 0)
	fb.PrependInt16Slot(0, fbMetadataV5, 0)
	fb.PrependByteSlot(1, headerType, 0)
	fb.Finish(fb.EndObject())
	return fb.FinishedBytes()
}
