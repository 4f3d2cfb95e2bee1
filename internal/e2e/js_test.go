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
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

// TestJavaScriptSDK runs testdata/js/sdk-smoke.mjs, the official JS SDK (@azure/data-tables)
// driving Tabula: it signs with SharedKey rather than SharedKeyLite, builds its own $batch
// bodies and parses responses its own way, so it checks wire compatibility the Go SDK cannot.
// It needs node and `npm ci` in testdata/js (.ci/run does both); elsewhere it is skipped,
// loudly, and under CI=true it fails instead.
func TestJavaScriptSDK(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		runJSSmoke(t, "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="+devKey+";TableEndpoint="+s.url+";")
	})
}

// TestUseDevelopmentStorageWorks serves on the emulator's well-known address and lets the JS
// SDK find it from UseDevelopmentStorage=true alone: the drop-in default.
func TestUseDevelopmentStorageWorks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:10002")
	if err != nil {
		t.Skipf("127.0.0.1:10002 is taken (%v); the emulator address cannot be tested here", err)
	}
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := &http.Server{Handler: tablehttp.New(table.New(st), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	runJSSmoke(t, "UseDevelopmentStorage=true")
}

// runJSSmoke runs testdata/js/sdk-smoke.mjs against the connection string, with env added to
// node's environment.
func runJSSmoke(t *testing.T, conn string, env ...string) {
	t.Helper()
	runJSScript(t, "sdk-smoke.mjs", "data-tables", "js sdk smoke: ok", conn, env...)
}

// runJSScript runs the script of testdata/js, which uses the package @azure/<sdk>, against
// the connection string; it passes when node exits cleanly having printed ok.
func runJSScript(t *testing.T, script, sdk, ok, conn string, env ...string) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "js"))
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@azure", sdk))
	}
	if err != nil {
		msg := "*** JS SDK test SKIPPED: needs node and `npm ci` in internal/e2e/testdata/js (" + err.Error() + ") ***"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command(node, filepath.Join(dir, script), conn)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), ok) {
		t.Fatalf("JS SDK run failed (%v):\n%s", err, out)
	}
}
