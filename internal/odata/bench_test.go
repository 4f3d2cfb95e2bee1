package odata

import (
	"testing"

	"github.com/tabula-dev/tabula/internal/edm"
)

func BenchmarkParseFilter(b *testing.B) {
	const s = "PartitionKey eq 'orders' and RowKey ge 'r0100' and RowKey lt 'r0200' and " +
		"(Age gt 30 or LastName eq 'O''Brien') and Created ge datetime'2021-01-01T00:00:00.0000000Z'"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFilter(s); err != nil {
			b.Fatal(err)
		}
	}
}

// benchEntity has ten properties of mixed types; the filter's three comparisons all hold, so
// every comparison is evaluated.
var benchEntity = &edm.Entity{
	PartitionKey: "orders",
	RowKey:       "r0150",
	Timestamp:    ticks("2021-09-20T21:54:20.9694602Z"),
	Properties: []edm.Property{
		prop("CustomerId", guid("c9da6455-213d-42c9-9a79-3e9149a57833")),
		prop("FirstName", str("Ada")),
		prop("LastName", str("Lovelace")),
		prop("Age", i32(36)),
		prop("Orders", i64(255)),
		prop("AmountDue", dbl(200.23)),
		prop("IsActive", boolean(true)),
		prop("Created", datetime("2021-03-04T05:06:07Z")),
		prop("Photo", binary(1, 2, 3, 4)),
		prop("City", str("London")),
	},
}

const benchFilter = "Age ge 30 and AmountDue lt 1000.0 and City eq 'London'"

func BenchmarkMatch(b *testing.B) {
	f := mustParse(b, benchFilter)
	b.Run("MatchEntity", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !f.MatchEntity(benchEntity) {
				b.Fatal("no match")
			}
		}
	})
	b.Run("Match", func(b *testing.B) {
		lookup := func(name string) (edm.Value, bool) { return benchEntity.Get(name) }
		b.ReportAllocs()
		for b.Loop() {
			if !f.Match(lookup) {
				b.Fatal("no match")
			}
		}
	})
}
