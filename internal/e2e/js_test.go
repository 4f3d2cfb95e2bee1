package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJavaScriptSDK runs testdata/js/sdk-smoke.mjs, the official JS SDK (@azure/data-tables)
// driving Tabula: it signs with SharedKey rather than SharedKeyLite, builds its own $batch
// bodies and parses responses its own way, so it checks wire compatibility the Go SDK cannot.
// It needs node and `npm ci` in testdata/js (.ci/run does both); elsewhere it is skipped,
// loudly, and under CI=true it fails instead.
func TestJavaScriptSDK(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "js"))
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@azure", "data-tables"))
	}
	if err != nil {
		msg := "*** JS SDK test SKIPPED: needs node and `npm ci` in internal/e2e/testdata/js (" + err.Error() + ") ***"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	forEachBackend(t, func(t *testing.T, s *testServer) {
		conn := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devKey + ";TableEndpoint=" + s.url + ";"
		cmd := exec.Command(node, filepath.Join(dir, "sdk-smoke.mjs"), conn)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "js sdk smoke: ok") {
			t.Fatalf("JS SDK run failed (%v):\n%s", err, out)
		}
	})
}
