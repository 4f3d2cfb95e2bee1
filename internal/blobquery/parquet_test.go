package blobquery

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// parquetColumn is a column of a test file: its node, and a writer of its values (nil in
// defs marks a null, for an optional column).
type parquetColumn struct {
	node  pqschema.Node
	write func(w file.ColumnChunkWriter) error
}

// writeParquet writes a Parquet file of groups row groups, each column written by its write.
func writeParquet(t testing.TB, columns []parquetColumn, groups int, opts ...file.WriteOption) []byte {
	t.Helper()
	var fields pqschema.FieldList
	for _, c := range columns {
		fields = append(fields, c.node)
	}
	root, err := pqschema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := file.NewParquetWriter(&buf, root, opts...)
	for range groups {
		rg := w.AppendRowGroup()
		for _, c := range columns {
			cw, err := rg.NextColumn()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.write(cw); err != nil {
				t.Fatal(err)
			}
			cw.Close()
		}
		rg.Close()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func pqNode(t testing.TB, name string, rep parquet.Repetition, logical pqschema.LogicalType, typ parquet.Type) pqschema.Node {
	t.Helper()
	n, err := pqschema.NewPrimitiveNodeLogical(name, rep, logical, typ, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func byteArrays(vals ...string) func(w file.ColumnChunkWriter) error {
	return func(w file.ColumnChunkWriter) error {
		b := make([]parquet.ByteArray, len(vals))
		for i, v := range vals {
			b[i] = parquet.ByteArray(v)
		}
		_, err := w.(*file.ByteArrayColumnChunkWriter).WriteBatch(b, nil, nil)
		return err
	}
}

// The .NET SDK's recording of the real service: a file of three string columns written by
// Parquet.Net, select * … where id < 1, answered in CSV.
func TestParquetInputAsTheServiceAnswers(t *testing.T) {
	str := pqschema.StringLogicalType{}
	data := writeParquet(t, []parquetColumn{
		{pqNode(t, "id", parquet.Repetitions.Required, str, parquet.Types.ByteArray), byteArrays("0", "1", "2")},
		{pqNode(t, "string1", parquet.Repetitions.Required, str, parquet.Types.ByteArray), byteArrays("mdifjt55.ea3", "5dmvqevg.jk0", "sftgmgsx.b1d")},
		{pqNode(t, "string2", parquet.Repetitions.Required, str, parquet.Types.ByteArray), byteArrays("mdifjt55.ea3", "5dmvqevg.jk0", "sftgmgsx.b1d")},
	}, 2)
	got, events := run(t, "select * from blobstorage where id < 1;", string(data), Format{Kind: "parquet"}, DefaultFormat)
	if got != "0,mdifjt55.ea3,mdifjt55.ea3\n0,mdifjt55.ea3,mdifjt55.ea3\n" || len(events) != 2 {
		t.Fatalf("got %q, events %+v", got, events)
	}
	got, _ = run(t, "select string1 from blobstorage where id = 2", string(data), Format{Kind: "parquet"}, Format{Kind: "json", RecordSeparator: "\n"})
	if got != `{"string1":"sftgmgsx.b1d"}`+"\n"+`{"string1":"sftgmgsx.b1d"}`+"\n" {
		t.Fatalf("JSON out: %q", got)
	}
}

// Every physical type of a flat schema, with nulls, as text.
func TestParquetInputOfEveryType(t *testing.T) {
	defs := []int16{1, 0, 1}
	data := writeParquet(t, []parquetColumn{
		{pqNode(t, "n", parquet.Repetitions.Optional, pqschema.NoLogicalType{}, parquet.Types.Int64), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.Int64ColumnChunkWriter).WriteBatch([]int64{-7, 42}, defs, nil)
			return err
		}},
		{pqNode(t, "b", parquet.Repetitions.Required, pqschema.NoLogicalType{}, parquet.Types.Boolean), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.BooleanColumnChunkWriter).WriteBatch([]bool{true, false, true}, nil, nil)
			return err
		}},
		{pqNode(t, "d", parquet.Repetitions.Required, pqschema.NoLogicalType{}, parquet.Types.Double), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.Float64ColumnChunkWriter).WriteBatch([]float64{2.5, -1e21, 0.1}, nil, nil)
			return err
		}},
		{pqNode(t, "at", parquet.Repetitions.Required, pqschema.NewTimestampLogicalType(true, pqschema.TimeUnitMillis), parquet.Types.Int64), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.Int64ColumnChunkWriter).WriteBatch([]int64{0, 1700000000123, 86400000}, nil, nil)
			return err
		}},
		{pqNode(t, "day", parquet.Repetitions.Required, pqschema.DateLogicalType{}, parquet.Types.Int32), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.Int32ColumnChunkWriter).WriteBatch([]int32{0, 19000, -1}, nil, nil)
			return err
		}},
		{pqNode(t, "price", parquet.Repetitions.Required, pqschema.NewDecimalLogicalType(7, 2), parquet.Types.Int32), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.Int32ColumnChunkWriter).WriteBatch([]int32{12345, -5, 0}, nil, nil)
			return err
		}},
		{pqNode(t, "s", parquet.Repetitions.Optional, pqschema.StringLogicalType{}, parquet.Types.ByteArray), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.ByteArrayColumnChunkWriter).WriteBatch([]parquet.ByteArray{parquet.ByteArray("a,b"), parquet.ByteArray("é")}, defs, nil)
			return err
		}},
	}, 1)
	got, events := run(t, "select * from BlobStorage", string(data), Format{Kind: "parquet"}, DefaultFormat)
	want := strings.Join([]string{
		`-7,true,2.5,1970-01-01T00:00:00Z,1970-01-01,123.45,"a,b"`,
		`,false,-1e+21,2023-11-14T22:13:20.123Z,2022-01-08,-0.05,`,
		`42,true,0.1,1970-01-02T00:00:00Z,1969-12-31,0.00,é`,
	}, "\n") + "\n"
	if got != want || len(events) != 2 {
		t.Fatalf("got\n%s\nwant\n%s\nevents %+v", got, want, events)
	}
	// A condition over a column, and a column by position.
	if got, _ := run(t, "select _7 from BlobStorage where n > 0", string(data), Format{Kind: "parquet"}, DefaultFormat); got != "é\n" {
		t.Fatalf("where n > 0: %q", got)
	}
}

// Columns whose pages end at different rows, in row groups of more rows than are read at a
// time, still give whole rows in order.
func TestParquetInputAcrossPages(t *testing.T) {
	const rows = 10000
	ids, words := make([]int64, rows), make([]string, rows)
	for i := range rows {
		ids[i], words[i] = int64(i), strings.Repeat("w", i%37)+strconv.Itoa(i)
	}
	small := file.WithWriterProps(parquet.NewWriterProperties(parquet.WithDataPageSize(512), parquet.WithDictionaryDefault(false)))
	data := writeParquet(t, []parquetColumn{
		{pqNode(t, "id", parquet.Repetitions.Required, pqschema.NoLogicalType{}, parquet.Types.Int64), func(w file.ColumnChunkWriter) error {
			_, err := w.(*file.Int64ColumnChunkWriter).WriteBatch(ids, nil, nil)
			return err
		}},
		{pqNode(t, "word", parquet.Repetitions.Required, pqschema.StringLogicalType{}, parquet.Types.ByteArray), byteArrays(words...)},
	}, 2, small)
	got, _ := run(t, "select * from BlobStorage", string(data), Format{Kind: "parquet"}, DefaultFormat)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2*rows {
		t.Fatalf("%d rows, want %d", len(lines), 2*rows)
	}
	for i, line := range lines {
		if want := strconv.Itoa(i%rows) + "," + words[i%rows]; line != want {
			t.Fatalf("row %d: %q, want %q", i, line, want)
		}
	}
}

// A blob that is not Parquet is a fatal ParseError, not a broken answer.
func TestParquetInputThatIsNot(t *testing.T) {
	got, events := run(t, "select * from BlobStorage", "100,200\n", Format{Kind: "parquet"}, DefaultFormat)
	if got != "" || len(events) != 3 || events[0].kind != "error" || !events[0].fatal || events[0].name != "ParseError" {
		t.Fatalf("got %q, events %+v", got, events)
	}
}

// Whatever the blob holds, a Parquet query answers: rows, or a ParseError; never a panic.
func FuzzParquetInput(f *testing.F) {
	str := pqschema.StringLogicalType{}
	f.Add(writeParquet(f, []parquetColumn{
		{pqNode(f, "id", parquet.Repetitions.Required, str, parquet.Types.ByteArray), byteArrays("0", "1")},
	}, 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		q, _ := Parse("select * from BlobStorage")
		var out bytes.Buffer
		if err := Run(&out, bytes.NewReader(data), int64(len(data)), q, Format{Kind: "parquet"}, DefaultFormat); err != nil {
			t.Fatal(err)
		}
	})
}
