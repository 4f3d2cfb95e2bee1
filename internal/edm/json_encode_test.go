package edm

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// The worked examples of json-format.md §3.1-3.3, joined onto one line as the service
// writes them.
const (
	wantNoMetadata = `{"PartitionKey":"p1","RowKey":"r1","Timestamp":"2021-08-02T18:01:40.1925388Z",` +
		`"Age":23,"Price":9.0,"Big":"9007199254740993","When":"2008-07-10T00:00:00Z",` +
		`"Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Blob":"AQID","Ratio":"NaN",` +
		`"Name":"x","Ok":true}`
	wantMinimalMetadata = `{"odata.metadata":"https://myaccount.table.core.windows.net/$metadata#mytable/@Element",` +
		`"odata.etag":"W/\"datetime'2021-08-02T18%3A01%3A40.1925388Z'\"",` +
		`"PartitionKey":"p1","RowKey":"r1","Timestamp":"2021-08-02T18:01:40.1925388Z",` +
		`"Age":23,"Price":9.0,` +
		`"Big@odata.type":"Edm.Int64","Big":"9007199254740993",` +
		`"When@odata.type":"Edm.DateTime","When":"2008-07-10T00:00:00Z",` +
		`"Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833",` +
		`"Blob@odata.type":"Edm.Binary","Blob":"AQID",` +
		`"Ratio@odata.type":"Edm.Double","Ratio":"NaN",` +
		`"Name":"x","Ok":true}`
	wantFullMetadata = `{"odata.metadata":"https://myaccount.table.core.windows.net/$metadata#mytable/@Element",` +
		`"odata.type":"myaccount.mytable",` +
		`"odata.id":"https://myaccount.table.core.windows.net/mytable(PartitionKey='p1',RowKey='r1')",` +
		`"odata.etag":"W/\"datetime'2021-08-02T18%3A01%3A40.1925388Z'\"",` +
		`"odata.editLink":"mytable(PartitionKey='p1',RowKey='r1')",` +
		`"PartitionKey":"p1","RowKey":"r1",` +
		`"Timestamp@odata.type":"Edm.DateTime","Timestamp":"2021-08-02T18:01:40.1925388Z",` +
		`"Age":23,"Price":9.0,` +
		`"Big@odata.type":"Edm.Int64","Big":"9007199254740993",` +
		`"When@odata.type":"Edm.DateTime","When":"2008-07-10T00:00:00Z",` +
		`"Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833",` +
		`"Blob@odata.type":"Edm.Binary","Blob":"AQID",` +
		`"Ratio@odata.type":"Edm.Double","Ratio":"NaN",` +
		`"Name":"x","Ok":true}`
)

func fixtureOptions(level Metadata) *EncodeOptions {
	o := &EncodeOptions{
		Metadata: level,
		BaseURL:  "https://myaccount.table.core.windows.net",
		Account:  "myaccount",
		Table:    "mytable",
	}
	if level != NoMetadata {
		o.MetadataURL = o.BaseURL + "/$metadata#mytable/@Element"
	}
	return o
}

func TestAppendJSONMatchesTheServiceExamples(t *testing.T) {
	e := fixtureEntity()
	for _, tc := range []struct {
		level Metadata
		want  string
	}{
		{NoMetadata, wantNoMetadata},
		{MinimalMetadata, wantMinimalMetadata},
		{FullMetadata, wantFullMetadata},
	} {
		got := string(AppendJSON(nil, &e, fixtureOptions(tc.level)))
		if got != tc.want {
			t.Errorf("metadata level %d:\n got %s\nwant %s", tc.level, got, tc.want)
		}
	}
}

func TestAppendJSONAppendsToDst(t *testing.T) {
	e := Entity{PartitionKey: "p", RowKey: "r"}
	got := string(AppendJSON([]byte(`{"value":[`), &e, nil))
	if want := `{"value":[{"PartitionKey":"p","RowKey":"r","Timestamp":"0001-01-01T00:00:00.0000000Z"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestAppendJSONWritesNoMetadataURLInQueryElementsOrNoMetadata(t *testing.T) {
	e := Entity{PartitionKey: "p", RowKey: "r", Timestamp: MinDateTime}
	o := &EncodeOptions{Metadata: MinimalMetadata}
	if got := string(AppendJSON(nil, &e, o)); strings.Contains(got, "odata.metadata") || !strings.HasPrefix(got, `{"odata.etag":`) {
		t.Fatalf("query element: %s", got)
	}
	o = &EncodeOptions{Metadata: NoMetadata, MetadataURL: "https://x/$metadata#t/@Element"}
	if got := string(AppendJSON(nil, &e, o)); strings.Contains(got, "odata.") {
		t.Fatalf("nometadata: %s", got)
	}
}

func TestAppendJSONWritesOnlySelectedProperties(t *testing.T) {
	e := fixtureEntity()
	for _, tc := range []struct {
		level  Metadata
		sel    []string
		suffix string // after the odata.* members
	}{
		{NoMetadata, []string{"Age", "Name"}, `{"Age":23,"Name":"x"}`},
		// Stored order, not $select order; missing ones last, as null, once.
		{NoMetadata, []string{"Name", "Missing", "Age", "Missing", "Other"}, `{"Age":23,"Name":"x","Missing":null,"Other":null}`},
		{NoMetadata, []string{"RowKey", "Big"}, `{"RowKey":"r1","Big":"9007199254740993"}`},
		{NoMetadata, []string{}, `{}`},
		{MinimalMetadata, []string{"Big", "Timestamp"}, `"Timestamp":"2021-08-02T18:01:40.1925388Z","Big@odata.type":"Edm.Int64","Big":"9007199254740993"}`},
		{FullMetadata, []string{"Timestamp", "Missing"}, `"odata.editLink":"mytable(PartitionKey='p1',RowKey='r1')","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2021-08-02T18:01:40.1925388Z","Missing":null}`},
		{FullMetadata, []string{"PartitionKey"}, `"odata.editLink":"mytable(PartitionKey='p1',RowKey='r1')","PartitionKey":"p1"}`},
	} {
		o := fixtureOptions(tc.level)
		o.Select = tc.sel
		got := string(AppendJSON(nil, &e, o))
		if !strings.HasSuffix(got, tc.suffix) {
			t.Errorf("level %d $select=%v:\n got %s\nwant suffix %s", tc.level, tc.sel, got, tc.suffix)
		}
		if tc.level != NoMetadata && !strings.Contains(got, `"odata.etag":`) {
			t.Errorf("level %d $select=%v: odata.etag missing: %s", tc.level, tc.sel, got)
		}
	}
}

func TestAppendJSONFormatsDoublesAsTheServiceDoes(t *testing.T) {
	tenth := 0.1 // a variable, so that 0.1+0.2 is computed in float64
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{5, "5.0"},
		{-3, "-3.0"},
		{9, "9.0"},
		{3.1, "3.1"},
		{1234.1234, "1234.1234"},
		{tenth + 2*tenth, "0.30000000000000004"},
		{1e14, "100000000000000.0"},
		{123456789012345, "123456789012345.0"},
		{1e15, "1E+15"},
		{1.5e15, "1.5E+15"},
		{1e20, "1E+20"},
		{123456789012345678, "1.2345678901234568E+17"},
		{0.0001, "0.0001"},
		{0.00001, "1E-05"},
		{1.5e-7, "1.5E-07"},
		{math.MaxFloat64, "1.7976931348623157E+308"},
		{math.SmallestNonzeroFloat64, "5E-324"},
		{-2.5e-100, "-2.5E-100"},
	} {
		e := Entity{Properties: []Property{{"D", Value{Type: Double, Float: tc.f}}}}
		got := string(AppendJSON(nil, &e, &EncodeOptions{Select: []string{"D"}}))
		if want := `{"D":` + tc.want + `}`; got != want {
			t.Errorf("%g: got %s, want %s", tc.f, got, want)
		}
	}
}

func TestAppendJSONWritesSpecialDoublesAsAnnotatedStrings(t *testing.T) {
	e := Entity{Properties: []Property{
		{"N", Value{Type: Double, Float: math.NaN()}},
		{"P", Value{Type: Double, Float: math.Inf(1)}},
		{"M", Value{Type: Double, Float: math.Inf(-1)}},
	}}
	sel := []string{"N", "P", "M"}
	got := string(AppendJSON(nil, &e, &EncodeOptions{Metadata: MinimalMetadata, Select: sel}))
	want := `"N@odata.type":"Edm.Double","N":"NaN","P@odata.type":"Edm.Double","P":"Infinity","M@odata.type":"Edm.Double","M":"-Infinity"}`
	if !strings.HasSuffix(got, want) {
		t.Fatalf("got %s, want suffix %s", got, want)
	}
	got = string(AppendJSON(nil, &e, &EncodeOptions{Select: sel}))
	if want := `{"N":"NaN","P":"Infinity","M":"-Infinity"}`; got != want {
		t.Fatalf("nometadata: got %s, want %s", got, want)
	}
}

func TestAppendJSONFormatsOtherValues(t *testing.T) {
	e := Entity{Properties: []Property{
		{"I", Value{Type: Int32, Int: math.MinInt32}},
		{"L", Value{Type: Int64, Int: math.MinInt64}},
		{"F", Value{Type: Boolean}},
		{"D", Value{Type: DateTime, Int: int64(MinDateTime) + 1_230_000}},
		{"E", Value{Type: DateTime, Int: int64(MaxDateTime)}},
		{"B", Value{Type: Binary, Bin: []byte{0xfb, 0xff, 0xfe}}},
		{"Z", Value{Type: Binary}},
	}}
	got := string(AppendJSON(nil, &e, &EncodeOptions{Select: []string{"I", "L", "F", "D", "E", "B", "Z"}}))
	want := `{"I":-2147483648,"L":"-9223372036854775808","F":false,"D":"1601-01-01T00:00:00.123Z","E":"9999-12-31T23:59:59.9999999Z","B":"+//+","Z":""}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestAppendJSONEscapesStrings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{`q"b\s/`, `"q\"b\\s/"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"é€😀\u2028<>&", `"é€😀` + "\u2028" + `<>&"`},
		{"bad\xffutf8\xc3", `"bad\ufffdutf8\ufffd"`},
	} {
		e := Entity{PartitionKey: tc.in}
		got := string(AppendJSON(nil, &e, &EncodeOptions{Select: []string{"PartitionKey"}}))
		if want := `{"PartitionKey":` + tc.want + `}`; got != want {
			t.Errorf("%q: got %s, want %s", tc.in, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%q: invalid JSON %s", tc.in, got)
		}
	}
}

func TestAppendJSONDoublesQuotesInKeysOfIDAndEditLink(t *testing.T) {
	e := Entity{PartitionKey: "it's", RowKey: `''"`}
	o := &EncodeOptions{Metadata: FullMetadata, BaseURL: "http://127.0.0.1:10002/devstoreaccount1", Account: "devstoreaccount1", Table: "T"}
	got := string(AppendJSON(nil, &e, o))
	for _, want := range []string{
		`"odata.type":"devstoreaccount1.T"`,
		`"odata.id":"http://127.0.0.1:10002/devstoreaccount1/T(PartitionKey='it''s',RowKey='''''\"')"`,
		`"odata.editLink":"T(PartitionKey='it''s',RowKey='''''\"')"`,
		`"PartitionKey":"it's","RowKey":"''\""`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%s\ndoes not contain %s", got, want)
		}
	}
}

func TestAppendJSONProducesJSONThatStandardReadersAccept(t *testing.T) {
	e := fixtureEntity()
	for _, level := range []Metadata{NoMetadata, MinimalMetadata, FullMetadata} {
		var m map[string]any
		if err := json.Unmarshal(AppendJSON(nil, &e, fixtureOptions(level)), &m); err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
	}
}

func TestPlain8AgreesWithTheByteTable(t *testing.T) {
	ref := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 || !jsonPlain[s[i]] {
				return false
			}
		}
		return true
	}
	b := []byte("abcdefgh")
	for pos := range 8 {
		for c := range 256 {
			b2 := append([]byte(nil), b...)
			b2[pos] = byte(c)
			if got, want := plain8(string(b2)), ref(string(b2)); got != want {
				t.Fatalf("%q: plain8 %v, want %v", b2, got, want)
			}
			for c2 := range 256 { // a second byte after the first, for borrows between bytes
				if pos == 7 {
					break
				}
				b2[pos+1] = byte(c2)
				if got, want := plain8(string(b2)), ref(string(b2)); got != want {
					t.Fatalf("%q: plain8 %v, want %v", b2, got, want)
				}
			}
		}
	}
}
