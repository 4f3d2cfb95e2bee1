package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
)

// flakyServer accepts table creation and deletion, and answers inserts with a fixed rotation of
// failures (or, reliable, with success), counting what it answered so the test can hold the
// report to it.
type flakyServer struct {
	t        *testing.T
	reliable bool // answer every insert with success
	mu       sync.Mutex
	n        int
	got      map[string]int // outcome -> count
	// tables created and deleted
	created, deleted []string
	badSignatures    int
}

func (f *flakyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, _ := base64.StdEncoding.DecodeString(devKey)
	date := r.Header.Get("x-ms-date")
	want := "SharedKeyLite devstoreaccount1:" + auth.SignSharedKeyLite(key, date, "/devstoreaccount1"+r.URL.EscapedPath())
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != want || r.Header.Get("x-ms-version") != apiVersion {
		f.badSignatures++
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/devstoreaccount1")
	switch {
	case r.Method == http.MethodPost && path == "/Tables":
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		f.created = append(f.created, strings.TrimSuffix(strings.TrimPrefix(body.String(), `{"TableName":"`), `"}`))
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete && strings.HasPrefix(path, "/Tables('"):
		f.deleted = append(f.deleted, strings.TrimSuffix(strings.TrimPrefix(path, "/Tables('"), "')"))
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost:
		f.n++
		switch {
		case f.reliable:
			f.got["ok"]++
			w.WriteHeader(http.StatusNoContent)
		case f.n%7 == 0:
			f.got["409 EntityAlreadyExists"]++
			w.Header().Set("x-ms-error-code", "EntityAlreadyExists")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists."}}}`))
		case f.n%11 == 0:
			f.got["503 ServerBusy"]++
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}`))
		case f.n%13 == 0:
			f.got["transport: connection closed by server"]++
			// Read the whole request first: closing with unread bytes would make the kernel
			// reset the connection rather than close it.
			io.Copy(io.Discard, r.Body)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				f.t.Error(err)
				return
			}
			conn.Close()
		default:
			f.got["ok"]++
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		f.t.Errorf("unexpected %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusBadRequest)
	}
}

// Every failed operation is counted under its status and code (or transport failure), none is
// lost or counted as a success, and a run with failures reports them and returns an error.
func TestErrorsAreCountedByKindAndFailTheRun(t *testing.T) {
	f := &flakyServer{t: t, got: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	rep, report, err := runJSON(t, "--endpoint", srv.URL+"/devstoreaccount1", "--workloads", "insert",
		"--duration", "200ms", "--concurrency", "3", "--entities", "0")
	if err == nil || !strings.Contains(err.Error(), "operations failed") {
		t.Fatalf("run with failures returned %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(rep.Results) != 1 {
		t.Fatalf("%d results", len(rep.Results))
	}
	r := rep.Results[0]
	if r.Ops != int64(f.got["ok"]) || r.Entities != r.Ops {
		t.Errorf("report counts %d ops (%d entities), the server acknowledged %d inserts", r.Ops, r.Entities, f.got["ok"])
	}
	errs := map[string]int{}
	for _, e := range r.Errors {
		errs[e.Key] = int(e.Count)
		if e.Example == "" {
			t.Errorf("%s has no example", e.Key)
		}
	}
	var failed int
	for k, n := range f.got {
		if k == "ok" {
			continue
		}
		failed += n
		if errs[k] != n {
			t.Errorf("%s: report counts %d, server answered %d", k, errs[k], n)
		}
	}
	if failed == 0 || len(errs) != len(f.got)-1 {
		t.Errorf("server failed %v, report has %v", f.got, errs)
	}
	if r.ErrorCount != int64(failed) || rep.Errors != int64(failed) {
		t.Errorf("error totals %d and %d, want %d", r.ErrorCount, rep.Errors, failed)
	}
	for _, want := range []string{"ERRORS: ", "insert on 127.0.0.1:", "× 409 EntityAlreadyExists", "× 503 ServerBusy", "× transport: connection closed by server"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
	}
	if len(f.created) != 1 || len(f.deleted) != 1 || f.created[0] != f.deleted[0] || !strings.HasPrefix(f.created[0], "bench") {
		t.Errorf("created %v, deleted %v; want the insert table created and deleted", f.created, f.deleted)
	}
	if f.badSignatures != 0 {
		t.Errorf("%d requests were not signed as SharedKeyLite over /account + path", f.badSignatures)
	}
}

// An interrupted run stops promptly, still deletes its tables, and reports the interruption
// rather than results.
func TestInterruptStopsTheRunAndCleansUp(t *testing.T) {
	f := &flakyServer{t: t, reliable: true, got: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := Main(ctx, []string{"--endpoint", srv.URL + "/devstoreaccount1", "--workloads", "insert,insert-one-partition",
		"--duration", "1m", "--concurrency", "2", "--json"}, &stdout, &stderr)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("interrupted run returned %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the run took %v to stop", d)
	}
	if stdout.Len() != 0 {
		t.Errorf("an interrupted run wrote results:\n%s", stdout.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.created) != 2 || !slices.Equal(f.created, f.deleted) {
		t.Errorf("created %v, deleted %v", f.created, f.deleted)
	}
}

func TestFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workloads", "insert,nope"}, `unknown workload "nope"`},
		{[]string{"--workloads", ","}, "names no workload"},
		{[]string{"--table", "1abc"}, "starts with a letter"},
		{[]string{"--table", "a-b"}, "letters and digits"},
		{[]string{"--concurrency", "0"}, "--concurrency"},
		{[]string{"--entities", "0", "--workloads", "point-get"}, "--entities"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus (see tabula bench --help)"},
	} {
		var out, errOut bytes.Buffer
		err := Main(context.Background(), c.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error about %s", c.args, err, c.want)
		}
		if out.Len() != 0 || errOut.Len() != 0 {
			t.Errorf("%v printed besides its error:\nstdout: %s\nstderr: %s", c.args, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if err := Main(context.Background(), []string{"--help"}, &out, &errOut); err != nil || !strings.Contains(out.String(), "table-scan-filtered") || errOut.Len() != 0 {
		t.Errorf("--help: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
	}
}
