package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

// startTabula serves an in-memory Tabula on a loopback port and returns its service root.
func startTabula(t *testing.T) string {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(tablehttp.New(table.New(st), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + devAccount
}

// runJSON runs Main with --json and decodes the report.
func runJSON(t *testing.T, args ...string) (*Report, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Main(context.Background(), append(args, "--json"), &stdout, &stderr)
	var rep Report
	if stdout.Len() > 0 {
		if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil {
			t.Fatalf("--json output does not decode: %v\n%s", jerr, stdout.String())
		}
	}
	return &rep, stderr.String(), err
}

func TestEveryWorkloadRunsCleanAgainstTabula(t *testing.T) {
	endpoint := startTabula(t)
	rep, report, err := runJSON(t, "--endpoint", endpoint, "--duration", "300ms", "--entities", "200",
		"--partitions", "4", "--concurrency", "4", "--entity-size", "600", "--ceiling")
	if err != nil {
		t.Fatalf("bench failed: %v\n%s", err, report)
	}
	if len(rep.Results) != len(workloads) {
		t.Fatalf("got %d results, want one per workload (%d)\n%s", len(rep.Results), len(workloads), report)
	}
	for i, r := range rep.Results {
		if r.Workload != workloads[i].name {
			t.Errorf("result %d is %s, want %s", i, r.Workload, workloads[i].name)
		}
		if r.ErrorCount != 0 || r.Ops == 0 || r.Headline <= 0 || r.LatencyMs.P50 <= 0 {
			t.Errorf("%s: %d ops, %d errors, headline %v, p50 %vms; want ops, no errors, latencies", r.Workload, r.Ops, r.ErrorCount, r.Headline, r.LatencyMs.P50)
		}
	}
	if c := rep.Ceiling; c == nil || c.Ops == 0 || c.ErrorCount != 0 {
		t.Errorf("ceiling: %+v, want operations and no errors", c)
	}
	if rep.Errors != 0 {
		t.Errorf("report counts %d errors", rep.Errors)
	}
	t.Logf("\n%s", report)
}
