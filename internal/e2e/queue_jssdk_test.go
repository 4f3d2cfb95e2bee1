package e2e

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/queuehttp"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// TestQueueJavaScriptSDK runs testdata/js/queue-smoke.mjs, the official JS SDK
// (@azure/storage-queue) driving every queue operation: its own signer, SAS generator and XML
// reader check wire compatibility the Go SDK cannot. Like TestJavaScriptSDK it needs node and
// `npm ci` in testdata/js, and fails instead of skipping under CI=true.
func TestQueueJavaScriptSDK(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		runQueueJSSmoke(t, "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="+devKey+";QueueEndpoint="+s.url+";")
	})
}

// TestUseDevelopmentStorageWorksForQueues serves queues on the emulator's well-known address
// and lets the JS SDK find it from UseDevelopmentStorage=true alone.
func TestUseDevelopmentStorageWorksForQueues(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:10001")
	if err != nil {
		t.Skipf("127.0.0.1:10001 is taken (%v); the emulator address cannot be tested here", err)
	}
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := &http.Server{Handler: queuehttp.New(queue.New(st, queue.Options{}), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	runQueueJSSmoke(t, "UseDevelopmentStorage=true")
}

func runQueueJSSmoke(t *testing.T, conn string) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "js"))
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@azure", "storage-queue"))
	}
	if err != nil {
		msg := "*** JS queue SDK test SKIPPED: needs node and `npm ci` in internal/e2e/testdata/js (" + err.Error() + ") ***"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command(node, filepath.Join(dir, "queue-smoke.mjs"), conn).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "js queue smoke: ok") {
		t.Fatalf("JS queue SDK run failed (%v):\n%s", err, out)
	}
}
