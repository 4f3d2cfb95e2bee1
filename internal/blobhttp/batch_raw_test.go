package blobhttp_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
)

// signedSubRequest writes one batch sub-request signed with the development account's key the
// way SDKs sign them: over "/" + account + the path exactly as written in its request line,
// with no x-ms-version.
func signedSubRequest(method, target string, header map[string]string) string {
	dev := auth.DevelopmentAccount()
	path, rawQuery, _ := strings.Cut(target, "?")
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	h := map[string]string{"x-ms-date": time.Now().UTC().Format(http.TimeFormat)}
	for k, v := range header {
		h[strings.ToLower(k)] = v
	}
	var names []string
	for k := range h {
		if strings.HasPrefix(k, "x-ms-") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var canon strings.Builder
	for _, k := range names {
		canon.WriteString(k + ":" + h[k] + "\n")
	}
	resource := "/" + dev.Name + path
	q, _ := url.ParseQuery(rawQuery)
	var keys []string
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		resource += "\n" + strings.ToLower(k) + ":" + strings.Join(q[k], ",")
	}
	toSign := method + "\n\n\n\n\n\n\n\n" + h["if-match"] + "\n" + h["if-none-match"] + "\n\n\n" + canon.String() + resource
	mac := hmac.New(sha256.New, dev.Keys[0])
	mac.Write([]byte(toSign))
	h["authorization"] = "SharedKey " + dev.Name + ":" + base64.StdEncoding.EncodeToString(mac.Sum(nil))

	var b strings.Builder
	b.WriteString(method + " " + target + " HTTP/1.1\r\n")
	for k, v := range h {
		b.WriteString(k + ": " + v + "\r\n")
	}
	b.WriteString("Content-Length: 0\r\n\r\n")
	return b.String()
}

// batchBody frames sub-requests as SDKs do: each an application/http part with a Content-ID.
func batchBody(boundary string, subs ...string) string {
	var b strings.Builder
	for i, s := range subs {
		fmt.Fprintf(&b, "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: %d\r\n\r\n%s", boundary, i, s)
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.String()
}

func (r *raw) batch(path, boundary, body string) (resp *http.Response, respBody string) {
	r.e.Helper()
	resp = r.do(http.MethodPost, path, map[string]string{"Content-Type": "multipart/mixed; boundary=" + boundary}, strings.NewReader(body))
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.e.Fatal(err)
	}
	return resp, string(b)
}

var responseBoundary = regexp.MustCompile(`^multipart/mixed; boundary=(batchresponse_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)

// batchParts checks the response's framing, byte for byte where SDKs depend on it, and
// returns its parts (what lies between the delimiters).
func batchParts(t *testing.T, resp *http.Response, body string) []string {
	t.Helper()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, want 202: %s", resp.StatusCode, body)
	}
	m := responseBoundary.FindStringSubmatch(resp.Header.Get("Content-Type"))
	if m == nil {
		t.Fatalf("Content-Type %q is not multipart/mixed; boundary=batchresponse_<uuid>", resp.Header.Get("Content-Type"))
	}
	delim := "--" + m[1]
	if !strings.HasPrefix(body, delim+"\r\n") || !strings.HasSuffix(body, "\r\n"+delim+"--") {
		t.Fatalf("the body does not start with %q and end with %q (nothing after): %q", delim, delim+"--", body)
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(body, delim+"\r\n"), "\r\n"+delim+"--")
	return strings.Split(inner, "\r\n"+delim+"\r\n")
}

// TestRawBatchResponseLayout sends sub-requests in the path forms the SDKs write against a
// path-style endpoint (Go and JS "/account/c/b", Python "/c/b?", .NET "account/c/b"), each
// signed over what it wrote, and checks the response's bytes: parts in request order with
// their Content-ID, Azure's status lines (the error message as the reason) and headers, the
// error document after a blank line.
func TestRawBatchResponseLayout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		c := e.container("layout")
		for _, name := range []string{"b1", "b2", "b3", "dir/b4"} {
			if _, err := c.NewBlockBlobClient(name).UploadBuffer(e.Context(), []byte(name), nil); err != nil {
				t.Fatal(err)
			}
		}
		r := newRaw(e)
		body := batchBody("batch_7f1c",
			signedSubRequest("DELETE", "/devstoreaccount1/layout/b1", nil),
			signedSubRequest("DELETE", "/layout/b2?", map[string]string{"x-ms-client-request-id": "sub-2"}),
			signedSubRequest("DELETE", "devstoreaccount1/layout/b3", nil),
			signedSubRequest("DELETE", "/devstoreaccount1/layout/dir%2Fb4", nil),
			signedSubRequest("DELETE", "/devstoreaccount1/layout/gone", nil),
		)
		resp, respBody := r.batch("?comp=batch", "batch_7f1c", body)
		parts := batchParts(t, resp, respBody)
		if len(parts) != 5 {
			t.Fatalf("%d parts, want 5: %q", len(parts), respBody)
		}
		ok := regexp.MustCompile(`^Content-Type: application/http\r\nContent-ID: (\d)\r\n\r\nHTTP/1\.1 202 Accepted\r\nx-ms-delete-type-permanent: true\r\nx-ms-request-id: [0-9a-f-]{36}\r\nx-ms-version: 2025-01-05\r\n(x-ms-client-request-id: sub-2\r\n)?Server: \S+\r\n$`)
		for i, p := range parts[:4] {
			m := ok.FindStringSubmatch(p)
			if m == nil || m[1] != fmt.Sprint(i) || (i == 1) != (m[2] != "") {
				t.Errorf("part %d:\n%q", i, p)
			}
		}
		failed := regexp.MustCompile(`^Content-Type: application/http\r\nContent-ID: 4\r\n\r\nHTTP/1\.1 404 The specified blob does not exist\.\r\nx-ms-error-code: BlobNotFound\r\nx-ms-request-id: [0-9a-f-]{36}\r\nx-ms-version: 2025-01-05\r\nContent-Length: (\d+)\r\nContent-Type: application/xml\r\nServer: \S+\r\n\r\n(\x{feff}<\?xml (?s:.*)</Error>)$`)
		m := failed.FindStringSubmatch(parts[4])
		if m == nil || m[1] != fmt.Sprint(len(m[2])) {
			t.Errorf("failed part:\n%q", parts[4])
		}
		pager := c.NewListBlobsFlatPager(nil)
		page, err := pager.NextPage(e.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(page.Segment.BlobItems); n != 0 {
			t.Errorf("%d blobs left, want none", n)
		}
	})
}

// TestRawBatchRefusals: what is wrong with a batch as a whole is answered, as Azure does, by
// 202 and a single part without Content-ID holding the error, with the batch's own request id;
// nothing of such a batch runs. A sub-request whose signature does not verify fails alone.
func TestRawBatchRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		c := e.container("refusals")
		if _, err := c.NewBlockBlobClient("b").UploadBuffer(e.Context(), []byte("b"), nil); err != nil {
			t.Fatal(err)
		}
		del := signedSubRequest("DELETE", "/devstoreaccount1/refusals/b", nil)
		tier := signedSubRequest("PUT", "/devstoreaccount1/refusals/b?comp=tier", map[string]string{"x-ms-access-tier": "Cool"})
		many := make([]string, 257)
		for i := range many {
			many[i] = del
		}
		for _, tc := range []struct {
			name, path, body string
			status           int
			code             string
		}{
			{"no sub-request", "?comp=batch", "--b--\r\n", 400, "InvalidInput"},
			{"257 sub-requests", "?comp=batch", batchBody("b", many...), 400, "ExceedsMaxBatchRequestCount"},
			{"delete and set tier", "?comp=batch", batchBody("b", del, tier), 400, "AllBatchSubRequestsShouldBeSameApi"},
			{"another operation", "?comp=batch", batchBody("b", del, signedSubRequest("GET", "/devstoreaccount1/refusals/b", nil)), 400, "InvalidInput"},
			{"outside the container", "/elsewhere?restype=container&comp=batch", batchBody("b", del), 400, "InvalidInput"},
			{"no close delimiter", "?comp=batch", strings.TrimSuffix(batchBody("b", del), "--b--\r\n"), 400, "InvalidInput"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := newRaw(e).batch(tc.path, "b", tc.body)
				parts := batchParts(t, resp, body)
				want := regexp.MustCompile(`^Content-Type: application/http\r\n\r\nHTTP/1\.1 ` + fmt.Sprint(tc.status) + ` [^\r\n]+\r\nx-ms-error-code: ` + tc.code + `\r\nx-ms-request-id: ` + regexp.QuoteMeta(resp.Header.Get("x-ms-request-id")) + `\r\n`)
				if len(parts) != 1 || !want.MatchString(parts[0]) {
					t.Fatalf("parts: %q", parts)
				}
				if _, err := c.NewBlobClient("b").GetProperties(e.Context(), nil); err != nil {
					t.Fatalf("the refused batch deleted the blob: %v", err)
				}
			})
		}

		forged := strings.Replace(del, "SharedKey devstoreaccount1:", "SharedKey devstoreaccount1:AA", 1)
		resp, body := newRaw(e).batch("?comp=batch", "b", batchBody("b", forged))
		parts := batchParts(t, resp, body)
		if len(parts) != 1 || !strings.Contains(parts[0], "HTTP/1.1 403 ") || !strings.Contains(parts[0], "x-ms-error-code: AuthenticationFailed\r\n") {
			t.Fatalf("forged sub-request: %q", parts)
		}
		if _, err := c.NewBlobClient("b").GetProperties(e.Context(), nil); err != nil {
			t.Fatalf("a forged sub-request deleted the blob: %v", err)
		}

		big := "--b\r\nContent-Type: application/http\r\n\r\n" + strings.Repeat("x", 4<<20) + "\r\n--b--"
		resp = newRaw(e).do(http.MethodPost, "?comp=batch", map[string]string{"Content-Type": "multipart/mixed; boundary=b"}, strings.NewReader(big))
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("x-ms-error-code") != "RequestBodyTooLarge" {
			t.Fatalf("a body over 4 MiB: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	})
}
