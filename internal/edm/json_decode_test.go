package edm

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// decodeOne decodes a body holding PartitionKey, RowKey and the given members, and returns
// the single property it must yield.
func decodeOne(t *testing.T, members string) (Value, error) {
	t.Helper()
	d, err := DecodeJSON([]byte(`{"PartitionKey":"p","RowKey":"r",` + members + `}`))
	if err != nil {
		return Value{}, err
	}
	if len(d.Properties) != 1 {
		t.Fatalf("got %d properties %+v, want 1", len(d.Properties), d.Properties)
	}
	if d.Properties[0].Name != "X" {
		t.Fatalf("property is named %q, want X", d.Properties[0].Name)
	}
	return d.Properties[0].Value, nil
}

func dt(y int, mo time.Month, d, h, mi, s, ns int) Value {
	return Value{Type: DateTime, Int: int64(TicksOf(time.Date(y, mo, d, h, mi, s, ns, time.UTC)))}
}

func TestDecodeJSONReadsEveryTypeAnnotatedOrInferred(t *testing.T) {
	for _, tc := range []struct {
		members string
		want    Value
	}{
		// Inferred from the JSON kind.
		{`"X":"text"`, Value{Type: String, Str: "text"}},
		{`"X":"2008-07-10T00:00:00Z"`, Value{Type: String, Str: "2008-07-10T00:00:00Z"}}, // never sniffed
		{`"X":""`, Value{Type: String, Str: ""}},
		{`"X":true`, Value{Type: Boolean, Int: 1}},
		{`"X":false`, Value{Type: Boolean}},
		{`"X":23`, Value{Type: Int32, Int: 23}},
		{`"X":-2147483648`, Value{Type: Int32, Int: math.MinInt32}},
		{`"X":2147483647`, Value{Type: Int32, Int: math.MaxInt32}},
		{`"X":-0`, Value{Type: Int32, Int: 0}},
		{`"X":2147483648`, Value{Type: Double, Float: 2147483648}}, // beyond Int32: Double
		{`"X":99999999999999999999`, Value{Type: Double, Float: 1e20}},
		{`"X":3.1`, Value{Type: Double, Float: 3.1}},
		{`"X":5.0`, Value{Type: Double, Float: 5}},
		{`"X":1e3`, Value{Type: Double, Float: 1000}},
		{`"X":1E+20`, Value{Type: Double, Float: 1e20}},
		{`"X":-0.0`, Value{Type: Double, Float: math.Copysign(0, -1)}},

		// Edm.String
		{`"X@odata.type":"Edm.String","X":"42"`, Value{Type: String, Str: "42"}},
		// Edm.Boolean, also from the string forms the real service accepts.
		{`"X@odata.type":"Edm.Boolean","X":true`, Value{Type: Boolean, Int: 1}},
		{`"X@odata.type":"Edm.Boolean","X":"false"`, Value{Type: Boolean}},
		{`"X@odata.type":"Edm.Boolean","X":"True"`, Value{Type: Boolean, Int: 1}},
		// Edm.Int32
		{`"X@odata.type":"Edm.Int32","X":23`, Value{Type: Int32, Int: 23}},
		{`"X@odata.type":"Edm.Int32","X":"-23"`, Value{Type: Int32, Int: -23}},
		{`"X@odata.type":"Edm.Int32","X":2147483647`, Value{Type: Int32, Int: math.MaxInt32}},
		// Edm.Int64
		{`"X@odata.type":"Edm.Int64","X":"9007199254740993"`, Value{Type: Int64, Int: 9007199254740993}},
		{`"X@odata.type":"Edm.Int64","X":"-9223372036854775808"`, Value{Type: Int64, Int: math.MinInt64}},
		{`"X@odata.type":"Edm.Int64","X":"9223372036854775807"`, Value{Type: Int64, Int: math.MaxInt64}},
		{`"X@odata.type":"Edm.Int64","X":64`, Value{Type: Int64, Int: 64}},
		// Edm.Double: numbers, numeric strings (recorded: "0" is accepted) and the specials.
		{`"X@odata.type":"Edm.Double","X":5`, Value{Type: Double, Float: 5}},
		{`"X@odata.type":"Edm.Double","X":1234.1234`, Value{Type: Double, Float: 1234.1234}},
		{`"X@odata.type":"Edm.Double","X":"0"`, Value{Type: Double, Float: 0}},
		{`"X@odata.type":"Edm.Double","X":"-1.5e3"`, Value{Type: Double, Float: -1500}},
		{`"X@odata.type":"Edm.Double","X":".5"`, Value{Type: Double, Float: 0.5}},
		{`"X@odata.type":"Edm.Double","X":"NaN"`, Value{Type: Double, Float: math.NaN()}},
		{`"X@odata.type":"Edm.Double","X":"Infinity"`, Value{Type: Double, Float: math.Inf(1)}},
		{`"X@odata.type":"Edm.Double","X":"-Infinity"`, Value{Type: Double, Float: math.Inf(-1)}},
		// Edm.DateTime in the forms the SDKs send.
		{`"X@odata.type":"Edm.DateTime","X":"2021-07-13T00:00:00Z"`, dt(2021, 7, 13, 0, 0, 0, 0)},                     // Go
		{`"X@odata.type":"Edm.DateTime","X":"1973-10-04T00:00:00.000000Z"`, dt(1973, 10, 4, 0, 0, 0, 0)},              // Python
		{`"X@odata.type":"Edm.DateTime","X":"2013-08-02T17:37:43.009Z"`, dt(2013, 8, 2, 17, 37, 43, 9000000)},         // JS
		{`"X@odata.type":"Edm.DateTime","X":"2013-08-02T17:37:43.0090043Z"`, dt(2013, 8, 2, 17, 37, 43, 9004300)},     // .NET
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10T00:00:00"`, dt(2008, 7, 10, 0, 0, 0, 0)},                      // docs; no zone is UTC
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10T02:30+02:30"`, dt(2008, 7, 10, 0, 0, 0, 0)},                   // offset converted
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-09T23:00:00-01:00"`, dt(2008, 7, 10, 0, 0, 0, 0)},                //
		{`"X@odata.type":"Edm.DateTime","X":"2013-08-02T17:37:43.123456789Z"`, dt(2013, 8, 2, 17, 37, 43, 1234567e2)}, // > 7 digits truncated
		{`"X@odata.type":"Edm.DateTime","X":"1601-01-01T00:00:00Z"`, Value{Type: DateTime, Int: int64(MinDateTime)}},
		{`"X@odata.type":"Edm.DateTime","X":"9999-12-31T23:59:59.9999999Z"`, Value{Type: DateTime, Int: int64(MaxDateTime)}},
		{`"X@odata.type":"Edm.DateTime","X":"2024-02-29T00:00:00Z"`, dt(2024, 2, 29, 0, 0, 0, 0)},
		// Edm.Guid: stored lowercase, from any of .NET's 128-bit forms.
		{`"X@odata.type":"Edm.Guid","X":"c9da6455-213d-42c9-9a79-3e9149a57833"`, Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
		{`"X@odata.type":"Edm.Guid","X":"C9DA6455-213D-42C9-9A79-3E9149A57833"`, Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
		{`"X@odata.type":"Edm.Guid","X":"{C9DA6455-213D-42C9-9A79-3E9149A57833}"`, Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
		{`"X@odata.type":"Edm.Guid","X":"c9da6455213d42c99a793e9149a57833"`, Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
		// Edm.Binary
		{`"X@odata.type":"Edm.Binary","X":"AQID"`, Value{Type: Binary, Bin: []byte{1, 2, 3}}},
		{`"X@odata.type":"Edm.Binary","X":"U29tZUJpbmFyeQ=="`, Value{Type: Binary, Bin: []byte("SomeBinary")}},
		{`"X@odata.type":"Edm.Binary","X":""`, Value{Type: Binary, Bin: []byte{}}},
		{`"X@odata.type":"Edm.Binary","X":"a\/8="`, Value{Type: Binary, Bin: []byte{0x6b, 0xff}}}, // escaped '/'
	} {
		t.Run(tc.members, func(t *testing.T) {
			got, err := decodeOne(t, tc.members)
			if err != nil {
				t.Fatal(err)
			}
			if !valueEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeJSONRejectsValuesItCannotRead(t *testing.T) {
	for _, tc := range []struct {
		members string
		code    azerr.Code
		msg     string
	}{
		// Kind or text that does not fit the annotation: InvalidInput, as recorded for
		// Edm.Boolean with "not a bool".
		{`"X@odata.type":"Edm.Boolean","X":"not a bool"`, azerr.InvalidInput, `An error occurred while processing this request. Property 'X' (Edm.Boolean): the value "not a bool" is not a valid Edm.Boolean value.`},
		{`"X@odata.type":"Edm.Boolean","X":1`, azerr.InvalidInput, "Edm.Boolean"},
		{`"X@odata.type":"Edm.String","X":5`, azerr.InvalidInput, "is a JSON number, which cannot be read as Edm.String"},
		{`"X@odata.type":"Edm.String","X":true`, azerr.InvalidInput, "Property 'X'"},
		{`"X@odata.type":"Edm.Int32","X":"x"`, azerr.InvalidInput, `the value "x" is not a valid Edm.Int32 value`},
		{`"X@odata.type":"Edm.Int32","X":2147483648`, azerr.InvalidInput, "outside the range of Edm.Int32"},
		{`"X@odata.type":"Edm.Int32","X":"-2147483649"`, azerr.InvalidInput, "outside the range of Edm.Int32"},
		{`"X@odata.type":"Edm.Int32","X":5.0`, azerr.InvalidInput, "Edm.Int32"},
		{`"X@odata.type":"Edm.Int32","X":" 5"`, azerr.InvalidInput, "Edm.Int32"},
		{`"X@odata.type":"Edm.Int64","X":"9223372036854775808"`, azerr.InvalidInput, "outside the range of Edm.Int64"},
		{`"X@odata.type":"Edm.Int64","X":"12a"`, azerr.InvalidInput, "Edm.Int64"},
		{`"X@odata.type":"Edm.Int64","X":""`, azerr.InvalidInput, "Edm.Int64"},
		{`"X@odata.type":"Edm.Int64","X":1.5`, azerr.InvalidInput, "Edm.Int64"},
		{`"X@odata.type":"Edm.Int64","X":1e2`, azerr.InvalidInput, "Edm.Int64"},
		{`"X@odata.type":"Edm.Double","X":"abc"`, azerr.InvalidInput, "Edm.Double"},
		{`"X@odata.type":"Edm.Double","X":"nan"`, azerr.InvalidInput, "Edm.Double"},
		{`"X@odata.type":"Edm.Double","X":"inf"`, azerr.InvalidInput, "Edm.Double"},
		{`"X@odata.type":"Edm.Double","X":"0x10"`, azerr.InvalidInput, "Edm.Double"},
		{`"X@odata.type":"Edm.Double","X":"1e"`, azerr.InvalidInput, "Edm.Double"},
		{`"X@odata.type":"Edm.Double","X":"."`, azerr.InvalidInput, "Edm.Double"},
		{`"X@odata.type":"Edm.Double","X":1e400`, azerr.InvalidInput, "outside the range of Edm.Double"},
		{`"X@odata.type":"Edm.Double","X":true`, azerr.InvalidInput, "Edm.Double"},
		{`"X":1e400`, azerr.InvalidInput, "outside the range of Edm.Double"},
		{`"X@odata.type":"Edm.DateTime","X":""`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2008-13-10T00:00:00Z"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2023-02-29T00:00:00Z"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10T24:00:00Z"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10T00:00:60Z"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10T00:00:00."`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10T00:00:00+15:00"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"2008-07-10t00:00:00z"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":"0000-01-01T00:00:00Z"`, azerr.InvalidInput, "Edm.DateTime"},
		{`"X@odata.type":"Edm.DateTime","X":12345`, azerr.InvalidInput, "Edm.DateTime"},
		// Outside 1601..9999: OutOfRangeInput with Azure's text.
		{`"X@odata.type":"Edm.DateTime","X":"1600-12-31T23:59:59.9999999Z"`, azerr.OutOfRangeInput, "The 'X' parameter of value '12/31/1600 23:59:59' is out of range."},
		{`"X@odata.type":"Edm.DateTime","X":"0001-01-01T00:00:00Z"`, azerr.OutOfRangeInput, "The 'X' parameter of value '01/01/0001 00:00:00' is out of range."},
		{`"X@odata.type":"Edm.DateTime","X":"1601-01-01T00:30:00+01:00"`, azerr.OutOfRangeInput, "'12/31/1600 23:30:00'"},
		{`"X@odata.type":"Edm.DateTime","X":"9999-12-31T23:59:59-00:01"`, azerr.OutOfRangeInput, "is out of range"},
		{`"X@odata.type":"Edm.Guid","X":"c9da6455-213d-42c9-9a79-3e9149a5783"`, azerr.InvalidInput, "Edm.Guid"},
		{`"X@odata.type":"Edm.Guid","X":"g9da6455-213d-42c9-9a79-3e9149a57833"`, azerr.InvalidInput, "Edm.Guid"},
		{`"X@odata.type":"Edm.Guid","X":"c9da6455_213d_42c9_9a79_3e9149a57833"`, azerr.InvalidInput, "Edm.Guid"},
		{`"X@odata.type":"Edm.Guid","X":"{c9da6455-213d-42c9-9a79-3e9149a57833)"`, azerr.InvalidInput, "Edm.Guid"},
		{`"X@odata.type":"Edm.Binary","X":"AQI"`, azerr.InvalidInput, "Edm.Binary"},
		{`"X@odata.type":"Edm.Binary","X":"AQ-_"`, azerr.InvalidInput, "Edm.Binary"},
		{`"X@odata.type":"Edm.Binary","X":[1,2]`, azerr.InvalidInput, "JSON array"},
		// Annotations themselves.
		{`"X@odata.type":"Edm.Single","X":1`, azerr.InvalidInput, "Property 'X' has an unknown type annotation 'Edm.Single'"},
		{`"X@odata.type":"edm.int32","X":1`, azerr.InvalidInput, "unknown type annotation"},
		{`"X@odata.type":5,"X":1`, azerr.InvalidInput, "must be a JSON string"},
		{`"X@odata.type":null,"X":1`, azerr.InvalidInput, "must be a JSON string"},
		// Objects and arrays are not property values.
		{`"X":{"a":1}`, azerr.InvalidInput, "Property 'X' has a JSON object value"},
		{`"X":[]`, azerr.InvalidInput, "Property 'X' has a JSON array value"},
	} {
		t.Run(tc.members, func(t *testing.T) {
			_, err := decodeOne(t, tc.members)
			requireAzErr(t, err, 400, tc.code, tc.msg)
		})
	}
}

func TestDecodeJSONTakesTheAnnotationBeforeOrAfterTheValue(t *testing.T) {
	for _, body := range []string{
		`{"Big@odata.type":"Edm.Int64","Big":"255","When":"2008-07-10T00:00:00Z","When@odata.type":"Edm.DateTime"}`,
		`{"Big":"255","Big@odata.type":"Edm.Int64","When@odata.type":"Edm.DateTime","When":"2008-07-10T00:00:00Z"}`,
		`{"When@odata.type":"Edm.DateTime","Big@odata.type":"Edm.Int64","Big":"255","When":"2008-07-10T00:00:00Z"}`,
	} {
		d, err := DecodeJSON([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		want := Entity{Properties: []Property{
			{"Big", Value{Type: Int64, Int: 255}},
			{"When", dt(2008, 7, 10, 0, 0, 0, 0)},
		}}
		if diff := diffEntities(&d.Entity, &want); diff != "" {
			t.Fatalf("%s: %s", body, diff)
		}
	}
}

func TestDecodeJSONKeepsBodyOrder(t *testing.T) {
	d, err := DecodeJSON([]byte(`{"z":1,"PartitionKey":"p","a":2,"RowKey":"r","m@odata.type":"Edm.Int64","Z":3,"m":"4"}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range d.Properties {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "z,a,Z,m" {
		t.Fatalf("order %s, want z,a,Z,m", got)
	}
}

func TestDecodeJSONDetectsDuplicateMembers(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 40 {
			fmt.Fprintf(&b, `"P%d":%d,`, i, i)
		}
		b.WriteString(extra + `}`)
		return b.String()
	}
	for _, tc := range []struct{ body, dup string }{
		{`{"A":1,"A":2}`, "'A'"},
		{`{"A":1,"\u0041":2}`, "'A'"}, // the same name, escaped
		{`{"A":null,"A":2}`, "'A'"},
		{`{"A@odata.type":"Edm.Int64","A@odata.type":"Edm.Int64","A":"1"}`, "'A@odata.type'"},
		{`{"PartitionKey":"a","PartitionKey":"b"}`, "'PartitionKey'"},
		{`{"RowKey":"a","RowKey":"a"}`, "'RowKey'"},
		{`{"Timestamp":"x","Timestamp":"y"}`, "'Timestamp'"},
		{many(`"P7":1`), "'P7'"},               // past the linear-scan limit
		{many(`"P39":1`), "'P39'"},             //
		{`{"P":1,` + many(`"P":1`)[1:], "'P'"}, // first seen before the switch to a map
	} {
		_, err := DecodeJSON([]byte(tc.body))
		requireAzErr(t, err, 400, azerr.DuplicatePropertiesSpecified, "A property is specified more than one time: "+tc.dup)
	}
	// Names differing only in case are different properties.
	if d, err := DecodeJSON([]byte(`{"a":1,"A":2}`)); err != nil || len(d.Properties) != 2 {
		t.Fatalf("a and A: got %+v, %v", d, err)
	}
	// odata.* members are control information, not properties: no duplicate check.
	if _, err := DecodeJSON([]byte(`{"odata.etag":"x","odata.etag":"y"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeJSONSkipsNullsODataMembersAndTimestamp(t *testing.T) {
	body := `{"odata.metadata":"https://a/$metadata#t/@Element","odata.etag":"W/\"x\"",
		"odata.type":"a.t","odata.id":"https://a/t(PartitionKey='p',RowKey='r')","odata.editLink":"t(PartitionKey='p',RowKey='r')",
		"odata.unknown":{"nested":[1,{"x":null}]},
		"PartitionKey":"p","RowKey":"r",
		"Timestamp@odata.type":"Edm.DateTime","Timestamp":"2021-08-02T18:01:40.1925388Z",
		"Gone":null,"Gone2@odata.type":"Edm.Int64","Gone2":null,"Lonely@odata.type":"Edm.Guid",
		"Kept":1}`
	d, err := DecodeJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := Entity{PartitionKey: "p", RowKey: "r", Properties: []Property{{"Kept", Value{Type: Int32, Int: 1}}}}
	if diff := diffEntities(&d.Entity, &want); diff != "" {
		t.Fatal(diff)
	}
	// Whatever Timestamp holds, it is ignored, annotation included.
	for _, ts := range []string{`"garbage"`, `5`, `{"a":[]}`, `null`} {
		if _, err := DecodeJSON([]byte(`{"Timestamp@odata.type":"Edm.Bogus","Timestamp":` + ts + `}`)); err != nil {
			t.Fatalf("Timestamp %s: %v", ts, err)
		}
	}
}

func TestDecodeJSONReadsKeys(t *testing.T) {
	for _, tc := range []struct {
		body         string
		hasPK, hasRK bool
		pk, rk       string
	}{
		{`{}`, false, false, "", ""},
		{`{"PartitionKey":"p"}`, true, false, "p", ""},
		{`{"RowKey":""}`, false, true, "", ""},
		{`{"PartitionKey":"","RowKey":""}`, true, true, "", ""},
		{`{"PartitionKey":null,"RowKey":null}`, false, false, "", ""},
		// Python sends "Edm.String" annotations even for the keys.
		{`{"PartitionKey":"p","PartitionKey@odata.type":"Edm.String","RowKey@odata.type":"Edm.String","RowKey":"r"}`, true, true, "p", "r"},
		// Key characters and lengths are Validate's business, not DecodeJSON's.
		{`{"PartitionKey":"a/b","RowKey":"\t"}`, true, true, "a/b", "\t"},
	} {
		d, err := DecodeJSON([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if d.HasPartitionKey != tc.hasPK || d.HasRowKey != tc.hasRK || d.PartitionKey != tc.pk || d.RowKey != tc.rk {
			t.Fatalf("%s: got %+v", tc.body, d)
		}
		if len(d.Properties) != 0 {
			t.Fatalf("%s: keys became properties: %+v", tc.body, d.Properties)
		}
	}
	// Keys of another type decode, with KeyErr saying what is wrong: Insert refuses them,
	// writes addressed by URL ignore the body's keys.
	for _, tc := range []struct{ body, msg string }{
		{`{"PartitionKey":1,"RowKey":"r"}`, "PartitionKey is a JSON number"},
		{`{"PartitionKey":"p","RowKey":true}`, "RowKey is a JSON boolean"},
		{`{"PartitionKey":"p","RowKey@odata.type":"Edm.Double","RowKey":3.14}`, "RowKey is a JSON number"},
		{`{"PartitionKey@odata.type":"Edm.Int32","PartitionKey":"1"}`, "PartitionKey is annotated as Edm.Int32"},
		{`{"PartitionKey@odata.type":"Edm.DateTime","PartitionKey":"2022-04-01T09:30:45.000000Z","RowKey@odata.type":"Edm.Guid","RowKey":"eb651a6d-265e-49d5-9013-0353822c4591"}`, "PartitionKey is annotated as Edm.DateTime"},
	} {
		d, err := DecodeJSON([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		requireAzErr(t, d.KeyErr, 400, azerr.InvalidInput, "One of the request inputs is not valid. The value of PartitionKey or RowKey must be a string: "+tc.msg)
		if len(d.Properties) != 0 {
			t.Fatalf("%s: keys became properties: %+v", tc.body, d.Properties)
		}
	}
	for _, tc := range []struct{ body, msg string }{
		{`{"PartitionKey":{}}`, "'PartitionKey' has a JSON object value"},
		{`{"RowKey":["r"]}`, "'RowKey' has a JSON array value"},
	} {
		_, err := DecodeJSON([]byte(tc.body))
		requireAzErr(t, err, 400, azerr.InvalidInput, tc.msg)
	}
	_, err := DecodeJSON([]byte(`{"PartitionKey@odata.type":"Edm.Text","PartitionKey":"1"}`))
	requireAzErr(t, err, 400, azerr.InvalidInput, "unknown type annotation")
}

func TestDecodeJSONRejectsMalformedBodies(t *testing.T) {
	for _, body := range []string{
		``, ` `, `null`, `[]`, `"x"`, `5`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`,
		`{"a":1}x`, `{"a":1}{}`, `{'a':1}`, `{a:1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":+1}`,
		`{"a":1e}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":tru}`, `{"a":nul}`, `{"a":True}`, `{"a":"x}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12G4"}`, "{\"a\":\"tab\there\"}", "{\"a\":\"nl\nhere\"}",
		`{"odata.x":[1,}`, `{"odata.x":{"a" 1}}`, `{"odata.x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
		"{\"a\":1}\x00", "{\"a\"\x00:1}",
	} {
		_, err := DecodeJSON([]byte(body))
		requireAzErr(t, err, 400, azerr.InvalidInput, "One of the request inputs is not valid.")
	}
}

func TestDecodeJSONReadsStringEscapesAndRejectsInvalidText(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`"plain"`, "plain"},
		{`"q\"b\\s\/"`, `q"b\s/`},
		{`"\b\f\n\r\t"`, "\b\f\n\r\t"},
		{`"\u0000\u001f\u00e9\u20AC"`, "\x00\x1fé€"},
		{`"\ud83d\ude00 and \uD834\uDD1E"`, "😀 and 𝄞"},
		{`"raw UTF-8: é€😀"`, "raw UTF-8: é€😀"},
		{`"mixed é \n 😀"`, "mixed é \n 😀"},
	} {
		got, err := decodeOne(t, `"X":`+tc.json)
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if got.Str != tc.want {
			t.Fatalf("%s: got %q, want %q", tc.json, got.Str, tc.want)
		}
	}
	for _, tc := range []struct{ json, msg string }{
		{`"\ud83d"`, "unpaired UTF-16 surrogate"},
		{`"\ud83dx"`, "unpaired UTF-16 surrogate"},
		{`"\ude00\ud83d"`, "unpaired UTF-16 surrogate"},
		{`"\ud83d\u0041"`, "unpaired UTF-16 surrogate"},
		{"\"\xff\"", "not valid UTF-8"},
		{"\"\xc3\"", "not valid UTF-8"},
		{"\"a\\n\xed\xa0\x80\"", "not valid UTF-8"}, // an encoded surrogate, in the escaped path
	} {
		_, err := decodeOne(t, `"X":`+tc.json)
		requireAzErr(t, err, 400, azerr.InvalidInput, tc.msg)
	}
	// Names are checked the same way.
	_, err := DecodeJSON([]byte("{\"\xff\":1}"))
	requireAzErr(t, err, 400, azerr.InvalidInput, "not valid UTF-8")
}

func TestDecodeJSONAcceptsByteOrderMarkAndWhiteSpace(t *testing.T) {
	d, err := DecodeJSON([]byte("\uFEFF \r\n\t{ \"PartitionKey\" : \"p\" ,\n \"A\" :\t1 } \n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.PartitionKey != "p" || len(d.Properties) != 1 {
		t.Fatalf("got %+v", d)
	}
}

func TestDecodeJSONDoesNotAliasTheBody(t *testing.T) {
	body := []byte(`{"PartitionKey":"pk","A":"text","B@odata.type":"Edm.Binary","B":"AQID"}`)
	d, err := DecodeJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if d.PartitionKey != "pk" || d.Properties[0].Value.Str != "text" || string(d.Properties[1].Value.Bin) != "\x01\x02\x03" {
		t.Fatalf("decoded entity changed with the body: %+v", d)
	}
}

func TestParseDateTimeReportsMalformedAndOutOfRange(t *testing.T) {
	got, err := ParseDateTime("2021-09-20T21:54:20.9694602Z")
	if err != nil || got != TicksOf(time.Date(2021, 9, 20, 21, 54, 20, 969460200, time.UTC)) {
		t.Fatalf("got %v, %v", got, err)
	}
	_, err = ParseDateTime("2021-09-20 21:54:20Z")
	requireAzErr(t, err, 400, azerr.InvalidInput, "not a valid Edm.DateTime")
	_, err = ParseDateTime("1000-01-01T00:00:00Z")
	requireAzErr(t, err, 400, azerr.OutOfRangeInput, "outside the Edm.DateTime range")
}

func TestParseDateTimeAgreesWithTheTimePackage(t *testing.T) {
	for y := 1601; y <= 9999; y += 7 {
		for _, md := range [][2]int{{1, 1}, {2, 28}, {3, 1}, {12, 31}} {
			want := time.Date(y, time.Month(md[0]), md[1], 13, 14, 15, 0, time.UTC)
			s := want.Format("2006-01-02T15:04:05Z")
			got, err := ParseDateTime(s)
			if err != nil || got != TicksOf(want) {
				t.Fatalf("%s: got %v, %v", s, got, err)
			}
		}
	}
}
