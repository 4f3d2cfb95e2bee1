package auth

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// PolicyStore looks up the stored access policies a service SAS names with si=: a table's, a
// container's or a queue's, depending on the service it is attached to.
type PolicyStore interface {
	// Policy returns policy id of resource (a table, container or queue) in account. resource
	// is the name as the SAS spells it (tn) or as the URL does; table names compare
	// case-insensitively. A missing resource or id MUST be found=false with a nil error; a
	// non-nil error means the lookup itself failed and is returned to the client unchanged (an
	// *azerr.Error keeps its code, anything else becomes 500 InternalError).
	Policy(ctx context.Context, account, resource, id string) (policy AccessPolicy, found bool, err error)
}

// Versions at which the SAS string-to-sign layouts change (auth.md §5–6, blob.md §6.3, queue.md §2.4).
const (
	minTableSASVersion   = "2013-08-15" // first layout with the /table/ resource prefix
	serviceSASSipVersion = "2015-04-05" // service SAS signs sip and spr from here on
	minAccountSASVersion = "2015-04-05" // account SAS exists from here on
	accountSASSesVersion = "2020-12-06" // account SAS signs ses from here on
	blobSASSrVersion     = "2018-11-09" // blob SAS signs sr and the snapshot time from here on
	blobSASSesVersion    = "2020-12-06" // blob SAS signs ses from here on
)

// sasFields are the query parameters a SAS is made of. Each may appear at most once: a SAS
// that repeats one is refused rather than read by its first value, since the signature was
// computed over one value and a proxy or client may have added the other.
var sasFields = []string{"sv", "sp", "st", "se", "sip", "spr", "sig", "ss", "srt", "ses", "tn", "si",
	"spk", "srk", "epk", "erk", "sr", "sdd", "snapshot", "rscc", "rscd", "rsce", "rscl", "rsct"}

// sasToken is a SAS as found in the query string. Field values are URL-decoded and "" when
// absent: the string-to-sign cannot tell absent from empty, so neither can anything else.
type sasToken struct {
	service Service
	account bool // account SAS (ss or srt present); otherwise a service SAS

	sv, sp, st, se, sip, spr, sig, si string
	ss, srt, ses                      string // account SAS, and ses for a blob SAS
	tn, spk, srk, epk, erk            string // table SAS only
	// Blob SAS only: the signed resource, the signed snapshot time (sr=bs/bv) and the
	// response header overrides.
	sr, snapshot                 string
	rscc, rscd, rsce, rscl, rsct string
	// container, blob and queue are what a blob or queue SAS signs, from the request's path.
	container, blob, queue string
	// delegation is set for a user delegation SAS (a blob SAS signed with a user delegation
	// key rather than the account key).
	delegation *delegation
}

// parseSAS extracts a SAS from the query of a request to service, whose resource path (after
// the account, percent-decoded) is path, and checks it is complete for its kind and version.
// Failures are 403 AuthenticationFailed with Azure-style details; this is where the real
// service reports malformed SAS fields too.
func parseSAS(q url.Values, service Service, path string) (*sasToken, error) {
	for _, name := range concat(sasFields, delegationFields) {
		if len(q[name]) > 1 {
			return nil, authenticationFailed(fmt.Sprintf("The SAS field %s is given %d times; each field may appear once.", name, len(q[name])))
		}
	}
	t := &sasToken{
		service: service,
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
		si:  q.Get("si"),
		tn:  q.Get("tn"),
		spk: q.Get("spk"),
		srk: q.Get("srk"),
		epk: q.Get("epk"),
		erk: q.Get("erk"),
		sr:  q.Get("sr"),
		// The signed snapshot time of sr=bs is the snapshot the request reads; of sr=bv,
		// the version.
		snapshot: q.Get("snapshot"),
		rscc:     q.Get("rscc"),
		rscd:     q.Get("rscd"),
		rsce:     q.Get("rsce"),
		rscl:     q.Get("rscl"),
		rsct:     q.Get("rsct"),
	}
	if t.sr == "bv" {
		t.snapshot = q.Get("versionid")
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
		return nil, authenticationFailed(fmt.Sprintf("A service SAS needs sv %s or later; got %s.", minTableSASVersion, t.sv))
	}
	first, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch service {
	case Table:
		if t.tn == "" {
			return nil, authenticationFailed("tn is mandatory. Cannot be empty")
		}
		if q.Has("skoid") {
			if err := parseQueueOrTableDelegation(t, q.Get); err != nil {
				return nil, err
			}
		}
	case Blob:
		switch t.sr {
		case "c":
		case "b", "bs", "bv":
			if rest == "" {
				return nil, authenticationFailed(fmt.Sprintf("A SAS with sr=%s signs a blob, but the request addresses container %q.", t.sr, first))
			}
			t.blob = rest
		case "d":
			// A directory SAS signs the first sdd segments of the blob names it reaches.
			depth, err := strconv.Atoi(q.Get("sdd"))
			if err != nil || depth < 1 {
				return nil, authenticationFailed(fmt.Sprintf("sdd %q is not a directory depth (1 or more); sr=d needs one.", q.Get("sdd")))
			}
			segments := strings.SplitN(rest, "/", depth+1)
			if rest == "" || len(segments) < depth {
				return nil, authenticationFailed(fmt.Sprintf("A SAS with sr=d and sdd=%d signs a directory %d deep, but the request addresses %q.", depth, depth, rest))
			}
			t.blob = strings.Join(segments[:depth], "/")
		case "":
			return nil, authenticationFailed("sr is mandatory. Cannot be empty")
		default:
			return nil, authenticationFailed(fmt.Sprintf("sr %q is not c, b, bs, bv or d.", t.sr))
		}
		if first == "" {
			return nil, authenticationFailed("A blob service SAS signs a container or blob, but the request addresses the service.")
		}
		t.container = first
		if q.Has("skoid") {
			if err := parseDelegation(t, q.Get); err != nil {
				return nil, err
			}
		}
	case Queue:
		if first == "" {
			return nil, authenticationFailed("A queue service SAS signs a queue, but the request addresses the service.")
		}
		t.queue = first
		if q.Has("skoid") {
			if err := parseQueueOrTableDelegation(t, q.Get); err != nil {
				return nil, err
			}
		}
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

// policyResource is the table, container or queue whose stored policies si names.
func (t *sasToken) policyResource() string {
	switch t.service {
	case Blob:
		return t.container
	case Queue:
		return t.queue
	}
	return t.tn
}

// stringsToSign are the strings the client may have signed, for the account named account,
// most likely first (auth.md §5–6, blob.md §6.3, queue.md §2.4). There is more than one only
// for a blob SAS: Go's azblob signs the newest layout whatever sv it is given.
func (t *sasToken) stringsToSign(account string) []string {
	if t.account {
		// Every field is followed by "\n", the last one included.
		fields := []string{account, t.sp, t.ss, t.srt, t.st, t.se, t.sip, t.spr, t.sv}
		if t.sv >= accountSASSesVersion {
			fields = append(fields, t.ses)
		}
		return []string{strings.Join(fields, "\n") + "\n"}
	}
	switch t.service {
	case Blob:
		resource := "/blob/" + account + "/" + t.container
		if t.sr != "c" {
			resource += "/" + t.blob
		}
		signedSnapshot := ""
		if t.sr == "bs" || t.sr == "bv" {
			signedSnapshot = t.snapshot
		}
		if t.delegation != nil {
			return t.delegationStringsToSign(resource, signedSnapshot)
		}
		head := []string{t.sp, t.st, t.se, resource, t.si, t.sip, t.spr, t.sv}
		overrides := []string{t.rscc, t.rscd, t.rsce, t.rscl, t.rsct}
		newest := strings.Join(slices.Concat(head, []string{t.sr, signedSnapshot, t.ses}, overrides), "\n")
		switch {
		case t.sv >= blobSASSesVersion:
			return []string{newest}
		case t.sv >= blobSASSrVersion:
			return []string{strings.Join(slices.Concat(head, []string{t.sr, signedSnapshot}, overrides), "\n"), newest}
		}
		return []string{strings.Join(slices.Concat(head, overrides), "\n"), newest}
	case Queue:
		resource := "/queue/" + account + "/" + t.queue
		if t.delegation != nil {
			return []string{strings.Join(slices.Concat([]string{t.sp, t.st, t.se, resource}, t.delegation.keyFields(), []string{t.sip, t.spr, t.sv}), "\n")}
		}
		if t.sv < serviceSASSipVersion {
			return []string{strings.Join([]string{t.sp, t.st, t.se, resource, t.si, t.sv}, "\n")}
		}
		return []string{strings.Join([]string{t.sp, t.st, t.se, resource, t.si, t.sip, t.spr, t.sv}, "\n")}
	}
	resource := "/table/" + account + "/" + strings.ToLower(t.tn)
	if t.delegation != nil {
		// UNSURE: no SDK released by 2026-11 signs a table user delegation SAS; this is the
		// queue's layout with the table SAS's key range after sv, as a table SAS has it.
		return []string{strings.Join(slices.Concat([]string{t.sp, t.st, t.se, resource}, t.delegation.keyFields(), []string{t.sip, t.spr, t.sv, t.spk, t.srk, t.epk, t.erk}), "\n")}
	}
	if t.sv < serviceSASSipVersion {
		return []string{strings.Join([]string{t.sp, t.st, t.se, resource, t.si, t.sv, t.spk, t.srk, t.epk, t.erk}, "\n")}
	}
	return []string{strings.Join([]string{t.sp, t.st, t.se, resource, t.si, t.sip, t.spr, t.sv, t.spk, t.srk, t.epk, t.erk}, "\n")}
}

// resource returns what a verified service SAS covers.
func (t *sasToken) resource() sasResource {
	switch t.service {
	case Blob:
		return &blobSAS{signedResource: t.sr, container: t.container, blob: t.blob, snapshot: t.snapshot}
	case Queue:
		return &queueSAS{queue: t.queue}
	}
	s := &tableSAS{table: t.tn}
	// srk without spk (or erk without epk) bounds nothing: the range rule only reads a row key
	// next to its partition key.
	if t.spk != "" {
		s.spk, s.srk = t.spk, t.srk
	}
	if t.epk != "" {
		s.epk, s.erk = t.epk, t.erk
	}
	return s
}

// authenticateSAS verifies an account SAS or a service SAS (auth.md §5–6, blob.md §6.2–6.3,
// queue.md §2.3–2.4). user is the bearer token that came with it, if any: a user delegation
// SAS naming a delegated user (sduoid) serves only that user.
func (a *Authenticator) authenticateSAS(ctx context.Context, r *Request, user *bearerGrant) (*Grant, error) {
	acct, ok := a.hosted(r.Account)
	if !ok {
		return nil, authenticationFailed(fmt.Sprintf("The account %q is not hosted by this server.", r.Account))
	}
	t, err := parseSAS(r.Query, r.Service, r.Path)
	if err != nil {
		return nil, err
	}
	if t.delegation != nil {
		t.delegation.bindRequest(r.Header, r.Query)
	}
	var sigBuf [64]byte
	sig := decodeSignature(sigBuf[:0], t.sig) // not base64: cannot match
	candidates := t.stringsToSign(acct.Name)
	keys := acct.macs
	if t.delegation != nil {
		keys = []*keyMAC{newKeyMAC(delegationKey(acct.Keys[0], t.delegation.key))}
	}
	if t.delegation != nil {
		// Go's azblob (v1.8.3) signs a user delegation SAS for the account named by the first
		// label of the URL's host, which on a path-style URL (127.0.0.1, localhost) is not the
		// account. The key, derived from the account's own key, is what proves the SAS.
		if label := hostLabel(r.Host); label != "" && !strings.EqualFold(label, acct.Name) {
			candidates = append(candidates, t.stringsToSign(label)...)
		}
	}
	verified := false
	for _, stringToSign := range candidates {
		if signedByAnyKey(keys, stringToSign, sig) {
			verified = true
			break
		}
	}
	if !verified {
		return nil, authenticationFailed("Signature did not match. String to sign used was " + candidates[0])
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
		p, err := a.policy(ctx, r.Service, acct.Name, t.policyResource(), t.si)
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
	if t.delegation != nil {
		if err := a.checkDelegationKey(t, now); err != nil {
			return nil, err
		}
		if err := t.delegation.checkDelegatedUser(user); err != nil {
			return nil, err
		}
	}
	// A SAS without st starts when the request arrives, so one whose expiry has passed expires
	// before it starts: Azure says so in those words (as it does of se before st), and speaks
	// of the time frame only for a SAS that has one and is outside it. Seen in Azure's error
	// bodies quoted by Microsoft Learn ("Signed expiry time [se] must be after signed start
	// time [the request's time]"), and asserted by azure-sdk-for-js storage-queue's recorded
	// "create queue with invalid SAS should fail" (an account SAS without st, expired a day).
	if effectiveStart := cmp.Or(start, now); !expiry.After(effectiveStart) {
		return nil, authenticationFailed(fmt.Sprintf("Signed expiry time [%s] must be after signed start time [%s]", formatTime(expiry), formatTime(effectiveStart)))
	}
	if now.Before(start) || now.After(expiry) {
		return nil, authenticationFailed(fmt.Sprintf("Signature not valid in the specified time frame: Start [%s] - Expiry [%s] - Current [%s]",
			formatTime(start), formatTime(expiry), formatTime(now)))
	}

	if t.account && strings.IndexByte(t.ss, r.Service.letter()) < 0 {
		return nil, azerr.New(azerr.AuthorizationServiceMismatch)
	}
	switch t.spr {
	case "", "https,http", "http,https":
	case "https":
		if !r.Secure && r.TLSOffered {
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

	g := &Grant{account: acct.Name, sas: &sasGrant{permissions: permissions, encryptionScope: t.ses}}
	if t.account {
		g.sas.accountSAS = true
		g.sas.resourceTypes = t.srt
		return g, nil
	}
	g.sas.resource = t.resource()
	return g, nil
}

func (a *Authenticator) policy(ctx context.Context, service Service, account, resource, id string) (AccessPolicy, error) {
	store := a.policies[service]
	if store == nil {
		return AccessPolicy{}, authenticationFailed(fmt.Sprintf("Stored access policy %q cannot be looked up: this server keeps no %s policies.", id, service))
	}
	p, found, err := store.Policy(ctx, account, resource, id)
	if err != nil {
		return AccessPolicy{}, err
	}
	if !found {
		return AccessPolicy{}, authenticationFailed(fmt.Sprintf("Stored access policy %q does not exist on %s %q.", id, service, resource))
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

// hostLabel is the first label of a Host header's host name ("127" of 127.0.0.1:10000).
func hostLabel(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, _, _ := strings.Cut(host, ".")
	return label
}
