package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

var queueEndpointField = regexp.MustCompile(`QueueEndpoint=([^;]+)`)

// queueClient returns a client of queue name on the server that printed out.
func queueClient(t *testing.T, out serverOutput, name string) *azqueue.QueueClient {
	t.Helper()
	m := queueEndpointField.FindStringSubmatch(out.connectionString)
	if m == nil {
		t.Fatalf("no QueueEndpoint in the connection string %q", out.connectionString)
	}
	cred, err := azqueue.NewSharedKeyCredential("devstoreaccount1", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := azqueue.NewServiceClientWithSharedKeyCredential(m[1], cred, &azqueue.ClientOptions{
		ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc.NewQueueClient(name)
}

// Acknowledged puts and deletes of messages are on disk: a SIGKILL right after loses none,
// and brings back no deleted message.
func TestAcknowledgedMessagesSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd, out := startTabulaOutput(t, "--data", dir)
	q := queueClient(t, out, "durable")
	ctx := context.Background()
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	put := map[string]string{} // id → text of every acknowledged put
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				text := fmt.Sprintf("w%d-%02d", w, i)
				resp, err := q.EnqueueMessage(ctx, text, nil)
				if err != nil {
					t.Errorf("enqueue %s: %v", text, err)
					return
				}
				mu.Lock()
				put[*resp.Messages[0].MessageID] = text
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	deleted := map[string]bool{}
	for len(deleted) < 100 {
		got, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(20)), VisibilityTimeout: to.Ptr(int32(1))})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got.Messages {
			if _, err := q.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
				t.Fatal(err)
			}
			deleted[*m.MessageID] = true
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, out = startTabulaOutput(t, "--data", dir)
	q = queueClient(t, out, "durable")
	found := map[string]string{}
	for {
		got, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(3600))})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			found[*m.MessageID] = *m.MessageText
		}
	}
	if len(put) != 320 {
		t.Fatalf("only %d puts were acknowledged", len(put))
	}
	for id, text := range put {
		got, ok := found[id]
		switch {
		case deleted[id] && ok:
			t.Errorf("message %s was deleted before the crash and is back", id)
		case !deleted[id] && (!ok || got != text):
			t.Errorf("message %s (%q) was put before the crash and is %q after it", id, text, got)
		}
	}
	if len(found) != len(put)-len(deleted) {
		t.Errorf("%d messages after the crash, want %d", len(found), len(put)-len(deleted))
	}
}

func TestQueueAddressFallsBackToEnvironmentThenDefault(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.queueAddr != "127.0.0.1:10001" {
		t.Fatalf("default: %q, %v", c.queueAddr, err)
	}
	t.Setenv("TABULA_QUEUE_ADDR", "127.0.0.1:20001")
	if c, _ = parseFlags(nil, io.Discard); c.queueAddr != "127.0.0.1:20001" {
		t.Fatalf("from environment: %q", c.queueAddr)
	}
	if c, _ = parseFlags([]string{"--queue-addr", "127.0.0.1:30001"}, io.Discard); c.queueAddr != "127.0.0.1:30001" {
		t.Fatalf("a flag must win over the environment: %q", c.queueAddr)
	}
}
