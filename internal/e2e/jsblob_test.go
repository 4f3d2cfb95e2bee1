package e2e

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// blobHandler is the Blob service of the development account over st, which must keep
// objects too (every backend does).
func blobHandler(t *testing.T, st store.Store) http.Handler {
	t.Helper()
	be, ok := st.(store.Backend)
	if !ok {
		t.Fatalf("%T keeps no objects", st)
	}
	return blobhttp.New(blob.New(be, be), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil)
}

// TestJavaScriptBlobSDK runs testdata/js/blob-smoke.mjs, the official JS SDK
// (@azure/storage-blob) driving every Blob operation of issue 12 on each backend: containers,
// block blobs staged in parallel, ranges, properties, snapshots, leases, append and page blobs,
// copies, conditions, SAS and anonymous access, blob index tags, soft delete, the root
// container and names XML cannot carry.
func TestJavaScriptBlobSDK(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			srv := httptest.NewServer(blobHandler(t, b.open(t)))
			defer srv.Close()
			runJSBlobSmoke(t, "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="+devKey+";BlobEndpoint="+srv.URL+"/devstoreaccount1;")
		})
	}
}

// TestUseDevelopmentStorageWorksForBlobs serves the Blob service on the emulator's
// well-known address and lets the JS SDK find it from UseDevelopmentStorage=true alone.
func TestUseDevelopmentStorageWorksForBlobs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:10000")
	if err != nil {
		t.Skipf("127.0.0.1:10000 is taken (%v); the emulator address cannot be tested here", err)
	}
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := &http.Server{Handler: blobHandler(t, st)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	runJSBlobSmoke(t, "UseDevelopmentStorage=true")
}

func runJSBlobSmoke(t *testing.T, conn string) {
	t.Helper()
	runJSScript(t, "blob-smoke.mjs", "storage-blob", "js blob sdk smoke: ok", conn)
}
