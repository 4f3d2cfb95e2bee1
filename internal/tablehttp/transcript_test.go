package tablehttp

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/edm"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
)

// Transcript files under testdata/transcripts replay HTTP exchanges against a fresh server per
// file, in the style of Pebble's datadriven tests:
//
//	request [crlf]
//	METHOD /path?query
//	Header: value
//	...
//	<blank line>
//	<body lines>
//	----
//	----
//	<status line, headers, blank line, body>
//	----
//	----
//
// The server hosts the account ciserversdk, the one the recorded exchanges were made with,
// and every request is sent host-style to ciserversdk.table.core.windows.net and signed with
// SharedKeyLite (the runner adds x-ms-date and Authorization), so the documents read as the
// real service's did. crlf turns the body's line ends into CRLF.
//
// The output is the status line, the response headers sorted by name (without Date, Server,
// Content-Length and the x-ms-request-id and x-ms-version echoes), a blank line and the body,
// with CRLF shown as a plain line end and what changes from run to run replaced by stable
// names: each entity Timestamp by T1, T2... in order of first appearance (in ETags,
// m:etag attributes, Timestamp properties and continuation-free text alike), <updated> and
// error times by NOW, request ids by REQUEST-ID, $batch boundaries by B and C.
//
// Run with -rewrite to regenerate the expected outputs after a deliberate change, then
// compare them with the recordings each file names.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ts := newTranscriptServer(t)
			datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
				if d.Cmd != "request" {
					t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
				}
				return ts.run(t, d)
			})
		})
	}
}

// transcriptHost is the host the recorded exchanges addressed.
const transcriptHost = "ciserversdk.table.core.windows.net"

type transcriptServer struct {
	srv   *httptest.Server
	key   []byte
	times map[edm.Ticks]string // Timestamp → its stable name
}

func newTranscriptServer(t *testing.T) *transcriptServer {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dev := auth.DevelopmentAccount()
	acct := auth.Account{Name: "ciserversdk", Keys: dev.Keys}
	srv := httptest.NewServer(New(table.New(st), auth.NewAuthenticator([]auth.Account{acct}), nil))
	t.Cleanup(srv.Close)
	return &transcriptServer{srv: srv, key: dev.Keys[0], times: map[edm.Ticks]string{}}
}

func (s *transcriptServer) run(t *testing.T, d *datadriven.TestData) string {
	head, body, _ := strings.Cut(d.Input, "\n\n")
	lines := strings.Split(head, "\n")
	method, target, ok := strings.Cut(lines[0], " ")
	if !ok {
		t.Fatalf("%s: the first line must be METHOD /path", d.Pos)
	}
	if d.HasArg("crlf") {
		body = strings.ReplaceAll(body, "\n", "\r\n")
	}
	req, err := http.NewRequest(method, s.srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = transcriptHost
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("%s: header line %q", d.Pos, l)
		}
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	resource := "/ciserversdk" + req.URL.EscapedPath()
	if comp := req.URL.Query().Get("comp"); comp != "" {
		resource += "?comp=" + comp
	}
	req.Header.Set("Authorization", "SharedKeyLite ciserversdk:"+auth.SignSharedKeyLite(s.key, date, resource))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	var names []string
	for k := range resp.Header {
		switch k {
		case "Date", "Server", "Content-Length", "X-Ms-Request-Id", "X-Ms-Version":
			continue
		}
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, s.normalize(v))
		}
	}
	b.WriteString("\n")
	b.WriteString(s.normalize(string(out)))
	return strings.TrimRight(b.String(), "\n") + "\n"
}

var (
	updatedRE  = regexp.MustCompile(`<updated>[0-9T:-]+Z</updated>`)
	errTimeRE  = regexp.MustCompile(`Time:[0-9T:.-]+Z`)
	requestRE  = regexp.MustCompile(`RequestId:[0-9a-f-]{36}`)
	boundaryRE = regexp.MustCompile(`(batchresponse|changesetresponse)_[0-9a-f-]{36}`)
	etagTimeRE = regexp.MustCompile(`datetime'([0-9T.:%A-]+Z)'`)
	stampRE    = regexp.MustCompile(`(<d:Timestamp m:type="Edm.DateTime">|"Timestamp":")([0-9T:.-]+Z)`)
)

// normalize replaces what changes from run to run by stable names.
func (s *transcriptServer) normalize(v string) string {
	v = strings.ReplaceAll(v, "\r\n", "\n")
	v = updatedRE.ReplaceAllString(v, "<updated>NOW</updated>")
	v = errTimeRE.ReplaceAllString(v, "Time:NOW")
	v = requestRE.ReplaceAllString(v, "RequestId:REQUEST-ID")
	v = boundaryRE.ReplaceAllStringFunc(v, func(m string) string {
		if strings.HasPrefix(m, "batch") {
			return "batchresponse_B"
		}
		return "changesetresponse_C"
	})
	v = etagTimeRE.ReplaceAllStringFunc(v, func(m string) string {
		stamp := etagTimeRE.FindStringSubmatch(m)[1]
		return "datetime'" + s.timeName(strings.ReplaceAll(stamp, "%3A", ":")) + "'"
	})
	return stampRE.ReplaceAllStringFunc(v, func(m string) string {
		sub := stampRE.FindStringSubmatch(m)
		return sub[1] + s.timeName(sub[2])
	})
}

// timeName names a Timestamp T1, T2... in order of first appearance.
func (s *transcriptServer) timeName(stamp string) string {
	ticks, err := edm.ParseDateTime(stamp)
	if err != nil {
		return stamp
	}
	name, ok := s.times[ticks]
	if !ok {
		name = "T" + strconv.Itoa(len(s.times)+1)
		s.times[ticks] = name
	}
	return name
}
