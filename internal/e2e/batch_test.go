package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

func TestTransactionAppliesEveryOperationKind(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "txkinds")
		for _, rk := range []string{"merge", "replace", "delete", "upsert-merge", "upsert-replace"} {
			addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": rk, "Old": 1})
		}
		e := func(rk string) []byte { return marshal(t, map[string]any{"PartitionKey": "p", "RowKey": rk, "New": 2}) }
		_, err := c.SubmitTransaction(context.Background(), []aztables.TransactionAction{
			{ActionType: aztables.TransactionTypeAdd, Entity: e("added")},
			{ActionType: aztables.TransactionTypeUpdateMerge, Entity: e("merge"), IfMatch: to.Ptr(azcore.ETagAny)},
			{ActionType: aztables.TransactionTypeUpdateReplace, Entity: e("replace")},
			{ActionType: aztables.TransactionTypeDelete, Entity: e("delete")},
			{ActionType: aztables.TransactionTypeInsertMerge, Entity: e("upsert-merge")},
			{ActionType: aztables.TransactionTypeInsertReplace, Entity: e("upsert-replace")},
			{ActionType: aztables.TransactionTypeInsertMerge, Entity: e("upsert-new")},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ // RowKey → which properties it must have
			"added": "New", "merge": "New,Old", "replace": "New", "upsert-merge": "New,Old",
			"upsert-replace": "New", "upsert-new": "New",
		}
		for rk, props := range want {
			m, _ := getProps(t, c, "p", rk)
			_, hasOld := m["Old"]
			if m["New"] != float64(2) || hasOld != strings.Contains(props, "Old") {
				t.Errorf("%s after the transaction: %v, want properties %s", rk, m, props)
			}
		}
		_, err = c.GetEntity(context.Background(), "p", "delete", nil)
		wantAzureError(t, err, http.StatusNotFound, "ResourceNotFound")
	})
}

func TestTransactionOfAHundredInserts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "tx100")
		loadPartition(t, c, "p", 100)
		keys, _ := queryAll(t, c, nil)
		if len(keys) != 100 {
			t.Fatalf("%d entities after a 100-operation transaction", len(keys))
		}
	})
}

// wantTransactionError asserts a failed transaction's code, the failing operation's status
// and its index. As with the real service the response is a 202 whose one sub-response
// carries the failure.
func wantTransactionError(t *testing.T, err error, status int, code string, index int) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a transaction error", err)
	}
	if re.StatusCode != http.StatusAccepted || re.ErrorCode != code {
		t.Fatalf("got %d %s, want 202 %s (%v)", re.StatusCode, re.ErrorCode, code, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("HTTP/1.1 %d %s", status, http.StatusText(status))) {
		t.Fatalf("the sub-response is not %d: %v", status, err)
	}
	if !strings.Contains(msg, fmt.Sprintf(`"value":"%d:`, index)) {
		t.Fatalf("error does not name operation %d: %v", index, err)
	}
}

func TestFailedTransactionAppliesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "txfail")
		addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "exists", "V": 1})
		e := func(pk, rk string) []byte {
			return marshal(t, map[string]any{"PartitionKey": pk, "RowKey": rk, "V": 2})
		}
		cases := []struct {
			name    string
			actions []aztables.TransactionAction
			status  int
			code    string
			index   int
		}{
			{"insert of an existing entity", []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeAdd, Entity: e("p", "new1")},
				{ActionType: aztables.TransactionTypeAdd, Entity: e("p", "exists")},
			}, http.StatusConflict, "EntityAlreadyExists", 1},
			{"update of a missing entity", []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: e("p", "new1")},
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: e("p", "exists")},
				{ActionType: aztables.TransactionTypeUpdateMerge, Entity: e("p", "missing"), IfMatch: to.Ptr(azcore.ETagAny)},
			}, http.StatusNotFound, "ResourceNotFound", 2},
			{"stale etag", []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeDelete, Entity: e("p", "exists"), IfMatch: to.Ptr(azcore.ETag(`W/"datetime'2001-01-01T00%3A00%3A00.0000000Z'"`))},
			}, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", 0},
			{"two partitions", []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeAdd, Entity: e("p", "new1")},
				{ActionType: aztables.TransactionTypeAdd, Entity: e("q", "new2")},
			}, http.StatusBadRequest, "CommandsInBatchActOnDifferentPartitions", 1},
			{"one entity twice", []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeAdd, Entity: e("p", "new1")},
				{ActionType: aztables.TransactionTypeInsertMerge, Entity: e("p", "new1")},
			}, http.StatusBadRequest, "InvalidDuplicateRow", 1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := c.SubmitTransaction(ctx, tc.actions, nil)
				wantTransactionError(t, err, tc.status, tc.code, tc.index)
				keys, _ := queryAll(t, c, nil)
				if len(keys) != 1 {
					t.Fatalf("after a failed transaction the table holds %v", keys)
				}
				m, _ := getProps(t, c, "p", "exists")
				if m["V"] != float64(1) {
					t.Fatalf("a failed transaction changed an entity: %v", m)
				}
			})
		}
	})
}

func TestTransactionOnMissingTableIsNotFound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.service.NewClient("nosuchtable")
		_, err := c.SubmitTransaction(context.Background(), []aztables.TransactionAction{
			{ActionType: aztables.TransactionTypeAdd, Entity: marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r"})},
		}, nil)
		wantTransactionError(t, err, http.StatusNotFound, "TableNotFound", 0)
	})
}

func TestTransactionOfMoreThanAHundredOperationsIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "tx101")
		var actions []aztables.TransactionAction
		for i := range 101 {
			actions = append(actions, aztables.TransactionAction{
				ActionType: aztables.TransactionTypeAdd,
				Entity:     marshal(t, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("r%03d", i)}),
			})
		}
		_, err := c.SubmitTransaction(context.Background(), actions, nil)
		wantTransactionError(t, err, http.StatusBadRequest, "InvalidInput", 0)
		if keys, _ := queryAll(t, c, nil); len(keys) != 0 {
			t.Fatalf("a refused transaction stored %d entities", len(keys))
		}
	})
}
