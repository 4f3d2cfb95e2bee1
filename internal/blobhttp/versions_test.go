package blobhttp_test

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// headersOnly sends a request's header block with a Content-Length but no body, and reads
// the answer: what a server that judges the length before the body must answer.
func headersOnly(t *testing.T, e *env, sas, method, path string, length int64, header map[string]string) *http.Response {
	t.Helper()
	u, err := url.Parse(e.url + path + "?" + sas)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(path, "?") {
		u, _ = url.Parse(e.url + path + "&" + sas)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", method, u.RequestURI(), u.Host, length)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

// The version gates of blob.md §2.1 that SDKs told to send older versions observe: body
// limits, paged page ranges, and Find Blobs by Tags of a container.
func TestVersionGates(t *testing.T) {
	e := newEnv(t, backends[0].open(t))
	e.container("gates")
	r := newRaw(e)
	tooLarge := func(resp *http.Response, limit string) {
		t.Helper()
		var doc struct{ Code, MaxLimit string }
		body, _ := io.ReadAll(resp.Body)
		_ = xml.Unmarshal(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), &doc)
		if resp.StatusCode != 413 || doc.Code != "RequestBodyTooLarge" || doc.MaxLimit != limit {
			t.Fatalf("%d %s MaxLimit %q, want 413 RequestBodyTooLarge %s", resp.StatusCode, doc.Code, doc.MaxLimit, limit)
		}
	}
	blockBlob := map[string]string{"x-ms-blob-type": "BlockBlob", "x-ms-version": "2019-07-07"}
	tooLarge(headersOnly(t, e, r.sas, "PUT", "/gates/big", 256<<20+1, blockBlob), "268435456")
	blockBlob["x-ms-version"] = "2015-12-11"
	tooLarge(headersOnly(t, e, r.sas, "PUT", "/gates/big", 64<<20+1, blockBlob), "67108864")
	tooLarge(headersOnly(t, e, r.sas, "PUT", "/gates/big?comp=block&blockid=AAAA", 100<<20+1, map[string]string{"x-ms-version": "2019-07-07"}), "104857600")

	if resp := r.do("PUT", "/gates/log", map[string]string{"x-ms-blob-type": "AppendBlob"}, nil); resp.StatusCode != 201 {
		t.Fatalf("create append blob: %d", resp.StatusCode)
	}
	block := bytes.Repeat([]byte{'x'}, 4<<20+1)
	tooLarge(r.do("PUT", "/gates/log?comp=appendblock", map[string]string{"x-ms-version": "2022-11-01"}, bytes.NewReader(block)), "4194304")
	if resp := r.do("PUT", "/gates/log?comp=appendblock", map[string]string{"x-ms-version": "2022-11-02"}, bytes.NewReader(block)); resp.StatusCode != 201 {
		t.Fatalf("a 4 MiB + 1 append at 2022-11-02: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	}

	if resp := r.do("PUT", "/gates/disk", map[string]string{"x-ms-blob-type": "PageBlob", "x-ms-blob-content-length": "4096"}, nil); resp.StatusCode != 201 {
		t.Fatalf("create page blob: %d", resp.StatusCode)
	}
	for _, at := range []string{"0-511", "1024-1535"} {
		if resp := r.do("PUT", "/gates/disk?comp=page", map[string]string{"x-ms-page-write": "update", "x-ms-range": "bytes=" + at}, bytes.NewReader(make([]byte, 512))); resp.StatusCode != 201 {
			t.Fatalf("put page: %d", resp.StatusCode)
		}
	}
	ranges := func(version string) (n int, next string) {
		t.Helper()
		resp := r.do("GET", "/gates/disk?comp=pagelist&maxresults=1", map[string]string{"x-ms-version": version}, nil)
		var doc struct {
			Ranges     []struct{ Start int } `xml:"PageRange"`
			NextMarker string
		}
		body, _ := io.ReadAll(resp.Body)
		if err := xml.Unmarshal(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), &doc); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %v: %s", resp.StatusCode, err, body)
		}
		return len(doc.Ranges), doc.NextMarker
	}
	if n, next := ranges("2020-08-04"); n != 2 || next != "" {
		t.Errorf("page ranges at 2020-08-04: %d ranges, marker %q; want all 2 and none", n, next)
	}
	// Before paging there is no NextMarker element at all: the legacy Python library reads
	// every child of PageList as a range.
	if body, _ := io.ReadAll(r.do("GET", "/gates/disk?comp=pagelist", map[string]string{"x-ms-version": "2018-11-09"}, nil).Body); bytes.Contains(body, []byte("NextMarker")) {
		t.Errorf("page ranges at 2018-11-09: %s", body)
	}
	// A diff lists written and cleared ranges by offset, interleaved, as the service does.
	snap := r.do("PUT", "/gates/disk?comp=snapshot", nil, nil).Header.Get("x-ms-snapshot")
	r.do("PUT", "/gates/disk?comp=page", map[string]string{"x-ms-page-write": "clear", "x-ms-range": "bytes=0-511"}, nil)
	r.do("PUT", "/gates/disk?comp=page", map[string]string{"x-ms-page-write": "update", "x-ms-range": "bytes=2048-2559"}, bytes.NewReader(make([]byte, 512)))
	body, _ := io.ReadAll(r.do("GET", "/gates/disk?comp=pagelist&prevsnapshot="+url.QueryEscape(snap), map[string]string{"x-ms-version": "2018-11-09"}, nil).Body)
	if want := "<PageList><ClearRange><Start>0</Start><End>511</End></ClearRange><PageRange><Start>2048</Start><End>2559</End></PageRange></PageList>"; !bytes.HasSuffix(body, []byte(want)) {
		t.Errorf("page range diff %s, want it to end %s", body, want)
	}
	if n, next := ranges("2020-10-02"); n != 1 || next == "" {
		t.Errorf("page ranges at 2020-10-02: %d ranges, marker %q; want 1 and a marker", n, next)
	}

	find := func(version string) *http.Response {
		return r.do("GET", "/gates?restype=container&comp=blobs&where="+url.QueryEscape(`"k"='v'`), map[string]string{"x-ms-version": version}, nil)
	}
	if resp := find("2021-02-12"); resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidQueryParameterValue" {
		t.Errorf("Find Blobs by Tags of a container at 2021-02-12: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	}
	if resp := find("2021-04-10"); resp.StatusCode != 200 {
		t.Errorf("Find Blobs by Tags of a container at 2021-04-10: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	}
}
