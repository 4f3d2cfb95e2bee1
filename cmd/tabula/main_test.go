package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tabula-dev/tabula/internal/auth"
)

// The test binary doubles as the server: with TABULA_TEST_SERVE set it runs tabula itself, so
// the crash test can SIGKILL a real server process without building a second binary.
func TestMain(m *testing.M) {
	if os.Getenv("TABULA_TEST_SERVE") == "1" {
		os.Exit(runUntilSignalled(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// testServeEnv makes the test binary serve, on ports of its own for the endpoints the tests
// do not name: two tests, or a Tabula on this machine, must not meet on the well-known ones.
var testServeEnv = []string{"TABULA_TEST_SERVE=1", "TABULA_BLOB_ADDR=127.0.0.1:0", "TABULA_QUEUE_ADDR=127.0.0.1:0"}

var (
	tableEndpoint  = regexp.MustCompile(`TableEndpoint=([^;]+);`)
	blobEndpoint   = regexp.MustCompile(`BlobEndpoint=([^;]+);`)
	caLine         = regexp.MustCompile(`trust the local CA to use HTTPS: (\S+)`)
	consoleLine    = regexp.MustCompile(`console: (http://\S+)/ `)
	connStringLine = regexp.MustCompile(`connection string: (\S+)`)
)

// startTabula runs the server in a child process on a free port and returns its endpoint.
func startTabula(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, out := startTabulaOutput(t, args...)
	return cmd, out.endpoint
}

// serverOutput is what the server printed at start-up.
type serverOutput struct {
	endpoint, connectionString string
	caFile                     string // the local CA to trust, with --tls
	blobEndpoint               string
	console                    string      // the console's root URL
	banner                     string      // every line up to the connection string's
	rest                       chan string // the lines printed afterwards
}

func startTabulaOutput(t *testing.T, args ...string) (*exec.Cmd, serverOutput) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"--table-addr", "127.0.0.1:0", "--console-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), testServeEnv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan serverOutput, 1)
	go func() {
		out := serverOutput{rest: make(chan string, 100)}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.banner += sc.Text() + "\n"
			if m := caLine.FindStringSubmatch(sc.Text()); m != nil {
				out.caFile = m[1]
			}
			if m := consoleLine.FindStringSubmatch(sc.Text()); m != nil {
				out.console = m[1]
			}
			if m := connStringLine.FindStringSubmatch(sc.Text()); m != nil {
				out.connectionString = m[1]
				if m := tableEndpoint.FindStringSubmatch(out.connectionString); m != nil {
					out.endpoint = m[1]
				}
				if m := blobEndpoint.FindStringSubmatch(out.connectionString); m != nil {
					out.blobEndpoint = m[1]
				}
				found <- out
				break
			}
		}
		for sc.Scan() {
			select {
			case out.rest <- sc.Text():
			default:
			}
		}
		close(out.rest)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case out := <-found:
		return cmd, out
	case <-time.After(30 * time.Second):
		t.Fatal("tabula did not print its endpoint and connection string")
		return nil, serverOutput{}
	}
}

func client(t *testing.T, url, tableName string) *aztables.Client {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential("devstoreaccount1", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := aztables.NewServiceClientWithSharedKey(url, cred, &aztables.ClientOptions{
		ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc.NewClient(tableName)
}

func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd, url := startTabula(t, "--data", dir)
	c := client(t, url, "durable")
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}

	// Many concurrent single writes (so commits are grouped) and a few batches; every one the
	// server acknowledged is recorded.
	var mu sync.Mutex
	acked := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				rk := fmt.Sprintf("w%d-%03d", w, i)
				body, _ := json.Marshal(map[string]any{"PartitionKey": fmt.Sprintf("p%d", w%3), "RowKey": rk, "V": i})
				if _, err := c.UpsertEntity(ctx, body, nil); err != nil {
					t.Errorf("upsert %s: %v", rk, err)
					return
				}
				mu.Lock()
				acked[fmt.Sprintf("p%d/%s", w%3, rk)] = i
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var actions []aztables.TransactionAction
	for i := range 100 {
		body, _ := json.Marshal(map[string]any{"PartitionKey": "batch", "RowKey": fmt.Sprintf("b%03d", i), "V": i})
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
	}
	if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		acked[fmt.Sprintf("batch/b%03d", i)] = i
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, url = startTabula(t, "--data", dir)
	c = client(t, url, "durable")
	found := map[string]int{}
	pager := c.NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Entities {
			var e struct {
				PartitionKey, RowKey string
				V                    int
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			found[e.PartitionKey+"/"+e.RowKey] = e.V
		}
	}
	if len(acked) != 500 {
		t.Fatalf("only %d writes were acknowledged", len(acked))
	}
	for k, v := range acked {
		if got, ok := found[k]; !ok || got != v {
			t.Errorf("acknowledged write %s=%d lost after SIGKILL (found %v, %v)", k, v, got, ok)
		}
	}
}

func TestInMemoryWritesNothingToDisk(t *testing.T) {
	dir := t.TempDir()
	_, url := startTabula(t, "--in-memory", "--data", dir)
	c := client(t, url, "ephemeral")
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("--in-memory wrote %s", strings.Join(names, ", "))
	}
}

func TestPrintedConnectionStringWorks(t *testing.T) {
	_, out := startTabulaOutput(t, "--in-memory")
	svc, err := aztables.NewServiceClientFromConnectionString(out.connectionString, nil)
	if err != nil {
		t.Fatalf("%s: %v", out.connectionString, err)
	}
	if _, err := svc.CreateTable(context.Background(), "fromconnstr", nil); err != nil {
		t.Fatal(err)
	}
}

func TestSIGTERMShutsDownCleanlyAndKeepsData(t *testing.T) {
	dir := t.TempDir()
	cmd, out := startTabulaOutput(t, "--data", dir)
	c := client(t, out.endpoint, "graceful")
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","V":7}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tabula exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tabula did not exit after SIGTERM")
	}
	var said []string
	for line := range out.rest {
		said = append(said, line)
	}
	if !strings.Contains(strings.Join(said, "\n"), "shutting down") {
		t.Errorf("tabula said %q on SIGTERM", said)
	}
	_, url := startTabula(t, "--data", dir)
	if _, err := client(t, url, "graceful").GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatalf("data lost across a clean restart: %v", err)
	}
}

func TestFlagsFallBackToEnvironmentThenDefaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.tableAddr != "127.0.0.1:10002" || c.inMemory || c.accounts != "" || c.dataDir == "" {
		t.Fatalf("defaults: %+v", c)
	}
	t.Setenv("TABULA_TABLE_ADDR", "127.0.0.1:20002")
	t.Setenv("TABULA_IN_MEMORY", "true")
	t.Setenv("TABULA_ACCOUNTS", "acct1:a2V5")
	t.Setenv("TABULA_DATA", "/tmp/x")
	c, _ = parseFlags(nil, io.Discard)
	if c.tableAddr != "127.0.0.1:20002" || !c.inMemory || c.accounts != "acct1:a2V5" || c.dataDir != "/tmp/x" {
		t.Fatalf("from environment: %+v", c)
	}
	c, _ = parseFlags([]string{"--table-addr", "127.0.0.1:30002"}, io.Discard)
	if c.tableAddr != "127.0.0.1:30002" {
		t.Fatalf("a flag must win over the environment: %+v", c)
	}
}

func TestCustomAccountsReplaceTheDevelopmentAccount(t *testing.T) {
	key := "c2VjcmV0LWtleS1ieXRlcy0wMTIzNDU2Nzg5YWJjZGVm"
	_, out := startTabulaOutput(t, "--in-memory", "--accounts", "myacct:"+key)
	if !strings.Contains(out.connectionString, "AccountName=myacct;") {
		t.Fatalf("connection string %s", out.connectionString)
	}
	svc, err := aztables.NewServiceClientFromConnectionString(out.connectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(context.Background(), "mine", nil); err != nil {
		t.Fatal(err)
	}
}

// openUpload starts a request whose body never finishes, on the server at endpoint.
func openUpload(t *testing.T, endpoint string) net.Conn {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s/Tables HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n{", u.Path, u.Host)
	time.Sleep(200 * time.Millisecond) // the request is in its handler now
	return c
}

// waitExit waits for cmd to end and returns its exit code and how long that took.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("tabula did not exit within %v", limit)
		return 0, 0
	}
}

func TestShutdownWithAStalledUploadEndsCleanlyAfterTheGrace(t *testing.T) {
	cmd, endpoint := startTabula(t, "--in-memory", "--shutdown-grace", "500ms")
	openUpload(t, endpoint)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, cmd, 10*time.Second)
	// The upload alone would hold the server for the 30 s body-stall timeout; a few seconds
	// after the grace leave room for a race-instrumented binary on a busy machine.
	if code != 0 || took > 6*time.Second {
		t.Fatalf("exit code %d after %v, want 0 soon after the 500 ms grace", code, took)
	}
}

func TestASecondSignalExitsAtOnce(t *testing.T) {
	cmd, endpoint := startTabula(t, "--in-memory", "--shutdown-grace", "1m")
	openUpload(t, endpoint)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, cmd, 10*time.Second)
	if code == 0 || took > 2*time.Second {
		t.Fatalf("exit code %d after %v, want a failure code at once", code, took)
	}
}

func TestLimitFlagsAndTheirEnvironment(t *testing.T) {
	t.Setenv("TABULA_IDLE_TIMEOUT", "45s")
	t.Setenv("TABULA_MAX_CONNECTIONS", "77")
	c, err := parseFlags([]string{"--header-timeout", "3s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.limits.IdleTimeout != 45*time.Second || c.limits.MaxConnections != 77 || c.limits.HeaderTimeout != 3*time.Second {
		t.Fatalf("limits %+v", c.limits)
	}
	t.Setenv("TABULA_BODY_STALL_TIMEOUT", "soon")
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "TABULA_BODY_STALL_TIMEOUT") {
		t.Fatalf("a bad duration in the environment: %v", err)
	}
}

// --tls serves HTTPS with a CA of its own making; the connection string it prints says https
// and works for a client that trusts that CA.
func TestTLSServesHTTPSWithALocalCA(t *testing.T) {
	_, out := startTabulaOutput(t, "--in-memory", "--tls", "--data", t.TempDir())
	if !strings.Contains(out.connectionString, "DefaultEndpointsProtocol=https;") || !strings.HasPrefix(out.endpoint, "https://") || out.caFile == "" {
		t.Fatalf("endpoint %s, connection string %s, CA %q", out.endpoint, out.connectionString, out.caFile)
	}
	pemBytes, err := os.ReadFile(out.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	svc, err := aztables.NewServiceClientFromConnectionString(out.connectionString, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{
		Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(context.Background(), "secure", nil); err != nil {
		t.Fatal(err)
	}
}

func TestBearerTokensWithoutHTTPSAreAConfigurationError(t *testing.T) {
	if _, err := parseFlags([]string{"--oauth", "basic"}, io.Discard); err == nil || !strings.Contains(err.Error(), "HTTPS") {
		t.Fatalf("got %v", err)
	}
	if _, err := parseFlags([]string{"--oauth", "basic", "--tls"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := parseFlags([]string{"--cert", "c.pem"}, io.Discard); err == nil {
		t.Fatal("--cert without --key accepted")
	}
}

func TestStartFailsOnFaultRulesThatCouldNeverMatch(t *testing.T) {
	rules := t.TempDir() + "/rules.json"
	if err := os.WriteFile(rules, []byte(`[{"id":"typo","operation":"InsertEntity","action":"close"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--in-memory", "--faults", rules, "--table-addr", "127.0.0.1:0",
		"--blob-addr", "127.0.0.1:0", "--queue-addr", "127.0.0.1:0", "--console-addr", ""}, io.Discard, io.Discard)
	want := `--faults: rule typo: operation "InsertEntity" is unknown; did you mean "Insert Entity"?`
	if err == nil || err.Error() != want {
		t.Fatalf("start-up error %v, want %s", err, want)
	}
}

func TestTheThrottleBannerCallsOnlyAzuresRatesAzuresTargets(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "  throttle: 2000 entities/s per table partition, 2000 messages/s per queue, 500 requests/s per blob, 20000 per account, Azure's targets (503 ServerBusy beyond)\n"},
		{[]string{"--throttle-partition-rate", "20", "--throttle-account-rate", "100"}, "  throttle: 20 entities/s per table partition, 2000 messages/s per queue, 500 requests/s per blob, 100 per account (503 ServerBusy beyond)\n"},
		{[]string{"--throttle-blob-rate", "50"}, "  throttle: 2000 entities/s per table partition, 2000 messages/s per queue, 50 requests/s per blob, 20000 per account (503 ServerBusy beyond)\n"},
	} {
		_, out := startTabulaOutput(t, append([]string{"--in-memory", "--throttle"}, c.args...)...)
		if !strings.Contains(out.banner, c.want) {
			t.Errorf("--throttle %v: banner\n%s\nwant the line %q", c.args, out.banner, c.want)
		}
	}
}

// The console serves metrics that count what the server did, and health checks.
func TestConsoleServesMetricsAndHealth(t *testing.T) {
	_, out := startTabulaOutput(t, "--in-memory")
	c := client(t, out.endpoint, "counted")
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddEntity(context.Background(), []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntity(context.Background(), "p", "r", nil); err != nil {
		t.Fatal(err)
	}
	blobs := blobClient(t, out.connectionString)
	if _, err := blobs.CreateContainer(context.Background(), "counted", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.UploadBuffer(context.Background(), "counted", "b", make([]byte, 1000), nil); err != nil {
		t.Fatal(err)
	}
	got, err := blobs.DownloadStream(context.Background(), "counted", "b", &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Offset: 100, Count: 300}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, got.Body)
	got.Body.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(out.console + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := get("/metrics")
	for _, want := range []string{
		`tabula_requests_total{operation="Insert Entity",service="table",status="201"} 1`,
		`tabula_requests_total{operation="Create Table",service="table",status="201"} 1`,
		"tabula_entities_written_total 1",
		`tabula_query_entities_scanned_total{plan="point"} 1`,
		"tabula_blob_writes_total 1",
		"tabula_blob_bytes_written_total 1000",
		"tabula_blob_bytes_read_total 300",
		"tabula_pebble_disk_usage_bytes",
	} {
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %s", status, want)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := get(path); status != 200 {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
}

// --blob-versioning and --container-soft-delete name all accounts or hosted ones, and refuse
// what they cannot mean.
func TestAccountSettingFlags(t *testing.T) {
	hosted := []auth.Account{{Name: "one"}, {Name: "two"}}
	v, err := versioningOf("two", hosted)
	if err != nil || v("one") || !v("two") {
		t.Fatalf("versioningOf(two): %v", err)
	}
	if v, err := versioningOf("all", hosted); err != nil || !v("one") {
		t.Fatalf("versioningOf(all): %v", err)
	}
	if _, err := versioningOf("three", hosted); err == nil {
		t.Fatal("versioning for an account not hosted")
	}
	r, err := containerRetentionOf("7", hosted)
	if err != nil || r("one") != 7 || r("two") != 7 {
		t.Fatalf("containerRetentionOf(7): %v", err)
	}
	if r, err = containerRetentionOf("two:3", hosted); err != nil || r("one") != 0 || r("two") != 3 {
		t.Fatalf("containerRetentionOf(two:3): %v", err)
	}
	for _, bad := range []string{"0", "366", "x", "three:3", "two:0"} {
		if _, err := containerRetentionOf(bad, hosted); err == nil {
			t.Errorf("containerRetentionOf(%q) took it", bad)
		}
	}
	// --blob-immutability names accounts or single containers of accounts that keep versions.
	im, err := immutabilityOf("two/worm,two/other", hosted, v)
	if err != nil || !im("two", "worm") || im("two", "plain") || im("one", "worm") {
		t.Fatalf("immutabilityOf(two/worm): %v", err)
	}
	if im, err = immutabilityOf("two", hosted, v); err != nil || !im("two", "any") || im("one", "any") {
		t.Fatalf("immutabilityOf(two): %v", err)
	}
	for _, bad := range []string{"one", "one/worm", "three", "all"} {
		if _, err := immutabilityOf(bad, hosted, v); err == nil {
			t.Errorf("immutabilityOf(%q) took an account without versions, or none", bad)
		}
	}
}
