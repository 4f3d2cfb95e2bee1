package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/azerr"
)

// A handler as the services write them: Begin, Note, and an answer or an Azure error.
func notingHandler(w http.ResponseWriter, r *http.Request) {
	rq := &Request{}
	Begin(rq, w, r, "2021-08-06")
	if err := rq.ResolveAccount(accountsOf("devstoreaccount1")); err != nil {
		WriteXMLError(rq, err, quiet)
		return
	}
	rq.Note("Put Thing", "box")
	rq.NoteAttrs(slog.Int("scanned", 7))
	io.Copy(io.Discard, r.Body)
	if strings.HasSuffix(r.URL.Path, "/fail") {
		WriteXMLError(rq, azerr.New(azerr.ResourceNotFound), quiet)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/parts") {
		// A request that carries another (as a Blob Batch does), answered on its own.
		part := &Request{}
		pw := httptest.NewRecorder()
		rq.BeginPart(part, pw, httptest.NewRequest("DELETE", "/box/thing", nil), "2021-08-06")
		part.Note("Delete Thing", "box")
		WriteXMLError(part, azerr.New(azerr.ResourceNotFound), quiet)
		rq.FinishPart(part, pw.Code, int64(pw.Body.Len()))
	}
	w.Write([]byte("done"))
}

type accountsOf string

func (a accountsOf) Account(name string) (auth.Account, bool) {
	return auth.Account{}, name == string(a)
}

// logLines serves notingHandler with log and returns the decoded JSON lines written for the
// requests paths (each a PUT with a 3-byte body).
func logLines(t *testing.T, log func(*slog.Logger) *RequestLog, paths ...string) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	g, err := Listen(Limits{}, quiet, Endpoint{Name: "blob", Addr: "127.0.0.1:0", Handler: http.HandlerFunc(notingHandler)})
	if err != nil {
		t.Fatal(err)
	}
	g.Log = log(slog.New(slog.NewJSONHandler(&buf, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Serve(ctx) }()
	for _, p := range paths {
		req, _ := http.NewRequest("PUT", "http://"+g.Addr("blob").String()+p, strings.NewReader("abc"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancel()
	<-done
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestOneLogLinePerRequest(t *testing.T) {
	lines := logLines(t, func(l *slog.Logger) *RequestLog { return &RequestLog{Logger: l} },
		"/devstoreaccount1/box/ok", "/devstoreaccount1/box/fail")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	ok, failed := lines[0], lines[1]
	for k, want := range map[string]any{"msg": "request", "service": "blob", "account": "devstoreaccount1", "op": "Put Thing",
		"resource": "box", "method": "PUT", "status": 200.0, "in": 3.0, "out": 4.0, "scanned": 7.0} {
		if ok[k] != want {
			t.Errorf("%s = %v, want %v (line %v)", k, ok[k], want, ok)
		}
	}
	if ok["request_id"] == "" || ok["ms"] == nil || ok["error"] != nil {
		t.Errorf("line %v", ok)
	}
	if failed["status"] != 404.0 || failed["error"] != "ResourceNotFound" {
		t.Errorf("failed line %v", failed)
	}
}

// A request carried inside another (BeginPart) gets a line of its own, naming its parent.
func TestPartsGetTheirOwnLogLine(t *testing.T) {
	lines := logLines(t, func(l *slog.Logger) *RequestLog { return &RequestLog{Logger: l} }, "/devstoreaccount1/box/parts")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	part, outer := lines[0], lines[1]
	for k, want := range map[string]any{"op": "Delete Thing", "method": "DELETE", "status": 404.0, "error": "ResourceNotFound",
		"account": "devstoreaccount1", "service": "blob", "parent": outer["request_id"]} {
		if part[k] != want {
			t.Errorf("%s = %v, want %v (line %v)", k, part[k], want, part)
		}
	}
	if part["request_id"] == outer["request_id"] || outer["op"] != "Put Thing" || outer["status"] != 200.0 {
		t.Errorf("lines %v", lines)
	}
}

func TestRequestLogCanBeLimitedToErrorsOrSampled(t *testing.T) {
	paths := []string{"/devstoreaccount1/box/a", "/devstoreaccount1/box/fail", "/devstoreaccount1/box/b", "/devstoreaccount1/box/c", "/devstoreaccount1/box/d"}
	if lines := logLines(t, func(l *slog.Logger) *RequestLog { return &RequestLog{Logger: l, ErrorsOnly: true} }, paths...); len(lines) != 1 || lines[0]["status"] != 404.0 {
		t.Fatalf("errors only: %v", lines)
	}
	if lines := logLines(t, func(l *slog.Logger) *RequestLog { return &RequestLog{Logger: l, SampleEvery: 2} }, paths...); len(lines) != 3 {
		t.Fatalf("1/2 of 4 successes and the failure: %d lines %v", len(lines), lines)
	}
	if lines := logLines(t, func(*slog.Logger) *RequestLog { return &RequestLog{} }, paths...); len(lines) != 0 {
		t.Fatalf("off: %v", lines)
	}
}

// A request whose client went away mid-body fails inside the handler; no one sees that
// answer and it is no failure of the server's: its line says status 0 and client_gone, not
// 500.
func TestAClientThatLeavesMidBodyIsNotAServerError(t *testing.T) {
	var buf lockedLog
	handled := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(handled)
		rq := &Request{}
		Begin(rq, w, r, "2021-08-06")
		if err := rq.ResolveAccount(accountsOf("devstoreaccount1")); err != nil {
			t.Error(err)
			return
		}
		rq.Note("Put Thing", "box")
		if _, err := io.ReadAll(r.Body); err != nil {
			WriteXMLError(rq, err, quiet) // an internal error, as a store's would be
		}
	})
	g, err := Listen(Limits{}, quiet, Endpoint{Name: "blob", Addr: "127.0.0.1:0", Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	g.Log = &RequestLog{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	conn, err := net.Dial("tcp", g.Addr("blob").String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /devstoreaccount1/box/x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789")
	time.Sleep(50 * time.Millisecond)
	conn.Close()
	<-handled
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(buf.String(), `"op":"Put Thing"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // lines are written at most 100 ms late
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(buf.String())), &line); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	if line["status"] != 0.0 || line["client_gone"] != true {
		t.Fatalf("line %v, want status 0 and client_gone", line)
	}
}

// lockedLog is a log destination the server writes while the test reads it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
