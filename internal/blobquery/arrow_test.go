package blobquery

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// The real service's answers, byte for byte, as two SDKs' live tests recorded them.
func TestArrowOutputIsTheServicesBytes(t *testing.T) {
	// The JS SDK's "query should work with arrow output configurations": no row fits the
	// schema (select * gives four columns), so the schema and an empty batch.
	js := newArrowStream([]ArrowField{{Type: "decimal", Name: "name", Precision: 4, Scale: 2}})
	got := hex.EncodeToString(js.encode(nil))
	want := "ffffffff800000001000000000000a000c000600050008000a000000000104000c000000080008000000040008000000040000000100000014000000100014000800060007000c0000001000100000000000010710000000200000000400000000000000040000006e616d650000000008000c000400080008000000040000000200000000000000ffffffff700000001000000000000a000e000600050008000a000000000304001000000000000a000c000000040008000a0000003000000004000000020000000000000000000000000000000000000000000000000000000000000000000000000000000100000000000000000000000000000000000000"
	if got != want {
		t.Errorf("schema and empty batch:\n got %s\nwant %s", got, want)
	}
	// The Python SDK's test_quick_query_output_in_arrow_format: one row, 400.
	py := newArrowStream([]ArrowField{{Type: "DECIMAL", Name: "abc", Precision: 4, Scale: 2}})
	b := py.newBatch()
	if err := py.add(b, []string{"400"}); err != nil {
		t.Fatal(err)
	}
	got = base64.StdEncoding.EncodeToString(py.encode(b))
	want = "/////3gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAUAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAEHEAAAABwAAAAEAAAAAAAAAAMAAABhYmMACAAMAAQACAAIAAAABAAAAAIAAAD/////cAAAABAAAAAAAAoADgAGAAUACAAKAAAAAAMEABAAAAAAAAoADAAAAAQACAAKAAAAMAAAAAQAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAAAAAAAAAAAAAAAAAD/////AAAAAP////+IAAAAFAAAAAAAAAAMABYABgAFAAgADAAMAAAAAAMEABgAAAAQAAAAAAAAAAAACgAYAAwABAAIAAoAAAA8AAAAEAAAAAEAAAAAAAAAAAAAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAAAAAAAABAAAAAQAAAAAAAAAAAAAAAAAAAJABAAAAAAAAAAAAAAAAAAA="
	if got != want {
		gb, _ := base64.StdEncoding.DecodeString(got)
		wb, _ := base64.StdEncoding.DecodeString(want)
		t.Errorf("one row:\n got %x\nwant %x", gb, wb)
	}
	// The Java SDK's live queryInputCsvOutputArrow reads the 920 bytes of this answer (a
	// field named Name, 32 rows, all in the one batch after the marker).
	data, _ := run(t, "SELECT _2 from BlobStorage WHERE _1 > 250;", strings.Repeat("100,200,300,400\n300,400,500,600\n", 32), DefaultFormat,
		Format{Kind: "arrow", Arrow: []ArrowField{{Type: "decimal", Name: "Name", Precision: 4, Scale: 2}}})
	if len(data) != 920 {
		t.Errorf("32 rows: %d bytes, want 920", len(data))
	}
}

// Every type of an Arrow schema, read back by Apache Arrow's own Go reader as a client reads
// the service's stream: the schema and the empty batch, then after the end-of-stream marker
// the rows, read as a stream of their own behind the schema. A row that does not fit is left
// out with a non-fatal error.
func TestArrowOutputOfEveryType(t *testing.T) {
	schema := []ArrowField{{Type: "Int64", Name: "n"}, {Type: "bool", Name: "b"}, {Type: "timestamp[ms]", Name: "t"},
		{Type: "String", Name: "s"}, {Type: "double", Name: "d"}, {Type: "decimal", Name: "m", Precision: 5, Scale: 2}}
	csv := "1,TRUE,2024-01-02T03:04:05.5Z,héllo,2.5,1.25\n,,,,,\n7,false,1700000000000,x,not a number,3\n-9,false,1700000000000,\"a,b\",-1e3,-999\n8,true,0,y,1,1e100000\n"
	data, events := run(t, "select * from BlobStorage", csv, DefaultFormat, Format{Kind: "arrow", Arrow: schema})
	if len(events) != 4 || events[0].kind != "error" || events[0].fatal || events[0].name != "InvalidTypeConversion" || events[0].position != 52 ||
		events[1].name != "InvalidTypeConversion" || !strings.Contains(events[1].desc, "1e100000") {
		t.Fatalf("events %+v", events)
	}
	stream := []byte(data)
	eos := bytes.Index(stream, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	if eos < 0 {
		t.Fatal("no end-of-stream marker before the rows")
	}
	head, err := ipc.NewReader(bytes.NewReader(stream[:eos]))
	if err != nil {
		t.Fatal(err)
	}
	if got := head.Schema().String(); !strings.Contains(got, "n: type=int64") || !strings.Contains(got, "m: type=decimal(5, 2)") || !strings.Contains(got, "t: type=timestamp[ms]") {
		t.Fatalf("schema %s", got)
	}
	if !head.Next() || head.RecordBatch().NumRows() != 0 || head.Next() {
		t.Fatal("the head is not the schema and one empty batch")
	}
	schemaMessage := stream[:8+int(binary.LittleEndian.Uint32(stream[4:]))]
	rows, err := ipc.NewReader(bytes.NewReader(append(append([]byte(nil), schemaMessage...), stream[eos+8:]...)))
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	rec := rows.RecordBatch()
	var got []string
	for c := range int(rec.NumCols()) {
		col := rec.Column(c)
		for r := range col.Len() {
			got = append(got, col.ValueStr(r))
		}
	}
	want := []string{"1", "(null)", "-9", "true", "(null)", "false", "2024-01-02T03:04:05.5Z", "(null)", "2023-11-14T22:13:20Z",
		"héllo", "(null)", "a,b", "2.5", "(null)", "-1000", "1.25", "(null)", "-9.99"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("values\n got %q\nwant %q", got, want)
	}
}
