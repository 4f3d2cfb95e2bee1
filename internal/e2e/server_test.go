// Package e2e drives Tabula through the official Azure SDK for Go (aztables) against an
// in-process server: if these pass, an application written for Azure Tables works unchanged.
package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

// devKey is the well-known key of devstoreaccount1.
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// backend opens a fresh store for one test.
type backend struct {
	name string
	open func(t *testing.T) store.Store
}

// backends lists every storage backend the SDK suite runs against.
var backends = []backend{
	{"pebble", func(t *testing.T) store.Store {
		st, err := pebble.Open(t.TempDir(), pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// forEachBackend runs test once per backend, each with its own server.
func forEachBackend(t *testing.T, test func(t *testing.T, s *testServer)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			test(t, startServer(t, b.open(t)))
		})
	}
}

type testServer struct {
	url     string // service root, http://127.0.0.1:port/devstoreaccount1
	service *aztables.ServiceClient
}

func startServer(t *testing.T, st store.Store) *testServer {
	t.Helper()
	return startServerOver(t, tablehttp.New(table.New(st), auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()}), nil))
}

// startServerOver serves h and returns an SDK client for it, path style.
func startServerOver(t *testing.T, h http.Handler) *testServer {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := srv.URL + "/devstoreaccount1"
	cred, err := aztables.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := aztables.NewServiceClientWithSharedKey(url, cred, &aztables.ClientOptions{
		ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{url: url, service: svc}
}

// newTable creates a table and returns its client.
func (s *testServer) newTable(t *testing.T, name string) *aztables.Client {
	t.Helper()
	if _, err := s.service.CreateTable(context.Background(), name, nil); err != nil {
		t.Fatalf("CreateTable(%s): %v", name, err)
	}
	return s.service.NewClient(name)
}

// wantAzureError asserts that err is an Azure error with the given status and code.
func wantAzureError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v, want Azure error %d %s", err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d %s, want %d %s (%v)", re.StatusCode, re.ErrorCode, status, code, err)
	}
}
