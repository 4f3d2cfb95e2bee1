// Package auth decides who sent a request and what they may do, the way Azure Storage does for
// its Table, Blob and Queue services: it verifies SharedKey and SharedKeyLite Authorization
// headers and shared access signatures (account SAS, and table, container, blob and queue SAS
// with stored access policies), and answers with a Grant.
//
// Authentication depends only on the request; authorization depends on the operation. The HTTP
// layer therefore calls Authenticate once per request and Grant.Authorize once per operation,
// which for a $batch means once per sub-request.
//
// Every failure is an *azerr.Error carrying Azure's status and code. Keys never appear in an
// error or a log line; a string-to-sign may, as Azure itself sends it back.
package auth

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// DefaultMaxClockSkew is how far a SharedKey request's date may be from the server's clock on
// the real service.
const DefaultMaxClockSkew = 15 * time.Minute

// Authenticator verifies requests against the accounts Tabula hosts. It is safe for concurrent
// use once set up; set the exported fields and call SetPolicyStore before serving.
type Authenticator struct {
	// Now is the server clock (time.Now unless a test replaces it).
	Now func() time.Time
	// MaxClockSkew bounds |date - Now| for SharedKey and SharedKeyLite requests. Zero or
	// negative disables the check (Azurite does not enforce it); the date must still parse.
	MaxClockSkew time.Duration
	// OAuth says whether and how bearer tokens are taken; the zero value refuses them.
	OAuth OAuth

	accounts map[string]hostedAccount // by lower-case name
	policies [Queue + 1]PolicyStore   // by service
}

// hostedAccount is an Account with its keys ready for signature checks.
type hostedAccount struct {
	Account
	macs []*keyMAC // macs[i] checks signatures under Keys[i]
}

// NewAuthenticator returns an Authenticator for accounts, with the real service's 15-minute
// clock-skew limit. A later account with the same name replaces an earlier one.
func NewAuthenticator(accounts []Account) *Authenticator {
	a := &Authenticator{
		Now:          time.Now,
		MaxClockSkew: DefaultMaxClockSkew,
		accounts:     make(map[string]hostedAccount, len(accounts)),
	}
	for _, acct := range accounts {
		h := hostedAccount{Account: acct}
		for _, key := range acct.Keys {
			h.macs = append(h.macs, newKeyMAC(key))
		}
		a.accounts[strings.ToLower(acct.Name)] = h
	}
	return a
}

// Account returns the hosted account by name. Names match case-insensitively, as DNS labels in
// host-style URLs do.
func (a *Authenticator) Account(name string) (Account, bool) {
	acct, ok := a.hosted(name)
	return acct.Account, ok
}

func (a *Authenticator) hosted(name string) (hostedAccount, bool) {
	acct, ok := a.accounts[strings.ToLower(name)]
	return acct, ok
}

// SetPolicyStore attaches the lookup of a service's stored access policies. Without one, every
// SAS of that service naming a policy (si=) fails with 403 AuthenticationFailed.
func (a *Authenticator) SetPolicyStore(service Service, p PolicyStore) { a.policies[service] = p }

func (a *Authenticator) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// Request is what authentication needs from an HTTP request; the HTTP layer fills it.
type Request struct {
	Service Service    // the service the request was sent to
	Method  string     // verb on the wire (POST even when X-HTTP-Method tunnels another)
	RawPath string     // the path exactly as received (percent-encoded), incl. the account segment in path-style
	Query   url.Values // decoded query parameters
	Header  http.Header
	// Version is the x-ms-version the request is served at: its header's, or, for a Blob
	// Batch's sub-request, which carries none (SDKs strip it before signing), the batch's.
	// Empty means the header's.
	Version string
	// ContentLength is the body's declared length (-1 unknown). net/http moves Content-Length
	// out of Header, and the Blob and Queue string-to-sign includes it.
	ContentLength int64
	Account       string // the account the URL addresses (path-style or host-style, "-secondary" stripped)
	// Path is the resource path after the account, percent-decoded ("/container/blob",
	// "/queue/messages"): what a blob or queue SAS signs.
	Path string
	// Secure says the request arrived over TLS. TLSOffered says the server serves HTTPS too:
	// only then is a SAS restricted to HTTPS (spr=https) refused over plain HTTP, since a
	// server without HTTPS (or behind a proxy terminating it) has no other way to take it.
	Secure, TLSOffered bool
	// Host is the request's Host header.
	Host string
	// ClientIP is the caller's address (for SAS sip). When nil, a SAS restricted by sip fails.
	ClientIP net.IP
}

// Authenticate verifies the request's credential and returns what it grants:
//
//   - an Authorization header (SharedKey, SharedKeyLite or Bearer) takes precedence over
//     anything in the query string, except that a user delegation SAS for a delegated user
//     (sduoid) with a Bearer token is that SAS, used by the token's user;
//   - otherwise a sig= query parameter makes the request a SAS: an account SAS when ss or srt
//     is present, else a service SAS (table, container, blob or queue; optionally si);
//   - otherwise the request is anonymous, which only the Blob service allows, as a Grant that
//     Authorize checks against the container's public access level.
//
// Failures: 400 InvalidAuthenticationInfo for a malformed Authorization header; 401
// InvalidAuthenticationInfo with WWW-Authenticate for a bearer token (not supported) and for an
// anonymous Table request with x-ms-version ≥ 2020-12-06 (401 NoAuthenticationInformation for
// a Queue request from 2019-12-12); 403 AuthenticationFailed for everything else that does not
// check out (signature, account, date, SAS fields, SAS time window, stored policy). A SAS is
// also checked here for the conditions that do not depend on the operation: ss must include
// the service's letter (403 AuthorizationServiceMismatch), spr (AuthorizationProtocolMismatch)
// and sip (AuthorizationSourceIPMismatch). Errors from the PolicyStore are returned unchanged.
func (a *Authenticator) Authenticate(ctx context.Context, r *Request) (*Grant, error) {
	if values := r.Header.Values("Authorization"); len(values) > 0 {
		if len(values) > 1 {
			return nil, malformedAuthorization()
		}
		if scheme, token, _ := strings.Cut(strings.TrimSpace(values[0]), " "); strings.EqualFold(scheme, "Bearer") && r.Query.Has("sig") && r.Query.Has("sduoid") {
			// A user delegation SAS for a delegated user comes with that user's token: the
			// SAS grants, the token proves who uses it.
			user, err := a.authenticateBearer(ctx, r, strings.TrimSpace(token))
			if err != nil {
				return nil, err
			}
			return a.authenticateSAS(ctx, r, user.bearer)
		}
		return a.authenticateHeader(ctx, r, values[0])
	}
	if r.Query.Has("sig") {
		return a.authenticateSAS(ctx, r, nil)
	}
	version := r.version()
	switch r.Service {
	case Blob:
		return &Grant{account: r.Account, anonymous: true, version: version}, nil
	case Queue:
		if version >= noAuthenticationVersion {
			return nil, noAuthenticationInformation()
		}
		return nil, azerr.New(azerr.AuthenticationFailed)
	}
	return nil, anonymous(version)
}

func (r *Request) version() string {
	if r.Version != "" {
		return r.Version
	}
	return r.Header.Get("X-Ms-Version")
}

// authenticateHeader handles "Authorization: <scheme> <credentials>".
func (a *Authenticator) authenticateHeader(ctx context.Context, r *Request, value string) (*Grant, error) {
	scheme, credentials, _ := strings.Cut(strings.TrimSpace(value), " ")
	switch {
	case strings.EqualFold(scheme, "SharedKey"):
		return a.authenticateSharedKey(r, strings.TrimSpace(credentials), false)
	case strings.EqualFold(scheme, "SharedKeyLite"):
		return a.authenticateSharedKey(r, strings.TrimSpace(credentials), true)
	case strings.EqualFold(scheme, "Bearer"):
		return a.authenticateBearer(ctx, r, strings.TrimSpace(credentials))
	default:
		return nil, malformedAuthorization()
	}
}

// anonymousVersion is the first x-ms-version for which the real service answers an anonymous
// request with a 401 bearer challenge instead of 403 (recordings show 2019-07-07 → 403 and
// 2020-12-06 → 401; nothing in between was observed).
const anonymousVersion = "2020-12-06"

func anonymous(version string) *azerr.Error {
	if version >= anonymousVersion {
		return bearerChallenge("")
	}
	return azerr.New(azerr.AuthenticationFailed)
}

// noAuthenticationVersion is the first x-ms-version for which the Blob and Queue services
// answer a request they will not serve anonymously with 401 NoAuthenticationInformation and
// the bearer challenge (blob.md §6.6, from the .NET SDK's tests: before it, Blob answered 404
// ResourceNotFound and Queue, by analogy with Table, 403 AuthenticationFailed).
const noAuthenticationVersion = "2019-12-12"

// anonymousRefusal answers an anonymous Blob request that may not be served.
func anonymousRefusal(version string) *azerr.Error {
	if version >= noAuthenticationVersion {
		return noAuthenticationInformation()
	}
	return azerr.New(azerr.ResourceNotFound)
}

func noAuthenticationInformation() *azerr.Error {
	e := bearerChallenge("")
	e.Code = azerr.NoAuthenticationInformation
	return e
}

// challengeTenant fills authorization_uri in a bearer challenge that has no token's tenant to
// name. Azure names the account's tenant; Tabula's accounts have none, and "common" is what
// Entra documents for a resource not associated with a specific tenant.
const challengeTenant = "common"

// bearerChallenge is the 401 the real service sends when it wants a bearer token. The message is
// Azure's; detail, when not empty, goes on a second line.
func bearerChallenge(detail string) *azerr.Error { return bearerChallengeFrom("", detail) }

// bearerChallengeFrom is bearerChallenge naming tenant (a GUID: the SDKs follow a challenge
// only to a tenant id, so "common" would leave a client with a token for the wrong audience
// unable to get the right one).
func bearerChallengeFrom(tenant, detail string) *azerr.Error {
	if !isTenantID(tenant) {
		tenant = challengeTenant
	}
	msg := "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."
	if detail != "" {
		msg += "\n" + detail
	}
	h := http.Header{}
	h.Set("WWW-Authenticate", "Bearer authorization_uri=https://login.microsoftonline.com/"+strings.ToLower(tenant)+"/oauth2/authorize resource_id=https://storage.azure.com")
	return &azerr.Error{Status: http.StatusUnauthorized, Code: azerr.InvalidAuthenticationInfo, Message: msg, Header: h}
}

func malformedAuthorization() *azerr.Error {
	return azerr.New(azerr.InvalidAuthenticationInfo)
}

// authenticationFailed is the 403 for any credential that does not check out. Azure keeps the
// message fixed and puts the reason in AuthenticationErrorDetail (XML bodies only); azerr has one
// message, so the reason goes on a second line, after the sentence clients know.
func authenticationFailed(detail string) *azerr.Error {
	e := azerr.New(azerr.AuthenticationFailed)
	e.Message += "\n" + detail
	return e
}
