package bench

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/queuehttp"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// startTabulaQueues serves an in-memory Tabula queue endpoint and returns its service root.
func startTabulaQueues(t *testing.T) string {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(queuehttp.New(queue.New(st, queue.Options{}), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + devAccount
}

func TestQueueWorkloadsRunCleanAgainstTabula(t *testing.T) {
	tables, queues := startTabula(t), startTabulaQueues(t)
	rep, report, err := runJSON(t, "--endpoint", tables, "--queue-endpoint", queues, "--workloads", "queue",
		"--duration", "300ms", "--concurrency", "4", "--messages", "20000", "--queue-depth", "50", "--message-size", "512")
	if err != nil {
		t.Fatalf("bench failed: %v\n%s", err, report)
	}
	if len(rep.Results) != len(queueWorkloads) {
		t.Fatalf("got %d results, want one per queue workload\n%s", len(rep.Results), report)
	}
	for i, r := range rep.Results {
		if r.Workload != queueWorkloads[i].name || r.ErrorCount != 0 || r.Ops == 0 || r.HeadlineUnit != "messages/s" || r.Headline <= 0 {
			t.Errorf("%s: %d ops, %d errors, %v %s", r.Workload, r.Ops, r.ErrorCount, r.Headline, r.HeadlineUnit)
		}
	}
	t.Logf("\n%s", report)
}

// A queue-get-delete that empties its queue says so instead of measuring empty answers.
func TestQueueGetDeleteReportsARunDryQueue(t *testing.T) {
	tables, queues := startTabula(t), startTabulaQueues(t)
	_, report, err := runJSON(t, "--endpoint", tables, "--queue-endpoint", queues, "--workloads", "queue-get-delete",
		"--duration", "300ms", "--concurrency", "2", "--messages", "5")
	if err == nil {
		t.Fatalf("a dry queue went unreported\n%s", report)
	}
	if !strings.Contains(report, "queue ran dry") {
		t.Fatalf("report does not name the cause:\n%s", report)
	}
}

// --compare-messages preloads the second endpoint alone with fewer messages: here too few, so
// only it runs dry.
func TestCompareMessagesPreloadsTheSecondEndpointAlone(t *testing.T) {
	tables, queues, otherQueues := startTabula(t), startTabulaQueues(t), startTabulaQueues(t)
	_, report, err := runJSON(t, "--endpoint", tables, "--queue-endpoint", queues, "--label", "first",
		"--compare", tables, "--compare-queue", otherQueues, "--compare-label", "second", "--workloads", "queue-get-delete",
		"--duration", "300ms", "--concurrency", "2", "--messages", "5000", "--compare-messages", "5")
	if err == nil {
		t.Fatalf("the second endpoint's dry queue went unreported\n%s", report)
	}
	if n := strings.Count(report, "queue ran dry"); n != 1 {
		t.Fatalf("%d dry queues reported, want the second endpoint's only (%v):\n%s", n, err, report)
	}
}
