package tablehttp

import (
	"testing"
)

func TestParseResourceRecognisesEveryAddress(t *testing.T) {
	cases := []struct {
		path string
		want resource
	}{
		{"/", resource{kind: resService}},
		{"", resource{kind: resService}},
		{"/Tables", resource{kind: resTables}},
		{"/Tables()", resource{kind: resTables}},
		{"/Tables('mytable')", resource{kind: resTable, table: "mytable"}},
		{"/Tables(%27mytable%27)", resource{kind: resTable, table: "mytable"}},
		{"/$batch", resource{kind: resBatch}},
		{"/mytable", resource{kind: resEntities, table: "mytable"}},
		{"/mytable()", resource{kind: resEntities, table: "mytable"}},
		{"/mytable(PartitionKey='a',RowKey='b')", resource{kind: resEntity, table: "mytable", partitionKey: "a", rowKey: "b"}},
		{"/mytable(RowKey='b',PartitionKey='a')", resource{kind: resEntity, table: "mytable", partitionKey: "a", rowKey: "b"}},
		{"/mytable(PartitionKey='a', RowKey='b')", resource{kind: resEntity, table: "mytable", partitionKey: "a", rowKey: "b"}},
		{"/mytable(PartitionKey='',RowKey='')", resource{kind: resEntity, table: "mytable"}},
		{"/mytable(PartitionKey='O%27%27Brien',RowKey='x')", resource{kind: resEntity, table: "mytable", partitionKey: "O'Brien", rowKey: "x"}},
		{"/mytable(PartitionKey='O''Brien',RowKey='''')", resource{kind: resEntity, table: "mytable", partitionKey: "O'Brien", rowKey: "'"}},
		{"/mytable(PartitionKey='a,b)=c(',RowKey='x y')", resource{kind: resEntity, table: "mytable", partitionKey: "a,b)=c(", rowKey: "x y"}},
		{"/mytable(PartitionKey='a%2Bb+c',RowKey='%E2%9C%93')", resource{kind: resEntity, table: "mytable", partitionKey: "a+b+c", rowKey: "✓"}},
		{"/mytable/Tables('mytable')", resource{kind: resUnder, table: "mytable", under: "Tables('mytable')"}},
		{"/mytable/", resource{kind: resUnder, table: "mytable"}},
		// An escaped slash is part of the name (one no table has: InvalidResourceName).
		{"/a%2F%2F()", resource{kind: resEntities, table: "a//"}},
	}
	for _, tc := range cases {
		got, err := parseResource(tc.path)
		if err != nil {
			t.Errorf("parseResource(%q): %v", tc.path, err)
			continue
		}
		if got != tc.want {
			t.Errorf("parseResource(%q) = %+v, want %+v", tc.path, got, tc.want)
		}
	}
}

func TestParseResourceRejectsMalformedKeys(t *testing.T) {
	for _, path := range []string{
		"/mytable(PartitionKey='a')",
		"/mytable(PartitionKey='a',RowKey='b'",
		"/mytable(PartitionKey='a',RowKey='b',Extra='c')",
		"/mytable(PartitionKey='a',PartitionKey='b')",
		"/mytable(PartitionKey=a,RowKey=b)",
		"/mytable(PartitionKey='a',RowKey='b)",
		"/mytable(PartitionKey='a'RowKey='b')",
		"/mytable(Partitionkey='a',RowKey='b')",
		"/Tables/extra",
		"/mytable(PartitionKey='a',RowKey='b')/extra",
		"/mytable(PartitionKey='%ZZ',RowKey='b')",
	} {
		if got, err := parseResource(path); err == nil {
			t.Errorf("parseResource(%q) = %+v, want an InvalidUri error", path, got)
		}
	}
}

func TestEntityPathRoundTrips(t *testing.T) {
	for _, k := range []string{"", "a", "O'Brien", "''", "a b", "x,y)(=", "✓ ünï", "100%", "a+b", "😀"} {
		p := "/" + entityPath("t", k, k+"r")
		got, err := parseResource(p)
		if err != nil || got.partitionKey != k || got.rowKey != k+"r" {
			t.Errorf("entityPath(%q) = %s parsed back as %+v, %v", k, p, got, err)
		}
	}
}

func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"/Tables('x')", "/t(PartitionKey='a',RowKey='b')", "/t(PartitionKey='''',RowKey='%27%27')", "/t()", "/$batch", "/t(RowKey='',PartitionKey='')"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		res, err := parseResource(path)
		if err != nil || res.kind != resEntity {
			return
		}
		// Whatever key was read must survive being written into a URL and read again.
		again, err := parseResource("/" + entityPath("t", res.partitionKey, res.rowKey))
		if err != nil || again.partitionKey != res.partitionKey || again.rowKey != res.rowKey {
			t.Fatalf("%q parsed as %+v, but its canonical form parsed as %+v (%v)", path, res, again, err)
		}
	})
}

// A client given a table's URL as its endpoint sends paths below the table; Azure reads the
// first segment as the table (recorded: the Python SDK's test_client_with_url_ends_with_table_name).
func TestPathsBelowATable(t *testing.T) {
	s := newRawServer(t)
	type want struct {
		status int
		code   string
	}
	check := func(what, method, path, body string, w want) {
		t.Helper()
		resp := s.do(method, path, map[string]string{"Content-Type": "application/json", "Accept": "application/json;odata=minimalmetadata"}, body)
		if resp.StatusCode != w.status || resp.Header.Get("x-ms-error-code") != w.code {
			t.Errorf("%s: %d %s, want %d %s", what, resp.StatusCode, resp.Header.Get("x-ms-error-code"), w.status, w.code)
		}
	}
	check("Create Table below a missing table", "POST", "/orders/Tables", `{"TableName":"orders"}`, want{404, "TableNotFound"})
	s.createTable("orders")
	check("Create Table below the table", "POST", "/orders/Tables", `{"TableName":"orders"}`, want{400, "PropertiesNeedValue"})
	check("Delete Table below the table", "DELETE", "/orders/Tables('orders')", "", want{400, "InvalidInput"})
	check("Query Tables below the table", "GET", "/orders/Tables", "", want{501, "NotImplemented"})
	check("service properties below the table", "GET", "/orders/?restype=service&comp=properties", "", want{400, "InvalidQueryParameterValue"})
	check("below Tables itself", "GET", "/Tables/x", "", want{400, "InvalidUri"})
	check("a name with escaped slashes", "GET", "/a%2F%2F()", "", want{400, "InvalidResourceName"})
}
