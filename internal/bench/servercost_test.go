package bench

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

func TestParseMetricsAddsUpTheSamplesOfEachMetric(t *testing.T) {
	text := `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
tabula_requests_total{operation="Insert Entity",service="table",status="204"} 7
tabula_store_commits_total 1000
tabula_store_mutations_total{space="a b}"} 1500
tabula_store_mutations_total{space="c"} 500 1700000000000
tabula_store_syncs_total 2e2
`
	s := metricsSample{cpu: -1, commits: -1, mutations: -1, syncs: -1, wal: -1}
	if err := parseMetrics(strings.NewReader(text), &s); err != nil {
		t.Fatal(err)
	}
	if !s.tabula || s.cpu != 12.5 || s.commits != 1000 || s.mutations != 2000 || s.syncs != 200 || s.wal != -1 {
		t.Errorf("parsed %+v", s)
	}
	if err := parseMetrics(strings.NewReader("tabula_store_syncs_total{x=\"1\" 3\n"), &s); err == nil {
		t.Error("an unclosed label set was accepted")
	}
}

func TestServerCostIsReadFromTabulasMetricsAroundEachWorkload(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(tablehttp.New(table.New(st), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil))
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), st.Collector())
	metricsSrv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(metricsSrv.Close)

	rep, report, err := runJSON(t, "--endpoint", srv.URL+"/"+devAccount, "--metrics", metricsSrv.URL, "--duration", "300ms",
		"--concurrency", "4", "--entity-shape", "mixed11", "--workloads", "insert,batch-insert")
	if err != nil {
		t.Fatalf("bench failed: %v\n%s", err, report)
	}
	if rep.Endpoints[0].MetricsURL != metricsSrv.URL || rep.Parameters.EntityShape != "mixed11" {
		t.Errorf("endpoint %+v, shape %q", rep.Endpoints[0], rep.Parameters.EntityShape)
	}
	for _, r := range rep.Results {
		c := r.Server
		if c == nil {
			t.Fatalf("%s: no server cost\n%s", r.Workload, report)
		}
		// The store commits once per insert and once per batch, and the table service at
		// most once more (it moves its Timestamp floor a minute at a time): nothing else
		// writes while a workload runs.
		if c.Commits < float64(r.Ops) || c.Commits > float64(r.Ops+1) || c.Mutations < float64(r.Entities) || c.Mutations > float64(r.Entities+1) {
			t.Errorf("%s: %v commits of %v records for %d operations of %d entities", r.Workload, c.Commits, c.Mutations, r.Ops, r.Entities)
		}
		// Each commit waits for at most one sync; a few more close the WAL files of the small
		// memtables a new Pebble starts with.
		if c.Syncs < 1 || c.Syncs > c.Commits+5 || c.SyncsPerSec <= 0 {
			t.Errorf("%s: %v syncs for %v commits (%v/s, %v commits/sync)", r.Workload, c.Syncs, c.Commits, c.SyncsPerSec, c.CommitsPerSync)
		}
		if c.CPUSeconds < 0 || c.CPUMicrosPerOp < 0 {
			t.Errorf("%s: CPU %v s", r.Workload, c.CPUSeconds)
		}
	}
	if !strings.Contains(report, "commits/sync") || !strings.Contains(report, "server CPU") {
		t.Errorf("the report does not show the server's cost:\n%s", report)
	}
	t.Logf("\n%s", report)
}

func TestExplicitMetricsURLThatIsNotTabulasFailsTheRun(t *testing.T) {
	endpoint := startTabula(t)
	other := httptest.NewServer(promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{}))
	t.Cleanup(other.Close)
	_, _, err := runJSON(t, "--endpoint", endpoint, "--metrics", other.URL, "--duration", "100ms", "--workloads", "insert")
	if err == nil || !strings.Contains(err.Error(), "no tabula_ metrics") {
		t.Errorf("err = %v, want a refusal of metrics without tabula_ ones", err)
	}
}
