package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/blobhttp"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/queuehttp"
	"github.com/tabula-dev/tabula/internal/server"
	"github.com/tabula-dev/tabula/internal/store/pebble"
	"github.com/tabula-dev/tabula/internal/table"
	"github.com/tabula-dev/tabula/internal/tablehttp"
)

// httpsServer is a table endpoint serving HTTPS (and HTTP) with a local CA, taking bearer tokens
// signed by key.
type httpsServer struct {
	addr      string // 127.0.0.1:port of the table endpoint
	blobAddr  string // and of the blob endpoint
	queueAddr string // and of the queue endpoint
	caFile    string
	client    *http.Client // trusts the CA
	key       *rsa.PrivateKey
}

func startHTTPSServer(t *testing.T) *httpsServer {
	t.Helper()
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ca, err := server.OpenLocalCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "test-key", Algorithm: "RS256", Use: "sig"}}})
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.LoadKeySet(context.Background(), jwksFile)
	if err != nil {
		t.Fatal(err)
	}
	authn := auth.NewAuthenticator([]auth.Account{auth.DevelopmentAccount()})
	authn.OAuth = auth.OAuth{Mode: auth.OAuthVerify, Keys: keys}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := server.Listen(server.Limits{}, log,
		server.Endpoint{Name: "table", Addr: "127.0.0.1:0", Handler: tablehttp.New(table.New(st), authn, log)},
		server.Endpoint{Name: "blob", Addr: "127.0.0.1:0", Handler: blobhttp.New(blob.New(st, st), authn, log)},
		server.Endpoint{Name: "queue", Addr: "127.0.0.1:0", Handler: queuehttp.New(queue.New(st, queue.Options{}), authn, log)})
	if err != nil {
		t.Fatal(err)
	}
	g.TLS = ca.TLS
	serveUntilCleanup(t, g)

	pemBytes, err := os.ReadFile(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return &httpsServer{addr: g.Addr("table").String(), blobAddr: g.Addr("blob").String(), queueAddr: g.Addr("queue").String(), caFile: ca.CAFile, client: client, key: key}
}

// tokenCredential is an azcore.TokenCredential of the test's own making: it hands out a JWT
// with the given claims signed by key.
type tokenCredential struct {
	t      *testing.T
	key    *rsa.PrivateKey
	claims map[string]any
}

func (c tokenCredential) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: c.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "test-key"))
	if err != nil {
		return azcore.AccessToken{}, err
	}
	token, err := jwt.Signed(signer).Claims(c.claims).Serialize()
	return azcore.AccessToken{Token: token, ExpiresOn: time.Now().Add(time.Hour)}, err
}

func entraClaims() map[string]any {
	now := time.Now()
	return map[string]any{
		"aud": "https://storage.azure.com", "iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000001/",
		"nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(), "oid": "tester",
	}
}

func (s *httpsServer) tokenClient(t *testing.T, claims map[string]any) *aztables.ServiceClient {
	t.Helper()
	svc, err := aztables.NewServiceClient("https://"+s.addr+"/devstoreaccount1", tokenCredential{t, s.key, claims}, &aztables.ClientOptions{
		ClientOptions: policy.ClientOptions{Transport: s.client, Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// The Go SDK with a token credential works over HTTPS when the token's signature, audience and
// lifetime check out, and is refused otherwise.
func TestTokenCredentialOverHTTPS(t *testing.T) {
	s := startHTTPSServer(t)
	ctx := context.Background()
	svc := s.tokenClient(t, entraClaims())
	if _, err := svc.CreateTable(ctx, "tokens", nil); err != nil {
		t.Fatalf("CreateTable with a good token: %v", err)
	}
	c := svc.NewClient("tokens")
	if _, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","N":1}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatal(err)
	}

	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		name   string
		client *aztables.ServiceClient
	}{
		{"wrong audience", s.tokenClient(t, with(entraClaims(), "aud", "https://management.azure.com"))},
		{"expired", s.tokenClient(t, with(entraClaims(), "exp", time.Now().Add(-time.Hour).Unix()))},
		{"bad signature", func() *aztables.ServiceClient {
			forged := *s
			forged.key = other
			return forged.tokenClient(t, entraClaims())
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.client.NewClient("tokens").GetEntity(ctx, "p", "r", nil)
			wantAzureError(t, err, 401, "InvalidAuthenticationInfo")
		})
	}

	// A valid token whose role only reads may read and not write.
	reader := s.tokenClient(t, with(entraClaims(), "roles", []string{"Storage Table Data Reader"})).NewClient("tokens")
	if _, err := reader.GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatalf("reader reading: %v", err)
	}
	_, err := reader.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r2"}`), nil)
	wantAzureError(t, err, 403, "AuthorizationPermissionMismatch")
}

func with(claims map[string]any, key string, value any) map[string]any {
	claims[key] = value
	return claims
}

// Once the server offers HTTPS, a SAS restricted to it is refused over plain HTTP, as on Azure.
func TestHTTPSOnlySASIsRefusedOverHTTP(t *testing.T) {
	s := startHTTPSServer(t)
	cred, err := aztables.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	sas, err := aztables.AccountSASSignatureValues{
		Protocol: aztables.SASProtocolHTTPS, ExpiryTime: time.Now().Add(time.Hour),
		Permissions: "rl", Services: "t", ResourceTypes: "sco",
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scheme string
		status int
		code   string
	}{{"https", 200, ""}, {"http", 403, "AuthorizationProtocolMismatch"}} {
		req, _ := http.NewRequest("GET", tc.scheme+"://"+s.addr+"/devstoreaccount1/Tables?"+sas.Encode(), nil)
		req.Header.Set("x-ms-version", "2019-02-02")
		req.Header.Set("Accept", "application/json")
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("x-ms-error-code") != tc.code {
			t.Fatalf("%s: got %d %s", tc.scheme, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	}
}

// The JS SDK reaches Tabula over HTTPS when node trusts the local CA.
func TestJavaScriptSDKOverHTTPS(t *testing.T) {
	s := startHTTPSServer(t)
	runJSSmoke(t, "DefaultEndpointsProtocol=https;AccountName=devstoreaccount1;AccountKey="+devKey+";TableEndpoint=https://"+s.addr+"/devstoreaccount1;",
		"NODE_EXTRA_CA_CERTS="+s.caFile)
}
