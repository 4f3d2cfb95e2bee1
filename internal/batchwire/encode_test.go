package batchwire

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readCRLF reads a testdata file written with LF line ends and returns it with CRLF ones, as on
// the wire.
func readCRLF(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/encode/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

const (
	specBatchID     = "5f0e3c52-8d46-4c1e-9a2b-0b9f5e2d7a11"
	specChangesetID = "c3f1d9e4-27ab-4b7e-8f61-6a2d0e9b5c38"
	specETag        = `W/"datetime'2021-08-02T18%3A01%3A40.5551234Z'"`
	specEntityURL   = "http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='cust42',RowKey='0001')"
)

// The headers are given in scrambled order and spelling: the encoder owns the order.
var specSuccess = []Response{
	{Status: 204, Header: hdr(
		"ETag", specETag,
		"DataServiceId", specEntityURL,
		"Location", specEntityURL,
		"DataServiceVersion", "3.0;",
		"preference-applied", "return-no-content",
		"Cache-Control", "no-cache",
		"X-Content-Type-Options", "nosniff",
	)},
	{Status: 204, Header: hdr(
		"Etag", specETag,
		"Dataserviceversion", "1.0;",
		"Cache-Control", "no-cache",
		"X-Content-Type-Options", "nosniff",
	)},
	{Status: 204, Header: hdr(
		"DataServiceVersion", "1.0;",
		"X-Content-Type-Options", "nosniff",
		"Cache-Control", "no-cache",
	)},
}

var specFailure = []Response{{
	Status: 412,
	Header: hdr(
		"Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
		"DataServiceVersion", "3.0;",
		"Cache-Control", "no-cache",
		"X-Content-Type-Options", "nosniff",
	),
	Body: []byte(`{"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US","value":"1:The update condition specified in the request was not satisfied.\nRequestId:7d3c1a9e-0002-0051-5ac8-874646000000\nTime:2021-08-02T18:01:40.5561234Z"}}}`),
}}

func TestEncodeChangesetResponseMatchesSpecExample(t *testing.T) {
	for _, tc := range []struct {
		name      string
		responses []Response
		file      string
		length    int // the Content-Length batch.md §6 states
	}{
		{"success", specSuccess, "spec_success.txt", 1330},
		{"failure", specFailure, "spec_failure.txt", 841},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := encodeChangesetResponse(tc.responses, specBatchID, specChangesetID)
			if want := "multipart/mixed; boundary=batchresponse_" + specBatchID; ct != want {
				t.Errorf("content type %q, want %q", ct, want)
			}
			want := readCRLF(t, tc.file)
			if !bytes.Equal(body, want) {
				t.Errorf("body differs\n--- want\n%q\n--- got\n%q", want, body)
			}
			if len(body) != tc.length {
				t.Errorf("body is %d bytes, spec says %d", len(body), tc.length)
			}
		})
	}
}

// The real service's own bodies (Go SDK recordings TestBatchMixed and TestBatchError, base64
// ResponseBody) are reproduced byte for byte from the same headers.
func TestEncodeChangesetResponseMatchesRecordings(t *testing.T) {
	insert := func(rowKey string) Response {
		loc := "https://seankaneprim.table.core.windows.net/tableName1678010654(PartitionKey='partition',RowKey='" + rowKey + "')"
		return Response{Status: 204, Header: hdr(
			"X-Content-Type-Options", "nosniff",
			"Cache-Control", "no-cache",
			"Preference-Applied", "return-no-content",
			"DataServiceVersion", "3.0;",
			"Location", loc,
			"DataServiceId", loc,
			"ETag", `W/"datetime'2021-09-08T18%3A58%3A49.7704959Z'"`,
		)}
	}
	_, body := encodeChangesetResponse(
		[]Response{insert("1"), insert("2"), insert("3")},
		"96699476-595c-421c-9dd1-f6bb9894f8a5", "b3899609-f824-4396-a4c7-8eb9f4a74518")
	if want := readCRLF(t, "go_recorded_success.txt"); !bytes.Equal(body, want) {
		t.Errorf("success differs\n--- want\n%q\n--- got\n%q", want, body)
	}

	conflict := Response{Status: 409, Header: hdr(
		"X-Content-Type-Options", "nosniff",
		"Cache-Control", "no-cache",
		"Preference-Applied", "return-no-content",
		"DataServiceVersion", "3.0;",
		"Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
	), Body: []byte(`{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"2:The specified entity already exists.\nRequestId:a05b4e53-9002-0057-1cc8-874646000000\nTime:2021-08-02T18:01:40.3296350Z"}}}`)}
	_, body = encodeChangesetResponse([]Response{conflict},
		"c5bb0b10-d973-4bab-9713-7d8bb0a007f2", "aef1890e-d4f6-4956-b9e5-5cbe16876d62")
	if want := readCRLF(t, "go_recorded_failure.txt"); !bytes.Equal(body, want) {
		t.Errorf("failure differs\n--- want\n%q\n--- got\n%q", want, body)
	}
}

func TestEncodeQueryResponseLayout(t *testing.T) {
	r := Response{Status: 200, Header: hdr(
		"ETag", `W/"datetime'2021-08-02T18%3A01%3A40.5551234Z'"`,
		"Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
		"DataServiceVersion", "3.0;",
		"Cache-Control", "no-cache",
		"X-Content-Type-Options", "nosniff",
	), Body: []byte(`{"PartitionKey":"cust42","RowKey":"0001"}`)}
	ct, body := encodeQueryResponse(r, "R")
	if ct != "multipart/mixed; boundary=batchresponse_R" {
		t.Errorf("content type %q", ct)
	}
	want := "--batchresponse_R\r\n" +
		"Content-Type: application/http\r\n" +
		"Content-Transfer-Encoding: binary\r\n" +
		"\r\n" +
		"HTTP/1.1 200 OK\r\n" +
		"X-Content-Type-Options: nosniff\r\n" +
		"Cache-Control: no-cache\r\n" +
		"DataServiceVersion: 3.0;\r\n" +
		"Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n" +
		`ETag: W/"datetime'2021-08-02T18%3A01%3A40.5551234Z'"` + "\r\n" +
		"\r\n" +
		`{"PartitionKey":"cust42","RowKey":"0001"}` + "\r\n" +
		"--batchresponse_R--\r\n"
	if string(body) != want {
		t.Errorf("body differs\n--- want\n%q\n--- got\n%q", want, body)
	}
}

func TestEncodeWritesAzureHeaderSpellingsAndOrder(t *testing.T) {
	r := Response{
		Status:    201,
		ContentID: "3",
		Header: hdr(
			"x-ms-request-id", "r1",
			"Zeta", "z",
			"Alpha", "a1",
			"Alpha", "a2",
			"Content-Id", "ignored: the field wins",
			"etag", "e",
			"dataserviceid", "d",
			"location", "l",
			"content-type", "application/json",
			"dataserviceversion", "3.0;",
			"preference-applied", "return-content",
			"cache-control", "no-cache",
			"x-content-type-options", "nosniff",
			"X-Bad", "line1\r\nInjected: yes",
		),
		Body: []byte("{}"),
	}
	_, body := encodeChangesetResponse([]Response{r}, "B", "C")
	want := "HTTP/1.1 201 Created\r\n" +
		"Content-ID: 3\r\n" +
		"X-Content-Type-Options: nosniff\r\n" +
		"Cache-Control: no-cache\r\n" +
		"Preference-Applied: return-content\r\n" +
		"DataServiceVersion: 3.0;\r\n" +
		"Content-Type: application/json\r\n" +
		"Location: l\r\n" +
		"DataServiceId: d\r\n" +
		"ETag: e\r\n" +
		"Alpha: a1\r\n" +
		"Alpha: a2\r\n" +
		"X-Bad: line1  Injected: yes\r\n" +
		"x-ms-request-id: r1\r\n" +
		"Zeta: z\r\n" +
		"\r\n{}\r\n"
	if !bytes.Contains(body, []byte(want)) {
		t.Errorf("sub-response differs\n--- want\n%q\n--- got\n%q", want, body)
	}
}

func TestEncodeStatusLineReasonPhrases(t *testing.T) {
	// errors.md §1: the phrases the real service writes in $batch parts.
	for status, reason := range map[int]string{
		200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request",
		401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
		409: "Conflict", 411: "Length Required", 412: "Precondition Failed",
		413: "Request Entity Too Large", 415: "Unsupported Media Type",
		500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable",
	} {
		_, body := EncodeChangesetResponse([]Response{{Status: status}})
		line := "\r\nHTTP/1.1 " + strconv.Itoa(status) + " " + reason + "\r\n"
		if !bytes.Contains(body, []byte(line)) {
			t.Errorf("%d: no %q in\n%q", status, line, body)
		}
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestEncodeUsesFreshRandomBoundaries(t *testing.T) {
	ct1, body1 := EncodeChangesetResponse([]Response{{Status: 204}})
	ct2, _ := EncodeChangesetResponse([]Response{{Status: 204}})
	if ct1 == ct2 {
		t.Errorf("two responses share the boundary %q", ct1)
	}
	_, params, err := mime.ParseMediaType(ct1)
	if err != nil {
		t.Fatal(err)
	}
	batch := params["boundary"]
	id, ok := strings.CutPrefix(batch, "batchresponse_")
	if !ok || !uuidV4.MatchString(id) {
		t.Errorf("batch boundary %q is not batchresponse_<uuid v4>", batch)
	}
	if !bytes.HasPrefix(body1, []byte("--"+batch+"\r\nContent-Type: multipart/mixed; boundary=changesetresponse_")) {
		t.Errorf("body does not open with the boundaries: %q", body1)
	}
	ct3, body3 := EncodeQueryResponse(Response{Status: 404})
	if _, params, _ := mime.ParseMediaType(ct3); !bytes.HasPrefix(body3, []byte("--"+params["boundary"]+"\r\n")) {
		t.Errorf("query response %q does not open with its boundary %q", body3, ct3)
	}
}

// sdkFixture is a success and a failure response as the caller will produce them.
func sdkFixture() map[string][]Response {
	return map[string][]Response{
		"success": specSuccess,
		"failure": specFailure,
	}
}

// TestEncodedResponsesParseLikeGoSDK parses the encoder's output the way aztables'
// buildTransactionResponse does: boundary from the first line, mime/multipart, and
// http.ReadResponse on every change-set part.
func TestEncodedResponsesParseLikeGoSDK(t *testing.T) {
	for name, responses := range sdkFixture() {
		t.Run(name, func(t *testing.T) {
			_, body := EncodeChangesetResponse(responses)
			firstLine := func(b []byte) string {
				end := bytes.IndexByte(b, '\n')
				if end > 0 && b[end-1] == '\r' {
					end--
				}
				return string(b[2:end])
			}
			outer, err := multipart.NewReader(bytes.NewReader(body), firstLine(body)).NextPart()
			if err != nil {
				t.Fatal(err)
			}
			inner, err := io.ReadAll(outer)
			if err != nil {
				t.Fatal(err)
			}
			mr := multipart.NewReader(bytes.NewReader(inner), firstLine(inner))
			var got []int
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				part, _ := io.ReadAll(p)
				resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(part)), nil)
				if err != nil {
					t.Fatalf("http.ReadResponse: %v\n%q", err, part)
				}
				respBody, _ := io.ReadAll(resp.Body)
				want := responses[len(got)]
				if resp.Header.Get("ETag") != want.Header.Get("ETag") || !bytes.Equal(respBody, want.Body) {
					t.Errorf("part %d: ETag %q body %q", len(got), resp.Header.Get("ETag"), respBody)
				}
				got = append(got, resp.StatusCode)
			}
			if len(got) != len(responses) {
				t.Errorf("got %d sub-responses, want %d", len(got), len(responses))
			}
		})
	}
}

// TestEncodedResponsesParseLikeJavaSDK follows TablesMultipartSerializer.deserialize: the first
// line must start with --batchresponse_, each "--changesetresponse_" line closes the previous
// sub-response, the status code is characters 9 to 12 of the "HTTP/1.1" line, headers split on
// the first ':', and non-empty lines after the empty line make the body.
func TestEncodedResponsesParseLikeJavaSDK(t *testing.T) {
	type javaResponse struct {
		status  int
		headers map[string]string
		body    string
	}
	for name, responses := range sdkFixture() {
		t.Run(name, func(t *testing.T) {
			_, body := EncodeChangesetResponse(responses)
			sc := bufio.NewScanner(bytes.NewReader(body))
			sc.Scan()
			if !strings.HasPrefix(sc.Text(), "--batchresponse_") {
				t.Fatalf("first line %q", sc.Text())
			}
			var parsed []javaResponse
			var cur *javaResponse
			foundBody := false
			for sc.Scan() {
				line := strings.TrimSuffix(sc.Text(), "\r")
				switch {
				case strings.HasPrefix(line, "--changesetresponse_"):
					if cur != nil {
						parsed = append(parsed, *cur)
					}
					cur, foundBody = nil, false
				case cur == nil && strings.HasPrefix(line, "HTTP/1.1"):
					code, err := strconv.Atoi(line[9:12])
					if err != nil {
						t.Fatalf("status line %q", line)
					}
					cur = &javaResponse{status: code, headers: map[string]string{}}
				case cur != nil && !foundBody:
					if line == "" {
						foundBody = true
						continue
					}
					k, v, ok := strings.Cut(line, ":")
					if !ok {
						t.Fatalf("header line without ':' would throw in Java: %q", line)
					}
					cur.headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
				case cur != nil && line != "":
					cur.body += line + "\r\n"
				}
			}
			if len(parsed) != len(responses) {
				t.Fatalf("Java sees %d sub-responses, want %d", len(parsed), len(responses))
			}
			for i, p := range parsed {
				if p.status != responses[i].Status || p.headers["ETag"] != responses[i].Header.Get("ETag") ||
					strings.TrimSuffix(p.body, "\r\n") != string(responses[i].Body) {
					t.Errorf("sub-response %d parsed as %+v", i, p)
				}
			}
		})
	}
}

// TestEncodedResponsesParseLikeJSSDK follows parseTransactionResponse: split on
// "--changesetresponse_", drop the first and last pieces, then regexes for the status, a JSON
// body, "ETag: " (case-sensitive) and RowKey='…'.
func TestEncodedResponsesParseLikeJSSDK(t *testing.T) {
	status := regexp.MustCompile(`HTTP/1.1 ([0-9]*)`)
	jsonBody := regexp.MustCompile(`\{(.*)\}`)
	etag := regexp.MustCompile(`ETag: (.*)`)
	rowKey := regexp.MustCompile(`RowKey='(.*)'`)
	for name, responses := range sdkFixture() {
		t.Run(name, func(t *testing.T) {
			_, body := EncodeChangesetResponse(responses)
			pieces := strings.Split(string(body), "--changesetresponse_")
			subs := pieces[1 : len(pieces)-1]
			if len(subs) != len(responses) {
				t.Fatalf("JS sees %d sub-responses, want %d", len(subs), len(responses))
			}
			for i, sub := range subs {
				m := status.FindStringSubmatch(sub)
				if m == nil || m[1] != strconv.Itoa(responses[i].Status) {
					t.Errorf("sub-response %d: status %q", i, m)
				}
				if b := jsonBody.FindString(sub); (b != "") != (len(responses[i].Body) > 0) {
					t.Errorf("sub-response %d: JSON body %q", i, b)
				}
				if want := responses[i].Header.Get("ETag"); want != "" {
					// JS keeps the CR: (.*) stops at \n only. The SDK passes it on as is.
					if m := etag.FindStringSubmatch(sub); m == nil || strings.TrimSuffix(m[1], "\r") != want {
						t.Errorf("sub-response %d: ETag %q", i, m)
					}
				}
				if loc := responses[i].Header.Get("Location"); loc != "" {
					if m := rowKey.FindStringSubmatch(sub); m == nil || m[1] != "0001" {
						t.Errorf("sub-response %d: RowKey %q", i, m)
					}
				}
			}
		})
	}
}

// The fast path of appendSubResponse must know exactly headerOrder's names, or headers would
// be written in another order (or not at all) than the general path writes them.
func TestOnlyOrderedHeadersKnowsExactlyHeaderOrder(t *testing.T) {
	for _, name := range headerOrder {
		if !onlyOrderedHeaders(http.Header{name: {"v"}}) {
			t.Errorf("%s is in headerOrder but not in onlyOrderedHeaders", name)
		}
	}
	for _, name := range []string{"ETag", "content-type", "X-Ms-Request-Id", "Date"} {
		if onlyOrderedHeaders(http.Header{name: {"v"}}) {
			t.Errorf("%s is not in headerOrder but onlyOrderedHeaders takes it", name)
		}
	}
	all := http.Header{}
	for _, name := range headerOrder {
		all[name] = []string{"v-" + name}
	}
	fast := appendSubResponse(nil, "b", Response{Status: 204, Header: all})
	var slow []byte
	all["X-Other"] = []string{"x"} // takes the general path, which sorts it last
	slow = appendSubResponse(nil, "b", Response{Status: 204, Header: all})
	if want := strings.Replace(string(slow), "X-Other: x\r\n", "", 1); string(fast) != want {
		t.Errorf("fast path wrote\n%s\ngeneral path\n%s", fast, want)
	}
}
