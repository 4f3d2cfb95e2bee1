package console

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/faults"
	"github.com/tabula-dev/tabula/internal/insight"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
)

// otherKey is the key of the second account the API tests host.
var otherKey = base64.StdEncoding.EncodeToString([]byte("the other account's key"))

type apiFixture struct {
	url      string
	tables   *table.Service
	faults   *faults.Set
	insights *insight.Observer
	blobs    *blob.Service
	queues   *queue.Service
	clock    *clock // the Queue service's
}

// newAPI serves the console with the Table, Blob and Queue services, devstoreaccount1 and a
// second account.
func newAPI(t *testing.T, accounts ...auth.Account) *apiFixture {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if accounts == nil {
		other, _ := base64.StdEncoding.DecodeString(otherKey)
		accounts = []auth.Account{auth.DevelopmentAccount(), {Name: "other", Keys: [][]byte{other}}}
	}
	f := &apiFixture{tables: table.New(st), faults: &faults.Set{}, insights: insight.New(insight.DefaultConfig(), nil), blobs: blob.New(st, st), clock: &clock{}}
	f.queues = queue.New(st, queue.Options{Now: f.clock.Now})
	srv := httptest.NewServer(Handler(Options{Store: st, Tables: f.tables, Blobs: f.blobs, Queues: f.queues, Faults: f.faults, Accounts: accounts, Insights: f.insights}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

type answer struct {
	status int
	header http.Header
	body   string
}

// code is the Azure code of a failure's body.
func (a answer) code() string {
	var v struct{ Error apiError }
	_ = json.Unmarshal([]byte(a.body), &v)
	return v.Error.Code
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("%d %s: %v", a.status, a.body, err)
	}
}

// as calls the API as an account (name and base64 key; empty name: no credentials).
func (f *apiFixture) as(t *testing.T, name, key, method, path string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if name != "" {
		req.SetBasicAuth(name, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// dev calls the API as devstoreaccount1.
func (f *apiFixture) dev(t *testing.T, method, path string, body any) answer {
	t.Helper()
	return f.as(t, auth.DevelopmentAccountName, auth.DevelopmentAccountKey, method, path, body)
}

func expect(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.code() != code {
		t.Fatalf("got %d %q, want %d %q: %s", a.status, a.code(), status, code, a.body)
	}
}

const devTables = "/api/accounts/devstoreaccount1/tables"

func TestHelloOffersTheDevelopmentKeyOnlyWhileThatAccountIsHostedWithIt(t *testing.T) {
	var hello struct {
		Services    []string
		Development map[string]string
	}
	newAPI(t).as(t, "", "", "GET", "/api/hello", nil).decode(t, &hello)
	if fmt.Sprint(hello.Services) != "[table blob queue]" || hello.Development["account"] != "devstoreaccount1" || hello.Development["key"] != auth.DevelopmentAccountKey {
		t.Fatalf("%+v", hello)
	}
	for name, accounts := range map[string][]auth.Account{
		"another account":                 {{Name: "prod", Keys: [][]byte{[]byte("secret")}}},
		"devstoreaccount1 with a new key": {{Name: "devstoreaccount1", Keys: [][]byte{[]byte("secret")}}},
	} {
		hello.Development = nil
		a := newAPI(t, accounts...).as(t, "", "", "GET", "/api/hello", nil)
		a.decode(t, &hello)
		if hello.Development != nil || strings.Contains(a.body, "secret") || strings.Contains(a.body, base64.StdEncoding.EncodeToString([]byte("secret"))) {
			t.Errorf("%s: %s", name, a.body)
		}
	}
}

func TestTheAPINeedsAnAccountsKeyAndServesOnlyThatAccount(t *testing.T) {
	f := newAPI(t)
	a := f.as(t, "", "", "GET", devTables, nil)
	expect(t, a, 401, "AuthenticationFailed")
	// No Basic challenge: the browser would answer it with its own password dialog.
	if c := a.header.Get("WWW-Authenticate"); c == "" || strings.HasPrefix(c, "Basic") {
		t.Errorf("challenge %q", c)
	}
	expect(t, f.as(t, "devstoreaccount1", otherKey, "GET", devTables, nil), 401, "AuthenticationFailed")
	expect(t, f.as(t, "devstoreaccount1", "not base64!", "GET", devTables, nil), 401, "AuthenticationFailed")
	expect(t, f.as(t, "nobody", auth.DevelopmentAccountKey, "GET", "/api/accounts", nil), 401, "AuthenticationFailed")
	// The other account's owner may not read devstoreaccount1.
	a = f.as(t, "other", otherKey, "GET", devTables, nil)
	expect(t, a, 403, "AuthorizationFailure")
	var who struct {
		Account  string
		Accounts []string
	}
	f.as(t, "other", otherKey, "GET", "/api/accounts", nil).decode(t, &who)
	if who.Account != "other" || fmt.Sprint(who.Accounts) != "[devstoreaccount1 other]" {
		t.Fatalf("%+v", who)
	}
	expect(t, f.dev(t, "GET", "/api/nothing/here", nil), 404, "ResourceNotFound")
}

func TestTablesAreCreatedListedInPagesAndDeleted(t *testing.T) {
	f := newAPI(t)
	for _, name := range []string{"Orders", "customers", "audit"} {
		a := f.dev(t, "POST", devTables, map[string]string{"name": name})
		if a.status != 201 || a.body != "{\n  \"name\": \""+name+"\"\n}\n" {
			t.Fatalf("create %s: %d %s", name, a.status, a.body)
		}
	}
	expect(t, f.dev(t, "POST", devTables, map[string]string{"name": "orders"}), 409, "TableAlreadyExists")
	expect(t, f.dev(t, "POST", devTables, map[string]string{"name": "no"}), 400, "OutOfRangeInput")
	expect(t, f.dev(t, "POST", devTables, map[string]string{"name": "1abc"}), 400, "InvalidResourceName")
	expect(t, f.dev(t, "POST", devTables, map[string]any{"name": "abc", "extra": 1}), 400, "InvalidInput")

	var page struct {
		Tables []struct{ Name string }
		Next   string
	}
	f.dev(t, "GET", devTables+"?top=2", nil).decode(t, &page)
	if len(page.Tables) != 2 || page.Tables[0].Name != "audit" || page.Tables[1].Name != "customers" || page.Next == "" {
		t.Fatalf("first page %+v", page)
	}
	next := page.Next
	page.Next = ""
	f.dev(t, "GET", devTables+"?top=2&next="+url.QueryEscape(next), nil).decode(t, &page)
	if len(page.Tables) != 1 || page.Tables[0].Name != "Orders" || page.Next != "" {
		t.Fatalf("second page %+v", page)
	}
	expect(t, f.dev(t, "GET", devTables+"?top=1001", nil), 400, "InvalidInput")
	// The other account has none of them.
	f.as(t, "other", otherKey, "GET", "/api/accounts/other/tables", nil).decode(t, &page)
	if len(page.Tables) != 0 {
		t.Fatalf("other account: %+v", page)
	}

	if a := f.dev(t, "DELETE", devTables+"/orders", nil); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "DELETE", devTables+"/orders", nil), 404, "ResourceNotFound") // as Azure answers Delete Table
}

// seed makes table "orders" with 30 entities, 10 in each of partitions p0, p1, p2.
func seed(t *testing.T, f *apiFixture) {
	t.Helper()
	ctx := context.Background()
	tb, err := f.tables.CreateTable(ctx, "devstoreaccount1", "orders")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		e := edm.Entity{PartitionKey: fmt.Sprintf("p%d", i/10), RowKey: fmt.Sprintf("%02d", i), Properties: []edm.Property{
			{Name: "Total", Value: edm.Value{Type: edm.Double, Float: float64(i) + 0.5}},
			{Name: "Units", Value: edm.Value{Type: edm.Int32, Int: int64(i)}},
		}}
		if _, err := f.tables.Write(ctx, tb, table.Write{Kind: table.Insert, Entity: e}); err != nil {
			t.Fatal(err)
		}
	}
}

type queryPage struct {
	Entities []apiEntity
	Plan     string
	Scanned  int
	Returned int
	Next     string
}

func TestAQueryPageShowsItsPlanAndWhatItRead(t *testing.T) {
	f := newAPI(t)
	seed(t, f)
	query := func(params url.Values) queryPage {
		t.Helper()
		var p queryPage
		f.dev(t, "GET", devTables+"/orders/entities?"+params.Encode(), nil).decode(t, &p)
		return p
	}
	// Browsing: pages of 20 by default, then the rest.
	p := query(nil)
	if len(p.Entities) != 20 || p.Plan != "table-scan" || p.Returned != 20 || p.Next == "" || p.Entities[0].RowKey != "00" {
		t.Fatalf("first page: %d entities, %+v", len(p.Entities), p)
	}
	p = query(url.Values{"next": {p.Next}})
	if len(p.Entities) != 10 || p.Next != "" || p.Entities[0].RowKey != "20" {
		t.Fatalf("second page: %+v", p)
	}
	// A partition's entities only are read for a PartitionKey condition.
	p = query(url.Values{"filter": {"PartitionKey eq 'p1' and Units ge 18"}})
	if p.Plan != "partition-range" || p.Scanned != 10 || p.Returned != 2 || p.Entities[0].RowKey != "18" {
		t.Fatalf("partition query: %+v", p)
	}
	// Every entity is read for a condition on a property.
	p = query(url.Values{"filter": {"Units eq 7"}, "top": {"5"}})
	if p.Plan != "table-scan" || p.Scanned != 30 || p.Returned != 1 {
		t.Fatalf("scan: %+v", p)
	}
	p = query(url.Values{"filter": {"PartitionKey eq 'p2' and RowKey eq '25'"}, "select": {"Units,Missing"}})
	if p.Plan != "point" || p.Scanned != 1 || len(p.Entities) != 1 {
		t.Fatalf("point: %+v", p)
	}
	if e := p.Entities[0]; e.PartitionKey != "p2" || e.ETag == "" || fmt.Sprint(e.Properties) != "[{Units Edm.Int32 25}]" {
		t.Fatalf("selected: %+v", e)
	}

	a := f.dev(t, "GET", devTables+"/orders/entities?filter="+url.QueryEscape("Units eq"), nil)
	expect(t, a, 400, "InvalidInput")
	expect(t, f.dev(t, "GET", devTables+"/orders/entities?top=0", nil), 400, "InvalidInput")
	expect(t, f.dev(t, "GET", devTables+"/orders/entities?next=garbage", nil), 400, "InvalidQueryParameterValue")
	expect(t, f.dev(t, "GET", devTables+"/missing/entities", nil), 404, "TableNotFound")
}

func entityPath(table, pk, rk string) string {
	return devTables + "/" + table + "/entity?" + url.Values{"pk": {pk}, "rk": {rk}}.Encode()
}

func TestAnEntityIsShownWithEveryEDMTypeAsText(t *testing.T) {
	f := newAPI(t)
	ctx := context.Background()
	tb, err := f.tables.CreateTable(ctx, "devstoreaccount1", "types")
	if err != nil {
		t.Fatal(err)
	}
	when, _ := edm.ParseDateTime("2024-05-01T10:00:00.5Z")
	// A key may hold spaces, and a RowKey may be empty: the API addresses entities by query
	// parameters, not path segments.
	e := edm.Entity{PartitionKey: "a b c", RowKey: "", Properties: []edm.Property{
		{Name: "S", Value: edm.Value{Type: edm.String, Str: "<b>text</b>"}},
		{Name: "B", Value: edm.Value{Type: edm.Boolean, Int: 1}},
		{Name: "I", Value: edm.Value{Type: edm.Int32, Int: -7}},
		{Name: "L", Value: edm.Value{Type: edm.Int64, Int: math.MaxInt64}},
		{Name: "D", Value: edm.Value{Type: edm.Double, Float: 5}},
		{Name: "N", Value: edm.Value{Type: edm.Double, Float: math.Inf(-1)}},
		{Name: "T", Value: edm.Value{Type: edm.DateTime, Int: int64(when)}},
		{Name: "G", Value: edm.Value{Type: edm.Guid, Str: "c9da6455-213d-42c9-9a79-3e9149a57833"}},
		{Name: "X", Value: edm.Value{Type: edm.Binary, Bin: []byte{0, 1, 254}}},
	}}
	stored, err := f.tables.Write(ctx, tb, table.Write{Kind: table.Insert, Entity: e})
	if err != nil {
		t.Fatal(err)
	}
	var got apiEntity
	f.dev(t, "GET", entityPath("types", "a b c", ""), nil).decode(t, &got)
	want := "[{S Edm.String <b>text</b>} {B Edm.Boolean true} {I Edm.Int32 -7} {L Edm.Int64 9223372036854775807} {D Edm.Double 5} {N Edm.Double -Infinity} " +
		"{T Edm.DateTime 2024-05-01T10:00:00.5Z} {G Edm.Guid c9da6455-213d-42c9-9a79-3e9149a57833} {X Edm.Binary AAH+}]"
	if fmt.Sprint(got.Properties) != want || got.ETag != edm.ETag(stored.Timestamp) || got.Timestamp != stored.Timestamp.String() {
		t.Fatalf("got %+v\nwant %s", got, want)
	}
	// Saving what was shown, unchanged, stores the same values and types.
	a := f.dev(t, "PUT", entityPath("types", "a b c", ""), apiEntity{ETag: got.ETag, Properties: got.Properties})
	var again apiEntity
	a.decode(t, &again)
	if a.status != 200 || fmt.Sprint(again.Properties) != want || again.ETag == got.ETag {
		t.Fatalf("round trip: %d %+v", a.status, again)
	}
	expect(t, f.dev(t, "GET", entityPath("types", "nope", ""), nil), 404, "ResourceNotFound")
	expect(t, f.dev(t, "GET", devTables+"/types/entity?pk=x", nil), 400, "InvalidQueryParameterValue")
}

func TestEditingAnEntityChangesTypesAndPropertiesAsTheServiceJudgesThem(t *testing.T) {
	f := newAPI(t)
	seed(t, f)
	path := entityPath("orders", "p0", "03")
	var e apiEntity
	f.dev(t, "GET", path, nil).decode(t, &e)

	// Units becomes an Int64, Total goes, Note comes.
	props := []apiProperty{{"Units", "Edm.Int64", "3000000000"}, {"Note", "Edm.String", "rush"}}
	a := f.dev(t, "PUT", path, apiEntity{ETag: e.ETag, Properties: props})
	var saved apiEntity
	a.decode(t, &saved)
	if a.status != 200 || fmt.Sprint(saved.Properties) != "[{Units Edm.Int64 3000000000} {Note Edm.String rush}]" {
		t.Fatalf("save: %d %s", a.status, a.body)
	}
	tb, _ := f.tables.Table(context.Background(), "devstoreaccount1", "orders")
	stored, err := f.tables.Entity(context.Background(), tb, "p0", "03")
	if err != nil || len(stored.Properties) != 2 || fmt.Sprint(stored.Properties[0].Value) != fmt.Sprint(edm.Value{Type: edm.Int64, Int: 3000000000}) {
		t.Fatalf("stored %+v %v", stored, err)
	}

	for _, tc := range []struct {
		name  string
		props []apiProperty
		code  string
		in    string // the message names what was wrong
	}{
		{"a value its type cannot hold", []apiProperty{{"Units", "Edm.Int32", "3000000000"}}, "InvalidInput", "'Units' (Edm.Int32)"},
		{"text that is no value of its type", []apiProperty{{"When", "Edm.DateTime", "yesterday"}}, "InvalidInput", "'When' (Edm.DateTime)"},
		{"an unknown type", []apiProperty{{"X", "Edm.Decimal", "1"}}, "InvalidInput", ""},
		{"a name given twice", []apiProperty{{"A", "Edm.String", "1"}, {"A", "Edm.String", "2"}}, "DuplicatePropertiesSpecified", ""},
		{"a name that is no identifier", []apiProperty{{"two words", "Edm.String", "x"}}, "PropertyNameInvalid", ""},
		{"a string over 64 KiB", []apiProperty{{"Big", "Edm.String", strings.Repeat("x", 40000)}}, "PropertyValueTooLarge", ""},
	} {
		a := f.dev(t, "PUT", path, apiEntity{ETag: saved.ETag, Properties: tc.props})
		if a.status != 400 || a.code() != tc.code || !strings.Contains(a.body, tc.in) {
			t.Errorf("%s: %d %s", tc.name, a.status, a.body)
		}
	}
	// A change made meanwhile is not overwritten: the etag read is stale.
	expect(t, f.dev(t, "PUT", path, apiEntity{ETag: e.ETag, Properties: props}), 412, "UpdateConditionNotSatisfied")
	expect(t, f.dev(t, "PUT", path, apiEntity{Properties: props}), 400, "InvalidInput")
	if a := f.dev(t, "PUT", path, apiEntity{ETag: "*", Properties: nil}); a.status != 200 {
		t.Fatalf("etag *: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "PUT", entityPath("orders", "p0", "99"), apiEntity{ETag: "*"}), 404, "ResourceNotFound")
}

func TestAnEntityIsInsertedOnceAndDeletedWithItsETag(t *testing.T) {
	f := newAPI(t)
	seed(t, f)
	body := apiEntity{PartitionKey: "p9", RowKey: "1", Properties: []apiProperty{{"Flag", "Edm.Boolean", "false"}}}
	a := f.dev(t, "POST", devTables+"/orders/entities", body)
	var e apiEntity
	a.decode(t, &e)
	if a.status != 201 || e.PartitionKey != "p9" || e.ETag == "" || fmt.Sprint(e.Properties) != "[{Flag Edm.Boolean false}]" {
		t.Fatalf("insert: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "POST", devTables+"/orders/entities", body), 409, "EntityAlreadyExists")
	expect(t, f.dev(t, "POST", devTables+"/orders/entities", apiEntity{PartitionKey: "a#b", RowKey: "1"}), 400, "OutOfRangeInput")

	path := entityPath("orders", "p9", "1")
	expect(t, f.dev(t, "DELETE", path+"&etag="+url.QueryEscape(`W/"datetime'2001-01-01T00%3A00%3A00Z'"`), nil), 412, "UpdateConditionNotSatisfied")
	expect(t, f.dev(t, "DELETE", path, nil), 400, "InvalidInput")
	if a := f.dev(t, "DELETE", path+"&etag="+url.QueryEscape(e.ETag), nil); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "GET", path, nil), 404, "ResourceNotFound")
}

func TestThePageCallsTheFaultAPIWithoutABasicChallenge(t *testing.T) {
	f := newAPI(t)
	a := f.as(t, "", "", "GET", "/api/faults", nil)
	expect(t, a, 401, "AuthenticationFailed")
	if c := a.header.Get("WWW-Authenticate"); strings.HasPrefix(c, "Basic") {
		t.Errorf("challenge %q", c)
	}
	if c := f.as(t, "", "", "GET", "/admin/faults", nil).header.Get("WWW-Authenticate"); !strings.HasPrefix(c, "Basic") {
		t.Errorf("the admin API's challenge for curl is %q", c)
	}
	a = f.as(t, "other", otherKey, "POST", "/api/faults", map[string]any{"id": "slow", "action": "latency", "latency": "20ms"})
	if a.status != 200 || len(f.faults.Rules()) != 1 || !strings.Contains(a.body, `"hits": 0`) {
		t.Fatalf("add: %d %s", a.status, a.body)
	}
	expect(t, f.dev(t, "POST", "/api/faults", map[string]any{"id": "bad", "action": "latency", "latency": "soon"}), 400, "InvalidInput")
	expect(t, f.dev(t, "DELETE", "/api/faults/nope", nil), 404, "ResourceNotFound")
	if a := f.dev(t, "DELETE", "/api/faults/slow", nil); a.status != 200 || !f.faults.Empty() {
		t.Fatalf("remove: %d %s", a.status, a.body)
	}
}

func TestThePageIsServedFromTheBinaryAndFetchesNothingElsewhere(t *testing.T) {
	f := newAPI(t)
	a := f.as(t, "", "", "GET", "/", nil)
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") || !strings.Contains(a.body, `src="/ui/console.js"`) {
		t.Fatalf("/: %d %s", a.status, a.header)
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for path, typ := range map[string]string{"/ui/console.js": "text/javascript", "/ui/console.css": "text/css"} {
		a := f.as(t, "", "", "GET", path, nil)
		if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), typ) || a.header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: %d %s", path, a.status, a.header.Get("Content-Type"))
		}
	}
	// No file of the page names another origin.
	remote := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	files, _ := ui.ReadDir("ui")
	for _, file := range files {
		b, _ := ui.ReadFile("ui/" + file.Name())
		if m := remote.Find(b); m != nil {
			t.Errorf("%s refers to %s", file.Name(), m)
		}
	}
	expect(t, f.as(t, "", "", "GET", "/ui/missing.js", nil), 404, "")
}
