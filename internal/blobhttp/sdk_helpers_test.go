package blobhttp_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/store/postgres"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type backendStore interface {
	store.Store
	store.Objects
}

// backends are the stores the SDK tests run on: the embedded one and PostgreSQL (skipped
// loudly where PostgreSQL is not installed, never in CI).
var backends = []struct {
	name string
	open func(t *testing.T) backendStore
}{
	{"pebble", func(t *testing.T) backendStore {
		st, err := pebble.Open("", pebble.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(t *testing.T) backendStore {
		st, err := postgres.Open(t.Context(), pgtest.Start(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// env is a blob endpoint on one backend and an azblob client of the development account.
type env struct {
	*testing.T
	svc     *blob.Service
	st      backendStore
	handler http.Handler
	url     string // the account's service URL, path style
	client  *azblob.Client
}

func forEachBackend(t *testing.T, test func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			test(t, newEnv(t, st))
		})
	}
}

func newEnv(t *testing.T, st backendStore) *env {
	svc := blob.New(st, st)
	dev := auth.DevelopmentAccount()
	h := blobhttp.New(svc, auth.NewAuthenticator([]auth.Account{dev}), nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e := &env{T: t, svc: svc, st: st, handler: h, url: srv.URL + "/" + dev.Name}
	cred, err := azblob.NewSharedKeyCredential(dev.Name, base64.StdEncoding.EncodeToString(dev.Keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	e.client, err = azblob.NewClientWithSharedKeyCredential(e.url, cred, clientOptions())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// clientOptions make failures show at once instead of after retries.
func clientOptions() *azblob.ClientOptions {
	return &azblob.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1, TryTimeout: time.Minute}}}
}

func (e *env) container(name string) *container.Client {
	e.Helper()
	c := e.client.ServiceClient().NewContainerClient(name)
	if _, err := c.Create(e.Context(), nil); err != nil {
		e.Fatalf("creating container %s: %v", name, err)
	}
	return c
}

// wantStatus fails unless err is a response error with status and error code.
func wantStatus(t testing.TB, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d %s, want %d %s", re.StatusCode, re.ErrorCode, status, code)
	}
}

func blockIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = base64.StdEncoding.EncodeToString([]byte{0, 0, byte(i >> 8), byte(i)})
	}
	return ids
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// readableURL is the blob's URL with a SAS that reads it: what a copy source of Copy Blob From
// URL and the *From URL operations needs, even in the same account.
func readableURL(t testing.TB, b interface {
	GetSASURL(sas.BlobPermissions, time.Time, *azblobblob.GetSASURLOptions) (string, error)
}) string {
	t.Helper()
	u, err := b.GetSASURL(sas.BlobPermissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
