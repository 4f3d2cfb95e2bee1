package tablehttp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
)

// rawServer is an in-process server driven with hand-built HTTP requests, for what the SDKs
// never send.
type rawServer struct {
	t   *testing.T
	srv *httptest.Server
	key []byte
}

func newRawServer(t *testing.T) *rawServer {
	return newRawServerOn(t, "", pebble.Options{InMemory: true})
}

// newRawServerOn serves a Pebble store in dir (durable unless opts says in memory).
func newRawServerOn(t testing.TB, dir string, opts pebble.Options) *rawServer {
	st, err := pebble.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dev := auth.DevelopmentAccount()
	srv := httptest.NewServer(New(table.New(st), auth.NewAuthenticator([]auth.Account{dev}), nil))
	t.Cleanup(srv.Close)
	tt, _ := t.(*testing.T)
	return &rawServer{t: tt, srv: srv, key: dev.Keys[0]}
}

// do sends a request to path (below /devstoreaccount1) signed with SharedKeyLite unless
// header already carries Authorization or sets it to "-" (anonymous).
func (s *rawServer) do(method, path string, header map[string]string, body string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+"/devstoreaccount1"+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	req.Header.Set("Accept", "application/json;odata=minimalmetadata")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	switch req.Header.Get("Authorization") {
	case "":
		resource := "/devstoreaccount1" + req.URL.EscapedPath()
		if comp := req.URL.Query().Get("comp"); comp != "" {
			resource += "?comp=" + comp
		}
		req.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+auth.SignSharedKeyLite(s.key, req.Header.Get("x-ms-date"), resource))
	case "-":
		req.Header.Del("Authorization")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// errorCode reads the Azure error code of a response from its header and body, checking that
// both agree.
func errorCode(t *testing.T, resp *http.Response) string {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	header := resp.Header.Get("x-ms-error-code")
	var e struct {
		Error struct {
			Code    string
			Message struct{ Value string }
		} `json:"odata.error"`
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("error body is not JSON: %v\n%s", err, body)
		}
		if e.Error.Code != header {
			t.Fatalf("x-ms-error-code %q but body code %q", header, e.Error.Code)
		}
		if !strings.Contains(e.Error.Message.Value, "\nRequestId:"+resp.Header.Get("x-ms-request-id")+"\nTime:") {
			t.Fatalf("error message lacks the RequestId/Time trailer: %q", e.Error.Message.Value)
		}
	}
	return header
}

func (s *rawServer) createTable(name string) {
	s.t.Helper()
	resp := s.do("POST", "/Tables", nil, `{"TableName":"`+name+`"}`)
	if resp.StatusCode != http.StatusCreated {
		s.t.Fatalf("create table %s: %d", name, resp.StatusCode)
	}
}

type rawCase struct {
	name   string
	method string
	path   string
	header map[string]string
	body   string
	status int
	code   string // expected x-ms-error-code; "" for success
}

func runRawCases(t *testing.T, s *rawServer, cases []rawCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.t = t
			resp := s.do(tc.method, tc.path, tc.header, tc.body)
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.code != "" {
				if got := errorCode(t, resp); got != tc.code {
					t.Fatalf("error code %q, want %q", got, tc.code)
				}
			}
		})
	}
}

func TestBadAuthenticationNeverReachesData(t *testing.T) {
	s := newRawServer(t)
	s.createTable("secret")
	stale := time.Now().Add(-20 * time.Minute).UTC().Format(http.TimeFormat)
	runRawCases(t, s, []rawCase{
		{"anonymous, old version", "GET", "/Tables", map[string]string{"Authorization": "-"}, "", 403, "AuthenticationFailed"},
		{"anonymous, new version", "GET", "/Tables", map[string]string{"Authorization": "-", "x-ms-version": "2020-12-06"}, "", 401, "InvalidAuthenticationInfo"},
		{"wrong signature", "GET", "/Tables", map[string]string{"Authorization": "SharedKeyLite devstoreaccount1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}, "", 403, "AuthenticationFailed"},
		{"wrong account in header", "GET", "/Tables", map[string]string{"Authorization": "SharedKeyLite someoneelse:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}, "", 403, "AuthenticationFailed"},
		{"malformed header", "GET", "/Tables", map[string]string{"Authorization": "SharedKeyLite nocolon"}, "", 400, "InvalidAuthenticationInfo"},
		{"stale date", "GET", "/Tables", map[string]string{"x-ms-date": stale}, "", 403, "AuthenticationFailed"},
		{"unsigned write", "POST", "/secret", map[string]string{"Authorization": "-"}, `{"PartitionKey":"p","RowKey":"r"}`, 403, "AuthenticationFailed"},
	})
	resp := s.do("GET", "/secret()", nil, "")
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"value":[]`) {
		t.Fatalf("an unauthenticated write reached the table: %s", body)
	}
}

func TestCommonResponseHeaders(t *testing.T) {
	s := newRawServer(t)
	resp := s.do("GET", "/Tables", map[string]string{"x-ms-client-request-id": "my-id-42"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for name, want := range map[string]string{"x-ms-client-request-id": "my-id-42", "x-ms-version": "2019-02-02"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if date, err := http.ParseTime(resp.Header.Get("Date")); err != nil || time.Since(date).Abs() > 5*time.Second {
		t.Errorf("Date %q is not the current time in HTTP format (%v)", resp.Header.Get("Date"), err)
	}
	// Azure's request ids are GUIDs; some tools parse them as such.
	guid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	if id := resp.Header.Get("x-ms-request-id"); !guid.MatchString(id) {
		t.Errorf("x-ms-request-id %q is not a GUID", id)
	}
	// Errors carry the same headers.
	resp = s.do("GET", "/nosuchtable()", map[string]string{"x-ms-client-request-id": "err-id"}, "")
	if resp.StatusCode != 404 || resp.Header.Get("x-ms-client-request-id") != "err-id" || errorCode(t, resp) != "TableNotFound" {
		t.Errorf("error response: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestErrorsAreXMLWhenTheClientAcceptsXML(t *testing.T) {
	s := newRawServer(t)
	resp := s.do("DELETE", "/Tables('nosuchtable')", map[string]string{"Accept": "application/xml"}, "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 404 || !strings.Contains(string(body), "<m:code>ResourceNotFound</m:code>") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// A JSON error names the metadata level the request asked for, as Azure's do (the legacy Go
// SDK's recordings: odata=nometadata on a 404 from Delete Table and a 412 from Update Entity).
func TestJSONErrorsEchoTheMetadataLevel(t *testing.T) {
	s := newRawServer(t)
	for accept, want := range map[string]string{
		"application/json;odata=nometadata":      "application/json;odata=nometadata;streaming=true;charset=utf-8",
		"application/json;odata=fullmetadata":    "application/json;odata=fullmetadata;streaming=true;charset=utf-8",
		"application/json;odata=minimalmetadata": "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
		"application/json":                       "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
	} {
		resp := s.do("DELETE", "/Tables('nosuchtable')", map[string]string{"Accept": accept}, "")
		if got := resp.Header.Get("Content-Type"); resp.StatusCode != 404 || got != want {
			t.Errorf("Accept %s: %d, Content-Type %q, want %q", accept, resp.StatusCode, got, want)
		}
	}
}

func TestInvalidEntityValuesAndLimits(t *testing.T) {
	s := newRawServer(t)
	s.createTable("limits")
	entity := func(extra string) string { return `{"PartitionKey":"p","RowKey":"r"` + extra + `}` }
	manyProps := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"P%d":%d`, i, i)
		}
		return b.String()
	}
	bigBinary := func(n int) string { // n binary properties of 64 KiB each
		chunk := strings.Repeat("A", 65536/3*4)
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"B%d@odata.type":"Edm.Binary","B%d":"%s"`, i, i, chunk)
		}
		return b.String()
	}
	runRawCases(t, s, []rawCase{
		{"int32 annotated but out of range", "POST", "/limits", nil, entity(`,"N@odata.type":"Edm.Int32","N":2147483648`), 400, ""},
		{"int64 not digits", "POST", "/limits", nil, entity(`,"N@odata.type":"Edm.Int64","N":"12x"`), 400, ""},
		{"int64 as a JSON number is read leniently", "POST", "/limits", nil, `{"PartitionKey":"p","RowKey":"i64","N@odata.type":"Edm.Int64","N":12}`, 201, ""},
		{"guid malformed", "POST", "/limits", nil, entity(`,"G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a5783"`), 400, ""},
		{"datetime before 1601", "POST", "/limits", nil, entity(`,"D@odata.type":"Edm.DateTime","D":"1600-12-31T00:00:00Z"`), 400, "OutOfRangeInput"},
		{"datetime garbage", "POST", "/limits", nil, entity(`,"D@odata.type":"Edm.DateTime","D":"yesterday"`), 400, ""},
		{"binary not base64", "POST", "/limits", nil, entity(`,"B@odata.type":"Edm.Binary","B":"***"`), 400, ""},
		{"unknown EDM type", "POST", "/limits", nil, entity(`,"S@odata.type":"Edm.Single","S":1.5`), 400, "InvalidInput"},
		{"NaN without annotation is a string", "POST", "/limits", nil, `{"PartitionKey":"p","RowKey":"nan","X":"NaN"}`, 201, ""},
		{"object value", "POST", "/limits", nil, entity(`,"O":{"a":1}`), 400, "InvalidInput"},
		{"duplicate property", "POST", "/limits", nil, entity(`,"A":1,"A":2`), 400, "DuplicatePropertiesSpecified"},
		{"non-string key", "POST", "/limits", nil, `{"PartitionKey":1,"RowKey":"r"}`, 400, "InvalidInput"},
		{"malformed JSON", "POST", "/limits", nil, `{"PartitionKey":"p",`, 400, "InvalidInput"},
		{"no RowKey", "POST", "/limits", nil, `{"PartitionKey":"p"}`, 400, "PropertiesNeedValue"},
		{"null RowKey", "POST", "/limits", nil, `{"PartitionKey":"p","RowKey":null}`, 400, "PropertiesNeedValue"},
		{"252 properties fit", "POST", "/limits", nil, `{"PartitionKey":"p","RowKey":"many"` + manyProps(252) + `}`, 201, ""},
		{"253 properties do not", "POST", "/limits", nil, entity(manyProps(253)), 400, "TooManyProperties"},
		{"property name of 255 fits", "POST", "/limits", nil, `{"PartitionKey":"p","RowKey":"longname","` + strings.Repeat("n", 255) + `":1}`, 201, ""},
		{"property name of 256 does not", "POST", "/limits", nil, entity(`,"` + strings.Repeat("n", 256) + `":1`), 400, "PropertyNameTooLong"},
		{"property name starting with a digit", "POST", "/limits", nil, entity(`,"1x":1`), 400, "PropertyNameInvalid"},
		{"string of 32K UTF-16 units fits", "POST", "/limits", nil, `{"PartitionKey":"p","RowKey":"str","S":"` + strings.Repeat("x", 32768) + `"}`, 201, ""},
		{"string one unit longer does not", "POST", "/limits", nil, entity(`,"S":"` + strings.Repeat("x", 32769) + `"`), 400, "PropertyValueTooLarge"},
		{"entity over 1 MiB", "POST", "/limits", nil, entity(bigBinary(17)), 400, "EntityTooLarge"},
		{"body over 4 MiB", "POST", "/limits", nil, entity(`,"S":"` + strings.Repeat("x", 4<<20) + `"`), 413, "RequestBodyTooLarge"},
		{"key with slash", "POST", "/limits", nil, `{"PartitionKey":"a/b","RowKey":"r"}`, 400, ""},
		{"key with control character", "POST", "/limits", nil, `{"PartitionKey":"a\u0007b","RowKey":"r"}`, 400, ""},
		{"key too long", "POST", "/limits", nil, `{"PartitionKey":"` + strings.Repeat("k", 1025) + `","RowKey":"r"}`, 400, ""},
	})
	// Nothing rejected above was stored.
	resp := s.do("GET", "/limits()", map[string]string{"Accept": "application/json;odata=nometadata"}, "")
	var page struct{ Value []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range page.Value {
		keys = append(keys, e["RowKey"].(string))
	}
	if got := strings.Join(keys, ","); got != "i64,longname,many,nan,str" {
		t.Fatalf("stored entities %s, want only the accepted ones", got)
	}
}

func TestRequestShapeErrors(t *testing.T) {
	s := newRawServer(t)
	s.createTable("shapes")
	if resp := s.do("POST", "/shapes", nil, `{"PartitionKey":"p","RowKey":"r"}`); resp.StatusCode != 201 {
		t.Fatalf("insert: %d", resp.StatusCode)
	}
	runRawCases(t, s, []rawCase{
		{"X-HTTP-Method on GET", "GET", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"X-HTTP-Method": "MERGE"}, "", 400, "XMethodNotUsingPost"},
		{"X-HTTP-Method unknown", "POST", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"X-HTTP-Method": "FROB"}, `{}`, 400, "XMethodIncorrectValue"},
		{"tunnelled MERGE", "POST", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"X-HTTP-Method": "MERGE", "If-Match": "*"}, `{"A":1}`, 204, ""},
		{"tunnelled DELETE of a missing entity", "POST", "/shapes(PartitionKey='p',RowKey='nope')", map[string]string{"X-HTTP-Method": "DELETE", "If-Match": "*"}, "", 404, "ResourceNotFound"},
		{"If-Match garbage", "PUT", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"If-Match": "garbage"}, `{}`, 400, "InvalidInput"},
		{"If-Match list of two tags", "PUT", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"If-Match": `W/"a", W/"b"`}, `{}`, 400, "InvalidInput"},
		{"If-Match tag with a quote inside", "PUT", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"If-Match": `W/"a"b"`}, `{}`, 400, "InvalidInput"},
		{"If-Match lower-case weak prefix", "PUT", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"If-Match": `w/"a"`}, `{}`, 400, "InvalidInput"},
		{"If-Match foreign weak tag", "PUT", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"If-Match": `W/"wrong"`}, `{}`, 412, "ConditionNotMet"},
		{"If-Match foreign strong tag", "MERGE", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"If-Match": `"0x8D9"`}, `{}`, 412, "ConditionNotMet"},
		{"If-None-Match on PUT", "PUT", "/shapes(PartitionKey='p',RowKey='r')", map[string]string{"If-None-Match": "*"}, `{}`, 400, "InvalidInput"},
		{"Delete without If-Match", "DELETE", "/shapes(PartitionKey='p',RowKey='r')", nil, "", 400, "MissingRequiredHeader"},
		{"PUT on the table list", "PUT", "/Tables", nil, `{}`, 405, "MethodNotAllowed"},
		{"POST to an entity", "POST", "/shapes(PartitionKey='p',RowKey='r')", nil, `{}`, 405, "MethodNotAllowed"},
		{"malformed key syntax", "GET", "/shapes(PartitionKey='p')", nil, "", 400, "InvalidUri"},
		{"Atom requested", "GET", "/shapes()", map[string]string{"Accept": "application/atom+xml"}, "", 415, "AtomFormatNotSupported"},
		{"unsupported query option", "GET", "/shapes()?$orderby=RowKey", nil, "", 400, "InvalidInput"},
		{"top out of range", "GET", "/shapes()?$top=1001", nil, "", 400, ""},
		{"forged continuation", "GET", "/shapes()?NextPartitionKey=abc", nil, "", 400, "InvalidInput"},
		{"create table without a name", "POST", "/Tables", nil, `{}`, 400, "PropertiesNeedValue"},
	})
}

func TestPreferDecidesWhetherInsertsEcho(t *testing.T) {
	s := newRawServer(t)
	resp := s.do("POST", "/Tables", map[string]string{"Prefer": "return-no-content"}, `{"TableName":"prefer"}`)
	if resp.StatusCode != 204 || resp.Header.Get("Preference-Applied") != "return-no-content" || !strings.HasSuffix(resp.Header.Get("Location"), "/devstoreaccount1/Tables('prefer')") {
		t.Fatalf("create table, return-no-content: %d %v", resp.StatusCode, resp.Header)
	}
	resp = s.do("POST", "/prefer", nil, `{"PartitionKey":"p","RowKey":"O'Brien","N":5.0}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || resp.Header.Get("ETag") == "" || resp.Header.Get("Preference-Applied") != "" {
		t.Fatalf("insert without Prefer: %d %v", resp.StatusCode, resp.Header)
	}
	if !strings.Contains(string(body), `"N":5.0`) || !strings.Contains(string(body), `"odata.etag":`) || !strings.Contains(string(body), `$metadata#prefer/@Element`) {
		t.Fatalf("insert echo: %s", body)
	}
	if loc := resp.Header.Get("Location"); !strings.HasSuffix(loc, "/devstoreaccount1/prefer(PartitionKey='p',RowKey='O''Brien')") {
		t.Fatalf("Location = %s", loc)
	}
	resp = s.do("POST", "/prefer", map[string]string{"Prefer": "return-no-content"}, `{"PartitionKey":"p","RowKey":"2"}`)
	if resp.StatusCode != 204 || resp.Header.Get("DataServiceId") == "" || resp.Header.Get("ETag") == "" {
		t.Fatalf("insert with return-no-content: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestMetadataLevels(t *testing.T) {
	s := newRawServer(t)
	s.createTable("levels")
	s.do("POST", "/levels", nil, `{"PartitionKey":"p","RowKey":"r","Big@odata.type":"Edm.Int64","Big":"9007199254740993"}`)
	for accept, want := range map[string][]string{
		"application/json;odata=nometadata":      {`"Big":"9007199254740993"`},
		"application/json;odata=minimalmetadata": {`"odata.metadata":`, `"Big@odata.type":"Edm.Int64"`},
		"application/json;odata=fullmetadata":    {`"odata.type":"devstoreaccount1.levels"`, `"Timestamp@odata.type":"Edm.DateTime"`, `"odata.editLink":"levels(PartitionKey='p',RowKey='r')"`},
	} {
		resp := s.do("GET", "/levels(PartitionKey='p',RowKey='r')?$format="+url.QueryEscape(accept), nil, "")
		body, _ := io.ReadAll(resp.Body)
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s: body lacks %s: %s", accept, w, body)
			}
		}
		if accept == "application/json;odata=nometadata" && strings.Contains(string(body), "odata.") {
			t.Errorf("nometadata body carries annotations: %s", body)
		}
	}
}

func TestSecondaryEndpointIsAReadOnlyReplica(t *testing.T) {
	s := newRawServer(t)
	s.createTable("replica")
	s.do("POST", "/replica", nil, `{"PartitionKey":"p","RowKey":"r"}`)
	if resp := s.doSecondary("GET", "/replica(PartitionKey='p',RowKey='r')", ""); resp.StatusCode != 200 {
		t.Fatalf("read from the secondary: %d", resp.StatusCode)
	}
	resp := s.doSecondary("POST", "/replica", `{"PartitionKey":"p","RowKey":"s"}`)
	if resp.StatusCode != 403 || errorCode(t, resp) != "InsufficientAccountPermissions" {
		t.Fatalf("write to the secondary: %d", resp.StatusCode)
	}
}

// doSecondary sends a request to the -secondary endpoint, path-style: it addresses
// /devstoreaccount1-secondary but is signed with the primary account name and path, as clients
// sign secondary requests.
func (s *rawServer) doSecondary(method, path, body string) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.srv.URL+"/devstoreaccount1-secondary"+path, strings.NewReader(body))
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("Accept", "application/json;odata=nometadata")
	resource := "/devstoreaccount1/devstoreaccount1" + req.URL.EscapedPath()[len("/devstoreaccount1-secondary"):]
	if comp := req.URL.Query().Get("comp"); comp != "" {
		resource += "?comp=" + comp
	}
	req.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+auth.SignSharedKeyLite(s.key, date, resource))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestPointQuerySelectInTheMetadataURL: a point query with $select names the projection after
// the entity, "...#{table}/@Element&$select=baz,PartitionKey,RowKey", as in the JS SDK's
// recording of a real point query with a selection
// (tableclient_sasconnectionstring...getentity recordings in Azure/azure-sdk-for-js).
func TestPointQuerySelectInTheMetadataURL(t *testing.T) {
	s := newRawServer(t)
	s.createTable("pointsel")
	s.do("POST", "/pointsel", nil, `{"PartitionKey":"P2","RowKey":"R1","foo":"x","bar":123,"baz":true}`)
	resp := s.do("GET", "/pointsel(PartitionKey='P2',RowKey='R1')?$select=baz,PartitionKey,RowKey", nil, "")
	body, _ := io.ReadAll(resp.Body)
	want := `{"odata.metadata":"` + s.srv.URL + `/devstoreaccount1/$metadata#pointsel/@Element&$select=baz,PartitionKey,RowKey","odata.etag":`
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), want) || !strings.HasSuffix(string(body), `"PartitionKey":"P2","RowKey":"R1","baz":true}`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// Python's azure-data-tables addresses a path-style secondary endpoint as
// /{account}-secondary/{account}/… and signs the primary path, /{account}/… (seen from
// get_service_stats and `az storage table stats`): both the service's statistics and the
// tables answer there.
func TestSecondaryAsPythonAddressesIt(t *testing.T) {
	s := newRawServer(t)
	s.createTable("replica")
	for _, path := range []string{"/devstoreaccount1/?restype=service&comp=stats", "/devstoreaccount1/Tables", "/devstoreaccount1/replica()"} {
		req, _ := http.NewRequest("GET", s.srv.URL+"/devstoreaccount1-secondary"+path, nil)
		date := time.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		req.Header.Set("x-ms-version", "2019-02-02")
		req.Header.Set("Accept", "application/json;odata=nometadata")
		resource := "/devstoreaccount1" + req.URL.EscapedPath()
		if comp := req.URL.Query().Get("comp"); comp != "" {
			resource += "?comp=" + comp
		}
		req.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+auth.SignSharedKeyLite(s.key, date, resource))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /devstoreaccount1-secondary%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

// TestAnswersNameTheirQueryPlan pins the x-tabula-query-plan and x-tabula-entities-scanned
// headers on every kind of read, the point read addressed by URL (what the SDKs' get_entity
// sends) among them.
func TestAnswersNameTheirQueryPlan(t *testing.T) {
	s := newRawServer(t)
	s.createTable("plans")
	for _, pk := range []string{"a", "b"} {
		for _, rk := range []string{"1", "2"} {
			resp := s.do("POST", "/plans", map[string]string{"Prefer": "return-no-content"}, fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q}`, pk, rk))
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("insert: %d", resp.StatusCode)
			}
		}
	}
	for _, tc := range []struct{ path, plan, scanned string }{
		{"/plans(PartitionKey='a',RowKey='1')", "point", "1"},
		{"/plans(PartitionKey='a',RowKey='9')", "point", "0"},
		{"/plans()?$filter=" + url.QueryEscape("PartitionKey eq 'a' and RowKey eq '2'"), "point", "1"},
		{"/plans()?$filter=" + url.QueryEscape("PartitionKey eq 'a'"), "partition-range", "2"},
		{"/plans()?$filter=" + url.QueryEscape("PartitionKey lt 'b'"), "range", "2"},
		{"/plans()?$filter=" + url.QueryEscape("RowKey eq '1'"), "table-scan", "4"},
		{"/plans()", "table-scan", "4"},
	} {
		resp := s.do("GET", tc.path, nil, "")
		if got, n := resp.Header.Get("x-tabula-query-plan"), resp.Header.Get("x-tabula-entities-scanned"); got != tc.plan || n != tc.scanned {
			t.Errorf("GET %s: %d, plan %q scanned %q; want %q, %q", tc.path, resp.StatusCode, got, n, tc.plan, tc.scanned)
		}
	}
}
