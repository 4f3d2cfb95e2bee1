package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/faults"
	"github.com/tabula-dev/tabula/internal/insight"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/queuehttp"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
	"github.com/tabula-dev/tabula/internal/throttle"
)

// guidedServer is a table endpoint behind the full front (server.Group), so that fault rules,
// the throttle and the insight observer apply as they do in the binary.
type guidedServer struct {
	url      string
	handler  *tablehttp.Server
	faults   *faults.Set
	insights *insight.Observer
	statuses *statusCounter
}

// listenServices binds the Table, Blob and Queue services over one in-memory store to
// loopback listeners, as the tabula command does, with a log that goes nowhere.
func listenServices(t *testing.T) *server.Group {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts := auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := server.Listen(server.Limits{}, quiet,
		server.Endpoint{Name: "table", Addr: "127.0.0.1:0", Handler: tablehttp.New(table.New(st), accounts, quiet), ErrorBody: tablehttp.ErrorBody},
		server.Endpoint{Name: "blob", Addr: "127.0.0.1:0", Handler: blobhttp.New(blob.New(st, st), accounts, quiet), ErrorBody: blobhttp.ErrorBody},
		server.Endpoint{Name: "queue", Addr: "127.0.0.1:0", Handler: queuehttp.New(queue.New(st, queue.Options{}), accounts, quiet), ErrorBody: queuehttp.ErrorBody})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// serveUntilCleanup serves g, as the tabula command does, until the test ends.
func serveUntilCleanup(t *testing.T, g *server.Group) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func startGuidedServer(t *testing.T, configure func(*tablehttp.Server)) *guidedServer {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := tablehttp.New(table.New(st), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), log)
	cfg := insight.DefaultConfig()
	cfg.MinOps = 100
	h.Insights = insight.New(cfg, nil)
	if configure != nil {
		configure(h)
	}
	g, err := server.Listen(server.Limits{}, log, server.Endpoint{Name: "table", Addr: "127.0.0.1:0", Handler: h, ErrorBody: tablehttp.ErrorBody})
	if err != nil {
		t.Fatal(err)
	}
	g.Faults = &faults.Set{}
	serveUntilCleanup(t, g)
	return &guidedServer{url: "http://" + g.Addr("table").String() + "/devstoreaccount1", handler: h, faults: g.Faults, insights: h.Insights, statuses: &statusCounter{}}
}

// statusCounter is a transport that counts the answers a client saw, by status.
type statusCounter struct {
	counts [600]atomic.Int64
}

func (s *statusCounter) Do(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && resp.StatusCode < len(s.counts) {
		s.counts[resp.StatusCode].Add(1)
	}
	return resp, err
}

// client returns an SDK client of the server counting statuses, with the SDK's default retry
// policy unless retries is -1.
func (g *guidedServer) client(t *testing.T, retries int32) *aztables.ServiceClient {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	opts := policy.ClientOptions{Transport: g.statuses}
	if retries != 0 {
		opts.Retry = policy.RetryOptions{MaxRetries: retries, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: time.Second}
	}
	svc, err := aztables.NewServiceClientWithSharedKey(g.url, cred, &aztables.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func findingKinds(o *insight.Observer) map[string]insight.Finding {
	o.Judge()
	out := map[string]insight.Finding{}
	for _, f := range o.Findings() {
		out[f.Kind] = f
	}
	return out
}

// A workload that sends most of its writes to one partition, with keys that only grow, is
// told so, with the guide's advice.
func TestHotPartitionAndAppendOnlyKeysAreFound(t *testing.T) {
	g := startGuidedServer(t, nil)
	ctx := context.Background()
	svc := g.client(t, -1)
	if _, err := svc.CreateTable(ctx, "events", nil); err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient("events")
	start := time.Now().UnixNano()
	for i := 0; i < 300; i++ {
		// Timestamps as PartitionKey: the append-only anti-pattern.
		pk := fmt.Sprintf("%020d", start+int64(i))
		if _, err := c.AddEntity(ctx, []byte(fmt.Sprintf(`{"PartitionKey":%q,"RowKey":"r"}`, pk)), nil); err != nil {
			t.Fatal(err)
		}
	}
	found := findingKinds(g.insights)
	if f, ok := found[insight.AppendOnlyKeys]; !ok || f.Table != "events" || f.Advice == "" {
		t.Fatalf("append-only keys not found: %+v", g.insights.Findings())
	}

	if _, err := svc.CreateTable(ctx, "orders", nil); err != nil {
		t.Fatal(err)
	}
	orders := svc.NewClient("orders")
	for i := 0; i < 300; i++ {
		pk := "customer-1" // most orders are one customer's
		if i%5 == 0 {
			pk = fmt.Sprintf("customer-%d", i)
		}
		if _, err := orders.UpsertEntity(ctx, []byte(fmt.Sprintf(`{"PartitionKey":%q,"RowKey":"%d"}`, pk, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	found = findingKinds(g.insights)
	if f, ok := found[insight.HotPartition]; !ok || f.Partition != "customer-1" || f.Table != "orders" {
		t.Fatalf("hot partition not found: %+v", g.insights.Findings())
	}
}

// A query that scans the table to return a few entities is a costly query, named by its shape.
func TestCostlyQueriesAreFound(t *testing.T) {
	g := startGuidedServer(t, nil)
	ctx := context.Background()
	svc := g.client(t, -1)
	if _, err := svc.CreateTable(ctx, "people", nil); err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient("people")
	for p := 0; p < 12; p++ {
		var actions []aztables.TransactionAction
		for r := 0; r < 100; r++ {
			actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
				Entity: []byte(fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"%03d","Age":%d}`, p, r, r))})
		}
		if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
			t.Fatal(err)
		}
	}
	filter := "Age eq 42"
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	for pager.More() {
		if _, err := pager.NextPage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f, ok := findingKinds(g.insights)[insight.CostlyQuery]
	if !ok || f.Filter != "Age eq ?" || f.Figures["scanned"] != 1200 || f.Figures["returned"] != 12 {
		t.Fatalf("costly query: %+v", g.insights.Findings())
	}
}

// Under --throttle, a client writing to one partition faster than Azure's target gets 503
// ServerBusy, and the SDK's retries carry every write through.
func TestThrottledWritesSucceedThroughTheSDKsRetries(t *testing.T) {
	g := startGuidedServer(t, func(h *tablehttp.Server) {
		h.Throttle = throttle.New(throttle.Rates{Partition: 20, Queue: 20, Blob: 20, Account: 1000})
	})
	ctx := context.Background()
	svc := g.client(t, 10)
	if _, err := svc.CreateTable(ctx, "busy", nil); err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient("busy")
	for i := 0; i < 60; i++ {
		if _, err := c.AddEntity(ctx, []byte(fmt.Sprintf(`{"PartitionKey":"one","RowKey":"%d"}`, i)), nil); err != nil {
			t.Fatalf("insert %d failed despite retries: %v", i, err)
		}
	}
	if busy := g.statuses.counts[503].Load(); busy == 0 {
		t.Fatal("no 503 ServerBusy at three times the partition's rate")
	}
	pager := c.NewListEntitiesPager(nil)
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Entities)
	}
	if n != 60 {
		t.Fatalf("%d entities stored, want 60", n)
	}
}

// Under --throttle, a queue and a blob taken faster than their targets answer 503
// ServerBusy, and the SDKs' retries carry every request through; one limiter holds the
// services to the account's target together.
func TestThrottledQueuesAndBlobsSucceedThroughTheSDKsRetries(t *testing.T) {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts := auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()})
	logged := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logged, nil))
	limiter := throttle.New(throttle.Rates{Partition: 1000, Queue: 20, Blob: 20, Account: 1000})
	blobs, queues := blobhttp.New(blob.New(st, st), accounts, log), queuehttp.New(queue.New(st, queue.Options{}), accounts, log)
	blobs.Throttle, queues.Throttle = limiter, limiter
	g, err := server.Listen(server.Limits{}, log,
		server.Endpoint{Name: "blob", Addr: "127.0.0.1:0", Handler: blobs, ErrorBody: blobhttp.ErrorBody},
		server.Endpoint{Name: "queue", Addr: "127.0.0.1:0", Handler: queues, ErrorBody: queuehttp.ErrorBody})
	if err != nil {
		t.Fatal(err)
	}
	g.Log = &server.RequestLog{Logger: log, ErrorsOnly: true}
	serveUntilCleanup(t, g)
	ctx := context.Background()

	statuses := &statusCounter{}
	opts := policy.ClientOptions{Transport: statuses, Retry: policy.RetryOptions{MaxRetries: 10, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: time.Second}}
	qcred, err := azqueue.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	qsvc, err := azqueue.NewServiceClientWithSharedKeyCredential("http://"+g.Addr("queue").String()+"/devstoreaccount1", qcred, &azqueue.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qsvc.CreateQueue(ctx, "busy", nil); err != nil {
		t.Fatal(err)
	}
	q := qsvc.NewQueueClient("busy")
	for i := range 60 {
		if _, err := q.EnqueueMessage(ctx, fmt.Sprint(i), nil); err != nil {
			t.Fatalf("message %d failed despite retries: %v", i, err)
		}
	}
	if busy := statuses.counts[503].Load(); busy == 0 {
		t.Fatal("no 503 ServerBusy at three times the queue's rate")
	}
	props, err := q.GetProperties(ctx, nil)
	if err != nil || props.ApproximateMessagesCount == nil || *props.ApproximateMessagesCount != 60 {
		t.Fatalf("%v messages in the queue (%v), want 60", props.ApproximateMessagesCount, err)
	}

	statuses.counts[503].Store(0)
	bcred, err := azblob.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	bsvc, err := azblob.NewClientWithSharedKeyCredential("http://"+g.Addr("blob").String()+"/devstoreaccount1", bcred, &azblob.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bsvc.CreateContainer(ctx, "busy", nil); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := bsvc.UploadBuffer(ctx, "busy", "hot", []byte(fmt.Sprint(i)), nil); err != nil {
			t.Fatalf("write %d failed despite retries: %v", i, err)
		}
	}
	if busy := statuses.counts[503].Load(); busy == 0 {
		t.Fatal("no 503 ServerBusy at three times the blob's rate")
	}
	got, err := bsvc.DownloadStream(ctx, "busy", "hot", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	if b, _ := io.ReadAll(got.Body); string(b) != "59" {
		t.Fatalf("the blob holds %q, want the last write, 59", b)
	}
	// Each refusal's log line says which target it went over.
	for _, want := range []string{`op="Put Message" resource=busy`, `op="Put Blob" resource=busy`} {
		found := false
		for _, line := range strings.Split(logged.String(), "\n") {
			found = found || strings.Contains(line, want) && strings.Contains(line, "status=503") && strings.Contains(line, "throttled=")
		}
		if !found {
			t.Errorf("no log line of a throttled %s names its target:\n%s", want, logged.String())
		}
	}
}

// lockedBuffer is a log destination the server writes while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Fault rules hit exactly the requests they name, before or after the operation.
func TestFaultRulesHitOnlyWhatTheyName(t *testing.T) {
	g := startGuidedServer(t, nil)
	ctx := context.Background()
	svc := g.client(t, -1)
	for _, name := range []string{"target", "bystander"} {
		if _, err := svc.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.faults.Replace([]faults.Rule{
		{ID: "busy-twice", Service: "table", Operation: "Insert Entity", Resource: "target", Partition: "p1", Count: 2, Action: faults.ActionError, Status: 503, Code: "ServerBusy"},
		{ID: "lost-answer", Operation: "Update Entity", Resource: "target", After: true, Action: faults.ActionError, Status: 500, Code: "InternalError"},
		{ID: "slow-reads", Operation: "Query Entities", Resource: "bystander", Action: faults.ActionLatency, Latency: "300ms"},
		{ID: "cut", Operation: "Delete Entity", Resource: "target", Count: 1, Action: faults.ActionClose},
	}); err != nil {
		t.Fatal(err)
	}
	target, bystander := svc.NewClient("target"), svc.NewClient("bystander")
	insert := func(c *aztables.Client, pk, rk string) error {
		_, err := c.AddEntity(ctx, []byte(fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"V":1}`, pk, rk)), nil)
		return err
	}
	// The named partition fails twice, then the rule is spent; other partitions and tables never.
	wantAzureError(t, insert(target, "p1", "a"), 503, "ServerBusy")
	if err := insert(target, "p2", "a"); err != nil {
		t.Fatalf("another partition: %v", err)
	}
	if err := insert(bystander, "p1", "a"); err != nil {
		t.Fatalf("another table: %v", err)
	}
	wantAzureError(t, insert(target, "p1", "b"), 503, "ServerBusy")
	if err := insert(target, "p1", "c"); err != nil {
		t.Fatalf("after the rule's count: %v", err)
	}
	// After the operation: the client sees 500, the update is applied.
	_, err := target.UpdateEntity(ctx, []byte(`{"PartitionKey":"p2","RowKey":"a","V":2}`), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: ptr(azcore.ETagAny)})
	wantAzureError(t, err, 500, "InternalError")
	got, err := target.GetEntity(ctx, "p2", "a", nil)
	if err != nil || !strings.Contains(string(got.Value), `"V":2`) {
		t.Fatalf("the update behind the 500 was not applied: %s %v", got.Value, err)
	}
	// Latency on one table's queries only.
	start := time.Now()
	if _, err := bystander.NewListEntitiesPager(nil).NextPage(ctx); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("slow query took %v (%v)", time.Since(start), err)
	}
	start = time.Now()
	if _, err := target.NewListEntitiesPager(nil).NextPage(ctx); err != nil || time.Since(start) > 250*time.Millisecond {
		t.Fatalf("an unnamed table's query took %v (%v)", time.Since(start), err)
	}
	// A closed connection is a transport error, not an answer.
	_, err = target.DeleteEntity(ctx, "p1", "c", nil)
	var re *azcore.ResponseError
	if err == nil || errors.As(err, &re) {
		t.Fatalf("delete under the close rule: %v", err)
	}
	hits := map[string]int{}
	for _, r := range g.faults.Rules() {
		hits[r.ID] = r.Hits
	}
	if hits["busy-twice"] != 2 || hits["lost-answer"] != 1 || hits["slow-reads"] != 1 || hits["cut"] != 1 {
		t.Fatalf("hits %v", hits)
	}
}

func ptr[T any](v T) *T { return &v }

// A fault rule names a blob as its partition (a blob is its own partition in Azure): only
// that blob's requests fail, and the log line names the blob beside its container.
func TestFaultRulesNameABlobAsItsPartition(t *testing.T) {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts := auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()})
	logged := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logged, nil))
	g, err := server.Listen(server.Limits{}, log,
		server.Endpoint{Name: "blob", Addr: "127.0.0.1:0", Handler: blobhttp.New(blob.New(st, st), accounts, log), ErrorBody: blobhttp.ErrorBody})
	if err != nil {
		t.Fatal(err)
	}
	g.Faults = &faults.Set{}
	g.Log = &server.RequestLog{Logger: log, ErrorsOnly: true}
	serveUntilCleanup(t, g)
	ctx := context.Background()
	if err := g.Faults.Replace([]faults.Rule{{ID: "hot-blob", Service: "blob", Operation: "Put Blob", Resource: "files", Partition: "dir/hot.txt",
		Action: faults.ActionError, Status: 503, Code: "ServerBusy"}}); err != nil {
		t.Fatal(err)
	}
	cred, err := azblob.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential("http://"+g.Addr("blob").String()+"/devstoreaccount1", cred,
		&azblob.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateContainer(ctx, "files", nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.UploadBuffer(ctx, "files", "dir/hot.txt", []byte("x"), nil)
	wantAzureError(t, err, 503, "ServerBusy")
	if _, err := c.UploadBuffer(ctx, "files", "dir/cold.txt", []byte("x"), nil); err != nil {
		t.Fatalf("another blob: %v", err)
	}
	if want := `op="Put Blob" resource=files method=PUT status=503 error=ServerBusy`; !strings.Contains(logged.String(), want) ||
		!strings.Contains(logged.String(), "blob=dir/hot.txt") || !strings.Contains(logged.String(), "fault=hot-blob") {
		t.Fatalf("the log line does not name the blob and its fault:\n%s", logged.String())
	}
}
