package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// What the server spent on a workload, read from Tabula's Prometheus metrics (the console's
// /metrics) before and after it: the process's CPU time (process_cpu_seconds_total, from
// /proc/self/stat, so it counts the server's own work whatever else shares the machine), and
// what its store did to make writes durable (tabula_store_*). Any endpoint whose metrics
// carry neither is reported without it.

// serverMetrics is the metrics URL of one endpoint, nil when it has none.
type serverMetrics struct {
	url    string
	client *http.Client
}

// metricsAuto is the --metrics value that derives the URL from the endpoint.
const metricsAuto = "auto"

// newServerMetrics returns the probe of the metrics at flagValue for the endpoint, or nil
// when there are none to read. "auto" derives them from the endpoint: Tabula's console
// (/metrics) listens on 10003 when its table endpoint is on 10002, as by default; an endpoint
// elsewhere, or metrics that cannot be read or are not Tabula's, mean none. "" means none. An
// explicit URL must answer with Tabula's metrics.
func newServerMetrics(ctx context.Context, flagValue, endpoint string) (*serverMetrics, error) {
	u := flagValue
	if u == metricsAuto {
		ep, err := url.Parse(endpoint)
		if err != nil || ep.Port() != "10002" {
			return nil, nil
		}
		u = "http://" + net.JoinHostPort(ep.Hostname(), "10003") + "/metrics"
	}
	if u == "" {
		return nil, nil
	}
	m := &serverMetrics{url: u, client: &http.Client{Timeout: 10 * time.Second}}
	s, err := m.sample(ctx)
	if err == nil && !s.tabula {
		err = fmt.Errorf("no tabula_ metrics there")
	}
	switch {
	case err == nil:
		return m, nil
	case flagValue == metricsAuto:
		return nil, nil
	}
	return nil, fmt.Errorf("reading the server's metrics at %s: %w", u, err)
}

// metricsSample is one reading of the counters a ServerCost is made of; each is the sum over
// its labels, -1 when absent.
type metricsSample struct {
	at                                  time.Time
	tabula                              bool // some tabula_ metric was there
	cpu, commits, mutations, syncs, wal float64
}

// metricNames maps the metrics read to where they go.
func (s *metricsSample) field(name string) *float64 {
	switch name {
	case "process_cpu_seconds_total":
		return &s.cpu
	case "tabula_store_commits_total":
		return &s.commits
	case "tabula_store_mutations_total":
		return &s.mutations
	case "tabula_store_syncs_total":
		return &s.syncs
	case "tabula_store_wal_writes_total":
		return &s.wal
	}
	return nil
}

func (m *serverMetrics) sample(ctx context.Context) (metricsSample, error) {
	s := metricsSample{cpu: -1, commits: -1, mutations: -1, syncs: -1, wal: -1}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return s, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("%s", resp.Status)
	}
	err = parseMetrics(resp.Body, &s)
	s.at = time.Now()
	return s, err
}

// parseMetrics reads the Prometheus text format, adding up the samples of the metrics s
// keeps.
func parseMetrics(r io.Reader, s *metricsSample) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		s.tabula = s.tabula || strings.HasPrefix(name, "tabula_")
		f := s.field(name)
		if f == nil {
			continue
		}
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return fmt.Errorf("malformed metrics line %q", line)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return fmt.Errorf("malformed metrics line %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return fmt.Errorf("malformed metrics line %q: %w", line, err)
		}
		if *f < 0 {
			*f = 0
		}
		*f += v
	}
	return sc.Err()
}

// ServerCost is what the server spent on one workload, from its metrics before and after.
// Figures whose metrics the server does not have are zero.
type ServerCost struct {
	// CPUSeconds is the server process's CPU time (user + system) over the workload;
	// CPUMicrosPerOp divides it by the successful operations, CPUMicrosPerEntity by the
	// entities they carried.
	CPUSeconds         float64 `json:"cpu_seconds"`
	CPUMicrosPerOp     float64 `json:"cpu_us_per_op"`
	CPUMicrosPerEntity float64 `json:"cpu_us_per_entity"`
	// Commits and Mutations are the store's durable commits and the records they wrote;
	// Syncs and WALWrites the write-ahead log's syncs and writes (on PostgreSQL, the
	// server's, from pg_stat_wal).
	Commits   float64 `json:"commits"`
	Mutations float64 `json:"mutations"`
	Syncs     float64 `json:"syncs"`
	WALWrites float64 `json:"wal_writes"`
	// SyncsPerSec, CommitsPerSync and MutationsPerSync say how well concurrent writes
	// share a sync; CommitsPerSec and MutationsPerCommit how the writes were grouped.
	SyncsPerSec        float64 `json:"syncs_per_sec"`
	CommitsPerSec      float64 `json:"commits_per_sec"`
	CommitsPerSync     float64 `json:"commits_per_sync"`
	MutationsPerSync   float64 `json:"mutations_per_sync"`
	MutationsPerCommit float64 `json:"mutations_per_commit"`
}

// serverCost computes the cost of r from the samples before and after it.
func serverCost(before, after metricsSample, r Result) *ServerCost {
	delta := func(a, b float64) float64 {
		if a < 0 || b < 0 {
			return 0
		}
		return b - a
	}
	ratio := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	sec := after.at.Sub(before.at).Seconds()
	c := &ServerCost{
		CPUSeconds: delta(before.cpu, after.cpu),
		Commits:    delta(before.commits, after.commits),
		Mutations:  delta(before.mutations, after.mutations),
		Syncs:      delta(before.syncs, after.syncs),
		WALWrites:  delta(before.wal, after.wal),
	}
	c.CPUMicrosPerOp = ratio(c.CPUSeconds*1e6, float64(r.Ops))
	c.CPUMicrosPerEntity = ratio(c.CPUSeconds*1e6, float64(r.Entities))
	c.SyncsPerSec = ratio(c.Syncs, sec)
	c.CommitsPerSec = ratio(c.Commits, sec)
	c.CommitsPerSync = ratio(c.Commits, c.Syncs)
	c.MutationsPerSync = ratio(c.Mutations, c.Syncs)
	c.MutationsPerCommit = ratio(c.Mutations, c.Commits)
	return c
}

// measureServer runs fn, which runs a workload, between two readings of m and attaches what
// the server spent to its result. Without metrics (m nil, or a reading failing) it only runs
// fn.
func measureServer(ctx context.Context, m *serverMetrics, fn func() Result) Result {
	if m == nil {
		return fn()
	}
	before, err := m.sample(ctx)
	r := fn()
	if err != nil {
		return r
	}
	if after, err := m.sample(ctx); err == nil {
		r.Server = serverCost(before, after, r)
	}
	return r
}

// printServerCost prints the line under a result's row that says what the server spent.
func printServerCost(w io.Writer, r Result) {
	c := r.Server
	if c == nil {
		return
	}
	var parts []string
	if c.CPUSeconds > 0 {
		p := "server CPU " + fmtMicros(c.CPUMicrosPerOp) + "/op"
		if r.Entities > r.Ops {
			p += " (" + fmtMicros(c.CPUMicrosPerEntity) + "/entity)"
		}
		parts = append(parts, p)
	}
	if c.Commits > 0 {
		p := Thousands(c.CommitsPerSec) + " commits/s"
		if c.MutationsPerCommit != 1 {
			p += " of " + strconv.FormatFloat(c.MutationsPerCommit, 'f', 1, 64) + " records"
		}
		parts = append(parts, p)
	}
	if c.Syncs > 0 && c.Commits > 0 { // a read workload's syncs are the store's own housekeeping
		parts = append(parts, Thousands(c.SyncsPerSec)+" WAL syncs/s", strconv.FormatFloat(c.CommitsPerSync, 'f', 2, 64)+" commits/sync",
			strconv.FormatFloat(c.WALWrites/c.Syncs, 'f', 2, 64)+" WAL writes/sync")
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "%-22s %s\n", "", strings.Join(parts, ", "))
	}
}

func fmtMicros(us float64) string {
	if us < 10 {
		return strconv.FormatFloat(us, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(us, 'f', 0, 64) + " µs"
}
