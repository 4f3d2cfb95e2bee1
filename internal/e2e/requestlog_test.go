package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	dto "github.com/prometheus/client_model/go"

	"github.com/tabula-dev/tabula/internal/metrics"
	"github.com/tabula-dev/tabula/internal/server"
)

// TestRequestLogLinesNameWhatWasAskedEvenWhenRefused: every request's line names its
// operation and its table, container or queue — Create Table's the table its body names, and
// a request refused by authentication the operation it asked for, with the reason it was sent
// (auth_detail), and it is counted under that operation.
func TestRequestLogLinesNameWhatWasAskedEvenWhenRefused(t *testing.T) {
	g := listenServices(t)
	var logged lockedBuffer
	g.Log = &server.RequestLog{Logger: slog.New(slog.NewJSONHandler(&logged, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Serve(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	root := func(service string) string { return "http://" + g.Addr(service).String() + "/devstoreaccount1" }

	cred, err := aztables.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := aztables.NewServiceClientWithSharedKey(root("table"), cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(ctx, "orders", nil); err != nil {
		t.Fatal(err)
	}

	// An account SAS without st that expired an hour ago.
	sas, err := svc.GetAccountSASURL(aztables.AccountSASResourceTypes{Object: true}, aztables.AccountSASPermissions{Read: true}, time.Time{}, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	expired, err := url.Parse(sas)
	if err != nil {
		t.Fatal(err)
	}
	expired.Path = strings.TrimSuffix(expired.Path, "/") + "/orders()"
	refusedQueries := refusedQueryCount(t)

	// SharedKey with a signature no key made.
	forged := func(method, target, body string, header map[string]string) {
		req, _ := http.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
		req.Header.Set("x-ms-version", "2021-08-06")
		req.Header.Set("Authorization", "SharedKey devstoreaccount1:bm90IGEgc2lnbmF0dXJl")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		send(t, req)
	}
	req, _ := http.NewRequest("GET", expired.String(), nil)
	req.Header.Set("Accept", "application/json;odata=nometadata")
	send(t, req)
	forged("POST", root("table")+"/orders", `{"PartitionKey":"eu","RowKey":"1"}`, map[string]string{"Content-Type": "application/json"})
	forged("PUT", root("blob")+"/photos/cat.jpg", "meow", map[string]string{"x-ms-blob-type": "BlockBlob"})
	forged("POST", root("queue")+"/jobs/messages", "<QueueMessage><MessageText>x</MessageText></QueueMessage>", nil)
	stop()

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []struct {
		service, op, resource string
		status                float64
		detail                string // the start of auth_detail; "" for none
	}{
		{"table", "Create Table", "orders", 201, ""},
		{"table", "Query Entities", "orders", 403, "Signed expiry time ["},
		{"table", "Insert Entity", "orders", 403, "The MAC signature found in the HTTP request 'bm90IGEgc2lnbmF0dXJl' is not the same as any computed signature."},
		{"blob", "Put Blob", "photos", 403, "The MAC signature found in the HTTP request"},
		{"queue", "Put Message", "jobs", 403, "The MAC signature found in the HTTP request"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), logged.String())
	}
	for i, w := range want {
		l := lines[i]
		detail, _ := l["auth_detail"].(string)
		if l["service"] != w.service || l["op"] != w.op || l["resource"] != w.resource || l["status"] != w.status ||
			!strings.HasPrefix(detail, w.detail) || (w.detail == "" && detail != "") {
			t.Errorf("line %d: %v\nwant service=%s op=%q resource=%s status=%v auth_detail=%q…", i, l, w.service, w.op, w.resource, w.status, w.detail)
		}
		if w.status == 403 && l["error"] != "AuthenticationFailed" {
			t.Errorf("line %d: error %v, want AuthenticationFailed", i, l["error"])
		}
	}
	if got := refusedQueryCount(t); got != refusedQueries+1 {
		t.Errorf("tabula_requests_total{service=table,operation=Query Entities,status=403} went from %v to %v, want one more", refusedQueries, got)
	}
}

// refusedQueryCount reads tabula_requests_total{service="table",operation="Query Entities",status="403"}.
func refusedQueryCount(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.Requests.WithLabelValues("table", "Query Entities", "403").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func send(t *testing.T, req *http.Request) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
