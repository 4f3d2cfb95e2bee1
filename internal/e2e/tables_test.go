package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

func listTables(t *testing.T, s *testServer, opts *aztables.ListTablesOptions) []string {
	t.Helper()
	var names []string
	pager := s.service.NewListTablesPager(opts)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range page.Tables {
			names = append(names, *tb.Name)
		}
	}
	return names
}

func TestCreateListAndDeleteTables(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		for _, name := range []string{"gamma", "Alpha", "beta"} {
			s.newTable(t, name)
		}
		if got, want := listTables(t, s, nil), []string{"Alpha", "beta", "gamma"}; !slices.Equal(got, want) {
			t.Fatalf("tables = %v, want %v", got, want)
		}
		_, err := s.service.CreateTable(ctx, "ALPHA", nil)
		wantAzureError(t, err, http.StatusConflict, "TableAlreadyExists")

		if got := listTables(t, s, &aztables.ListTablesOptions{Filter: to.Ptr("TableName ge 'b' and TableName lt 'c'")}); !slices.Equal(got, []string{"beta"}) {
			t.Fatalf("filtered tables = %v, want [beta]", got)
		}
		if _, err := s.service.DeleteTable(ctx, "BETA", nil); err != nil {
			t.Fatal(err)
		}
		_, err = s.service.DeleteTable(ctx, "beta", nil)
		wantAzureError(t, err, http.StatusNotFound, "ResourceNotFound")
		if got, want := listTables(t, s, nil), []string{"Alpha", "gamma"}; !slices.Equal(got, want) {
			t.Fatalf("tables after delete = %v, want %v", got, want)
		}
	})
}

func TestCreateTableRejectsBadNames(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		for name, code := range map[string]string{
			"ab":                    "OutOfRangeInput",
			strings.Repeat("a", 64): "OutOfRangeInput",
			"1abc":                  "InvalidResourceName",
			"my_table":              "InvalidResourceName",
			"tables":                "InvalidResourceName",
		} {
			_, err := s.service.CreateTable(context.Background(), name, nil)
			wantAzureError(t, err, http.StatusBadRequest, code)
		}
	})
}

func TestListTablesPagesWithTop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		var want []string
		for i := range 7 {
			name := fmt.Sprintf("table%02d", i)
			s.newTable(t, name)
			want = append(want, name)
		}
		pager := s.service.NewListTablesPager(&aztables.ListTablesOptions{Top: to.Ptr[int32](3)})
		var got []string
		pages := 0
		for pager.More() {
			page, err := pager.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(page.Tables) > 3 {
				t.Fatalf("page of %d tables with $top=3", len(page.Tables))
			}
			for _, tb := range page.Tables {
				got = append(got, *tb.Name)
			}
		}
		if !slices.Equal(got, want) || pages != 3 {
			t.Fatalf("got %v in %d pages, want %v in 3", got, pages, want)
		}
	})
}

func TestDeletedTableForgetsItsEntities(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "recycled")
		addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "r", "V": 1})
		if _, err := s.service.DeleteTable(ctx, "recycled", nil); err != nil {
			t.Fatal(err)
		}
		_, err := c.GetEntity(ctx, "p", "r", nil)
		wantAzureError(t, err, http.StatusNotFound, "TableNotFound")
		c = s.newTable(t, "Recycled")
		_, err = c.GetEntity(ctx, "p", "r", nil)
		wantAzureError(t, err, http.StatusNotFound, "ResourceNotFound")
	})
}

// TestTablePagesEndWithTheLastMatchingTable replays the Go SDK's recorded TestQueryTable
// (Azure/azure-sdk-assets go/sdk/data/aztables/testdata/recordings/TestQueryTable/
// TestQueryTable_storage.json): with tables zzza0..zzza3 and zzzb4, a TableName range query
// with $top=2 takes two pages, and the second carries no NextTableName, so the SDK's pager
// stops there instead of fetching a third, empty page.
func TestTablePagesEndWithTheLastMatchingTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		for _, name := range []string{"zzza0", "zzza1", "zzza2", "zzza3", "zzzb4"} {
			s.newTable(t, name)
		}
		filter := "TableName ge 'zzza' and TableName lt 'zzzb'"
		if got, want := listTables(t, s, &aztables.ListTablesOptions{Filter: to.Ptr(filter)}), []string{"zzza0", "zzza1", "zzza2", "zzza3"}; !slices.Equal(got, want) {
			t.Fatalf("tables = %v, want %v", got, want)
		}
		pager := s.service.NewListTablesPager(&aztables.ListTablesOptions{Filter: to.Ptr(filter), Top: to.Ptr[int32](2)})
		var pages [][]string
		for pager.More() {
			page, err := pager.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tb := range page.Tables {
				names = append(names, *tb.Name)
			}
			pages = append(pages, names)
			if len(pages) > 3 {
				break
			}
		}
		if got := fmt.Sprint(pages); got != "[[zzza0 zzza1] [zzza2 zzza3]]" {
			t.Fatalf("pages = %s, want [[zzza0 zzza1] [zzza2 zzza3]]", got)
		}
	})
}
