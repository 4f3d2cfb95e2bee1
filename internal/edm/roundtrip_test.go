package edm

import (
	"math/rand/v2"
	"testing"
)

// TestDecodeJSONReadsBackAppendJSON checks that what the encoder writes under minimal and full
// metadata decodes to the same entity, Timestamp aside (a request's Timestamp is ignored).
func TestDecodeJSONReadsBackAppendJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		e := randEntity(r)
		level := MinimalMetadata + Metadata(i%2)
		opts := &EncodeOptions{Metadata: level, MetadataURL: "https://a/$metadata#t/@Element", BaseURL: "https://a", Account: "a", Table: "t"}
		body := AppendJSON(nil, &e, opts)
		d, err := DecodeJSON(body)
		if err != nil {
			t.Fatalf("entity %d: %v\n%s", i, err, body)
		}
		if !d.HasPartitionKey || !d.HasRowKey {
			t.Fatalf("entity %d: keys missing after decoding %s", i, body)
		}
		want := e
		want.Timestamp = 0
		if diff := diffEntities(&d.Entity, &want); diff != "" {
			t.Fatalf("entity %d: %s\n%s", i, diff, body)
		}
	}
}

func TestDecodeJSONReadsTheServiceExamples(t *testing.T) {
	want := fixtureEntity()
	want.Timestamp = 0
	for _, body := range []string{wantMinimalMetadata, wantFullMetadata} {
		d, err := DecodeJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffEntities(&d.Entity, &want); diff != "" {
			t.Fatal(diff)
		}
	}
}
