package cli

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/queuehttp"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// startBlobAndQueue serves an in-memory Tabula's Blob and Queue services and returns a
// connection string naming both (and no Table endpoint).
func startBlobAndQueue(t *testing.T) string {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts := auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()})
	blobs := httptest.NewServer(blobhttp.New(blob.New(st, st), accounts, nil))
	t.Cleanup(blobs.Close)
	queues := httptest.NewServer(queuehttp.New(queue.New(st, queue.Options{}), accounts, nil))
	t.Cleanup(queues.Close)
	return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devKey +
		";BlobEndpoint=" + blobs.URL + "/devstoreaccount1;QueueEndpoint=" + queues.URL + "/devstoreaccount1;"
}

func TestBlobVerbsRoundTripFilesAndStreams(t *testing.T) {
	cs := startBlobAndQueue(t)
	must(t, cs, "", "container", "create", "docs", "spare")
	if got := must(t, cs, "", "container", "ls").stdout; got != "docs\nspare\n" {
		t.Fatalf("container ls: %q", got)
	}
	must(t, cs, "", "container", "rm", "spare")

	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: more than one block
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "page.html"), []byte("<p>hi</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, cs, "", "blob", "put", "docs", "dir/big.bin", filepath.Join(dir, "big.bin"))
	must(t, cs, "", "blob", "put", "docs", "page.html", filepath.Join(dir, "page.html"))
	must(t, cs, "from stdin", "blob", "put", "docs", "stdin.txt", "--content-type", "text/plain")

	must(t, cs, "", "blob", "get", "docs", "dir/big.bin", filepath.Join(dir, "back.bin"))
	if back, err := os.ReadFile(filepath.Join(dir, "back.bin")); err != nil || !bytes.Equal(back, big) {
		t.Fatalf("downloaded %d bytes (%v), want the %d uploaded", len(back), err, len(big))
	}
	if got := must(t, cs, "", "blob", "get", "docs", "stdin.txt").stdout; got != "from stdin" {
		t.Fatalf("blob get to stdout: %q", got)
	}

	ls := must(t, cs, "", "blob", "ls", "docs").stdout
	lines := strings.Split(strings.TrimSpace(ls), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "dir/big.bin") ||
		!strings.Contains(lines[1], "4194304") || !strings.Contains(lines[1], "BlockBlob") {
		t.Fatalf("blob ls:\n%s", ls)
	}
	if got := must(t, cs, "", "blob", "ls", "docs", "--prefix", "page").stdout; !strings.Contains(got, "page.html") || strings.Contains(got, "big.bin") {
		t.Fatalf("blob ls --prefix page:\n%s", got)
	}

	must(t, cs, "", "blob", "rm", "docs", "page.html", "stdin.txt")
	err := fails(t, cs, "", "blob", "get", "docs", "page.html", filepath.Join(dir, "gone.html"))
	if !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "BlobNotFound") {
		t.Fatalf("getting a deleted blob: %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "gone.html")); !os.IsNotExist(statErr) {
		t.Fatalf("a failed download left a file behind: %v", statErr)
	}
}

func TestQueueVerbsPutPeekAndPop(t *testing.T) {
	cs := startBlobAndQueue(t)
	must(t, cs, "", "queue", "create", "jobs")
	must(t, cs, "", "queue", "put", "jobs", "first", "second")
	must(t, cs, "third\nfourth\n", "queue", "put", "jobs")
	if got := must(t, cs, "", "queue", "ls").stdout; !strings.Contains(got, "\njobs ") || strings.Fields(strings.Split(got, "\n")[1])[1] != "4" {
		t.Fatalf("queue ls (want jobs with 4 messages):\n%s", got)
	}

	texts := func(out string) []string {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m message
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			got = append(got, m.Text)
		}
		return got
	}
	if got := texts(must(t, cs, "", "queue", "peek", "jobs", "-n", "2").stdout); strings.Join(got, ",") != "first,second" {
		t.Fatalf("peek -n 2: %v", got)
	}
	if got := texts(must(t, cs, "", "queue", "pop", "jobs", "-n", "3").stdout); strings.Join(got, ",") != "first,second,third" {
		t.Fatalf("pop -n 3: %v", got)
	}
	// Popped messages are gone, not hidden.
	if got := texts(must(t, cs, "", "queue", "peek", "jobs", "-n", "32").stdout); strings.Join(got, ",") != "fourth" {
		t.Fatalf("after pop: %v", got)
	}
	must(t, cs, "", "queue", "clear", "jobs")
	if got := must(t, cs, "", "queue", "peek", "jobs").stdout; got != "" {
		t.Fatalf("after clear: %q", got)
	}
	if err := fails(t, cs, "", "queue", "peek", "jobs", "-n", "33"); !strings.Contains(err.Error(), "1 to 32") {
		t.Fatalf("-n 33: %v", err)
	}
	must(t, cs, "", "queue", "rm", "jobs")
	if err := fails(t, cs, "", "queue", "put", "jobs", "x"); !strings.Contains(err.Error(), "QueueNotFound") {
		t.Fatalf("put to a deleted queue: %v", err)
	}
}

// A verb for a service the connection string has no endpoint for says so before sending.
func TestVerbsNameTheEndpointTheyLack(t *testing.T) {
	tableOnly := "TableEndpoint=http://127.0.0.1:1/devstoreaccount1;SharedAccessSignature=sv=1&sig=x"
	if err := fails(t, tableOnly, "", "queue", "ls"); !strings.Contains(err.Error(), "no queue endpoint") {
		t.Fatalf("queue ls: %v", err)
	}
	if err := fails(t, tableOnly, "", "blob", "ls", "c"); !strings.Contains(err.Error(), "no blob endpoint") {
		t.Fatalf("blob ls: %v", err)
	}
}
