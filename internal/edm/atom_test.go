package edm

import (
	"math"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// atomEntry wraps m:properties lines in an entry as the legacy .NET library (WCF Data
// Services client, ODataLib 5) writes an insert body.
func atomEntry(properties string) string {
	return atomDocument(`<m:properties>` + properties + `</m:properties>`)
}

// atomDocument wraps a whole m:properties element in an entry.
func atomDocument(propertiesElement string) string {
	return `<?xml version="1.0" encoding="utf-8" standalone="yes"?>` +
		`<entry xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" xmlns="http://www.w3.org/2005/Atom">` +
		`<title /><author><name /></author><updated>2013-03-22T13:01:48.000Z</updated><id />` +
		`<content type="application/xml">` + propertiesElement + `</content></entry>`
}

// everyType is an Atom body holding all eight EDM types at their edges.
var everyType = atomEntry(`<d:PartitionKey>p &amp; 1</d:PartitionKey><d:RowKey>r'1</d:RowKey>` +
	`<d:Timestamp m:type="Edm.DateTime">0001-01-01T00:00:00</d:Timestamp>` +
	`<d:Empty></d:Empty>` +
	`<d:Escapes>&lt;tag a="v"&gt; &amp;amp; 'q' "dq" tab	end&#xD;&#xA;line2</d:Escapes>` +
	`<d:Spaces xml:space="preserve">  both ends  </d:Spaces>` +
	`<d:Unicode>héllo 名字 😀</d:Unicode>` +
	`<d:True m:type="Edm.Boolean">true</d:True><d:False m:type="Edm.Boolean">0</d:False>` +
	`<d:I32Min m:type="Edm.Int32">-2147483648</d:I32Min><d:I32Max m:type="Edm.Int32"> 2147483647 </d:I32Max>` +
	`<d:I64Min m:type="Edm.Int64">-9223372036854775808</d:I64Min><d:I64Max m:type="Edm.Int64">9223372036854775807</d:I64Max>` +
	`<d:NaN m:type="Edm.Double">NaN</d:NaN><d:PosInf m:type="Edm.Double">INF</d:PosInf><d:NegInf m:type="Edm.Double">-INF</d:NegInf>` +
	`<d:NegZero m:type="Edm.Double">-0</d:NegZero><d:Five m:type="Edm.Double">5</d:Five><d:Big m:type="Edm.Double">1E+20</d:Big>` +
	`<d:Small m:type="Edm.Double">1.5E-07</d:Small><d:MaxDouble m:type="Edm.Double">1.7976931348623157E+308</d:MaxDouble><d:Denormal m:type="Edm.Double">5E-324</d:Denormal>` +
	`<d:When m:type="Edm.DateTime">2013-05-09T10:48:58.3516141Z</d:When><d:MinDate m:type="Edm.DateTime">1601-01-01T00:00:00Z</d:MinDate><d:MaxDate m:type="Edm.DateTime">9999-12-31T23:59:59.9999999Z</d:MaxDate>` +
	`<d:Id m:type="Edm.Guid">C9DA6455-213D-42C9-9A79-3E9149A57833</d:Id>` +
	`<d:NoBytes m:type="Edm.Binary"></d:NoBytes><d:Bytes m:type="Edm.Binary">AP8A
 /w==</d:Bytes>` +
	`<d:Gone m:null="true" /><d:TypedGone m:type="Edm.Int32" m:null="true" />`)

func TestDecodeAtomReadsEveryType(t *testing.T) {
	d, err := DecodeAtom([]byte(everyType))
	if err != nil {
		t.Fatal(err)
	}
	if d.PartitionKey != "p & 1" || d.RowKey != "r'1" || !d.HasPartitionKey || !d.HasRowKey || d.KeyErr != nil {
		t.Fatalf("keys: %+v", d)
	}
	want := []Property{
		prop("Empty", str("")),
		prop("Escapes", str("<tag a=\"v\"> &amp; 'q' \"dq\" tab\tend\r\nline2")),
		prop("Spaces", str("  both ends  ")),
		prop("Unicode", str("héllo 名字 😀")),
		prop("True", boolean(true)), prop("False", boolean(false)),
		prop("I32Min", i32(math.MinInt32)), prop("I32Max", i32(math.MaxInt32)),
		prop("I64Min", i64(math.MinInt64)), prop("I64Max", i64(math.MaxInt64)),
		prop("NaN", dbl(math.NaN())), prop("PosInf", dbl(math.Inf(1))), prop("NegInf", dbl(math.Inf(-1))),
		prop("NegZero", dbl(math.Copysign(0, -1))), prop("Five", dbl(5)), prop("Big", dbl(1e20)),
		prop("Small", dbl(1.5e-7)), prop("MaxDouble", dbl(math.MaxFloat64)), prop("Denormal", dbl(5e-324)),
		prop("When", datetime("2013-05-09T10:48:58.3516141Z")), prop("MinDate", datetime("1601-01-01T00:00:00Z")), prop("MaxDate", datetime("9999-12-31T23:59:59.9999999Z")),
		prop("Id", Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}),
		prop("NoBytes", bin()), prop("Bytes", bin(0, 0xff, 0, 0xff)),
	}
	if diff := diffEntities(&d.Entity, &Entity{PartitionKey: "p & 1", RowKey: "r'1", Properties: want}); diff != "" {
		t.Fatal(diff)
	}
}

// TestAtomRoundTripsThroughJSON reads an Atom entity, writes it as JSON and reads that back,
// then writes it as Atom and reads that back: every EDM type and edge value survives both
// formats intact.
func TestAtomRoundTripsThroughJSON(t *testing.T) {
	a, err := DecodeAtom([]byte(everyType))
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []Metadata{MinimalMetadata, FullMetadata} {
		js := AppendJSON(nil, &a.Entity, &EncodeOptions{Metadata: level, Table: "t", Account: "a"})
		b, err := DecodeJSON(js)
		if err != nil {
			t.Fatalf("reading the JSON back: %v\n%s", err, js)
		}
		if diff := diffEntities(&b.Entity, &a.Entity); diff != "" {
			t.Fatalf("through JSON: %s\n%s", diff, js)
		}
		atom := atomDocument(string(AppendAtomProperties(nil, &b.Entity, nil, "")))
		c, err := DecodeAtom([]byte(atom))
		if err != nil {
			t.Fatalf("reading the Atom back: %v\n%s", err, atom)
		}
		if diff := diffEntities(&c.Entity, &a.Entity); diff != "" {
			t.Fatalf("back to Atom: %s\n%s", diff, atom)
		}
	}
}

func TestAppendAtomPropertiesWritesTheServiceForm(t *testing.T) {
	e := Entity{PartitionKey: "part1", RowKey: "row<1>", Timestamp: mustTicks(t, "2013-05-09T10:48:58.351614Z"), Properties: []Property{
		prop("field", str("XML <test>")), prop("content", str("\n\nhi\n\nthere\n\n")), prop("intValue", i32(42)),
		prop("DoubleNumberValue", dbl(2.5)), prop("Whole", dbl(5)), prop("Inf", dbl(math.Inf(-1))),
		prop("dateValue", datetime("2012-11-10T03:04:05.2Z")), prop("Flag", boolean(false)),
		prop("Big", i64(1<<60)), prop("Bin", bin(1, 2, 3)), prop("G", Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}),
	}}
	want := "  <m:properties>\r\n" +
		"    <d:PartitionKey>part1</d:PartitionKey>\r\n" +
		"    <d:RowKey>row&lt;1&gt;</d:RowKey>\r\n" +
		"    <d:Timestamp m:type=\"Edm.DateTime\">2013-05-09T10:48:58.351614Z</d:Timestamp>\r\n" +
		"    <d:field>XML &lt;test&gt;</d:field>\r\n" +
		"    <d:content xml:space=\"preserve\">\n\nhi\n\nthere\n\n</d:content>\r\n" +
		"    <d:intValue m:type=\"Edm.Int32\">42</d:intValue>\r\n" +
		"    <d:DoubleNumberValue m:type=\"Edm.Double\">2.5</d:DoubleNumberValue>\r\n" +
		"    <d:Whole m:type=\"Edm.Double\">5</d:Whole>\r\n" +
		"    <d:Inf m:type=\"Edm.Double\">-INF</d:Inf>\r\n" +
		"    <d:dateValue m:type=\"Edm.DateTime\">2012-11-10T03:04:05.2Z</d:dateValue>\r\n" +
		"    <d:Flag m:type=\"Edm.Boolean\">false</d:Flag>\r\n" +
		"    <d:Big m:type=\"Edm.Int64\">1152921504606846976</d:Big>\r\n" +
		"    <d:Bin m:type=\"Edm.Binary\">AQID</d:Bin>\r\n" +
		"    <d:G m:type=\"Edm.Guid\">c9da6455-213d-42c9-9a79-3e9149a57833</d:G>\r\n" +
		"  </m:properties>\r\n"
	if got := string(AppendAtomProperties(nil, &e, nil, "  ")); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A projection writes only what it names, and null for what the entity lacks (as the
	// real service answered $select=field1).
	got := string(AppendAtomProperties(nil, &e, []string{"field", "Missing", "RowKey"}, ""))
	want = "<m:properties>\r\n  <d:RowKey>row&lt;1&gt;</d:RowKey>\r\n  <d:field>XML &lt;test&gt;</d:field>\r\n  <d:Missing m:null=\"true\" />\r\n</m:properties>\r\n"
	if got != want {
		t.Fatalf("projection: got\n%s\nwant\n%s", got, want)
	}
}

func mustTicks(t *testing.T, s string) Ticks {
	t.Helper()
	v, err := ParseDateTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDecodeAtomAcceptsWhatClientsSend(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		// The Node.js library (azure-sdk-for-node, 2013) wrote entries with xmlbuilder:
		// prefixes declared in another order, Atom elements after content, no white space.
		{"node", `<?xml version="1.0" encoding="utf-8" standalone="yes"?><entry xmlns="http://www.w3.org/2005/Atom" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices"><title/><updated>2013-05-09T10:47:53.000Z</updated><author><name/></author><id/><content type="application/xml"><m:properties><d:PartitionKey>p</d:PartitionKey><d:RowKey>r</d:RowKey><d:V m:type="Edm.Int32">1</d:V></m:properties></content></entry>`},
		// Other prefixes and a byte order mark.
		{"other prefixes", "\uFEFF" + `<a:entry xmlns:a="http://www.w3.org/2005/Atom" xmlns:x="http://schemas.microsoft.com/ado/2007/08/dataservices" xmlns:y="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><a:content type="application/xml"><y:properties><x:PartitionKey>p</x:PartitionKey><x:RowKey>r</x:RowKey><x:V y:type="Edm.Int32">1</x:V></y:properties></a:content></a:entry>`},
		// Properties directly under the entry, as in a media link entry.
		{"properties under entry", `<entry xmlns="http://www.w3.org/2005/Atom" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:properties><d:PartitionKey>p</d:PartitionKey><d:RowKey>r</d:RowKey><d:V m:type="Edm.Int32">1</d:V></m:properties></entry>`},
	} {
		d, err := DecodeAtom([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := diffEntities(&d.Entity, &Entity{PartitionKey: "p", RowKey: "r", Properties: []Property{prop("V", i32(1))}}); diff != "" {
			t.Fatalf("%s: %s", tc.name, diff)
		}
	}
}

func TestDecodeAtomRejectsWhatTheServiceRejects(t *testing.T) {
	p := func(s string) string {
		return atomEntry(`<d:PartitionKey>p</d:PartitionKey><d:RowKey>r</d:RowKey>` + s)
	}
	for _, tc := range []struct {
		name, body string
		code       azerr.Code
		msg        string
	}{
		{"not XML", `{"PartitionKey":"p"}`, azerr.InvalidInput, "text outside its Atom entry"},
		{"broken XML", `<entry xmlns="http://www.w3.org/2005/Atom"><content></entry>`, azerr.InvalidInput, "not well-formed XML"},
		{"truncated", p(`<d:A>x</d:A>`)[:100], azerr.InvalidInput, ""},
		{"not an entry", `<feed xmlns="http://www.w3.org/2005/Atom"/>`, azerr.InvalidInput, "must be an Atom entry"},
		{"two roots", p(``) + `<entry xmlns="http://www.w3.org/2005/Atom"/>`, azerr.InvalidInput, "more than one root"},
		{"unknown type", p(`<d:A m:type="Edm.Single">1</d:A>`), azerr.InvalidInput, "unknown type"},
		{"bad int", p(`<d:A m:type="Edm.Int32">1.5</d:A>`), azerr.InvalidInput, "is not a valid Edm.Int32 value"},
		{"int out of range", p(`<d:A m:type="Edm.Int32">2147483648</d:A>`), azerr.InvalidInput, "outside the range"},
		{"empty int", p(`<d:A m:type="Edm.Int64" />`), azerr.InvalidInput, "Edm.Int64"},
		{"bad boolean", p(`<d:A m:type="Edm.Boolean">yes</d:A>`), azerr.InvalidInput, "Edm.Boolean"},
		{"bad guid", p(`<d:A m:type="Edm.Guid">nope</d:A>`), azerr.InvalidInput, "Edm.Guid"},
		{"bad binary", p(`<d:A m:type="Edm.Binary">***</d:A>`), azerr.InvalidInput, "Edm.Binary"},
		{"date before 1601", p(`<d:A m:type="Edm.DateTime">1600-12-31T00:00:00Z</d:A>`), azerr.OutOfRangeInput, "out of range"},
		{"nested element", p(`<d:A><d:B>x</d:B></d:A>`), azerr.InvalidInput, "must be text"},
		{"foreign namespace", p(`<m:A>x</m:A>`), azerr.InvalidInput, "namespace"},
		{"duplicate", p(`<d:A>x</d:A><d:A>y</d:A>`), azerr.DuplicatePropertiesSpecified, "'A' appears twice"},
		{"undeclared entity", p(`<d:A>&nbsp;</d:A>`), azerr.InvalidInput, "not well-formed XML"},
		{"other encoding", `<?xml version="1.0" encoding="utf-16"?><entry xmlns="http://www.w3.org/2005/Atom"/>`, azerr.InvalidInput, "not well-formed XML"},
	} {
		_, err := DecodeAtom([]byte(tc.body))
		if err == nil {
			t.Fatalf("%s: accepted", tc.name)
		}
		t.Run(tc.name, func(t *testing.T) { requireAzErr(t, err, 400, tc.code, tc.msg) })
	}
}

func TestDecodeAtomKeys(t *testing.T) {
	d, err := DecodeAtom([]byte(atomEntry(`<d:PartitionKey m:type="Edm.String">p</d:PartitionKey><d:RowKey m:null="true" />`)))
	if err != nil || !d.HasPartitionKey || d.HasRowKey || d.KeyErr != nil {
		t.Fatalf("%+v %v", d, err)
	}
	d, err = DecodeAtom([]byte(atomEntry(`<d:PartitionKey>p</d:PartitionKey><d:RowKey m:type="Edm.Int32">1</d:RowKey>`)))
	if err != nil {
		t.Fatal(err)
	}
	requireAzErr(t, d.KeyErr, 400, azerr.InvalidInput, "RowKey is annotated as Edm.Int32")
	if d.HasRowKey || len(d.Properties) != 0 {
		t.Fatalf("a typed key became a key or a property: %+v", d)
	}
	// The name of a table to create is an ordinary string property.
	d, err = DecodeAtom([]byte(atomEntry(`<d:TableName>mytable</d:TableName>`)))
	if v, ok := d.Get("TableName"); err != nil || !ok || v.Str != "mytable" {
		t.Fatalf("%+v %v", d, err)
	}
	if !strings.Contains(everyType, "Timestamp") {
		t.Fatal("the fixture must send a Timestamp, which the decoder skips")
	}
}

func prop(name string, v Value) Property { return Property{Name: name, Value: v} }
func str(s string) Value                 { return Value{Type: String, Str: s} }
func i32(n int64) Value                  { return Value{Type: Int32, Int: n} }
func i64(n int64) Value                  { return Value{Type: Int64, Int: n} }
func dbl(f float64) Value                { return Value{Type: Double, Float: f} }
func bin(b ...byte) Value                { return Value{Type: Binary, Bin: b} }

func boolean(b bool) Value {
	if b {
		return Value{Type: Boolean, Int: 1}
	}
	return Value{Type: Boolean}
}

func datetime(s string) Value {
	t, err := ParseDateTime(s)
	if err != nil {
		panic(err)
	}
	return Value{Type: DateTime, Int: int64(t)}
}
