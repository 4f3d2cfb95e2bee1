package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/tabula-dev/tabula/internal/azerr"
)

var tokenTime = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func storageClaims() map[string]any {
	return map[string]any{
		"aud": "https://storage.azure.com", "iss": "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/",
		"nbf": tokenTime.Add(-time.Minute).Unix(), "exp": tokenTime.Add(time.Hour).Unix(), "oid": "me", "tid": "72f988bf-86f1-41af-91ab-2d7cd011db47",
	}
}

func signToken(t *testing.T, key *rsa.PrivateKey, kid string, c map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.Signed(signer).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// keySetFile writes a JWKS of key's public half under kid and loads it.
func keySetFile(t *testing.T, key *rsa.PrivateKey, kid string) *KeySet {
	t.Helper()
	doc, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := LoadKeySet(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func bearerRequest(service Service, token string, secure bool, version string) *Request {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	h.Set("x-ms-version", version)
	return &Request{Service: service, Method: "GET", RawPath: "/devstoreaccount1/Tables", Query: url.Values{}, Header: h,
		Account: "devstoreaccount1", Secure: secure, TLSOffered: true}
}

func TestVerifiedBearerTokens(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	a := newAuthenticator(tokenTime)
	a.OAuth = OAuth{Mode: OAuthVerify, Keys: keySetFile(t, key, "k1")}
	authn := func(token string) (*Grant, error) {
		return a.Authenticate(context.Background(), bearerRequest(Table, token, true, "2020-12-06"))
	}
	g, err := authn(signToken(t, key, "k1", storageClaims()))
	if err != nil {
		t.Fatalf("a good token: %v", err)
	}
	if err := g.Authorize(OpInsertEntity, Target{Name: "t", PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatalf("a token without roles is the owner: %v", err)
	}
	with := func(change func(map[string]any)) map[string]any {
		c := storageClaims()
		change(c)
		return c
	}
	for _, tc := range []struct {
		name, token, detail string
	}{
		{"wrong audience", signToken(t, key, "k1", with(func(c map[string]any) { c["aud"] = "https://management.azure.com" })), "Audience validation failed"},
		{"expired", signToken(t, key, "k1", with(func(c map[string]any) { c["exp"] = tokenTime.Add(-10 * time.Minute).Unix() })), "The token is expired"},
		{"not yet valid", signToken(t, key, "k1", with(func(c map[string]any) { c["nbf"] = tokenTime.Add(10 * time.Minute).Unix() })), "not yet valid"},
		{"foreign issuer", signToken(t, key, "k1", with(func(c map[string]any) { c["iss"] = "https://evil.example/" })), "Issuer validation failed"},
		{"bad signature", signToken(t, other, "k1", storageClaims()), "Signature validation failed"},
		{"unknown key", signToken(t, key, "k2", storageClaims()), "Signature validation failed"},
		{"not a JWT", "abc.def", "not an RS256-signed JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := authn(tc.token)
			e := wantError(t, err, 401, azerr.InvalidAuthenticationInfo)
			if !strings.Contains(e.Message, tc.detail) || !strings.HasPrefix(e.Header.Get("WWW-Authenticate"), "Bearer authorization_uri=") {
				t.Fatalf("message %q, header %v", e.Message, e.Header)
			}
		})
	}
	// An audience naming the account's own endpoint is a storage audience too.
	if _, err := authn(signToken(t, key, "k1", with(func(c map[string]any) { c["aud"] = "https://devstoreaccount1.table.core.windows.net/" }))); err != nil {
		t.Fatalf("account audience: %v", err)
	}
}

func TestBearerTokensNeedHTTPSAndARecentVersion(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	a := newAuthenticator(tokenTime)
	a.OAuth = OAuth{Mode: OAuthVerify, Keys: keySetFile(t, key, "k1")}
	token := signToken(t, key, "k1", storageClaims())
	_, err := a.Authenticate(context.Background(), bearerRequest(Table, token, false, "2020-12-06"))
	wantError(t, err, 401, azerr.InvalidAuthenticationInfo)
	_, err = a.Authenticate(context.Background(), bearerRequest(Table, token, true, "2017-07-29"))
	wantError(t, err, 400, azerr.InvalidHeaderValue)
	// Without --oauth every token is refused with the challenge.
	_, err = newAuthenticator(tokenTime).Authenticate(context.Background(), bearerRequest(Table, token, true, "2020-12-06"))
	wantError(t, err, 401, azerr.InvalidAuthenticationInfo)
}

// Basic mode checks claims but not signatures: a token signed by anyone, or by no one, passes
// if its claims do.
func TestBasicModeChecksClaimsOnly(t *testing.T) {
	a := newAuthenticator(tokenTime)
	a.OAuth = OAuth{Mode: OAuthBasic}
	payload, _ := json.Marshal(storageClaims())
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	if _, err := a.Authenticate(context.Background(), bearerRequest(Blob, unsigned, true, "2021-08-06")); err != nil {
		t.Fatalf("basic mode refused a well-formed token: %v", err)
	}
	c := storageClaims()
	c["exp"] = tokenTime.Add(-time.Hour).Unix()
	payload, _ = json.Marshal(c)
	expired := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	_, err := a.Authenticate(context.Background(), bearerRequest(Blob, expired, true, "2021-08-06"))
	wantError(t, err, 401, azerr.InvalidAuthenticationInfo)
}

func TestBearerRolesGrantWhatAzuresDataRolesGrant(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	a := newAuthenticator(tokenTime)
	a.OAuth = OAuth{Mode: OAuthVerify, Keys: keySetFile(t, key, "k1")}
	grant := func(service Service, roles ...string) *Grant {
		c := storageClaims()
		c["roles"] = roles
		g, err := a.Authenticate(context.Background(), bearerRequest(service, signToken(t, key, "k1", c), true, "2021-08-06"))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, tc := range []struct {
		service          Service
		roles            []string
		allowed, refused []*Operation
	}{
		{Table, []string{"Storage Table Data Reader"}, []*Operation{OpQueryEntities, OpQueryTables}, []*Operation{OpInsertEntity, OpDeleteTable, OpInsertOrMergeEntity}},
		{Table, []string{"0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3"}, []*Operation{OpInsertEntity, OpDeleteTable, OpSetTableACL}, nil},
		{Blob, []string{"Storage Blob Data Reader"}, []*Operation{OpGetBlob, OpListBlobs, OpListContainers}, []*Operation{OpPutBlob, OpDeleteContainer}},
		{Blob, []string{"Storage Blob Data Contributor"}, []*Operation{OpPutBlob, OpLeaseBlob, OpDeleteContainer}, nil},
		{Queue, []string{"Storage Queue Data Message Sender"}, []*Operation{OpPutMessage}, []*Operation{OpGetMessages, OpDeleteMessage, OpCreateQueue}},
		{Queue, []string{"Storage Queue Data Message Processor"}, []*Operation{OpGetMessages, OpDeleteMessage, OpPeekMessages}, []*Operation{OpPutMessage, OpClearMessages}},
		// A role of another service grants nothing here.
		{Queue, []string{"Storage Blob Data Owner"}, nil, []*Operation{OpPeekMessages, OpPutMessage}},
	} {
		g := grant(tc.service, tc.roles...)
		for _, op := range tc.allowed {
			if err := g.Authorize(op, Target{Name: "x", Blob: "b", PartitionKey: "p", RowKey: "r"}); err != nil {
				t.Errorf("%v: %v refused: %v", tc.roles, op, err)
			}
		}
		for _, op := range tc.refused {
			wantError(t, g.Authorize(op, Target{Name: "x", Blob: "b", PartitionKey: "p", RowKey: "r"}), 403, azerr.AuthorizationPermissionMismatch)
		}
	}
}

// A token refused for its audience (or lifetime, or issuer) gets a challenge naming its own
// tenant: the SDKs follow a challenge to a tenant id only, asking it for a token for
// https://storage.azure.com, and retry (the JS SDK's "Bearer token challenge should work").
func TestChallengeNamesTheTokensTenant(t *testing.T) {
	a := newAuthenticator(tokenTime)
	a.OAuth = OAuth{Mode: OAuthBasic}
	unsigned := func(c map[string]any) string {
		payload, _ := json.Marshal(c)
		return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	}
	c := storageClaims()
	c["aud"] = "https://badaudience.blob.core.windows.net"
	_, err := a.Authenticate(context.Background(), bearerRequest(Queue, unsigned(c), true, "2026-02-06"))
	wantError(t, err, 401, azerr.InvalidAuthenticationInfo)
	want := "Bearer authorization_uri=https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/authorize resource_id=https://storage.azure.com"
	if got := azerr.As(err).Header.Get("WWW-Authenticate"); got != want {
		t.Fatalf("challenge %q, want %q", got, want)
	}
	// A token naming no tenant id: "common".
	c["tid"] = "contoso"
	_, err = a.Authenticate(context.Background(), bearerRequest(Queue, unsigned(c), true, "2026-02-06"))
	if got := azerr.As(err).Header.Get("WWW-Authenticate"); !strings.Contains(got, "/common/oauth2/authorize") {
		t.Fatalf("challenge %q", got)
	}
}
