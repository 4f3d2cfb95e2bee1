package blobquery

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet input (InputSerialization of Type parquet, service version 2020-10-02): the rows of
// a Parquet file of a flat schema, each column by its name, its values as text: integers and
// floating point numbers as Go writes them, booleans true/false, dates as 2006-01-02,
// timestamps in RFC 3339 (UTC), decimals scaled, strings as they are, other bytes in base64;
// a null is an empty field. The answer is CSV unless an output serialization says otherwise
// (Parquet output is not a thing Azure writes). The .NET SDK's recording of the real service
// reads "0,mdifjt55.ea3,mdifjt55.ea3\n" for select * … where id < 1 over its three string
// columns. A Parquet file is read whole (the footer is at its end), at most maxParquet bytes.

// maxParquet is the largest Parquet blob a query reads.
const maxParquet = 256 << 20

// parquetReader gives a Parquet file's rows, reading each column a page's worth of values
// at a time, so that a row group of any size takes little memory.
type parquetReader struct {
	f     *file.Reader
	names []string
	group int         // the next row group to open
	cols  []*pqColumn // the open row group's columns; nil between groups
	n     int64       // rows given so far
}

// pqColumn is one column of the open row group: the text of the values read and not yet
// given, and fill, which reads more.
type pqColumn struct {
	pending []string
	head    int
	// fill appends the text of up to parquetChunk more values to pending and tells how many;
	// 0 at the column's end.
	fill func() (int, error)
}

// parquetChunk is the most values read at a time, and maxChunkText the most text they may
// make.
const (
	parquetChunk = 4096
	maxChunkText = 256 << 20
)

// newParquetReader reads body (total bytes) as a Parquet file.
func newParquetReader(body io.Reader, total int64) (_ *parquetReader, err error) {
	if total > maxParquet {
		return nil, &parseError{"ParseError", fmt.Sprintf("The Parquet file is %d bytes; Tabula queries Parquet files of at most %d.", total, int64(maxParquet)), 0}
	}
	data, err := io.ReadAll(io.LimitReader(body, maxParquet+1))
	if err != nil {
		return nil, err
	}
	defer unreadableParquet(&err, 0)
	f, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, &parseError{"ParseError", "The blob is not a Parquet file: " + err.Error() + ".", 0}
	}
	r := &parquetReader{f: f}
	s := f.MetaData().Schema
	for i := range s.NumColumns() {
		c := s.Column(i)
		if c.MaxRepetitionLevel() > 0 || len(c.ColumnPath()) > 1 {
			return nil, &parseError{"ParseError", fmt.Sprintf("The Parquet file's column %s is nested or repeated; Tabula queries flat schemas.", c.Path()), 0}
		}
		r.names = append(r.names, c.Name())
	}
	return r, nil
}

// unreadableParquet turns a panic of the Parquet reader, which some malformed files cause,
// into the query's ParseError at position.
func unreadableParquet(err *error, position int64) {
	if p := recover(); p != nil {
		*err = &parseError{"ParseError", fmt.Sprintf("The Parquet file cannot be read: %v.", p), position}
	}
}

func (r *parquetReader) next() (_ record, err error) {
	defer unreadableParquet(&err, r.n)
	for len(r.names) > 0 {
		if r.cols == nil {
			if r.group >= r.f.NumRowGroups() {
				break
			}
			if err := r.open(); err != nil {
				return nil, err
			}
		}
		ended := 0
		for i, c := range r.cols {
			if c.head < len(c.pending) {
				continue
			}
			c.pending, c.head = c.pending[:0], 0
			n, err := c.fill()
			if err != nil {
				return nil, &parseError{"ParseError", fmt.Sprintf("The Parquet file's column %s cannot be read: %v.", r.names[i], err), r.n}
			}
			if n == 0 {
				ended++
			}
		}
		switch {
		case ended == len(r.cols):
			r.cols = nil // the next row group
			continue
		case ended > 0:
			return nil, &parseError{"ParseError", "The Parquet file's columns have different numbers of values in one row group.", r.n}
		}
		rec := &csvRecord{headers: r.names, start: r.n}
		for _, c := range r.cols {
			rec.fields = append(rec.fields, c.pending[c.head])
			c.head++
		}
		r.n++
		return rec, nil
	}
	return nil, io.EOF
}

// open opens the next row group's columns.
func (r *parquetReader) open() error {
	rg := r.f.RowGroup(r.group)
	r.group++
	r.cols = make([]*pqColumn, len(r.names))
	for i := range r.names {
		cr, err := rg.Column(i)
		if err != nil {
			return &parseError{"ParseError", "The Parquet file cannot be read: " + err.Error() + ".", r.n}
		}
		r.cols[i] = newPQColumn(cr, r.f.MetaData().Schema.Column(i))
		if r.cols[i] == nil {
			return &parseError{"ParseError", fmt.Sprintf("The Parquet file's column %s has the type %s, which Tabula does not read.", r.names[i], cr.Descriptor().PhysicalType()), r.n}
		}
	}
	return nil
}

// newPQColumn is a column of a row group read as text ("" for nulls), nil for a type this
// does not read.
func newPQColumn(cr file.ColumnChunkReader, col *pqschema.Column) *pqColumn {
	c := &pqColumn{}
	defs := make([]int16, parquetChunk)
	maxDef := col.MaxDefinitionLevel()
	// chunk reads values within one page (the reader's own loop over pages does not stop on
	// a page that yields nothing) and appends their text.
	chunk := func(batch func(defs []int16) (int64, int, error), text func(i int) string) (int, error) {
		levels, values, err := batch(defs)
		if err != nil {
			return 0, err
		}
		if levels == 0 {
			if cr.HasNext() {
				return 0, fmt.Errorf("a page yields no values")
			}
			return 0, nil
		}
		v, size := 0, 0
		for l := range int(levels) {
			t := ""
			if maxDef == 0 || defs[l] >= maxDef {
				t = text(v)
				v++
			}
			c.pending = append(c.pending, t)
			// A dictionary can repeat one large value in every row a few bytes each.
			if size += len(t); size > maxChunkText {
				return 0, fmt.Errorf("%d values make more than %d bytes of text", l+1, maxChunkText)
			}
		}
		if v != values {
			return 0, fmt.Errorf("its definition levels and values disagree")
		}
		return int(levels), nil
	}
	logical := col.LogicalType()
	switch cr := cr.(type) {
	case *file.BooleanColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, strconv.FormatBool)
	case *file.Int32ColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, func(v int32) string { return integerText(int64(v), logical) })
	case *file.Int64ColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, func(v int64) string { return integerText(v, logical) })
	case *file.Int96ColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, func(v parquet.Int96) string { return v.ToTime().UTC().Format(time.RFC3339Nano) })
	case *file.Float32ColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, func(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) })
	case *file.Float64ColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
	case *file.ByteArrayColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, func(v parquet.ByteArray) string { return bytesText(v, logical) })
	case *file.FixedLenByteArrayColumnChunkReader:
		c.fill = typedFill(chunk, cr.ReadBatchInPage, func(v parquet.FixedLenByteArray) string { return bytesText(v, logical) })
	default:
		return nil
	}
	return c
}

// typedFill is a column's fill for a reader of values of type T, which text writes.
func typedFill[T any](chunk func(batch func(defs []int16) (int64, int, error), text func(i int) string) (int, error),
	read func(n int64, values []T, defs, reps []int16) (int64, int, error), text func(T) string) func() (int, error) {
	vals := make([]T, parquetChunk)
	return func() (int, error) {
		return chunk(func(d []int16) (int64, int, error) { return read(parquetChunk, vals, d, nil) }, func(i int) string { return text(vals[i]) })
	}
}

// integerText is an INT32 or INT64 value as its logical type reads.
func integerText(v int64, logical pqschema.LogicalType) string {
	switch t := logical.(type) {
	case pqschema.DateLogicalType:
		return time.Unix(v*86400, 0).UTC().Format(time.DateOnly)
	case pqschema.TimestampLogicalType:
		var at time.Time
		switch t.TimeUnit() {
		case pqschema.TimeUnitMillis:
			at = time.UnixMilli(v)
		case pqschema.TimeUnitMicros:
			at = time.UnixMicro(v)
		default:
			at = time.Unix(0, v)
		}
		return at.UTC().Format(time.RFC3339Nano)
	case pqschema.DecimalLogicalType:
		return decimalText(big.NewInt(v), t.Scale())
	}
	return strconv.FormatInt(v, 10)
}

// bytesText is a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value as its logical type reads: text,
// a decimal (big-endian two's complement), or other bytes in base64.
func bytesText(b []byte, logical pqschema.LogicalType) string {
	switch t := logical.(type) {
	case pqschema.DecimalLogicalType:
		if len(b) > 32 {
			// No decimal is wider than 256 bits; the text of a wider one would be costly.
			return base64.StdEncoding.EncodeToString(b)
		}
		v := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		return decimalText(v, t.Scale())
	case pqschema.StringLogicalType, pqschema.JSONLogicalType, pqschema.EnumLogicalType, pqschema.NoLogicalType, nil:
		return string(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// decimalText writes unscaled value v of scale s as a decimal number (in exponent form for a
// scale no decimal has, which a file can claim: 10^s would be costly).
func decimalText(v *big.Int, s int32) string {
	if s < 0 || s > 76 {
		return fmt.Sprintf("%se%d", v, -s)
	}
	return new(big.Rat).SetFrac(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)).FloatString(int(s))
}
