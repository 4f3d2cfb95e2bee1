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

// parquetReader gives a Parquet file's rows, a row group at a time.
type parquetReader struct {
	f       *file.Reader
	names   []string
	group   int        // the next row group to read
	columns [][]string // the current row group's values, column by column
	nulls   [][]bool
	row     int // the next row of the current group
	n       int // rows read before the current group
}

// newParquetReader reads body (total bytes) as a Parquet file.
func newParquetReader(body io.Reader, total int64) (*parquetReader, error) {
	if total > maxParquet {
		return nil, &parseError{"ParseError", fmt.Sprintf("The Parquet file is %d bytes; Tabula queries Parquet files of at most %d.", total, int64(maxParquet)), 0}
	}
	data, err := io.ReadAll(io.LimitReader(body, maxParquet+1))
	if err != nil {
		return nil, err
	}
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

func (r *parquetReader) next() (record, error) {
	for r.columns == nil || r.row >= len(r.columns[0]) {
		if r.columns != nil {
			r.n += len(r.columns[0])
		}
		if r.group >= r.f.NumRowGroups() || len(r.names) == 0 {
			return nil, io.EOF
		}
		if err := r.readGroup(); err != nil {
			return nil, err
		}
	}
	rec := &csvRecord{headers: r.names, start: int64(r.n + r.row)}
	for c := range r.columns {
		rec.fields = append(rec.fields, r.columns[c][r.row])
	}
	r.row++
	return rec, nil
}

// readGroup reads the next row group's columns as text.
func (r *parquetReader) readGroup() error {
	rg := r.f.RowGroup(r.group)
	r.group, r.row = r.group+1, 0
	rows := int(rg.NumRows())
	r.columns = make([][]string, len(r.names))
	for i := range r.names {
		cr, err := rg.Column(i)
		if err != nil {
			return &parseError{"ParseError", "The Parquet file cannot be read: " + err.Error() + ".", int64(r.n)}
		}
		col := r.f.MetaData().Schema.Column(i)
		if r.columns[i], err = readColumn(cr, col, rows); err != nil {
			return &parseError{"ParseError", fmt.Sprintf("The Parquet file's column %s cannot be read: %v.", col.Name(), err), int64(r.n)}
		}
	}
	return nil
}

// readColumn reads rows values of a flat column as text, "" for nulls.
func readColumn(cr file.ColumnChunkReader, col *pqschema.Column, rows int) ([]string, error) {
	out := make([]string, 0, rows)
	defs := make([]int16, rows)
	maxDef := col.MaxDefinitionLevel()
	// read calls batch for up to rows values into a typed buffer and appends their text.
	read := func(batch func(n int64, defs []int16) (int64, int, error), text func(i int) string) error {
		for len(out) < rows {
			levels, values, err := batch(int64(rows-len(out)), defs)
			if err != nil {
				return err
			}
			if levels == 0 {
				return fmt.Errorf("%d of its %d values are missing", rows-len(out), rows)
			}
			v := 0
			for l := range int(levels) {
				if maxDef > 0 && defs[l] < maxDef {
					out = append(out, "")
					continue
				}
				out = append(out, text(v))
				v++
			}
			if v != values {
				return fmt.Errorf("its definition levels and values disagree")
			}
		}
		return nil
	}
	logical := col.LogicalType()
	switch cr := cr.(type) {
	case *file.BooleanColumnChunkReader:
		vals := make([]bool, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return strconv.FormatBool(vals[i]) })
	case *file.Int32ColumnChunkReader:
		vals := make([]int32, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return integerText(int64(vals[i]), logical) })
	case *file.Int64ColumnChunkReader:
		vals := make([]int64, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return integerText(vals[i], logical) })
	case *file.Int96ColumnChunkReader:
		vals := make([]parquet.Int96, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return vals[i].ToTime().UTC().Format(time.RFC3339Nano) })
	case *file.Float32ColumnChunkReader:
		vals := make([]float32, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return strconv.FormatFloat(float64(vals[i]), 'g', -1, 32) })
	case *file.Float64ColumnChunkReader:
		vals := make([]float64, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return strconv.FormatFloat(vals[i], 'g', -1, 64) })
	case *file.ByteArrayColumnChunkReader:
		vals := make([]parquet.ByteArray, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return bytesText(vals[i], logical) })
	case *file.FixedLenByteArrayColumnChunkReader:
		vals := make([]parquet.FixedLenByteArray, rows)
		return out, read(func(n int64, d []int16) (int64, int, error) { return cr.ReadBatch(n, vals, d, nil) },
			func(i int) string { return bytesText(vals[i], logical) })
	}
	return nil, fmt.Errorf("its type %s is not one Tabula reads", col.PhysicalType())
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

// decimalText writes unscaled value v of scale s as a decimal number.
func decimalText(v *big.Int, s int32) string {
	return new(big.Rat).SetFrac(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)).FloatString(int(s))
}
