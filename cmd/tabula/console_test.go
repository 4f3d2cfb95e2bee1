package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
)

// The web console at / works on the data the table, blob and queue endpoints serve: the same
// store, through the same services.
func TestTheWebConsoleSeesWhatTheEndpointsStore(t *testing.T) {
	_, out := startTabulaOutput(t, "--in-memory")
	c := client(t, out.endpoint, "shown")
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddEntity(context.Background(), []byte(`{"PartitionKey":"p","RowKey":"r","Qty":7}`), nil); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", out.console+path, nil)
		req.SetBasicAuth(auth.DevelopmentAccountName, auth.DevelopmentAccountKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("/"); status != 200 || !strings.Contains(body, "<title>Tabula console</title>") {
		t.Errorf("/: %d %.200s", status, body)
	}
	if status, body := get("/api/accounts/devstoreaccount1/tables"); status != 200 || !strings.Contains(body, `"name": "shown"`) {
		t.Errorf("tables: %d %s", status, body)
	}
	status, body := get("/api/accounts/devstoreaccount1/tables/shown/entities")
	if status != 200 || !strings.Contains(body, `"name": "Qty"`) || !strings.Contains(body, `"type": "Edm.Int32"`) || !strings.Contains(body, `"plan": "table-scan"`) {
		t.Errorf("entities: %d %s", status, body)
	}

	blobs := blobClient(t, out.connectionString)
	if _, err := blobs.CreateContainer(context.Background(), "files", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.UploadBuffer(context.Background(), "files", "a/b.txt", []byte("bytes"), nil); err != nil {
		t.Fatal(err)
	}
	if status, body := get("/api/hello"); status != 200 || !strings.Contains(body, `"blob"`) || !strings.Contains(body, `"queue"`) {
		t.Errorf("hello: %d %s", status, body)
	}
	if status, body := get("/api/accounts/devstoreaccount1/containers/files/blob?name=a/b.txt"); status != 200 || body != "bytes" {
		t.Errorf("blob: %d %s", status, body)
	}

	q := queueClient(t, out, "jobs")
	if _, err := q.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueMessage(context.Background(), "build #7", nil); err != nil {
		t.Fatal(err)
	}
	if status, body := get("/api/accounts/devstoreaccount1/queues"); status != 200 || !strings.Contains(body, `"name": "jobs"`) || !strings.Contains(body, `"approximateMessageCount": 1`) {
		t.Errorf("queues: %d %s", status, body)
	}
	if status, body := get("/api/accounts/devstoreaccount1/queues/jobs/messages"); status != 200 || !strings.Contains(body, `"text": "build #7"`) {
		t.Errorf("messages: %d %s", status, body)
	}
}
