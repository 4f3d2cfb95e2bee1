package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
)

// The test binary doubles as the server: with TABULA_TEST_SERVE set it runs tabula itself, so
// the crash test can SIGKILL a real server process without building a second binary.
func TestMain(m *testing.M) {
	if os.Getenv("TABULA_TEST_SERVE") == "1" {
		os.Exit(runUntilSignalled(os.Args[1:]))
	}
	os.Exit(m.Run())
}

var (
	endpointLine   = regexp.MustCompile(`account \w+: (http://\S+)`)
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
	rest                       chan string // the lines printed afterwards
}

func startTabulaOutput(t *testing.T, args ...string) (*exec.Cmd, serverOutput) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"--table-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "TABULA_TEST_SERVE=1")
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
			if m := endpointLine.FindStringSubmatch(sc.Text()); m != nil {
				out.endpoint = m[1]
			}
			if m := connStringLine.FindStringSubmatch(sc.Text()); m != nil {
				out.connectionString = m[1]
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
