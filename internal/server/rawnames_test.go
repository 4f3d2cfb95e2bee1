package server

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// A connection's stream of three pipelined requests: a Content-Length body and a chunked one
// that carry header-like text (which must not be taken for headers), a long request line, a
// folded line and a bare LF.
func pipelinedStream() (string, [][]string) {
	longTarget := "/devstoreaccount1/c/b?sig=" + strings.Repeat("A", 3000)
	body1 := "x-ms-meta-Evil: 1\r\n\r\nGET /x HTTP/1.1\r\nx-ms-meta-Worse: 2\r\n\r\n"
	chunk := "x-ms-meta-InChunk: 3\r\n"
	stream := "PUT /devstoreaccount1/c/b HTTP/1.1\r\n" +
		"Host: h\r\n" +
		"x-ms-meta-Author: a\r\n" +
		"X-MS-META-lower: b\r\n" +
		"Content-Length: " + strconv.Itoa(len(body1)) + "\r\n" +
		"\r\n" + body1 +
		"PUT /devstoreaccount1/c/b2?comp=metadata HTTP/1.1\r\n" +
		"Host: h\r\n" +
		"Transfer-Encoding: chunked\r\n" +
		"x-ms-meta-Chunked: c\r\n" +
		"X-Folded: a\r\n  b\r\n" +
		"\r\n" +
		"16;ext=1\r\n" + chunk + "\r\n0\r\nTrailer: t\r\n\r\n" +
		"GET " + longTarget + " HTTP/1.1\n" +
		"Host: h\n" +
		"x-ms-meta-Long: d\n" +
		"\n"
	return stream, [][]string{{"x-ms-meta-Author", "X-MS-META-lower"}, {"x-ms-meta-Chunked"}, {"x-ms-meta-Long"}}
}

// TestMetaNameScannerFollowsTheFraming feeds the stream whole, a byte at a time and in odd
// pieces, and checks each request's note against what net/http itself parses.
func TestMetaNameScannerFollowsTheFraming(t *testing.T) {
	stream, want := pipelinedStream()
	for _, piece := range []int{len(stream), 1, 7, 1000} {
		var s metaNameScanner
		for rest := stream; rest != ""; {
			n := min(piece, len(rest))
			s.feed([]byte(rest[:n]))
			rest = rest[n:]
		}
		br := bufio.NewReader(strings.NewReader(stream))
		for i := range want {
			r, err := http.ReadRequest(br)
			if err != nil {
				t.Fatalf("piece %d: request %d: %v", piece, i, err)
			}
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				t.Fatal(err)
			}
			got := s.take(r)
			if !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("piece %d: request %d (%s %.40s): names %q, want %q", piece, i, r.Method, r.RequestURI, got, want[i])
			}
		}
		if s.state != scanRequestLine || len(s.notes) != 0 {
			t.Fatalf("piece %d: state %d with %d notes left", piece, s.state, len(s.notes))
		}
	}
}

// A request the scanner has no note for (here: one it never saw) stops it for good, and it
// hands out nothing after.
func TestMetaNameScannerStopsWhenLost(t *testing.T) {
	var s metaNameScanner
	s.feed([]byte("PUT /a HTTP/1.1\r\nx-ms-meta-A: 1\r\n\r\n"))
	other, _ := http.NewRequest("PUT", "http://h/b", nil)
	other.RequestURI = "/b"
	if got := s.take(other); got != nil {
		t.Fatalf("took %q for another request", got)
	}
	s.feed([]byte("PUT /c HTTP/1.1\r\nx-ms-meta-C: 1\r\n\r\n"))
	c, _ := http.NewRequest("PUT", "http://h/c", nil)
	c.RequestURI = "/c"
	if got := s.take(c); got != nil {
		t.Fatalf("a stopped scanner gave %q", got)
	}
}

func TestRenameMetaHeaders(t *testing.T) {
	r, _ := http.NewRequest("PUT", "http://h/", nil)
	r.Header.Add("x-ms-meta-author", "a")
	r.Header.Add("x-ms-meta-twice", "1")
	r.Header.Add("x-ms-meta-twice", "2")
	r.Header.Add("x-ms-meta-cases", "x")
	r.Header.Add("x-ms-meta-cases", "y")
	r.Header.Add("x-ms-meta-lost", "z")
	renameMetaHeaders(r, []string{"X-MS-META-Author", "x-ms-meta-Twice", "x-ms-meta-Twice", "x-ms-meta-CASES", "x-ms-meta-cases", "x-ms-meta-Lost", "x-ms-meta-Lost"})
	want := http.Header{
		"x-ms-meta-Author": {"a"},
		"x-ms-meta-Twice":  {"1", "2"},
		"x-ms-meta-CASES":  {"x"},
		"x-ms-meta-cases":  {"y"},
		"X-Ms-Meta-Lost":   {"z"}, // two names noted, one value: left as net/http made it
	}
	if !reflect.DeepEqual(r.Header, want) {
		t.Fatalf("headers %v, want %v", r.Header, want)
	}
}

// BenchmarkMetaNameScanner measures what following a connection costs a request: a point
// get's header block, fed as one read, and its note taken.
func BenchmarkMetaNameScanner(b *testing.B) {
	req := []byte("GET /devstoreaccount1/bench(PartitionKey='p042',RowKey='r000123') HTTP/1.1\r\n" +
		"Host: 127.0.0.1:10002\r\nUser-Agent: azsdk-go-aztables/v1.4.1 (go1.25; linux)\r\n" +
		"Accept: application/json;odata=minimalmetadata\r\nAuthorization: SharedKey devstoreaccount1:0123456789abcdefghijklmnopqrstuvwxyzABCDEFG=\r\n" +
		"Dataserviceversion: 3.0\r\nX-Ms-Date: Sun, 29 Nov 2026 05:00:00 GMT\r\nX-Ms-Version: 2019-02-02\r\nAccept-Encoding: gzip\r\n\r\n")
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(req)))
	if err != nil {
		b.Fatal(err)
	}
	var s metaNameScanner
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		s.feed(req)
		if s.take(r) != nil {
			b.Fatal("a note with names")
		}
	}
}

func TestMetaName(t *testing.T) {
	for key, want := range map[string]string{
		"x-ms-meta-Author": "Author", // renamed: the case as sent
		"X-Ms-Meta-Author": "author", // canonical: the case is unknown
		"X-Ms-Meta-":       "",       // an empty name, for the service to refuse
	} {
		if got, ok := MetaName(key); !ok || got != want {
			t.Errorf("MetaName(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	for _, key := range []string{"X-Ms-Version", "X-Ms-Met", "Content-Type"} {
		if _, ok := MetaName(key); ok {
			t.Errorf("MetaName(%q) took it for metadata", key)
		}
	}
}
