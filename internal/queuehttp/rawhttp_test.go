package queuehttp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// rawServer is an in-process queue endpoint driven with hand-built HTTP requests, for what
// the SDKs never send and for the exact bytes of responses.
type rawServer struct {
	t   *testing.T
	srv *httptest.Server
	key []byte
}

func newRawServer(t *testing.T) *rawServer {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dev := auth.DevelopmentAccount()
	srv := httptest.NewServer(New(queue.New(st, queue.Options{}), auth.NewAuthenticator([]auth.Account{dev}), nil))
	t.Cleanup(srv.Close)
	return &rawServer{t: t, srv: srv, key: dev.Keys[0]}
}

// do sends a request to path (below /devstoreaccount1, query included) signed with
// SharedKeyLite, unless header sets Authorization to "-" (anonymous). account replaces the
// account segment when not empty (e.g. devstoreaccount1-secondary).
func (s *rawServer) do(method, path string, header map[string]string, body string) (*http.Response, string) {
	s.t.Helper()
	account := "devstoreaccount1"
	if a := header["account"]; a != "" {
		account = a
	}
	req, err := http.NewRequest(method, s.srv.URL+"/"+account+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2024-08-04")
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	for k, v := range header {
		if k != "account" {
			req.Header.Set(k, v)
		}
	}
	if req.Header.Get("Authorization") == "-" {
		req.Header.Del("Authorization")
	} else {
		req.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+s.signLite(req))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp, string(b)
}

// signLite signs req as a SharedKeyLite client of the Blob and Queue services does.
func (s *rawServer) signLite(req *http.Request) string {
	var names []string
	for k := range req.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			names = append(names, lk)
		}
	}
	slices.Sort(names)
	var headers strings.Builder
	for _, n := range names {
		headers.WriteString(n + ":" + strings.TrimSpace(req.Header.Get(n)) + "\n")
	}
	resource := "/devstoreaccount1" + req.URL.EscapedPath()
	if comp := req.URL.Query().Get("comp"); comp != "" {
		resource += "?comp=" + comp
	}
	toSign := req.Method + "\n\n" + req.Header.Get("Content-Type") + "\n\n" + headers.String() + resource
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(toSign))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// wantStatus checks status and error code ("" for a success).
func wantStatus(t *testing.T, resp *http.Response, body string, status int, code string) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("x-ms-error-code") != code {
		t.Fatalf("%s %s: got %d %q, want %d %q\n%s", resp.Request.Method, resp.Request.URL, resp.StatusCode, resp.Header.Get("x-ms-error-code"), status, code, body)
	}
}

const decl = "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?>"

const putBody = `<?xml version="1.0" encoding="utf-8"?><QueueMessage><MessageText>%s</MessageText></QueueMessage>`

func TestCreateQueueAnswers201Then204Then409(t *testing.T) {
	s := newRawServer(t)
	resp, body := s.do("PUT", "/jobs", map[string]string{"x-ms-meta-Owner": "ops"}, "")
	wantStatus(t, resp, body, 201, "")
	if resp.Header.Get("x-ms-request-id") == "" || resp.Header.Get("Date") == "" || resp.Header.Get("x-ms-version") != "2024-08-04" || body != "" {
		t.Fatalf("201 without the headers every response carries: %v %q", resp.Header, body)
	}
	resp, body = s.do("PUT", "/jobs", map[string]string{"x-ms-meta-owner": "ops"}, "")
	wantStatus(t, resp, body, 204, "")
	resp, body = s.do("PUT", "/jobs", nil, "")
	wantStatus(t, resp, body, 409, "QueueAlreadyExists")
	if !strings.HasPrefix(body, decl+"<Error><Code>QueueAlreadyExists</Code><Message>") {
		t.Fatalf("error body %q", body)
	}
	resp, body = s.do("GET", "/jobs?comp=metadata", nil, "")
	wantStatus(t, resp, body, 200, "")
	if resp.Header.Get("x-ms-approximate-messages-count") != "0" || resp.Header.Get("x-ms-meta-owner") != "ops" {
		t.Fatalf("metadata headers %v", resp.Header)
	}
	resp, body = s.do("HEAD", "/nope?comp=metadata", nil, "")
	wantStatus(t, resp, body, 404, "QueueNotFound")
	resp, body = s.do("PUT", "/Jobs", nil, "")
	wantStatus(t, resp, body, 400, "InvalidResourceName")
	resp, body = s.do("PUT", "/jobs2", map[string]string{"x-ms-meta-1bad": "x"}, "")
	wantStatus(t, resp, body, 400, "InvalidMetadata")
}

func TestMessageBodiesAreAzures(t *testing.T) {
	s := newRawServer(t)
	s.do("PUT", "/jobs", nil, "")
	resp, body := s.do("POST", "/jobs/messages?messagettl=60", map[string]string{"Content-Type": "application/xml"},
		strings.Replace(putBody, "%s", "a &lt;b&gt; &amp; &quot;c&quot; &#xD; é", 1))
	wantStatus(t, resp, body, 201, "")
	put := regexp.MustCompile(`^` + regexp.QuoteMeta(decl) + `<QueueMessagesList><QueueMessage><MessageId>[0-9a-f-]{36}</MessageId><InsertionTime>(\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT)</InsertionTime><ExpirationTime>\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT</ExpirationTime><PopReceipt>[A-Za-z0-9_-]+</PopReceipt><TimeNextVisible>\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT</TimeNextVisible></QueueMessage></QueueMessagesList>$`)
	if !put.MatchString(body) || resp.Header.Get("Content-Type") != "application/xml" {
		t.Fatalf("Put Message body %q", body)
	}
	resp, body = s.do("GET", "/jobs/messages?peekonly=true&numofmessages=32", nil, "")
	wantStatus(t, resp, body, 200, "")
	peek := regexp.MustCompile(`^` + regexp.QuoteMeta(decl) + `<QueueMessagesList><QueueMessage><MessageId>[0-9a-f-]{36}</MessageId><InsertionTime>[^<]+</InsertionTime><ExpirationTime>[^<]+</ExpirationTime><DequeueCount>0</DequeueCount><MessageText>a &lt;b&gt; &amp; "c" &#xD; é</MessageText></QueueMessage></QueueMessagesList>$`)
	if !peek.MatchString(body) || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("Peek Messages body %q, Cache-Control %q", body, resp.Header.Get("Cache-Control"))
	}
	resp, body = s.do("GET", "/jobs/messages?visibilitytimeout=60", nil, "")
	wantStatus(t, resp, body, 200, "")
	if !strings.Contains(body, "<PopReceipt>") || !strings.Contains(body, "<DequeueCount>1</DequeueCount>") {
		t.Fatalf("Get Messages body %q", body)
	}
	resp, body = s.do("GET", "/jobs/messages", nil, "")
	wantStatus(t, resp, body, 200, "")
	if body != decl+"<QueueMessagesList />" {
		t.Fatalf("nothing visible: %q", body)
	}
}

func TestQueryParametersAreCheckedWithAzuresDetails(t *testing.T) {
	s := newRawServer(t)
	s.do("PUT", "/jobs", nil, "")
	cases := []struct {
		method, path, body string
		status             int
		code, detail       string
	}{
		{"GET", "/jobs/messages?numofmessages=0", "", 400, "OutOfRangeQueryParameterValue",
			"<QueryParameterName>numofmessages</QueryParameterName><QueryParameterValue>0</QueryParameterValue><MinimumAllowed>1</MinimumAllowed><MaximumAllowed>32</MaximumAllowed>"},
		{"GET", "/jobs/messages?numofmessages=two", "", 400, "InvalidQueryParameterValue", "<QueryParameterName>numofmessages</QueryParameterName>"},
		{"GET", "/jobs/messages?visibilitytimeout=0", "", 400, "OutOfRangeQueryParameterValue", "<MinimumAllowed>1</MinimumAllowed><MaximumAllowed>604800</MaximumAllowed>"},
		{"GET", "/jobs/messages?visibilitytimeout=99999999999999", "", 400, "OutOfRangeQueryParameterValue", "<QueryParameterValue>99999999999999</QueryParameterValue>"},
		{"POST", "/jobs/messages?visibilitytimeout=604801", strings.Replace(putBody, "%s", "x", 1), 400, "OutOfRangeQueryParameterValue", ""},
		{"POST", "/jobs/messages?messagettl=0", strings.Replace(putBody, "%s", "x", 1), 400, "InvalidQueryParameterValue", "<QueryParameterName>messagettl</QueryParameterName>"},
		{"POST", "/jobs/messages?messagettl=10&visibilitytimeout=10", strings.Replace(putBody, "%s", "x", 1), 400, "InvalidQueryParameterValue", "<Reason>messagettl must be greater than visibilitytimeout</Reason>"},
		{"POST", "/jobs/messages", "<QueueMessage><MessageText>x</QueueMessage>", 400, "InvalidXmlDocument", ""},
		{"POST", "/jobs/messages", "<QueueMessage></QueueMessage>", 400, "InvalidXmlDocument", ""},
		{"POST", "/jobs/messages", "", 400, "InvalidXmlDocument", ""},
		{"POST", "/jobs/messages", strings.Replace(putBody, "%s", strings.Repeat("&lt;", queue.MaxMessageSize+1), 1), 413, "RequestBodyTooLarge", "<MaxLimit>65536</MaxLimit>"},
		{"DELETE", "/jobs/messages/00000000-0000-0000-0000-000000000000", "", 400, "MissingRequiredQueryParameter", "<QueryParameterName>popreceipt</QueryParameterName>"},
		{"DELETE", "/jobs/messages/00000000-0000-0000-0000-000000000000?popreceipt=%3D%3D", "", 400, "InvalidQueryParameterValue", "<QueryParameterName>popreceipt</QueryParameterName>"},
		// As the JS SDK's recorded delete_message_negative: not a receipt's format.
		{"DELETE", "/jobs/messages/00000000-0000-0000-0000-000000000000?popreceipt=invalid", "", 400, "InvalidQueryParameterValue", "<Reason>Invalid pop receipt format</Reason>"},
		// A receipt in Azure's own format that was never issued names no message: 404, as the
		// real service answers made-up and stale receipts alike.
		{"DELETE", "/jobs/messages/00000000-0000-0000-0000-000000000000?popreceipt=AgAAAAMAAAAAAAAANcCsz5Yr1QE%3D", "", 404, "MessageNotFound", ""},
		{"PUT", "/jobs/messages/00000000-0000-0000-0000-000000000000?popreceipt=AgAAAAMAAAAAAAAANcCsz5Yr1QE%3D&visibilitytimeout=0", "", 404, "MessageNotFound", ""},
		{"DELETE", "/jobs/messages/00000000-0000-0000-0000-000000000000?popreceipt=AAAAAAAAAAAAAAAAAAAAAAAAAAA", "", 404, "MessageNotFound", ""},
		{"PUT", "/jobs/messages/00000000-0000-0000-0000-000000000000?popreceipt=AAAA", "", 400, "MissingRequiredQueryParameter", "<QueryParameterName>visibilitytimeout</QueryParameterName>"},
		{"GET", "/?comp=list&maxresults=0", "", 400, "OutOfRangeQueryParameterValue", "<QueryParameterName>maxresults</QueryParameterName>"},
		{"GET", "/?comp=list&marker=%2Fotheraccount%2Fjobs", "", 400, "InvalidMarker", ""},
		{"GET", "/?comp=list&include=acl", "", 400, "InvalidQueryParameterValue", ""},
		{"POST", "/jobs", "", 405, "UnsupportedHttpVerb", ""},
		{"GET", "/jobs", "", 400, "MissingRequiredQueryParameter", ""},
		{"PUT", "/jobs?comp=lease", "", 400, "InvalidQueryParameterValue", ""},
		{"GET", "/jobs/msgs", "", 400, "InvalidUri", ""},
		{"GET", "/jobs/messages/id/more", "", 400, "InvalidUri", ""},
		{"GET", "/nope/messages", "", 404, "QueueNotFound", ""},
	}
	for _, tc := range cases {
		resp, body := s.do(tc.method, tc.path, map[string]string{"Content-Type": "application/xml"}, tc.body)
		wantStatus(t, resp, body, tc.status, tc.code)
		if !strings.Contains(body, tc.detail) {
			t.Errorf("%s %s: body %q lacks %q", tc.method, tc.path, body, tc.detail)
		}
	}
}

func TestListQueuesEchoesWhatWasSentAndAlwaysHasNextMarker(t *testing.T) {
	s := newRawServer(t)
	for _, n := range []string{"aa1", "aa2", "bb1"} {
		s.do("PUT", "/"+n, map[string]string{"x-ms-meta-k": "v<"}, "")
	}
	resp, body := s.do("GET", "/?comp=list&prefix=aa&maxresults=1&include=metadata", nil, "")
	wantStatus(t, resp, body, 200, "")
	want := decl + `<EnumerationResults ServiceEndpoint="` + s.srv.URL + `/devstoreaccount1/"><Prefix>aa</Prefix><MaxResults>1</MaxResults>` +
		`<Queues><Queue><Name>aa1</Name><Metadata><k>v&lt;</k></Metadata></Queue></Queues><NextMarker>/devstoreaccount1/aa2</NextMarker></EnumerationResults>`
	if body != want {
		t.Fatalf("page 1:\n%q\nwant\n%q", body, want)
	}
	resp, body = s.do("GET", "/?comp=list&prefix=aa&marker=%2Fdevstoreaccount1%2Faa2", nil, "")
	wantStatus(t, resp, body, 200, "")
	want = decl + `<EnumerationResults ServiceEndpoint="` + s.srv.URL + `/devstoreaccount1/"><Prefix>aa</Prefix><Marker>/devstoreaccount1/aa2</Marker>` +
		`<Queues><Queue><Name>aa2</Name></Queue></Queues><NextMarker /></EnumerationResults>`
	if body != want {
		t.Fatalf("page 2:\n%q\nwant\n%q", body, want)
	}
	resp, body = s.do("GET", "/?comp=list&prefix=zz", nil, "")
	if !strings.Contains(body, "<Queues /><NextMarker />") {
		t.Fatalf("empty listing %q", body)
	}
}

func TestUpdateMessageAnswersWithItsNewReceipt(t *testing.T) {
	s := newRawServer(t)
	s.do("PUT", "/jobs", nil, "")
	_, body := s.do("POST", "/jobs/messages", map[string]string{"Content-Type": "application/xml"}, strings.Replace(putBody, "%s", "x", 1))
	id := regexp.MustCompile(`<MessageId>([^<]+)</MessageId>`).FindStringSubmatch(body)[1]
	receipt := regexp.MustCompile(`<PopReceipt>([^<]+)</PopReceipt>`).FindStringSubmatch(body)[1]
	// Visibility only, with an empty body as Python sends it.
	resp, body := s.do("PUT", "/jobs/messages/"+id+"?popreceipt="+receipt+"&visibilitytimeout=30", map[string]string{"Content-Type": "application/xml"}, "")
	wantStatus(t, resp, body, 204, "")
	next := resp.Header.Get("x-ms-popreceipt")
	if next == "" || next == receipt {
		t.Fatalf("new receipt %q (old %q)", next, receipt)
	}
	if _, err := time.Parse(http.TimeFormat, resp.Header.Get("x-ms-time-next-visible")); err != nil {
		t.Fatalf("x-ms-time-next-visible %q", resp.Header.Get("x-ms-time-next-visible"))
	}
	resp, body = s.do("DELETE", "/jobs/messages/"+id+"?popreceipt="+receipt, nil, "")
	wantStatus(t, resp, body, 404, "MessageNotFound")
	resp, body = s.do("DELETE", "/jobs/messages/"+id+"?popreceipt="+next, nil, "")
	wantStatus(t, resp, body, 204, "")
}

func TestVersionsAndEndpointsThatRefuse(t *testing.T) {
	s := newRawServer(t)
	s.do("PUT", "/jobs", nil, "")
	// Anonymous: 401 with the bearer challenge from 2019-12-12, 403 before.
	resp, body := s.do("GET", "/jobs/messages", map[string]string{"Authorization": "-"}, "")
	wantStatus(t, resp, body, 401, "NoAuthenticationInformation")
	if resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatal("no bearer challenge")
	}
	resp, body = s.do("GET", "/jobs/messages", map[string]string{"Authorization": "-", "x-ms-version": "2019-07-07"}, "")
	wantStatus(t, resp, body, 403, "AuthenticationFailed")
	// messagettl=-1 and times to live beyond seven days came with 2017-07-29.
	resp, body = s.do("POST", "/jobs/messages?messagettl=-1", map[string]string{"x-ms-version": "2017-04-17", "Content-Type": "application/xml"}, strings.Replace(putBody, "%s", "x", 1))
	wantStatus(t, resp, body, 400, "OutOfRangeQueryParameterValue")
	resp, body = s.do("POST", "/jobs/messages?messagettl=-1", map[string]string{"Content-Type": "application/xml"}, strings.Replace(putBody, "%s", "x", 1))
	wantStatus(t, resp, body, 201, "")
	// Put Message's body came with 2016-05-31.
	resp, body = s.do("POST", "/jobs/messages", map[string]string{"x-ms-version": "2015-12-11", "Content-Type": "application/xml"}, strings.Replace(putBody, "%s", "x", 1))
	wantStatus(t, resp, body, 201, "")
	if body != "" {
		t.Fatalf("Put Message at 2015-12-11 answered %q", body)
	}
	// The secondary endpoint reads but does not change, and a dequeue is a change.
	sec := map[string]string{"account": "devstoreaccount1-secondary"}
	resp, body = s.do("GET", "/jobs/messages?peekonly=true", sec, "")
	wantStatus(t, resp, body, 200, "")
	resp, body = s.do("GET", "/jobs/messages", sec, "")
	wantStatus(t, resp, body, 403, "InsufficientAccountPermissions")
	resp, body = s.do("PUT", "/other", sec, "")
	wantStatus(t, resp, body, 403, "InsufficientAccountPermissions")
	resp, body = s.do("GET", "/?restype=service&comp=stats", sec, "")
	wantStatus(t, resp, body, 200, "")
	if !strings.Contains(body, "<StorageServiceStats><GeoReplication><Status>live</Status>") {
		t.Fatalf("stats %q", body)
	}
	// Only the secondary answers stats, as on Azure.
	resp, body = s.do("GET", "/?restype=service&comp=stats", nil, "")
	wantStatus(t, resp, body, 400, "InvalidQueryParameterValue")
}

func TestCORSRulesOfTheQueueServiceApply(t *testing.T) {
	s := newRawServer(t)
	props := `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>https://app.example</AllowedOrigins><AllowedMethods>GET,POST</AllowedMethods><AllowedHeaders>x-ms-*</AllowedHeaders><ExposedHeaders>x-ms-request-id</ExposedHeaders><MaxAgeInSeconds>60</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`
	resp, body := s.do("PUT", "/?restype=service&comp=properties", map[string]string{"Content-Type": "application/xml"}, props)
	wantStatus(t, resp, body, 202, "")
	resp, body = s.do("GET", "/?restype=service&comp=properties", nil, "")
	wantStatus(t, resp, body, 200, "")
	if !strings.HasPrefix(body, decl+"<StorageServiceProperties>") || !strings.Contains(body, "<AllowedOrigins>https://app.example</AllowedOrigins>") {
		t.Fatalf("properties %q", body)
	}
	s.do("PUT", "/jobs", nil, "")
	// A preflight is never authenticated.
	resp, body = s.do("OPTIONS", "/jobs/messages", map[string]string{"Authorization": "-", "Origin": "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-ms-version"}, "")
	wantStatus(t, resp, body, 200, "")
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || resp.Header.Get("Access-Control-Max-Age") != "60" {
		t.Fatalf("preflight headers %v", resp.Header)
	}
	resp, body = s.do("OPTIONS", "/jobs/messages", map[string]string{"Authorization": "-", "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, "")
	wantStatus(t, resp, body, 403, "CorsPreflightFailure")
	resp, body = s.do("GET", "/jobs/messages?peekonly=true", map[string]string{"Origin": "https://app.example"}, "")
	wantStatus(t, resp, body, 200, "")
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || resp.Header.Get("Access-Control-Expose-Headers") != "x-ms-request-id" {
		t.Fatalf("CORS headers on an actual request: %v", resp.Header)
	}
}

// A request is judged whole before its queue is looked up: a malformed message for a queue
// that does not exist is 400 InvalidXmlDocument (the Python SDK's recording of
// test_message_text_xml_invalid_chars, on a new account), a well-formed one 404 QueueNotFound.
func TestMessageBodiesAreJudgedBeforeTheQueue(t *testing.T) {
	s := newRawServer(t)
	resp, body := s.do("POST", "/nosuch/messages", nil, "<?xml version='1.0' encoding='utf-8'?>\n<QueueMessage><MessageText>\x01</MessageText></QueueMessage>")
	wantStatus(t, resp, body, 400, "InvalidXmlDocument")
	resp, body = s.do("POST", "/nosuch/messages", nil, strings.Replace(putBody, "%s", "fine", 1))
	wantStatus(t, resp, body, 404, "QueueNotFound")
	resp, body = s.do("PUT", "/nosuch/messages/00000000-0000-0000-0000-000000000000?popreceipt=x&visibilitytimeout=0", nil, "<QueueMessage><MessageText>")
	wantStatus(t, resp, body, 400, "InvalidXmlDocument")
}

// Get Queue ACL and Get Queue Service Properties say Cache-Control: no-cache, as the real
// service does (the Python SDK's recordings of test_set_queue_acl_with_empty_signed_identifier
// and test_set_cors).
func TestSettingsReadsAreNotCached(t *testing.T) {
	s := newRawServer(t)
	s.do("PUT", "/jobs", nil, "")
	for _, path := range []string{"/jobs?comp=acl", "/?restype=service&comp=properties"} {
		resp, body := s.do("GET", path, nil, "")
		wantStatus(t, resp, body, 200, "")
		if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q", path, got)
		}
	}
}
