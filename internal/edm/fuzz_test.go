package edm

import (
	"math/rand/v2"
	"testing"
)

// FuzzDecodeJSON checks that DecodeJSON never panics and that any entity it accepts
// re-encodes (minimal metadata) and re-decodes to the same value.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		wantNoMetadata, wantMinimalMetadata, wantFullMetadata,
		`{}`, `{"PartitionKey":"p","RowKey":"r","A":1,"B":1.5,"C":true,"D":null,"E":"s"}`,
		`{"X@odata.type":"Edm.Int64","X":"1","Y":"2","Y@odata.type":"Edm.Double"}`,
		`{"X@odata.type":"Edm.DateTime","X":"2008-07-10T00:00:00+01:00"}`,
		`{"X@odata.type":"Edm.Guid","X":"{C9DA6455-213D-42C9-9A79-3E9149A57833}"}`,
		`{"X@odata.type":"Edm.Binary","X":"AQ\/D"}`,
		`{"X@odata.type":"Edm.Boolean","X":"TRUE"}`,
		`{"a\u0041\ud83d\ude00":"\n\u0000"}`,
		`{"odata.x":[{"a":[1,2,{}]}],"Timestamp":{}}`,
		`{"A":1,"A":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodeJSON(body)
		if err != nil {
			return
		}
		again := AppendJSON(nil, &d.Entity, &EncodeOptions{Metadata: MinimalMetadata})
		d2, err := DecodeJSON(again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if diff := diffEntities(&d2.Entity, &d.Entity); diff != "" {
			t.Fatalf("%s\nre-encoded as %s\n%s", body, again, diff)
		}
		if d2.HasPartitionKey != true || d2.HasRowKey != true {
			t.Fatalf("keys lost: %s", again)
		}
	})
}

// FuzzUnmarshalBinary checks that UnmarshalBinary never panics, and that whatever it accepts
// marshals back to the same bytes.
func FuzzUnmarshalBinary(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	e := fixtureEntity()
	f.Add(e.MarshalBinary())
	for range 8 {
		e := randEntity(r)
		f.Add(e.MarshalBinary())
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Entity
		if err := UnmarshalBinary(b, &e); err != nil {
			return
		}
		if again := e.MarshalBinary(); string(again) != string(b) {
			// Varints have non-minimal encodings, so only a re-read must agree.
			var e2 Entity
			if err := UnmarshalBinary(again, &e2); err != nil {
				t.Fatalf("re-reading %x: %v", again, err)
			}
			if diff := diffEntities(&e2, &e); diff != "" {
				t.Fatal(diff)
			}
		}
	})
}

// FuzzDecodeAtom checks that DecodeAtom never panics, fails only with a 400 Azure error, and
// that any entity it accepts is written back — as Atom and as JSON — and read again unchanged.
func FuzzDecodeAtom(f *testing.F) {
	for _, s := range []string{
		everyType,
		atomEntry(`<d:PartitionKey>p</d:PartitionKey><d:RowKey>r</d:RowKey><d:A m:type="Edm.Int64">1</d:A><d:B>x &amp; y</d:B>`),
		atomEntry(`<d:S xml:space="preserve"> a </d:S><d:N m:null="true"/><d:D m:type="Edm.Double">-INF</d:D>`),
		atomEntry(`<d:A>1</d:A><d:A>2</d:A>`),
		atomEntry(`<d:A m:type="Edm.Guid">{C9DA6455-213D-42C9-9A79-3E9149A57833}</d:A><d:B m:type="Edm.Boolean"> 1 </d:B>`),
		`<entry xmlns="http://www.w3.org/2005/Atom"><content><x/></content></entry>`,
		`<?xml version="1.0"?><entry xmlns="http://www.w3.org/2005/Atom"/><!-- c -->`,
		`<entry`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodeAtom(body)
		if err != nil {
			requireAzErrStatus(t, err, 400)
			return
		}
		atom := atomDocument(string(AppendAtomProperties(nil, &d.Entity, nil, "")))
		again, err := DecodeAtom([]byte(atom))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", atom, err)
		}
		if diff := diffEntities(&again.Entity, &d.Entity); diff != "" {
			t.Fatalf("%s\nre-encoded as %s\n%s", body, atom, diff)
		}
		js := AppendJSON(nil, &d.Entity, &EncodeOptions{Metadata: MinimalMetadata})
		fromJSON, err := DecodeJSON(js)
		if err != nil {
			t.Fatalf("reading %s back: %v", js, err)
		}
		if diff := diffEntities(&fromJSON.Entity, &d.Entity); diff != "" {
			t.Fatalf("%s\nas JSON %s\n%s", body, js, diff)
		}
	})
}
