package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabula-dev/tabula/internal/edm"
)

// cjkKey returns a key of n different CJK characters (3 bytes of UTF-8 each, and no
// repetition a database could compress away), varying with seed.
func cjkKey(n int, seed rune) string {
	var sb strings.Builder
	for i := range rune(n) {
		sb.WriteRune(0x4E00 + (i*7919+seed*104729)%0x51FF)
	}
	return sb.String()
}

// TestKeysAsLongAsAzureAcceptsWorkOnEveryBackend writes, reads, queries and deletes entities
// whose PartitionKey and RowKey are as long as Azure accepts, in the characters that take
// the most bytes: the 450-character keys that PostgreSQL once refused with a 500, and the
// longest ones; alone and in a transaction. One character more is refused with a 400.
func TestKeysAsLongAsAzureAcceptsWorkOnEveryBackend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "longkeys")
		for _, n := range []int{450, edm.MaxKeyLength} {
			pk, rk := cjkKey(n, 1), cjkKey(n, 2)
			addEntity(t, c, map[string]any{"PartitionKey": pk, "RowKey": rk, "V": n})
			if props, _ := getProps(t, c, pk, rk); props["V"] != float64(n) {
				t.Fatalf("%d-character keys read back as %v", n, props)
			}
			var actions []aztables.TransactionAction
			for i := range 3 {
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
					Entity: marshal(t, map[string]any{"PartitionKey": pk, "RowKey": rk[:len(rk)-3] + string(rune('a'+i)), "V": i})})
			}
			if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
				t.Fatalf("a transaction of %d-character keys: %v", n, err)
			}
			filter := "PartitionKey eq '" + pk + "'"
			pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr(filter)})
			var rows []string
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range page.Entities {
					var m map[string]any
					if err := json.Unmarshal(e, &m); err != nil {
						t.Fatal(err)
					}
					rows = append(rows, m["RowKey"].(string))
				}
			}
			// Row keys ending in a, b, c sort before the one ending in a CJK character.
			if len(rows) != 4 || rows[3] != rk {
				t.Fatalf("the partition of %d-character keys lists %d entities", n, len(rows))
			}
			if _, err := c.DeleteEntity(ctx, pk, rk, nil); err != nil {
				t.Fatalf("deleting an entity with %d-character keys: %v", n, err)
			}
		}
		_, err := c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": cjkKey(edm.MaxKeyLength+1, 3), "RowKey": "r"}), nil)
		wantAzureError(t, err, http.StatusBadRequest, "PropertyValueTooLarge")
	})
}
