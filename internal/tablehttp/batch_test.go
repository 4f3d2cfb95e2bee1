package tablehttp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// batchOp is one sub-request of a hand-built $batch body.
type batchOp struct {
	method, target string
	headers        []string // "Name: value"
	body           string
}

// buildBatch lays ops out as a multipart/mixed $batch body with the given line ending.
func buildBatch(ops []batchOp, eol string) (contentType, body string) {
	var b strings.Builder
	w := func(lines ...string) {
		for _, l := range lines {
			b.WriteString(l + eol)
		}
	}
	w("--batch_b1", "Content-Type: multipart/mixed; boundary=changeset_c1", "")
	for _, op := range ops {
		w("--changeset_c1", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "")
		w(op.method + " " + op.target + " HTTP/1.1")
		w(op.headers...)
		w("")
		if op.body != "" {
			w(op.body)
		}
	}
	w("--changeset_c1--", "--batch_b1--")
	return "multipart/mixed; boundary=batch_b1", b.String()
}

func (s *rawServer) batch(ops []batchOp, eol string) (int, string, http.Header) {
	s.t.Helper()
	ct, body := buildBatch(ops, eol)
	resp := s.do("POST", "/$batch", map[string]string{"Content-Type": ct}, body)
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Header
}

// rowKeys lists the RowKeys stored in a table.
func (s *rawServer) rowKeys(table string) string {
	s.t.Helper()
	resp := s.do("GET", "/"+table+"()", map[string]string{"Accept": "application/json;odata=nometadata"}, "")
	var page struct{ Value []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		s.t.Fatal(err)
	}
	var keys []string
	for _, e := range page.Value {
		keys = append(keys, e["RowKey"].(string))
	}
	return strings.Join(keys, ",")
}

func insertOp(target, rk string) batchOp {
	return batchOp{"POST", target, []string{"Content-Type: application/json", "Accept: application/json;odata=minimalmetadata", "Prefer: return-no-content"},
		`{"PartitionKey":"p","RowKey":"` + rk + `"}`}
}

func TestBatchAcceptsEveryFormattingClientsUse(t *testing.T) {
	s := newRawServer(t)
	s.createTable("fmt")
	base := s.srv.URL + "/devstoreaccount1"
	pretty := "{\n  \"PartitionKey\": \"p\",\n  \"RowKey\": \"pretty\",\n  \"Note\": \"--changeset_c1 inside a string\"\n}"
	cases := []struct {
		name string
		eol  string
		ops  []batchOp
	}{
		{"absolute path-style URLs, CRLF", "\r\n", []batchOp{insertOp(base+"/fmt", "abs")}},
		{"LF line endings", "\n", []batchOp{insertOp(base+"/fmt", "lf")}},
		{"URL relative to the account", "\r\n", []batchOp{insertOp("/devstoreaccount1/fmt", "rel")}},
		{"host-style URL", "\r\n", []batchOp{insertOp("http://devstoreaccount1.table.localhost/fmt", "hoststyle")}},
		{"lower-case headers and pretty JSON", "\r\n", []batchOp{{"POST", base + "/fmt", []string{"content-type: application/json", "prefer: return-no-content"}, pretty}}},
		{"tunnelled MERGE and a DELETE", "\r\n", []batchOp{
			{"POST", base + "/fmt(PartitionKey='p',RowKey='abs')", []string{"X-HTTP-Method: MERGE", "If-Match: *", "Content-Type: application/json"}, `{"Extra":1}`},
			{"DELETE", base + "/fmt(PartitionKey='p',RowKey='lf')", []string{"If-Match: *"}, ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.t = t
			status, body, _ := s.batch(tc.ops, tc.eol)
			if status != 202 || strings.Contains(body, "odata.error") {
				t.Fatalf("%d %s", status, body)
			}
			if n := strings.Count(body, "HTTP/1.1 20"); n != len(tc.ops) {
				t.Fatalf("%d successful sub-responses for %d operations: %s", n, len(tc.ops), body)
			}
		})
	}
	s.t = t
	if got := s.rowKeys("fmt"); got != "abs,hoststyle,pretty,rel" {
		t.Fatalf("stored %s", got)
	}
}

func TestBatchInsertEchoesEntityUnlessToldNotTo(t *testing.T) {
	s := newRawServer(t)
	s.createTable("echo")
	status, body, _ := s.batch([]batchOp{
		{"POST", s.srv.URL + "/devstoreaccount1/echo", []string{"Content-Type: application/json", "Accept: application/json;odata=minimalmetadata"}, `{"PartitionKey":"p","RowKey":"1","V":2.0}`},
		insertOp(s.srv.URL+"/devstoreaccount1/echo", "2"),
	}, "\r\n")
	if status != 202 || !strings.Contains(body, "HTTP/1.1 201 Created") || !strings.Contains(body, `"V":2.0`) ||
		!strings.Contains(body, "HTTP/1.1 204 No Content") || !strings.Contains(body, "Preference-Applied: return-no-content") {
		t.Fatalf("%d %s", status, body)
	}
}

// TestBatchRulesRejectWholeChangeset checks each entity-group-transaction rule: the failure
// is reported with Azure's status and code, and nothing of the batch is applied.
func TestBatchRulesRejectWholeChangeset(t *testing.T) {
	s := newRawServer(t)
	s.createTable("rules")
	s.createTable("other")
	if resp := s.do("POST", "/rules", nil, `{"PartitionKey":"p","RowKey":"existing"}`); resp.StatusCode != 201 {
		t.Fatal(resp.StatusCode)
	}
	base := s.srv.URL + "/devstoreaccount1"
	many := func(n int) []batchOp {
		var ops []batchOp
		for i := range n {
			ops = append(ops, insertOp(base+"/rules", fmt.Sprintf("m%03d", i)))
		}
		return ops
	}
	cases := []struct {
		name   string
		ops    []batchOp
		status string // sub-response status line
		code   string
		index  int
	}{
		{"101 operations", many(101), "400 Bad Request", "InvalidInput", 0},
		{"two partitions", []batchOp{insertOp(base+"/rules", "a"), {"POST", base + "/rules", []string{"Content-Type: application/json"}, `{"PartitionKey":"q","RowKey":"b"}`}}, "400 Bad Request", "CommandsInBatchActOnDifferentPartitions", 1},
		{"one entity twice", []batchOp{insertOp(base+"/rules", "a"), insertOp(base+"/rules", "a")}, "400 Bad Request", "InvalidDuplicateRow", 1},
		{"two tables", []batchOp{insertOp(base+"/rules", "a"), insertOp(base+"/other", "b")}, "400 Bad Request", "InvalidInput", 1},
		{"missing table", []batchOp{insertOp(base+"/nosuch", "a")}, "404 Not Found", "TableNotFound", 0},
		{"insert of an existing entity", []batchOp{insertOp(base+"/rules", "a"), insertOp(base+"/rules", "existing")}, "409 Conflict", "EntityAlreadyExists", 1},
		{"stale ETag", []batchOp{insertOp(base+"/rules", "a"), {"DELETE", base + "/rules(PartitionKey='p',RowKey='existing')", []string{`If-Match: W/"datetime'2001-01-01T00%3A00%3A00.0000000Z'"`}, ""}}, "412 Precondition Failed", "UpdateConditionNotSatisfied", 1},
		{"invalid entity in the middle", []batchOp{insertOp(base+"/rules", "a"), {"POST", base + "/rules", []string{"Content-Type: application/json"}, `{"PartitionKey":"p","RowKey":"b","1bad":1}`}, insertOp(base+"/rules", "c")}, "400 Bad Request", "PropertyNameInvalid", 1},
		{"malformed JSON", []batchOp{insertOp(base+"/rules", "a"), {"POST", base + "/rules", []string{"Content-Type: application/json"}, `{"PartitionKey":`}}, "400 Bad Request", "InvalidInput", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.t = t
			status, body, header := s.batch(tc.ops, "\r\n")
			if status != 202 {
				t.Fatalf("status %d, want 202: %s", status, body)
			}
			if !strings.Contains(body, "HTTP/1.1 "+tc.status) || !strings.Contains(body, `"code":"`+tc.code+`"`) ||
				!strings.Contains(body, fmt.Sprintf(`"value":"%d:`, tc.index)) || header.Get("x-ms-error-code") != tc.code {
				t.Fatalf("want %s %s at index %d, got %s", tc.status, tc.code, tc.index, body)
			}
			if got := s.rowKeys("rules"); got != "existing" {
				t.Fatalf("a rejected batch left %s", got)
			}
		})
	}
}

func TestBatchTopLevelFailures(t *testing.T) {
	s := newRawServer(t)
	s.createTable("top")
	huge := strings.Repeat("x", 30000)
	var ops []batchOp
	for i := range 100 { // 100 × ~60 KB > 4 MiB
		ops = append(ops, batchOp{"POST", "/devstoreaccount1/top", []string{"Content-Type: application/json"},
			fmt.Sprintf(`{"PartitionKey":"p","RowKey":"%d","S":"%s","T":"%s"}`, i, huge, huge)})
	}
	ct, body := buildBatch(ops, "\r\n")
	resp := s.do("POST", "/$batch", map[string]string{"Content-Type": ct}, body)
	if resp.StatusCode != 413 || errorCode(t, resp) != "RequestBodyTooLarge" {
		t.Fatalf("oversized batch: %d", resp.StatusCode)
	}
	resp = s.do("POST", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_b1"}, "--batch_b1\r\nnonsense")
	if resp.StatusCode != 400 || errorCode(t, resp) != "InvalidInput" {
		t.Fatalf("malformed batch: %d", resp.StatusCode)
	}
	resp = s.do("POST", "/$batch", map[string]string{"Content-Type": "application/json"}, "{}")
	if resp.StatusCode != 400 {
		t.Fatalf("non-multipart batch: %d", resp.StatusCode)
	}
	if got := s.rowKeys("top"); got != "" {
		t.Fatalf("a rejected batch left %s", got)
	}
}

func TestBatchQueryOperation(t *testing.T) {
	s := newRawServer(t)
	s.createTable("bquery")
	s.do("POST", "/bquery", nil, `{"PartitionKey":"p","RowKey":"r","V":1}`)
	var b strings.Builder
	b.WriteString("--batch_q\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	b.WriteString("GET " + s.srv.URL + "/devstoreaccount1/bquery(PartitionKey='p',RowKey='r') HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n\r\n")
	b.WriteString("--batch_q--\r\n")
	resp := s.do("POST", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_q"}, b.String())
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 202 || !strings.Contains(string(body), "HTTP/1.1 200 OK") || !strings.Contains(string(body), `"V":1`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// TestConcurrentBatchesAndWritesSerialise runs conflicting batches and single writes on one
// partition at once: every batch is applied whole or not at all, and counters incremented
// under If-Match end exact.
func TestConcurrentBatchesAndWritesSerialise(t *testing.T) {
	s := newRawServer(t)
	s.createTable("conc")
	base := s.srv.URL + "/devstoreaccount1/conc"
	const writers, rounds = 6, 15
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				// Each batch upserts the shared entities g0..g4 with its own tag and inserts
				// one entity of its own; the shared ones make every pair of batches conflict.
				tag := fmt.Sprintf("w%d-r%d", w, r)
				var ops []batchOp
				for g := range 5 {
					ops = append(ops, batchOp{"PUT", fmt.Sprintf("%s(PartitionKey='p',RowKey='g%d')", base, g), []string{"Content-Type: application/json"}, `{"Tag":"` + tag + `"}`})
				}
				ops = append(ops, insertOp(base, tag))
				ct, body := buildBatch(ops, "\r\n")
				resp := s.do("POST", "/$batch", map[string]string{"Content-Type": ct}, body)
				out, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 202 || strings.Contains(string(out), "odata.error") {
					t.Errorf("batch %s: %d %s", tag, resp.StatusCode, out)
					return
				}
				mu.Lock()
				applied++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	resp := s.do("GET", "/conc()", map[string]string{"Accept": "application/json;odata=nometadata"}, "")
	var page struct{ Value []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	own := 0
	for _, e := range page.Value {
		if rk := e["RowKey"].(string); strings.HasPrefix(rk, "g") {
			tags[e["Tag"].(string)] = true
		} else {
			own++
		}
	}
	// The five shared entities must all carry the tag of one batch: the last one applied.
	if len(tags) != 1 || own != applied || applied != writers*rounds {
		t.Fatalf("shared entities carry tags %v; %d own entities for %d applied batches", tags, own, applied)
	}
}

func TestBatchQueryFailureCarriesTheOperationIndex(t *testing.T) {
	s := newRawServer(t)
	s.createTable("bqmiss")
	var b strings.Builder
	b.WriteString("--batch_q\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	b.WriteString("GET " + s.srv.URL + "/devstoreaccount1/bqmiss(PartitionKey='p',RowKey='none') HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n\r\n")
	b.WriteString("--batch_q--\r\n")
	resp := s.do("POST", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_q"}, b.String())
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 202 || !strings.Contains(string(body), "HTTP/1.1 404 Not Found") ||
		!strings.Contains(string(body), `"code":"ResourceNotFound","message":{"lang":"en-US","value":"0:The specified resource does not exist.\nRequestId:`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
