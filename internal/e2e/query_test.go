package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// loadPartition inserts n entities into partition pk with RowKeys r00000.. via batches.
func loadPartition(t *testing.T, c *aztables.Client, pk string, n int) {
	t.Helper()
	for start := 0; start < n; start += 100 {
		var actions []aztables.TransactionAction
		for i := start; i < min(n, start+100); i++ {
			actions = append(actions, aztables.TransactionAction{
				ActionType: aztables.TransactionTypeAdd,
				Entity:     marshal(t, map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprintf("r%05d", i), "N": i, "Even": i%2 == 0}),
			})
		}
		if _, err := c.SubmitTransaction(context.Background(), actions, nil); err != nil {
			t.Fatalf("loading %s: %v", pk, err)
		}
	}
}

// queryAll follows continuations to the end and returns the keys seen and the page count.
func queryAll(t *testing.T, c *aztables.Client, opts *aztables.ListEntitiesOptions) (keys []string, pages int) {
	t.Helper()
	pager := c.NewListEntitiesPager(opts)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Entities) > 1000 {
			t.Fatalf("page of %d entities", len(page.Entities))
		}
		for _, raw := range page.Entities {
			var e map[string]any
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, e["PartitionKey"].(string)+"/"+e["RowKey"].(string))
		}
	}
	return keys, pages
}

func TestQueryPagesThroughMoreThanAThousandEntities(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "paging")
		loadPartition(t, c, "a", 1500)
		loadPartition(t, c, "b", 700)

		keys, pages := queryAll(t, c, nil)
		if len(keys) != 2200 || pages != 3 {
			t.Fatalf("got %d entities in %d pages, want 2200 in 3", len(keys), pages)
		}
		for i := 1; i < len(keys); i++ {
			if keys[i-1] >= keys[i] {
				t.Fatalf("out of order or duplicated at %d: %s then %s", i, keys[i-1], keys[i])
			}
		}

		keys, _ = queryAll(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr("Even eq true and N ge 1000")})
		// Partition a holds the even N in 1000..1499 (250 of them); partition b has none.
		if len(keys) != 250 {
			t.Fatalf("filtered query returned %d entities, want 250", len(keys))
		}

		keys, pages = queryAll(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'b'"), Top: to.Ptr[int32](300)})
		if len(keys) != 700 || pages != 3 || keys[0] != "b/r00000" {
			t.Fatalf("partition b with $top=300: %d entities in %d pages (first %v)", len(keys), pages, keys[:1])
		}
	})
}

func TestQuerySelectAndPointFilter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "select")
		addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "1", "A": 1, "B": "x"})
		addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "2", "A": 2})
		pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{
			Filter: to.Ptr("PartitionKey eq 'p' and RowKey eq '2'"), Select: to.Ptr("A,B"),
		})
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entities) != 1 {
			t.Fatalf("point filter returned %d entities", len(page.Entities))
		}
		var e map[string]any
		_ = json.Unmarshal(page.Entities[0], &e)
		if e["A"] != float64(2) || e["B"] != nil || e["RowKey"] != nil {
			t.Fatalf("$select=A,B returned %v", e)
		}
		if v, present := e["B"]; !present || v != nil {
			t.Fatalf("a selected property the entity lacks must come back as null, got %v", e)
		}
	})
}

func TestMalformedFilterIsBadRequest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "badfilter")
		pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("aaa bbb ccc")})
		_, err := pager.NextPage(context.Background())
		wantAzureError(t, err, http.StatusBadRequest, "InvalidInput")
	})
}

// TestBooleanLiteralsInAnyCase filters, through the SDK, with capitalised boolean literals
// (True, FALSE, truE), as Azure Storage Explorer sends them: Azure reads them as booleans
// (Azure/Azurite#1947, fixed in Azurite for parity in #1959), so they select exactly what
// their lower-case spellings select.
func TestBooleanLiteralsInAnyCase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "boolcase")
		loadPartition(t, c, "p", 6)
		for filter, want := range map[string]string{
			"Even eq True":                          "p/r00000,p/r00002,p/r00004",
			"Even eq FALSE":                         "p/r00001,p/r00003,p/r00005",
			"Even eq truE and N gt 1":               "p/r00002,p/r00004",
			"not (Even eq TRUE) and N lt 2":         "p/r00001",
			"TRUE and PartitionKey eq 'p' and Even": "p/r00000,p/r00002,p/r00004",
		} {
			keys, _ := queryAll(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr(filter)})
			if got := strings.Join(keys, ","); got != want {
				t.Errorf("%s: got %s, want %s", filter, got, want)
			}
		}
	})
}

// bodyRecorder is an SDK pipeline policy that keeps the last response body, for what the SDK
// receives but does not expose.
type bodyRecorder struct{ last []byte }

func (r *bodyRecorder) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err == nil {
		r.last, _ = io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(r.last))
	}
	return resp, err
}

// TestSelectAppearsInTheMetadataURL queries through the SDK with $select and checks the
// odata.metadata URL the SDK receives: the real service appends the projection,
// "{base}/$metadata#{table}&$select=age,sex" (Python SDK recording
// test_table_entity.pyTestTableEntitytest_query_entities_with_select.json in
// Azure/azure-sdk-assets).
func TestSelectAppearsInTheMetadataURL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		s.newTable(t, "selectmeta")
		rec := &bodyRecorder{}
		cred, _ := aztables.NewSharedKeyCredential("devstoreaccount1", devKey)
		c, err := aztables.NewClientWithSharedKey(s.url+"/selectmeta", cred, &aztables.ClientOptions{
			ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, PerCallPolicies: []policy.Policy{rec}},
		})
		if err != nil {
			t.Fatal(err)
		}
		addEntity(t, c, map[string]any{"PartitionKey": "pk", "RowKey": "rk1", "age": 39, "sex": "male", "married": true})
		for sel, want := range map[string]string{
			"age,sex":    `{"odata.metadata":"` + s.url + `/$metadata#selectmeta&$select=age,sex","value":[{"odata.etag":`,
			" sex , age": `{"odata.metadata":"` + s.url + `/$metadata#selectmeta&$select=sex,age","value":[{"odata.etag":`,
			"*":          `{"odata.metadata":"` + s.url + `/$metadata#selectmeta","value":[{"odata.etag":`,
		} {
			pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: to.Ptr(sel)})
			if _, err := pager.NextPage(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(rec.last), want) {
				t.Errorf("$select=%s: got %s, want it to start %s", sel, rec.last, want)
			}
		}
	})
}
