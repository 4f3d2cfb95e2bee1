package batchwire

import (
	"bytes"
	"errors"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"reflect"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// changesetBody builds a $batch body the way every SDK lays it out, with nl as line end, one
// insert per entity. It returns the outer Content-Type too.
func changesetBody(nl string, entities []string) (string, []byte) {
	var b strings.Builder
	b.WriteString("--batch_b" + nl + "Content-Type: multipart/mixed; boundary=changeset_c" + nl + nl)
	for _, e := range entities {
		b.WriteString("--changeset_c" + nl +
			"Content-Type: application/http" + nl +
			"Content-Transfer-Encoding: binary" + nl + nl +
			"POST https://acct.table.core.windows.net/t HTTP/1.1" + nl +
			"Accept: application/json;odata=minimalmetadata" + nl +
			"Content-Type: application/json" + nl +
			fmt.Sprintf("Content-Length: %d", len(e)) + nl +
			"DataServiceVersion: 3.0" + nl +
			"Prefer: return-no-content" + nl + nl +
			e + nl)
	}
	b.WriteString("--changeset_c--" + nl + nl + "--batch_b--" + nl)
	return "multipart/mixed; boundary=batch_b", []byte(b.String())
}

func entities(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		e := fmt.Sprintf(`{"PartitionKey":"p","RowKey":"%04d","Data":"`, i)
		out[i] = e + strings.Repeat("x", max(0, size-len(e)-2)) + `"}`
	}
	return out
}

func TestDecodeAcceptsHundredOperationsAndReportsTheHundredAndFirstAtIndexZero(t *testing.T) {
	ct, body := changesetBody("\r\n", entities(100, 64))
	req, err := Decode(ct, body, 0)
	if err != nil {
		t.Fatalf("100 operations: %v", err)
	}
	if len(req.Changeset) != 100 || req.Changeset[99].Body == nil {
		t.Fatalf("got %d operations", len(req.Changeset))
	}

	ct, body = changesetBody("\r\n", entities(101, 64))
	req, err = Decode(ct, body, 0)
	if req != nil {
		t.Errorf("got a request with %d operations alongside the error", len(req.Changeset))
	}
	var ce *ChangesetError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *ChangesetError, got %T %v", err, err)
	}
	want := "The batch request operation exceeds the maximum 100 changes per change set."
	if ce.Index != 0 || ce.Err.Status != 400 || ce.Err.Code != azerr.InvalidInput || ce.Err.Message != want {
		t.Errorf("got index %d, %v", ce.Index, ce.Err)
	}
	if e := azerr.As(err); e != ce.Err {
		t.Errorf("azerr.As does not unwrap to the same error: %v", e)
	}
}

func TestDecodeRejectsBodiesOverFourMiBAsRequestBodyTooLarge(t *testing.T) {
	ct, body := changesetBody("\r\n", entities(5, MaxBodySize/5+1))
	_, err := Decode(ct, body, 0)
	var e *azerr.Error
	if !errors.As(err, &e) || e.Status != 413 || e.Code != azerr.RequestBodyTooLarge {
		t.Fatalf("%d bytes: got %v", len(body), err)
	}

	// At the limit exactly, size is not the objection.
	body = append(body[:0:0], body[:MaxBodySize]...)
	if _, err := Decode(ct, body, 0); errors.As(err, &e) && e.Code == azerr.RequestBodyTooLarge {
		t.Errorf("%d bytes rejected as too large", len(body))
	}
}

func TestDecodeGivesSameResultForLFAndCRLF(t *testing.T) {
	es := entities(3, 100)
	es[1] = "{\n  \"PartitionKey\": \"p\",\n  \"RowKey\": \"pretty\"\n}"
	ct, crlf := changesetBody("\r\n", es)
	_, lf := changesetBody("\n", es)
	a, err := Decode(ct, crlf, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(ct, lf, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The pretty-printed body keeps its own line ends; everything else is identical.
	a.Changeset[1].Body = bytes.ReplaceAll(a.Changeset[1].Body, []byte("\r\n"), []byte("\n"))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("CRLF and LF decode differently:\n%+v\n%+v", a, b)
	}
}

// The Go SDK builds its body with mime/multipart.Writer (random boundaries, Content-Transfer-Encoding
// first, request headers sorted); so does any Go client.
func TestDecodeReadsMultipartWriterOutput(t *testing.T) {
	var cs bytes.Buffer
	w := multipart.NewWriter(&cs)
	for _, op := range []string{
		"POST https://acct.table.core.windows.net/t?%24format=application%2Fjson%3Bodata%3Dminimalmetadata HTTP/1.1\r\nPrefer: return-no-content\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}",
		"PATCH https://acct.table.core.windows.net/t(PartitionKey='p',RowKey='2') HTTP/1.1\r\nIf-Match: *\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"2\"}",
		"DELETE https://acct.table.core.windows.net/t(PartitionKey='p',RowKey='3') HTTP/1.1\r\nIf-Match: *\r\n\r\n",
	} {
		h := textproto.MIMEHeader{}
		h.Set("Content-Transfer-Encoding", "binary")
		h.Set("Content-Type", "application/http")
		pw, _ := w.CreatePart(h)
		pw.Write([]byte(op))
	}
	w.Close()

	var batch bytes.Buffer
	bw := multipart.NewWriter(&batch)
	h := textproto.MIMEHeader{}
	h.Set("Content-Type", "multipart/mixed; boundary="+w.Boundary())
	pw, _ := bw.CreatePart(h)
	pw.Write(cs.Bytes())
	bw.Close()

	req, err := Decode(bw.FormDataContentType(), batch.Bytes(), 0)
	if err == nil {
		t.Fatalf("multipart/form-data accepted: %+v", req)
	}
	req, err = Decode("multipart/mixed; boundary="+bw.Boundary(), batch.Bytes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range req.Changeset {
		got = append(got, fmt.Sprintf("%s %s %q", p.Method, p.URL.Path, p.Body))
	}
	want := []string{
		`POST /t "{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}"`,
		`PATCH /t(PartitionKey='p',RowKey='2') "{\"PartitionKey\":\"p\",\"RowKey\":\"2\"}"`,
		`DELETE /t(PartitionKey='p',RowKey='3') ""`,
	}
	if !reflect.DeepEqual(got, want) || req.ChangesetBoundary != w.Boundary() {
		t.Errorf("got %q (boundary %q)", got, req.ChangesetBoundary)
	}
}

func TestDecodeAcceptsDataServiceStyleRequestTargets(t *testing.T) {
	for target, wantPath := range map[string]string{
		"https://myaccount.table.core.windows.net/mytable": "/mytable",
		"http://127.0.0.1:10002/devstoreaccount1/mytable":  "/devstoreaccount1/mytable",
		"/mytable":                            "/mytable",
		"mytable":                             "mytable",
		"/t(PartitionKey='a%23b',RowKey='c')": "/t(PartitionKey='a#b',RowKey='c')",
		"/t(PartitionKey='a#b',RowKey='c')":   "/t(PartitionKey='a#b',RowKey='c')",
	} {
		body := "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\n\r\n" +
			"POST " + target + " HTTP/1.1\r\n\r\n{}\r\n--c--\r\n--b--\r\n"
		req, err := Decode("multipart/mixed; boundary=b", []byte(body), 0)
		if err != nil {
			t.Errorf("%s: %v", target, err)
			continue
		}
		if p := req.Changeset[0]; p.RawTarget != target || p.URL.Path != wantPath {
			t.Errorf("%s: raw %q path %q, want %q", target, p.RawTarget, p.URL.Path, wantPath)
		}
	}
}
