package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// A user delegation key lets the holder of a bearer token sign SASes without the account key
// (blob.md §6.4). Azure keeps the keys it issues; Tabula keeps none: a key's value is an HMAC,
// under the account key, of the fields that describe it, so that a SAS naming those fields can
// be checked by deriving the key again.

// DelegationKey describes a user delegation key: whom it was issued to and when it is valid.
// Times are whole seconds in UTC.
type DelegationKey struct {
	ObjectID, TenantID string
	Start, Expiry      time.Time
	Service            string // the service's letter: b, q or t
	Version            string
	// DelegatedUserTenantID is the tenant of the users the key's SASes are for, when the key
	// was asked for one (KeyInfo's DelegatedUserTid; skdutid in the SAS).
	DelegatedUserTenantID string
}

// delegationTimeFormat is how key times travel in SASes (skt, ske) and in Get User
// Delegation Key's answer.
const delegationTimeFormat = "2006-01-02T15:04:05Z"

// MaxDelegationKeyLifetime is how far ahead of now a user delegation key may expire.
const MaxDelegationKeyLifetime = 7 * 24 * time.Hour

// FormatDelegationTime writes a key's Start or Expiry as Azure does.
func FormatDelegationTime(t time.Time) string { return t.UTC().Format(delegationTimeFormat) }

// DelegationKeyValue returns the base64 value of the key k for account, derived from the
// account's first key, and whether the account is hosted.
func (a *Authenticator) DelegationKeyValue(account string, k DelegationKey) (string, bool) {
	acct, ok := a.hosted(account)
	if !ok || len(acct.Keys) == 0 {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(delegationKey(acct.Keys[0], k)), true
}

func delegationKey(accountKey []byte, k DelegationKey) []byte {
	h := hmac.New(sha256.New, accountKey)
	fmt.Fprintf(h, "tabula user delegation key\n%s\n%s\n%s\n%s\n%s\n%s", k.ObjectID, k.TenantID,
		FormatDelegationTime(k.Start), FormatDelegationTime(k.Expiry), k.Service, k.Version)
	if k.DelegatedUserTenantID != "" {
		// Only then, so that keys issued before it was part of a key keep their value.
		fmt.Fprintf(h, "\n%s", k.DelegatedUserTenantID)
	}
	return h.Sum(nil)
}

// Grant.Bearer tells Get User Delegation Key whom to issue a key to.

// Bearer returns the object and tenant ids of a bearer token's grant; ok is false for any
// other credential (user delegation keys are for bearer tokens only).
func (g *Grant) Bearer() (objectID, tenantID string, ok bool) {
	if g == nil || g.bearer == nil {
		return "", "", false
	}
	return g.bearer.objectID, g.bearer.tenantID, true
}

// delegationFields are the query parameters of a user delegation SAS beyond a blob SAS's.
var delegationFields = []string{"skoid", "sktid", "skt", "ske", "sks", "skv", "saoid", "suoid", "scid", "skdutid", "sduoid", "srh", "srq"}

// Versions at which the user delegation SAS string-to-sign grows.
const (
	minDelegationSASVersion      = "2018-11-09"
	delegationSASObjectIDVersion = "2020-02-10" // saoid, suoid, scid
	delegationSASSesVersion      = "2020-12-06" // ses
	delegationSASTenantVersion   = "2025-07-05" // skdutid, sduoid
	delegationSASRequestVersion  = "2026-04-06" // srh, srq
)

// delegation is the user delegation part of a service SAS.
type delegation struct {
	key                                      DelegationKey
	skt, ske                                 string // as in the URL
	saoid, suoid, scid, skdutid, sduoid      string
	srh, srq                                 string // the names of the signed request headers and query parameters
	signedRequestHeaders, signedRequestQuery string // srh, srq canonicalized with the request's values (bindRequest)
}

// bindRequest canonicalizes the signed request headers and query parameters (srh, srq) with
// the values this request carries, as the client signed them with the values it meant to
// send: "name:value\n" for each header, "\nname:value" for each query parameter, in the
// order named. A request that lacks one, or carries another value, then fails the
// signature (403 AuthenticationFailed).
func (d *delegation) bindRequest(header http.Header, query url.Values) {
	var b strings.Builder
	for name := range strings.SplitSeq(d.srh, ",") {
		if name != "" {
			b.WriteString(name + ":" + header.Get(name) + "\n")
		}
	}
	d.signedRequestHeaders = b.String()
	b.Reset()
	for name := range strings.SplitSeq(d.srq, ",") {
		if name != "" {
			b.WriteString("\n" + name + ":" + query.Get(name))
		}
	}
	d.signedRequestQuery = b.String()
}

// parseDelegation reads a user delegation SAS's key fields from q.
func parseDelegation(t *sasToken, get func(string) string) error {
	d := &delegation{
		skt: unspace(get("skt")), ske: unspace(get("ske")),
		saoid: get("saoid"), suoid: get("suoid"), scid: get("scid"), skdutid: get("skdutid"), sduoid: get("sduoid"),
	}
	d.key = DelegationKey{ObjectID: get("skoid"), TenantID: get("sktid"), Service: get("sks"), Version: get("skv"), DelegatedUserTenantID: d.skdutid}
	for _, f := range []struct{ name, value string }{{"sktid", d.key.TenantID}, {"skt", d.skt}, {"ske", d.ske}, {"sks", d.key.Service}, {"skv", d.key.Version}} {
		if f.value == "" {
			return authenticationFailed(f.name + " is mandatory in a user delegation SAS. Cannot be empty")
		}
	}
	var ok bool
	if d.key.Start, ok = parseSASTime(d.skt); !ok {
		return authenticationFailed(fmt.Sprintf("skt %q is not an ISO 8601 UTC time.", d.skt))
	}
	if d.key.Expiry, ok = parseSASTime(d.ske); !ok {
		return authenticationFailed(fmt.Sprintf("ske %q is not an ISO 8601 UTC time.", d.ske))
	}
	d.srh, d.srq = get("srh"), get("srq")
	if t.si != "" {
		return authenticationFailed("A user delegation SAS cannot name a stored access policy (si).")
	}
	if t.sv < minDelegationSASVersion {
		return authenticationFailed(fmt.Sprintf("A user delegation SAS needs sv %s or later; got %s.", minDelegationSASVersion, t.sv))
	}
	t.delegation = d
	return nil
}

// parseQueueOrTableDelegation reads the key fields of a queue or table user delegation SAS,
// which the services take from 2025-07-05.
func parseQueueOrTableDelegation(t *sasToken, get func(string) string) error {
	if t.sv < delegationSASTenantVersion {
		return authenticationFailed(fmt.Sprintf("A %s user delegation SAS needs sv %s or later; got %s.", t.service, delegationSASTenantVersion, t.sv))
	}
	return parseDelegation(t, get)
}

// keyFields are what a queue or table user delegation SAS signs of its key, between the
// resource and sip: skoid, sktid, skt, ske, sks, skv, skdutid, sduoid.
func (d *delegation) keyFields() []string {
	return []string{d.key.ObjectID, d.key.TenantID, d.skt, d.ske, d.key.Service, d.key.Version, d.skdutid, d.sduoid}
}

// delegationStringsToSign are the strings the client may have signed for a user delegation
// SAS: the layout of its sv, and the newest one, which Go's azblob signs whatever sv it sends.
func (t *sasToken) delegationStringsToSign(resource, signedSnapshot string) []string {
	d := t.delegation
	k := []string{d.key.ObjectID, d.key.TenantID, d.skt, d.ske, d.key.Service, d.key.Version}
	overrides := []string{t.rscc, t.rscd, t.rsce, t.rscl, t.rsct}
	head := []string{t.sp, t.st, t.se, resource}
	tail := func(fields ...[]string) string {
		return strings.Join(concat(fields...), "\n")
	}
	newest := tail(head, k, []string{d.saoid, d.suoid, d.scid, d.skdutid, d.sduoid, t.sip, t.spr, t.sv, t.sr, signedSnapshot, t.ses, d.signedRequestHeaders, d.signedRequestQuery}, overrides)
	var layout string
	switch {
	case t.sv >= delegationSASRequestVersion:
		return []string{newest}
	case t.sv >= delegationSASTenantVersion:
		layout = tail(head, k, []string{d.saoid, d.suoid, d.scid, d.skdutid, d.sduoid, t.sip, t.spr, t.sv, t.sr, signedSnapshot, t.ses}, overrides)
	case t.sv >= delegationSASSesVersion:
		layout = tail(head, k, []string{d.saoid, d.suoid, d.scid, t.sip, t.spr, t.sv, t.sr, signedSnapshot, t.ses}, overrides)
	case t.sv >= delegationSASObjectIDVersion:
		layout = tail(head, k, []string{d.saoid, d.suoid, d.scid, t.sip, t.spr, t.sv, t.sr, signedSnapshot}, overrides)
	default:
		layout = tail(head, k, []string{t.sip, t.spr, t.sv, t.sr, signedSnapshot}, overrides)
	}
	return []string{layout, newest}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// checkDelegatedUser checks that a SAS for a delegated user (sduoid, from 2025-07-05) comes
// with a bearer token of that user, of the key's delegated user tenant when it names one.
// UNSURE: the code of the refusal; AuthenticationFailed, as for the SAS's other checks.
func (d *delegation) checkDelegatedUser(user *bearerGrant) error {
	if d.sduoid == "" {
		return nil
	}
	if user == nil {
		return authenticationFailed(fmt.Sprintf("The SAS is for the delegated user %s (sduoid): the request must carry that user's bearer token too.", d.sduoid))
	}
	if !strings.EqualFold(user.objectID, d.sduoid) {
		return authenticationFailed(fmt.Sprintf("The SAS is for the delegated user %s (sduoid), not for %s.", d.sduoid, user.objectID))
	}
	if d.skdutid != "" && !strings.EqualFold(user.tenantID, d.skdutid) {
		return authenticationFailed(fmt.Sprintf("The SAS is for users of tenant %s (skdutid), not of %s.", d.skdutid, user.tenantID))
	}
	return nil
}

// checkDelegationKey verifies that the SAS's key is a current one: signed by its derived
// value, within its own validity.
func (a *Authenticator) checkDelegationKey(t *sasToken, now time.Time) error {
	k := t.delegation.key
	if now.Before(k.Start) || now.After(k.Expiry) {
		return authenticationFailed(fmt.Sprintf("The user delegation key is not valid at this time: Start [%s] - Expiry [%s] - Current [%s]",
			formatTime(k.Start), formatTime(k.Expiry), formatTime(now)))
	}
	if k.Service != string(t.service.letter()) {
		return azerr.New(azerr.AuthorizationServiceMismatch)
	}
	return nil
}
