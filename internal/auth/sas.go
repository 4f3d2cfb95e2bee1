package auth

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// AccessPolicy is a stored access policy: a signed identifier set on a table with Set Table ACL.
// A zero Start or Expiry, or an empty Permission, means the policy leaves that field to the SAS.
type AccessPolicy struct {
	ID         string
	Start      time.Time
	Expiry     time.Time
	Permission string
}

// PolicyStore looks up the stored access policies a table SAS names with si=.
type PolicyStore interface {
	// Policy returns policy id of table in account. table is the name as the SAS spells it (tn);
	// table names compare case-insensitively. A missing table or id MUST be found=false with a
	// nil error; a non-nil error means the lookup itself failed and is returned to the client
	// unchanged (an *azerr.Error keeps its code, anything else becomes 500 InternalError).
	Policy(ctx context.Context, account, table, id string) (policy AccessPolicy, found bool, err error)
}

// Versions at which the SAS string-to-sign layouts change (auth.md §5–6).
const (
	minTableSASVersion   = "2013-08-15" // first layout with the /table/ resource prefix
	tableSASSipVersion   = "2015-04-05" // table SAS signs sip and spr from here on
	minAccountSASVersion = "2015-04-05" // account SAS exists from here on
	accountSASSesVersion = "2020-12-06" // account SAS signs ses from here on
)

// sasToken is a SAS as found in the query string. Field values are URL-decoded and "" when
// absent: the string-to-sign cannot tell absent from empty, so neither can anything else.
type sasToken struct {
	account bool // account SAS (ss or srt present); otherwise a table SAS

	sv, sp, st, se, sip, spr, sig string
	ss, srt, ses                  string // account SAS only
	tn, si, spk, srk, epk, erk    string // table SAS only
}

// parseSAS extracts a SAS from the query and checks it is complete for its kind and version.
// Failures are 403 AuthenticationFailed with Azure-style details; this is where the real service
// reports malformed SAS fields too.
func parseSAS(q url.Values) (*sasToken, error) {
	t := &sasToken{
		account: q.Has("ss") || q.Has("srt"),
		sv:      q.Get("sv"),
		sp:      q.Get("sp"),
		// A '+' sent unescaped arrives decoded as a space. Neither base64 nor an ISO 8601 time
		// has spaces, so these fields get the '+' back, and the string-to-sign is the one the
		// client signed.
		st:  unspace(q.Get("st")),
		se:  unspace(q.Get("se")),
		sig: unspace(q.Get("sig")),
		sip: q.Get("sip"),
		spr: q.Get("spr"),
		ss:  q.Get("ss"),
		srt: q.Get("srt"),
		ses: q.Get("ses"),
		tn:  q.Get("tn"),
		si:  q.Get("si"),
		spk: q.Get("spk"),
		srk: q.Get("srk"),
		epk: q.Get("epk"),
		erk: q.Get("erk"),
	}
	if t.sv == "" {
		return nil, authenticationFailed("sv is mandatory. Cannot be empty")
	}
	if !isVersion(t.sv) {
		return nil, authenticationFailed(fmt.Sprintf("sv %q is not a service version (YYYY-MM-DD).", t.sv))
	}
	if t.account {
		if t.sv < minAccountSASVersion {
			return nil, authenticationFailed(fmt.Sprintf("An account SAS needs sv %s or later; got %s.", minAccountSASVersion, t.sv))
		}
		for _, f := range []struct{ name, value string }{{"ss", t.ss}, {"srt", t.srt}, {"sp", t.sp}, {"se", t.se}} {
			if f.value == "" {
				return nil, authenticationFailed(f.name + " is mandatory. Cannot be empty")
			}
		}
		return t, nil
	}
	if t.sv < minTableSASVersion {
		return nil, authenticationFailed(fmt.Sprintf("A table SAS needs sv %s or later; got %s.", minTableSASVersion, t.sv))
	}
	if t.tn == "" {
		return nil, authenticationFailed("tn is mandatory. Cannot be empty")
	}
	// With si the policy may supply sp and se; whether the pair ends up complete is checked
	// once the policy is known.
	if t.si == "" {
		if t.sp == "" {
			return nil, authenticationFailed("sp is mandatory. Cannot be empty")
		}
		if t.se == "" {
			return nil, authenticationFailed("Signed expiry must be specified in signature or SAS identifier")
		}
	}
	return t, nil
}

func unspace(s string) string { return strings.ReplaceAll(s, " ", "+") }

// isVersion reports whether v has the YYYY-MM-DD shape of a service version, so that versions
// compare correctly as strings.
func isVersion(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i != 4 && i != 7 && (v[i] < '0' || v[i] > '9') {
			return false
		}
	}
	return true
}

// stringToSign is the string the client signed, for the account named account (auth.md §5–6).
func (t *sasToken) stringToSign(account string) string {
	if t.account {
		// Every field is followed by "\n", the last one included.
		fields := []string{account, t.sp, t.ss, t.srt, t.st, t.se, t.sip, t.spr, t.sv}
		if t.sv >= accountSASSesVersion {
			fields = append(fields, t.ses)
		}
		return strings.Join(fields, "\n") + "\n"
	}
	resource := "/table/" + account + "/" + strings.ToLower(t.tn)
	if t.sv < tableSASSipVersion {
		return strings.Join([]string{t.sp, t.st, t.se, resource, t.si, t.sv, t.spk, t.srk, t.epk, t.erk}, "\n")
	}
	return strings.Join([]string{t.sp, t.st, t.se, resource, t.si, t.sip, t.spr, t.sv, t.spk, t.srk, t.epk, t.erk}, "\n")
}

// authenticateSAS verifies an account SAS or a table SAS (auth.md §5–6).
func (a *Authenticator) authenticateSAS(ctx context.Context, r *Request) (*Grant, error) {
	acct, ok := a.hosted(r.Account)
	if !ok {
		return nil, authenticationFailed(fmt.Sprintf("The account %q is not hosted by this server.", r.Account))
	}
	t, err := parseSAS(r.Query)
	if err != nil {
		return nil, err
	}
	stringToSign := t.stringToSign(acct.Name)
	var sigBuf [64]byte
	sig := decodeSignature(sigBuf[:0], t.sig) // not base64: cannot match
	if !signedByAnyKey(acct.macs, stringToSign, sig) {
		return nil, authenticationFailed("Signature did not match. String to sign used was " + stringToSign)
	}

	var start, expiry time.Time
	if t.st != "" {
		if start, ok = parseSASTime(t.st); !ok {
			return nil, authenticationFailed(fmt.Sprintf("st %q is not an ISO 8601 UTC time.", t.st))
		}
	}
	if t.se != "" {
		if expiry, ok = parseSASTime(t.se); !ok {
			return nil, authenticationFailed(fmt.Sprintf("se %q is not an ISO 8601 UTC time.", t.se))
		}
	}
	permissions := t.sp
	if t.si != "" {
		// The signature is checked first so that unauthenticated callers cannot make the
		// server look policies up.
		p, err := a.policy(ctx, acct.Name, t.tn, t.si)
		if err != nil {
			return nil, err
		}
		// A field may come from the URL or from the policy, never from both.
		if t.st != "" && !p.Start.IsZero() || t.se != "" && !p.Expiry.IsZero() || t.sp != "" && p.Permission != "" {
			return nil, authenticationFailed("Access policy fields can be associated with signature or SAS identifier but not both")
		}
		if t.st == "" {
			start = p.Start
		}
		if t.se == "" {
			expiry = p.Expiry
		}
		if t.sp == "" {
			permissions = p.Permission
		}
		if expiry.IsZero() {
			return nil, authenticationFailed("Signed expiry must be specified in signature or SAS identifier")
		}
		if permissions == "" {
			return nil, authenticationFailed("Signed permission must be specified in signature or SAS identifier")
		}
	}

	now := a.now()
	if !start.IsZero() && now.Before(start) || now.After(expiry) {
		startText := ""
		if !start.IsZero() {
			startText = formatTime(start)
		}
		return nil, authenticationFailed(fmt.Sprintf("Signature not valid in the specified time frame: Start [%s] - Expiry [%s] - Current [%s]",
			startText, formatTime(expiry), formatTime(now)))
	}

	if t.account && !strings.Contains(t.ss, "t") {
		return nil, azerr.New(azerr.AuthorizationServiceMismatch)
	}
	switch t.spr {
	case "", "https,http", "http,https":
	case "https":
		if !r.Secure {
			return nil, azerr.New(azerr.AuthorizationProtocolMismatch)
		}
	default:
		// "http" alone is not a permitted value either.
		return nil, authenticationFailed(fmt.Sprintf("spr %q is not https or https,http.", t.spr))
	}
	if t.sip != "" {
		lo, hi, ok := parseIPRange(t.sip)
		if !ok {
			return nil, authenticationFailed(fmt.Sprintf("sip %q is not an IP address or a range a.b.c.d-e.f.g.h.", t.sip))
		}
		if !ipInRange(r.ClientIP, lo, hi) {
			ip := "(unknown)"
			if r.ClientIP != nil {
				ip = r.ClientIP.String()
			}
			return nil, azerr.Newf(azerr.AuthorizationSourceIPMismatch,
				"This request is not authorized to perform this operation using this source IP %s.", ip)
		}
	}

	g := &Grant{account: acct.Name, sas: &sasGrant{permissions: permissions}}
	if t.account {
		g.sas.accountSAS = true
		g.sas.resourceTypes = t.srt
		return g, nil
	}
	g.sas.table = t.tn
	// srk without spk (or erk without epk) bounds nothing: the range rule only reads a row key
	// next to its partition key.
	if t.spk != "" {
		g.sas.spk, g.sas.srk = t.spk, t.srk
	}
	if t.epk != "" {
		g.sas.epk, g.sas.erk = t.epk, t.erk
	}
	return g, nil
}

func (a *Authenticator) policy(ctx context.Context, account, table, id string) (AccessPolicy, error) {
	if a.policies == nil {
		return AccessPolicy{}, authenticationFailed(fmt.Sprintf("Stored access policy %q cannot be looked up: this server has no policy store.", id))
	}
	p, found, err := a.policies.Policy(ctx, account, table, id)
	if err != nil {
		return AccessPolicy{}, err
	}
	if !found {
		return AccessPolicy{}, authenticationFailed(fmt.Sprintf("Stored access policy %q does not exist on table %q.", id, table))
	}
	return p, nil
}

// sasTimeLayouts are the ISO 8601 forms the service accepts for st and se. time.RFC3339 also
// accepts fractional seconds (.NET and PowerShell send seven digits).
var sasTimeLayouts = []string{time.RFC3339, "2006-01-02T15:04Z07:00", "2006-01-02"}

func parseSASTime(s string) (time.Time, bool) {
	for _, layout := range sasTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseIPRange parses sip: one address, or "first-last" of the same family with first ≤ last.
func parseIPRange(s string) (lo, hi netip.Addr, ok bool) {
	first, last, isRange := strings.Cut(s, "-")
	lo, err := netip.ParseAddr(first)
	if err != nil {
		return lo, hi, false
	}
	lo, hi = lo.Unmap(), lo.Unmap()
	if isRange {
		if hi, err = netip.ParseAddr(last); err != nil {
			return lo, hi, false
		}
		hi = hi.Unmap()
	}
	if lo.Is4() != hi.Is4() || hi.Less(lo) {
		return lo, hi, false
	}
	return lo, hi, true
}

func ipInRange(ip net.IP, lo, hi netip.Addr) bool {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	addr = addr.Unmap()
	return addr.Is4() == lo.Is4() && !addr.Less(lo) && !hi.Less(addr)
}
