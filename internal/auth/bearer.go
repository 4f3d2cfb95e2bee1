package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// OAuthMode selects how bearer tokens (Entra ID, "OAuth") are taken.
type OAuthMode uint8

const (
	// OAuthOff refuses every bearer token with Azure's challenge.
	OAuthOff OAuthMode = iota
	// OAuthBasic checks a token's claims — audience, issuer, lifetime — but not its
	// signature, as Azurite's "basic" mode does: Entra ID's signatures cannot be checked
	// offline. For local development only: anyone can forge such a token.
	OAuthBasic
	// OAuthVerify also checks the token's RS256 signature against the operator's keys.
	OAuthVerify
)

// OAuth configures bearer tokens. The zero value refuses them.
type OAuth struct {
	Mode OAuthMode
	// Keys verify signatures in OAuthVerify mode.
	Keys *KeySet
	// Issuers and Audiences are accepted besides Entra ID's issuers and the storage
	// audiences, for an operator's own identity provider.
	Issuers, Audiences []string
}

// oauthMinVersion is the first x-ms-version that takes bearer tokens.
const oauthMinVersion = "2017-11-09"

// tokenClockSkew is how far a token's nbf and exp may be off the server's clock.
const tokenClockSkew = 5 * time.Minute

// storageAppID is Azure Storage's application id, an audience Entra ID issues tokens for.
const storageAppID = "e406a681-f3d4-42a8-90b6-c2b029497af1"

// claims are the parts of a token authorization reads.
type claims struct {
	Issuer    string           `json:"iss"`
	Audience  jwt.Audience     `json:"aud"`
	Expiry    *jwt.NumericDate `json:"exp"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	ObjectID  string           `json:"oid"`
	TenantID  string           `json:"tid"`
	// Roles names the Azure built-in data roles the caller holds (bearerRoles); a token
	// without the claim is taken as the account's owner.
	Roles *[]string `json:"roles"`
}

// authenticateBearer checks "Authorization: Bearer <JWT>" (auth.md §9). Refusals are 401
// InvalidAuthenticationInfo with the bearer challenge and, on the second line, the reason
// Azure gives in AuthenticationErrorDetail; a version too old for tokens is 400.
func (a *Authenticator) authenticateBearer(ctx context.Context, r *Request, token string) (*Grant, error) {
	if a.OAuth.Mode == OAuthOff {
		return nil, bearerChallenge("Bearer tokens are not enabled on this server (see its --oauth option).")
	}
	if !r.Secure {
		return nil, bearerChallenge("Bearer tokens are accepted over HTTPS only.")
	}
	if v := r.version(); v < oauthMinVersion {
		return nil, azerr.Newf(azerr.InvalidHeaderValue, "The value for one of the HTTP headers is not in the correct format: bearer tokens need x-ms-version %s or later, not %q.", oauthMinVersion, v)
	}
	c, err := a.tokenClaims(ctx, token)
	if err != nil {
		return nil, bearerChallenge(err.Error())
	}
	// The challenge names the token's tenant, where Azure names the account's: Tabula's
	// accounts have none, and the token's is where its holder signs in.
	refuse := func(detail string) error { return bearerChallengeFrom(c.TenantID, detail) }
	now := a.now()
	if c.Expiry == nil || now.After(c.Expiry.Time().Add(tokenClockSkew)) {
		return nil, refuse("Lifetime validation failed. The token is expired.")
	}
	if c.NotBefore != nil && now.Add(tokenClockSkew).Before(c.NotBefore.Time()) {
		return nil, refuse("Lifetime validation failed. The token is not yet valid.")
	}
	if !a.issuerAccepted(c.Issuer) {
		return nil, refuse(fmt.Sprintf("Issuer validation failed. Issuer %q did not match.", c.Issuer))
	}
	if !slices.ContainsFunc(c.Audience, func(aud string) bool { return a.audienceAccepted(aud, r.Account) }) {
		return nil, refuse(fmt.Sprintf("Audience validation failed. Audience %q did not match.", strings.Join(c.Audience, ",")))
	}
	g := &Grant{account: r.Account, bearer: &bearerGrant{objectID: c.ObjectID, tenantID: c.TenantID}}
	if c.Roles != nil {
		g.bearer.roles = *c.Roles
		g.bearer.limited = true
	}
	return g, nil
}

// tokenClaims reads the token's claims, checking its signature in OAuthVerify mode.
func (a *Authenticator) tokenClaims(ctx context.Context, token string) (*claims, error) {
	var c claims
	if a.OAuth.Mode == OAuthBasic {
		// Claims only: the payload is the second of three base64url parts.
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			return nil, errors.New("The token is not a JWT (three base64url parts).")
		}
		payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
		if err != nil || json.Unmarshal(payload, &c) != nil {
			return nil, errors.New("The token's payload is not base64url-encoded JSON claims.")
		}
		return &c, nil
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, fmt.Errorf("The token is not an RS256-signed JWT: %v.", err)
	}
	if a.OAuth.Keys == nil {
		return nil, errors.New("Signature validation failed. No keys are configured.")
	}
	if err := parsed.Claims(a.OAuth.Keys.set(ctx, parsed), &c); err != nil {
		return nil, errors.New("Signature validation failed. Signature is invalid.")
	}
	return &c, nil
}

// issuerAccepted accepts Entra ID's issuers, v1 and v2, of any tenant, and the configured ones.
func (a *Authenticator) issuerAccepted(iss string) bool {
	if slices.Contains(a.OAuth.Issuers, iss) {
		return true
	}
	if tenant, ok := strings.CutPrefix(iss, "https://sts.windows.net/"); ok {
		return tenant != "" && strings.Count(tenant, "/") == 1 && strings.HasSuffix(tenant, "/")
	}
	if rest, ok := strings.CutPrefix(iss, "https://login.microsoftonline.com/"); ok {
		tenant, ok := strings.CutSuffix(rest, "/v2.0")
		return ok && tenant != "" && !strings.Contains(tenant, "/")
	}
	return false
}

// audienceAccepted accepts the storage audiences: the service-wide one, Azure Storage's app id,
// and the account's own service endpoints, each with or without a trailing slash.
func (a *Authenticator) audienceAccepted(aud, account string) bool {
	if slices.Contains(a.OAuth.Audiences, aud) {
		return true
	}
	aud = strings.TrimSuffix(aud, "/")
	switch aud {
	case "https://storage.azure.com", storageAppID:
		return true
	}
	for _, service := range []string{"blob", "queue", "table", "file", "dfs"} {
		if strings.EqualFold(aud, "https://"+account+"."+service+".core.windows.net") {
			return true
		}
	}
	return false
}

// bearerGrant is what a verified token allows.
type bearerGrant struct {
	objectID, tenantID string
	// roles are the token's data roles; limited is false when the token named none, and the
	// caller is then the account's owner.
	roles   []string
	limited bool
}

// roleGrant is what one built-in data role allows within its service: everything, or the
// operations whose account-SAS letters it has.
type roleGrant struct {
	service Service
	all     bool
	letters string
}

// bearerRoles maps Azure's built-in data roles, by name and by role definition id, to what
// they allow. Readers read and list; the queue's message roles process (get and delete) or
// send; contributors and owners do everything in their service.
var bearerRoles = map[string]roleGrant{}

func init() {
	for _, r := range []struct {
		name, id string
		grant    roleGrant
	}{
		{"Storage Blob Data Owner", "b7e6dc6d-f1e8-4753-8033-0f276bb0955b", roleGrant{Blob, true, ""}},
		{"Storage Blob Data Contributor", "ba92f5b4-2d11-453d-a403-e96b0029c9fe", roleGrant{Blob, true, ""}},
		{"Storage Blob Data Reader", "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1", roleGrant{Blob, false, "rl"}},
		{"Storage Blob Delegator", "db58b8e5-c6ad-4a2a-8342-4190687cbf4a", roleGrant{Blob, false, ""}},
		{"Storage Queue Data Contributor", "974c5e8b-45b9-4653-ba55-5f855dd0fb88", roleGrant{Queue, true, ""}},
		{"Storage Queue Data Reader", "19e7f393-937e-4f77-808e-94535e297925", roleGrant{Queue, false, "rl"}},
		{"Storage Queue Data Message Processor", "8a0f0c08-91a1-4084-bc3d-661d67233fed", roleGrant{Queue, false, "rp"}},
		{"Storage Queue Data Message Sender", "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a", roleGrant{Queue, false, "a"}},
		{"Storage Table Data Contributor", "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3", roleGrant{Table, true, ""}},
		{"Storage Table Data Reader", "76199698-9eea-4c19-bc75-cec21354c6b6", roleGrant{Table, false, "rl"}},
	} {
		bearerRoles[strings.ToLower(r.name)] = r.grant
		bearerRoles[r.id] = r.grant
	}
}

// allows reports whether one of the token's roles allows op; 403
// AuthorizationPermissionMismatch otherwise, as for a valid token without the RBAC role.
func (b *bearerGrant) allows(op *Operation) error {
	if !b.limited {
		return nil
	}
	for _, name := range b.roles {
		role, ok := bearerRoles[strings.ToLower(name)]
		if !ok || op == nil || role.service != op.Service {
			continue
		}
		// Every data role of the service, the Delegator above all, may get a user delegation key.
		if role.all || isDelegationKeyOp(op) {
			return nil
		}
		if op.Permissions != nil && checkPermissions(op.Permissions, role.letters) == nil {
			return nil
		}
	}
	return azerr.New(azerr.AuthorizationPermissionMismatch)
}

// KeySet is the operator's JSON Web Key Set, from a file or a URL. Keys from a URL are fetched
// again hourly, and at most once a minute when a token names a key not yet known (the
// identity provider rotated its keys).
type KeySet struct {
	source string
	client *http.Client

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
}

// LoadKeySet reads a JWKS document from a file path or an http(s) URL.
func LoadKeySet(ctx context.Context, source string) (*KeySet, error) {
	k := &KeySet{source: source, client: &http.Client{Timeout: 10 * time.Second}}
	keys, err := k.fetch(ctx)
	if err != nil {
		return nil, err
	}
	k.keys, k.fetched = keys, time.Now()
	return k, nil
}

func (k *KeySet) fromURL() bool {
	return strings.HasPrefix(k.source, "https://") || strings.HasPrefix(k.source, "http://")
}

func (k *KeySet) fetch(ctx context.Context) (jose.JSONWebKeySet, error) {
	var doc []byte
	var err error
	if k.fromURL() {
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, k.source, nil); err == nil {
			var resp *http.Response
			if resp, err = k.client.Do(req); err == nil {
				doc, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
			}
		}
	} else {
		doc, err = os.ReadFile(k.source)
	}
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("reading the JWKS at %s: %w", k.source, err)
	}
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(doc, &keys); err != nil {
		return keys, fmt.Errorf("the JWKS at %s is not a JSON Web Key Set: %w", k.source, err)
	}
	if len(keys.Keys) == 0 {
		return keys, fmt.Errorf("the JWKS at %s holds no keys", k.source)
	}
	return keys, nil
}

// set returns the keys to verify t with, refreshing them from a URL when they are old or do
// not know t's key id.
func (k *KeySet) set(ctx context.Context, t *jwt.JSONWebToken) *jose.JSONWebKeySet {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fromURL() {
		age := time.Since(k.fetched)
		unknown := len(t.Headers) > 0 && len(k.keys.Key(t.Headers[0].KeyID)) == 0
		if age > time.Hour || unknown && age > time.Minute {
			if keys, err := k.fetch(ctx); err == nil {
				k.keys = keys
			}
			k.fetched = time.Now()
		}
	}
	keys := k.keys
	return &keys
}
