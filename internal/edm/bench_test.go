package edm

import (
	"strings"
	"testing"
	"time"
)

// benchEntity is about 1 KiB of JSON (minimal metadata) with ten properties of mixed types.
func benchEntity() Entity {
	return Entity{
		PartitionKey: "customer-000042",
		RowKey:       "order-2021-08-02-000017",
		Timestamp:    TicksOf(time.Date(2021, 8, 2, 18, 1, 40, 192538800, time.UTC)),
		Properties: []Property{
			{"Description", Value{Type: String, Str: strings.Repeat("A fairly ordinary sentence, with \"quotes\" and é. ", 8)}},
			{"Status", Value{Type: String, Str: "Shipped"}},
			{"Quantity", Value{Type: Int32, Int: 12}},
			{"TotalCents", Value{Type: Int64, Int: 9007199254740993}},
			{"Price", Value{Type: Double, Float: 19.99}},
			{"Weight", Value{Type: Double, Float: 3}},
			{"OrderedAt", Value{Type: DateTime, Int: int64(TicksOf(time.Date(2021, 7, 30, 9, 15, 0, 123000000, time.UTC)))}},
			{"CustomerId", Value{Type: Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
			{"Thumbnail", Value{Type: Binary, Bin: []byte(strings.Repeat("\x00\x01\x02\xfe\xff", 30))}},
			{"Gift", Value{Type: Boolean, Int: 1}},
		},
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	e := benchEntity()
	body := AppendJSON(nil, &e, &EncodeOptions{Metadata: MinimalMetadata})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := benchEntity()
	opts := &EncodeOptions{Metadata: MinimalMetadata}
	buf := AppendJSON(nil, &e, opts)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSON(buf[:0], &e, opts)
	}
}

// BenchmarkAppendJSONNewBuffer writes into a nil slice, as the server does for a point read.
func BenchmarkAppendJSONNewBuffer(b *testing.B) {
	e := benchEntity()
	opts := &EncodeOptions{Metadata: MinimalMetadata}
	b.SetBytes(int64(len(AppendJSON(nil, &e, opts))))
	b.ReportAllocs()
	for b.Loop() {
		_ = AppendJSON(nil, &e, opts)
	}
}

func BenchmarkETag(b *testing.B) {
	t := benchEntity().Timestamp
	b.ReportAllocs()
	for b.Loop() {
		_ = ETag(t)
	}
}

func BenchmarkAppendJSONFullMetadata(b *testing.B) {
	e := benchEntity()
	opts := &EncodeOptions{Metadata: FullMetadata, BaseURL: "http://127.0.0.1:10002/devstoreaccount1", Account: "devstoreaccount1", Table: "orders"}
	buf := AppendJSON(nil, &e, opts)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSON(buf[:0], &e, opts)
	}
}

func BenchmarkMarshalBinary(b *testing.B) {
	e := benchEntity()
	b.SetBytes(int64(len(e.MarshalBinary())))
	b.ReportAllocs()
	for b.Loop() {
		_ = e.MarshalBinary()
	}
}

func BenchmarkUnmarshalBinary(b *testing.B) {
	e := benchEntity()
	rec := e.MarshalBinary()
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	var got Entity
	for b.Loop() {
		if err := UnmarshalBinary(rec, &got); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	e := benchEntity()
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
