package blobquery

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// event is one decoded Avro record of a query's answer.
type event struct {
	kind       string // data, error, progress, end
	data       string
	fatal      bool
	name, desc string
	position   int64
	scanned    int64
	total      int64
}

// decode reads a query's Avro container file as a client does: the header (whose schema must
// name the four record types), then blocks of records.
func decode(t *testing.T, b []byte) []event {
	t.Helper()
	r := bytes.NewReader(b)
	magic := make([]byte, 4)
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != "Obj\x01" {
		t.Fatalf("magic %q, %v", magic, err)
	}
	long := func() int64 {
		u, err := binary.ReadUvarint(r)
		if err != nil {
			t.Fatal(err)
		}
		return int64(u>>1) ^ -int64(u&1)
	}
	str := func() string {
		n := long()
		s := make([]byte, n)
		if _, err := io.ReadFull(r, s); err != nil {
			t.Fatal(err)
		}
		return string(s)
	}
	meta := map[string]string{}
	for n := long(); n != 0; n = long() {
		for range n {
			k := str()
			meta[k] = str()
		}
	}
	var types []map[string]any
	if err := json.Unmarshal([]byte(meta["avro.schema"]), &types); err != nil || len(types) != 4 || meta["avro.codec"] != "null" {
		t.Fatalf("header %v, %v", meta, err)
	}
	sync := make([]byte, 16)
	io.ReadFull(r, sync)
	var out []event
	for r.Len() > 0 {
		count, size := long(), long()
		start := r.Len()
		for range count {
			switch long() {
			case 0:
				out = append(out, event{kind: "data", data: str()})
			case 1:
				f, _ := r.ReadByte()
				out = append(out, event{kind: "error", fatal: f == 1, name: str(), desc: str(), position: long()})
			case 2:
				out = append(out, event{kind: "progress", scanned: long(), total: long()})
			case 3:
				out = append(out, event{kind: "end", total: long()})
			}
		}
		if int64(start-r.Len()) != size {
			t.Fatalf("block of %d bytes read %d", size, start-r.Len())
		}
		got := make([]byte, 16)
		io.ReadFull(r, got)
		if !bytes.Equal(got, sync) {
			t.Fatal("sync marker differs")
		}
	}
	return out
}

func run(t *testing.T, expr, body string, in, out Format) (data string, events []event) {
	t.Helper()
	q, err := Parse(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var buf bytes.Buffer
	if err := Run(&buf, strings.NewReader(body), int64(len(body)), q, in, out); err != nil {
		t.Fatal(err)
	}
	for _, e := range decode(t, buf.Bytes()) {
		if e.kind == "data" {
			data += e.data
		} else {
			events = append(events, e)
		}
	}
	return data, events
}

// The answers the JS SDK's live query tests read from Azure.
func TestQueries(t *testing.T) {
	csv := "100,200,300,400\n150,250,350,450\n"
	jsonFormat := Format{Kind: "json", RecordSeparator: "\n"}
	bang := Format{Kind: "delimited", ColumnSeparator: ".", RecordSeparator: "!", HasHeaders: true}
	jsonBody := `{"_1":"100","_2":"200"}` + "\n" + `{"_1":"150","_2":"250"}` + "\n"
	cases := []struct {
		name, expr, body string
		in, out          Format
		want             string
		events           string
	}{
		{"select *", "select * from BlobStorage", csv, DefaultFormat, DefaultFormat, csv, ""},
		{"where", "select _2 from BlobStorage where _1 > 100", csv, DefaultFormat, DefaultFormat, "250\n", ""},
		{"nothing", "select _2 from BlobStorage where _1 > 200", csv, DefaultFormat, DefaultFormat, "", ""},
		{"keywords in any case, a semicolon", "SELECT _1, _3 FROM blobstorage WHERE _2 = 250 OR NOT (_1 < 0);", csv, DefaultFormat, DefaultFormat, "100,300\n150,350\n", ""},
		{"strings", "select _1 from BlobStorage where _2 = 'b'", "x,a\ny,b\n", DefaultFormat, DefaultFormat, "y\n", ""},
		{"a value no number", "select _2 from BlobStorage where _2 > 100", "100,hello,300,400\n150,250,350,450\n", DefaultFormat, DefaultFormat, "250\n",
			"error false InvalidTypeConversion 0 Invalid type conversion."},
		{"separators and headers", "select _1 from BlobStorage", "100.200.300.400!150.250.350.450!180.280.380.480!", bang,
			Format{Kind: "delimited", ColumnSeparator: ".", RecordSeparator: "!"}, "150!180!", ""},
		{"header names", "select b from BlobStorage where a >= 2", "a,b\n1,x\n2,y\n", Format{Kind: "delimited", ColumnSeparator: ",", RecordSeparator: "\n", HasHeaders: true},
			DefaultFormat, "y\n", ""},
		{"quoted fields", "select _2 from BlobStorage", "1,\"a,b\"\n2,\"say \"\"hi\"\"\"\n", DefaultFormat, DefaultFormat, "\"a,b\"\n\"say \"\"hi\"\"\"\n", ""},
		{"json", "select * from BlobStorage", jsonBody, jsonFormat, jsonFormat, jsonBody, ""},
		{"json to csv", "select _2 from BlobStorage where _1 = '150'", jsonBody, jsonFormat, DefaultFormat, "250\n", ""},
		{"csv to json", "select * from BlobStorage where _1 < 120", csv, DefaultFormat, jsonFormat, `{"_1":"100","_2":"200","_3":"300","_4":"400"}` + "\n", ""},
		{"CRLF records", "select b from BlobStorage", "a,b\r\n1,x\r\n2,y\r\n", Format{Kind: "delimited", ColumnSeparator: ",", RecordSeparator: "\n", HasHeaders: true},
			DefaultFormat, "x\ny\n", ""},
		{"a row without the column", "select b from BlobStorage", "a,b\n1,x\n2\n3,z\n", Format{Kind: "delimited", ColumnSeparator: ",", RecordSeparator: "\n", HasHeaders: true},
			DefaultFormat, "x\nz\n", "error false InvalidColumnOrdinal 8 Column ordinal does not exist in row."},
		{"a JSON record without the key", "select name from BlobStorage", `{"name":"a"}` + "\n" + `{"other":"b"}` + "\n", jsonFormat, Format{Kind: "json", RecordSeparator: ";"},
			`{"name":"a"};{};`, ""},
		{"csv read as json", "select * from BlobStorage", csv, jsonFormat, jsonFormat, "\n",
			"error true ParseError 0 Unexpected token ',' at [byte: 3]. Expecting tokens '{', or '['."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, events := run(t, c.expr, c.body, c.in, c.out)
			if data != c.want {
				t.Errorf("data %q, want %q", data, c.want)
			}
			var errs []string
			for _, e := range events {
				if e.kind == "error" {
					errs = append(errs, fmt.Sprint("error ", e.fatal, " ", e.name, " ", e.position, " ", e.desc))
				}
			}
			if got := strings.Join(errs, "; "); got != c.events {
				t.Errorf("errors %q, want %q", got, c.events)
			}
			n := len(events)
			if n < 2 || events[n-2].kind != "progress" || events[n-2].scanned != int64(len(c.body)) || events[n-1].kind != "end" || events[n-1].total != int64(len(c.body)) {
				t.Errorf("the answer does not end in progress and end of %d bytes: %+v", len(c.body), events)
			}
		})
	}
}

// How the answer is framed, record by record, as the Python SDK's recordings of the real
// service show it: a stretch's data (one record at the least, even empty) before its errors
// and its progress, nothing after a fatal error but progress and end.
func TestFraming(t *testing.T) {
	q := func(expr string) *Query {
		t.Helper()
		parsed, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		return parsed
	}
	headed := Format{Kind: "delimited", ColumnSeparator: ",", RecordSeparator: "\n", HasHeaders: true}
	badJSON := "{name: owner}\n{name2: owner2}\n{name: owner}"
	for _, c := range []struct {
		name    string
		q       *Query
		body    string
		in, out Format
		want    []string
	}{
		{"all of it (test_quick_query_iter_records)", q("select * from BlobStorage"), "a,b\n1,2\n", DefaultFormat, DefaultFormat,
			[]string{`data "a,b\n1,2\n"`, "progress 8/8", "end 8"}},
		{"a non-fatal error (…_with_nonfatal_error_handler)", q("select b from BlobStorage"), "a,b\n1,x\n2\n3,z\n", headed, DefaultFormat,
			[]string{`data "x\nz\n"`, "error false InvalidColumnOrdinal 8", "progress 14/14", "end 14"}},
		{"a fatal error (…_readall_with_fatal_error_handler)", q("SELECT * from BlobStorage"), badJSON, Format{Kind: "json", RecordSeparator: "\n"},
			Format{Kind: "delimited", ColumnSeparator: ";", FieldQuote: "'", RecordSeparator: ".", EscapeChar: "\\"},
			[]string{`data ""`, "error true InternalError 0", "progress 43/43", "end 43"}},
		{"a scalar, then a fatal error (the JS SDK's fatal error event)", q("select * from BlobStorage"), "100,200\n", Format{Kind: "json", RecordSeparator: "\n"}, Format{Kind: "json", RecordSeparator: "\n"},
			[]string{`data "\n"`, "error true ParseError 0", "progress 8/8", "end 8"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Run(&buf, strings.NewReader(c.body), int64(len(c.body)), c.q, c.in, c.out); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range decode(t, buf.Bytes()) {
				switch e.kind {
				case "data":
					got = append(got, fmt.Sprintf("data %q", e.data))
				case "error":
					got = append(got, fmt.Sprint("error ", e.fatal, " ", e.name, " ", e.position))
				case "progress":
					got = append(got, fmt.Sprintf("progress %d/%d", e.scanned, e.total))
				case "end":
					got = append(got, fmt.Sprint("end ", e.total))
				}
			}
			if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("records\n %s\nwant\n %s", strings.Join(got, "; "), strings.Join(c.want, "; "))
			}
		})
	}
}

// A large blob: its results in several records, progress every 4 MiB.
func TestLargeQuery(t *testing.T) {
	body := strings.Repeat("100,200,300,400\n150,250,350,450\n", 300_000) // 9.6 MB
	data, events := run(t, "select * from BlobStorage", body, DefaultFormat, DefaultFormat)
	if data != body {
		t.Fatalf("%d bytes back of %d", len(data), len(body))
	}
	progress := 0
	for _, e := range events {
		if e.kind == "progress" {
			progress++
		}
	}
	if progress != 3 {
		t.Errorf("%d progress records, want 3 (8 MiB scanned, 4 MiB, the end)", progress)
	}
}

func TestParseErrors(t *testing.T) {
	for _, expr := range []string{"", "select", "select * from", "select * from Other", "select * from BlobStorage where", "select * from BlobStorage where _1 >", "select * from BlobStorage where (_1 > 1", "select * from BlobStorage extra", "select 'x from BlobStorage"} {
		if _, err := Parse(expr); err == nil {
			t.Errorf("%q parsed", expr)
		}
	}
}
