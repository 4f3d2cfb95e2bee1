package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/batchwire"
	"github.com/tabula-dev/tabula/internal/edm"
)

func TestEntityHasTenPropertiesOfEveryEDMTypeAndTheAskedSize(t *testing.T) {
	want := map[string]edm.Type{
		"Name": edm.String, "Region": edm.String, "Category": edm.Int32, "Counter": edm.Int64,
		"Score": edm.Double, "Active": edm.Boolean, "Created": edm.DateTime, "Id": edm.Guid,
		"Description": edm.String, "Payload": edm.Binary,
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, size := range []int{0, 600, 1024, 4096} {
		shape := newEntityShape(shapeTyped10, size)
		for _, idx := range []int64{0, 1, 42, 99_999, 12_345_678} {
			pk, rk := readKeys(idx, 10)
			body := shape.appendJSON(nil, rng, pk, rk, idx)
			d, err := edm.DecodeJSON(body)
			if err != nil {
				t.Fatalf("size %d entity %d does not decode: %v\n%s", size, idx, err, body)
			}
			if d.PartitionKey != pk || d.RowKey != rk || len(d.Properties) != len(want) {
				t.Fatalf("entity %d: keys %q %q, %d properties", idx, d.PartitionKey, d.RowKey, len(d.Properties))
			}
			for _, p := range d.Properties {
				if p.Value.Type != want[p.Name] {
					t.Errorf("property %s is %s, want %s", p.Name, p.Value.Type.Name(), want[p.Name].Name())
				}
			}
			if c, _ := d.Get("Category"); c.Int != idx%categories {
				t.Errorf("entity %d has Category %d", idx, c.Int)
			}
			if size >= 600 && (len(body) < size-40 || len(body) > size+40) {
				t.Errorf("asked for %d bytes, entity %d has %d", size, idx, len(body))
			}
		}
	}
}

func TestPreloadCountsMatchTheKeyLayout(t *testing.T) {
	for _, c := range []struct{ n, parts int64 }{{1, 1}, {7, 3}, {200, 4}, {100_000, 10}, {3, 10}} {
		perPartition := make([]int64, c.parts)
		var category42 int64
		for idx := range c.n {
			perPartition[idx%c.parts]++
			if idx%categories == scanCategory {
				category42++
			}
		}
		for p := range perPartition {
			if got := preloadedIn(c.n, int(c.parts), p); got != perPartition[p] {
				t.Errorf("n=%d partitions=%d: preloadedIn(%d) = %d, want %d", c.n, c.parts, p, got, perPartition[p])
			}
		}
		if got := preloadedInCategory(c.n, scanCategory); got != category42 {
			t.Errorf("n=%d: preloadedInCategory = %d, want %d", c.n, got, category42)
		}
	}
}

func TestBatchBodyDecodesAsOneChangesetOfInserts(t *testing.T) {
	c, err := NewClient("http://127.0.0.1:10002/devstoreaccount1", "", "", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	bb := newBatchBuilder(c, "benchxyzbatch", rng)
	shape := newEntityShape(shapeTyped10, 1024)
	body := bb.appendBody(nil, batchSize, func(i int, dst []byte) []byte {
		return shape.appendJSON(dst, rng, "w003", rowKey("r", int64(i)), int64(i))
	})
	req, err := batchwire.Decode(bb.contentType(), body, 0)
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, body[:2000])
	}
	if len(req.Changeset) != batchSize {
		t.Fatalf("%d operations, want %d", len(req.Changeset), batchSize)
	}
	for i, p := range req.Changeset {
		if p.Method != http.MethodPost || p.URL.Path != "/devstoreaccount1/benchxyzbatch" || p.URL.Host != "127.0.0.1:10002" {
			t.Fatalf("operation %d: %s %s", i, p.Method, p.RawTarget)
		}
		if cl := p.Header.Get("Content-Length"); cl != strconv.Itoa(len(p.Body)) {
			t.Errorf("operation %d: Content-Length %s for a %d-byte body", i, cl, len(p.Body))
		}
		d, err := edm.DecodeJSON(p.Body)
		if err != nil {
			t.Fatalf("operation %d: %v", i, err)
		}
		if d.PartitionKey != "w003" || d.RowKey != rowKey("r", int64(i)) {
			t.Errorf("operation %d inserts %s/%s", i, d.PartitionKey, d.RowKey)
		}
	}
}

func TestBatchResponseCheck(t *testing.T) {
	ok := func(n int) response {
		rs := make([]batchwire.Response, n)
		for i := range rs {
			rs[i] = batchwire.Response{Status: 204, Header: http.Header{"Etag": {`W/"datetime'2024-01-01T00%3A00%3A00Z'"`}}}
		}
		ct, body := batchwire.EncodeChangesetResponse(rs)
		return response{status: 202, header: http.Header{"Content-Type": {ct}}, body: body}
	}
	_, failedBody := batchwire.EncodeChangesetResponse([]batchwire.Response{{
		Status: 409,
		Header: http.Header{"Content-Type": {"application/json;odata=minimalmetadata;streaming=true;charset=utf-8"}},
		Body:   []byte(`{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"3:The specified entity already exists."}}}`),
	}})
	for _, c := range []struct {
		name string
		r    response
		n    int
		want string // error key, "" for success
	}{
		{"all done", ok(100), 100, ""},
		{"fewer sub-responses than operations", ok(99), 100, "batch: wrong number of sub-responses"},
		{"one operation failed", response{status: 202, body: failedBody}, 100, "batch 409 EntityAlreadyExists"},
		{"whole batch refused", response{status: 400, header: http.Header{"X-Ms-Error-Code": {"InvalidInput"}}}, 100, "400 InvalidInput"},
	} {
		err := checkBatchResponse(c.r, c.n)
		got := ""
		if err != nil {
			got = err.(*opError).key
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestErrorKeysCarryStatusAndAzureCode(t *testing.T) {
	for _, c := range []struct {
		name string
		r    response
		want string
	}{
		{"header", response{status: 404, header: http.Header{"X-Ms-Error-Code": {"ResourceNotFound"}}}, "404 ResourceNotFound"},
		{"JSON body", response{status: 409, body: []byte(`{"odata.error":{"code": "TableAlreadyExists","message":{}}}`)}, "409 TableAlreadyExists"},
		{"XML body", response{status: 403, body: []byte(`<?xml version="1.0"?><Error><Code>AuthenticationFailed</Code></Error>`)}, "403 AuthenticationFailed"},
		{"nothing", response{status: 503, body: []byte("busy")}, "503"},
	} {
		if got := statusError(c.r).key; got != c.want {
			t.Errorf("%s: key %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCountEntities(t *testing.T) {
	for _, c := range []struct {
		body string
		want int // -1: an error
	}{
		{`{"value":[]}`, 0},
		{`{"odata.metadata":"http://x/$metadata#t","value":[{"PartitionKey":"a","RowKey":"b"},{"PartitionKey":"a","RowKey":"c"}]}`, 2},
		// Braces, brackets and quotes inside strings and nested values do not count.
		{`{"value":[{"S":"}{][\"{","N":{"x":[{}]}},{"value":[{}]}], "other":[{},{}]}`, 2},
		{` { "value" : [ { } , { } , { } ] } `, 3},
		// Escaped backslashes before a quote: an even number ends the string, an odd one not.
		{`{"value":[{"S":"ends with a backslash\\"},{"T":"quote \" brace }"}]}`, 2},
		{`{"value":[{"S":"\\\"}{"}]}`, 1},
		{`{"value":[{"S":"open`, -1},
		{`{"value":[{"a":1}`, -1},
		{`{"values":[{}]}`, -1},
		{`[{}]`, -1},
		{`<feed/>`, -1},
	} {
		got, err := countEntities([]byte(c.body))
		if err != nil {
			got = -1
		}
		if got != c.want {
			t.Errorf("countEntities(%s) = %d (%v), want %d", c.body, got, err, c.want)
		}
	}
}

// fakeQuery serves pages of entities with continuation headers, checking that every request
// carries the filter and exactly the continuation of the page before it.
type fakeQuery struct {
	t        *testing.T
	pages    []int    // entities on each page
	npk      []string // continuation issued after page i ("" ends the query)
	nrk      []string
	nextPage int
}

func (f *fakeQuery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if got := q.Get("$filter"); got != "PartitionKey eq 'p0001'" {
		f.t.Errorf("page %d: $filter %q", f.nextPage, got)
	}
	i := f.nextPage
	wantPK, wantRK := "", ""
	if i > 0 {
		wantPK, wantRK = f.npk[i-1], f.nrk[i-1]
	}
	if q.Get("NextPartitionKey") != wantPK || q.Get("NextRowKey") != wantRK || (wantRK == "" && q.Has("NextRowKey")) {
		f.t.Errorf("page %d asked with NextPartitionKey=%q NextRowKey=%q, want %q %q", i, q.Get("NextPartitionKey"), q.Get("NextRowKey"), wantPK, wantRK)
	}
	if i >= len(f.pages) {
		http.Error(w, "past the last page", http.StatusBadRequest)
		return
	}
	f.nextPage++
	if f.npk[i] != "" {
		w.Header().Set("x-ms-continuation-NextPartitionKey", f.npk[i])
	}
	if f.nrk[i] != "" {
		w.Header().Set("x-ms-continuation-NextRowKey", f.nrk[i])
	}
	var b strings.Builder
	b.WriteString(`{"odata.metadata":"x","value":[`)
	for e := range f.pages[i] {
		if e > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"PartitionKey":"p0001","RowKey":"r%d","Description":"{[\"]}"}`, e)
	}
	b.WriteString("]}")
	w.Write([]byte(b.String()))
}

func TestScanFollowsContinuationsToTheLastPage(t *testing.T) {
	f := &fakeQuery{
		t:     t,
		pages: []int{3, 0, 5, 2},
		// Tokens with characters that must be escaped in a query string; one page continues
		// with a partition key alone.
		npk: []string{"1!8!cDAwMDE-", "1!8!cDAwMDI-", "a+b/c=d&e f", ""},
		nrk: []string{"1!12!cjAwMDAwMDAwMDM-", "", "x%y", ""},
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cn := testConn(t, srv.URL)
	entities, pages, err := cn.scan(context.Background(), "t", "PartitionKey eq 'p0001'")
	if err != nil || entities != 10 || pages != 4 {
		t.Errorf("scan: %d entities, %d pages, %v; want 10, 4, nil", entities, pages, err)
	}
}

func TestScanFailsWhenTheContinuationDoesNotAdvance(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ms-continuation-NextPartitionKey", "same")
		w.Header().Set("x-ms-continuation-NextRowKey", "same")
		w.Write([]byte(`{"value":[{}]}`))
	}))
	defer srv.Close()
	_, pages, err := testConn(t, srv.URL).scan(context.Background(), "t", "PartitionKey eq 'p0001'")
	if oe, ok := err.(*opError); !ok || oe.key != "continuation did not advance" || pages != 2 {
		t.Errorf("got %v after %d pages, want continuation did not advance after 2", err, pages)
	}
}

func TestClientTakesTheAccountFromTheEndpoint(t *testing.T) {
	for _, c := range []struct{ endpoint, account, key, want, wantErr string }{
		{"http://127.0.0.1:10002/devstoreaccount1", "", "", "devstoreaccount1", ""},
		{"http://127.0.0.1:10002/devstoreaccount1/", "", "", "devstoreaccount1", ""},
		{"https://devstoreaccount1.table.core.windows.net", "", "", "devstoreaccount1", ""},
		{"http://127.0.0.1:10002/other", "", "", "", "needs --key"},
		{"http://127.0.0.1:10002/other", "", "bm90IGEga2V5", "other", ""},
		{"http://127.0.0.1:10002/x", "named", "bm90IGEga2V5", "named", ""},
		{"127.0.0.1:10002", "", "", "", "want http"},
	} {
		cl, err := NewClient(c.endpoint, c.account, c.key, 1, time.Second)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want %q", c.endpoint, err, c.wantErr)
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.endpoint, err)
		case c.wantErr == "" && cl.Account != c.want:
			t.Errorf("%s: account %q, want %q", c.endpoint, cl.Account, c.want)
		}
	}
}

// testConn returns a conn to the development account at the server root url, closed when the
// test ends.
func testConn(t *testing.T, url string) *conn {
	t.Helper()
	c, err := NewClient(url+"/devstoreaccount1", "", "", 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &conn{c: c}
}
