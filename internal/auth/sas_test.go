package auth

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// accountSASQuery is a valid account SAS for everything on the Table service, to be varied.
func accountSASQuery() url.Values {
	return url.Values{"sv": {"2019-02-02"}, "ss": {"t"}, "srt": {"sco"}, "sp": {"rwdlacu"}, "se": {"2030-01-01T00:00:00Z"}}
}

// tableSASQuery is a valid table SAS for mytable, to be varied.
func tableSASQuery() url.Values {
	return url.Values{"sv": {"2019-07-07"}, "tn": {"mytable"}, "sp": {"raud"}, "se": {"2030-01-01T00:00:00Z"}}
}

func authenticateSAS(t *testing.T, a *Authenticator, q url.Values, change func(r *Request)) (*Grant, error) {
	t.Helper()
	r := sasRequest(q)
	if change != nil {
		change(r)
	}
	return a.Authenticate(context.Background(), r)
}

func TestSASRejections(t *testing.T) {
	for _, tc := range []struct {
		name    string
		query   func() url.Values // already signed
		change  func(r *Request)
		status  int
		code    azerr.Code
		message string // substring of the message, when it matters
	}{
		{name: "tampered after signing",
			query: func() url.Values {
				q := signAccountSAS(accountSASQuery(), "devstoreaccount1", devKey())
				q.Set("sp", "rwdlacup")
				return q
			},
			status: 403, code: azerr.AuthenticationFailed, message: "Signature did not match. String to sign used was devstoreaccount1\nrwdlacup\n"},
		{name: "wrong key",
			query:  func() url.Values { return signAccountSAS(accountSASQuery(), "devstoreaccount1", []byte("wrong")) },
			status: 403, code: azerr.AuthenticationFailed},
		{name: "unknown account",
			query:  func() url.Values { return signAccountSAS(accountSASQuery(), "nosuchaccount", devKey()) },
			change: func(r *Request) { r.Account = "nosuchaccount" },
			status: 403, code: azerr.AuthenticationFailed},
		{name: "signature not base64",
			query:  func() url.Values { q := accountSASQuery(); q.Set("sig", "%%%"); return q },
			status: 403, code: azerr.AuthenticationFailed},
		{name: "expired",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("se", "2025-06-01T11:59:59Z")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed, message: "Signed expiry time [Sun, 01 Jun 2025 11:59:59 GMT] must be after signed start time [Sun, 01 Jun 2025 12:00:00 GMT]"},
		// With st, the time frame is the SAS's own: before it starts, after it expires.
		{name: "not yet valid",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("st", "2025-06-01T12:30:00Z")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed, message: "Signature not valid in the specified time frame: Start [Sun, 01 Jun 2025 12:30:00 GMT] - Expiry ["},
		{name: "expiry before start",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("st", "2025-06-01T11:00:00Z")
				q.Set("se", "2025-06-01T10:00:00Z")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed, message: "Signed expiry time [Sun, 01 Jun 2025 10:00:00 GMT] must be after signed start time [Sun, 01 Jun 2025 11:00:00 GMT]"},
		{name: "not yet valid",
			query: func() url.Values {
				q := tableSASQuery()
				q.Set("st", "2025-06-01T12:00:01Z")
				return signTableSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed, message: "Signature not valid in the specified time frame"},
		{name: "se not ISO 8601",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("se", "01/01/2030")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "se missing",
			query: func() url.Values {
				q := accountSASQuery()
				q.Del("se")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "sp missing from a table SAS without si",
			query: func() url.Values {
				q := tableSASQuery()
				q.Del("sp")
				return signTableSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "sv missing",
			query: func() url.Values {
				q := accountSASQuery()
				q.Del("sv")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "sv malformed",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("sv", "2019-2-2")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "account SAS before 2015-04-05",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("sv", "2015-02-21")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "table SAS before 2013-08-15",
			query: func() url.Values {
				q := tableSASQuery()
				q.Set("sv", "2012-02-12")
				return signTableSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "table SAS without tn",
			query: func() url.Values {
				q := tableSASQuery()
				q.Del("tn")
				return signTableSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthenticationFailed},
		{name: "ss lacks t",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("ss", "bq")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthorizationServiceMismatch},
		{name: "https only, over http",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("spr", "https")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			change: func(r *Request) { r.Secure, r.TLSOffered = false, true },
			status: 403, code: azerr.AuthorizationProtocolMismatch},
		{name: "spr http alone is not permitted",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("spr", "http")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			change: func(r *Request) { r.Secure = false },
			status: 403, code: azerr.AuthenticationFailed},
		{name: "client outside sip",
			query: func() url.Values {
				q := tableSASQuery()
				q.Set("sip", "10.0.0.1")
				return signTableSAS(q, "devstoreaccount1", devKey())
			},
			change: func(r *Request) { r.ClientIP = net.ParseIP("10.0.0.2") },
			status: 403, code: azerr.AuthorizationSourceIPMismatch, message: "using this source IP 10.0.0.2."},
		{name: "client outside sip range",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("sip", "10.0.0.1-10.0.0.9")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			change: func(r *Request) { r.ClientIP = net.ParseIP("10.0.0.10") },
			status: 403, code: azerr.AuthorizationSourceIPMismatch},
		{name: "client IP unknown",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("sip", "10.0.0.1")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			status: 403, code: azerr.AuthorizationSourceIPMismatch},
		{name: "IPv6 client, IPv4 range",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("sip", "0.0.0.0-255.255.255.255")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			change: func(r *Request) { r.ClientIP = net.ParseIP("::1") },
			status: 403, code: azerr.AuthorizationSourceIPMismatch},
		{name: "sip malformed",
			query: func() url.Values {
				q := accountSASQuery()
				q.Set("sip", "10.0.0.9-10.0.0.1")
				return signAccountSAS(q, "devstoreaccount1", devKey())
			},
			change: func(r *Request) { r.ClientIP = net.ParseIP("10.0.0.5") },
			status: 403, code: azerr.AuthenticationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := authenticateSAS(t, newAuthenticator(sasTime), tc.query(), tc.change)
			e := wantError(t, err, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.message) {
				t.Errorf("message %q lacks %q", e.Message, tc.message)
			}
			if strings.Contains(e.Message, DevelopmentAccountKey) {
				t.Errorf("message echoes the account key")
			}
		})
	}
}

func TestSASAcceptances(t *testing.T) {
	for _, tc := range []struct {
		name   string
		query  func() url.Values
		change func(r *Request)
	}{
		{"second account key", func() url.Values { return signAccountSAS(accountSASQuery(), "devstoreaccount1", []byte("second")) }, nil},
		{"sig with + sent unescaped (decoded as space)", func() url.Values {
			// Find a token whose signature contains '+', then spoil it the way a careless client does.
			for i := 0; ; i++ {
				q := accountSASQuery()
				q.Set("se", time.Date(2030, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339))
				q = signAccountSAS(q, "devstoreaccount1", devKey())
				if strings.Contains(q.Get("sig"), "+") {
					raw := strings.ReplaceAll(q.Encode(), "%2B", "+")
					return mustQuery(t, raw)
				}
			}
		}, nil},
		{"st date only, se with fractional seconds", func() url.Values {
			q := accountSASQuery()
			q.Set("st", "2025-06-01")
			q.Set("se", "2030-01-01T00:00:00.0000000Z")
			return signAccountSAS(q, "devstoreaccount1", devKey())
		}, nil},
		{"se with minutes only and an offset sent unescaped", func() url.Values {
			q := tableSASQuery()
			q.Set("se", "2030-01-01T00:00+01:00")
			q = signTableSAS(q, "devstoreaccount1", devKey())
			return mustQuery(t, strings.ReplaceAll(q.Encode(), "%2B", "+"))
		}, nil},
		{"https only, over https", func() url.Values {
			q := accountSASQuery()
			q.Set("spr", "https")
			return signAccountSAS(q, "devstoreaccount1", devKey())
		}, nil},
		{"client at the end of the sip range", func() url.Values {
			q := accountSASQuery()
			q.Set("sip", "10.0.0.1-10.0.0.9")
			return signAccountSAS(q, "devstoreaccount1", devKey())
		}, func(r *Request) { r.ClientIP = net.ParseIP("10.0.0.9") }},
		{"IPv4-mapped client against an IPv4 sip", func() url.Values {
			q := tableSASQuery()
			q.Set("sip", "127.0.0.1")
			return signTableSAS(q, "devstoreaccount1", devKey())
		}, func(r *Request) { r.ClientIP = net.ParseIP("::ffff:127.0.0.1") }},
		{"account SAS 2020-12-06 with an encryption scope", func() url.Values {
			q := accountSASQuery()
			q.Set("sv", "2020-12-06")
			q.Set("ses", "myscope")
			return signAccountSAS(q, "devstoreaccount1", devKey())
		}, nil},
		{"table SAS, sv 2013-08-15 layout", func() url.Values {
			q := tableSASQuery()
			q.Set("sv", "2013-08-15")
			return signTableSAS(q, "devstoreaccount1", devKey())
		}, nil},
		{"table SAS, tn in upper case", func() url.Values {
			q := tableSASQuery()
			q.Set("tn", "MyTable")
			return signTableSAS(q, "devstoreaccount1", devKey())
		}, nil},
		{"host label in upper case", func() url.Values { return signAccountSAS(accountSASQuery(), "devstoreaccount1", devKey()) },
			func(r *Request) { r.Account = "DevStoreAccount1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acct := DevelopmentAccount()
			acct.Keys = append(acct.Keys, []byte("second"))
			g, err := authenticateSAS(t, newAuthenticator(sasTime, acct), tc.query(), tc.change)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if err := g.Authorize(OpQueryEntities, Target{Name: "MYTABLE", PartitionKey: "", RowKey: ""}); err != nil {
				t.Fatalf("Authorize(Query Entities on MYTABLE): %v", err)
			}
		})
	}
}

// policyMap is a PolicyStore over a map keyed by lower-case table name and id.
type policyMap struct {
	mu       sync.Mutex
	policies map[[2]string]AccessPolicy
	err      error
}

func (m *policyMap) Policy(_ context.Context, account, table, id string) (AccessPolicy, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return AccessPolicy{}, false, m.err
	}
	if account != "devstoreaccount1" {
		return AccessPolicy{}, false, nil
	}
	p, ok := m.policies[[2]string{strings.ToLower(table), id}]
	return p, ok, nil
}

func TestSASWithStoredPolicy(t *testing.T) {
	full := AccessPolicy{ID: "full", Start: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Permission: "r"}
	expiryOnly := AccessPolicy{ID: "expiry", Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	expired := AccessPolicy{ID: "expired", Expiry: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Permission: "raud"}
	empty := AccessPolicy{ID: "empty"}
	store := &policyMap{policies: map[[2]string]AccessPolicy{
		{"mytable", "full"}: full, {"mytable", "expiry"}: expiryOnly, {"mytable", "expired"}: expired, {"mytable", "empty"}: empty,
	}}
	withPolicy := func(id string, set ...string) url.Values {
		q := url.Values{"sv": {"2019-07-07"}, "tn": {"mytable"}, "si": {id}}
		for i := 0; i < len(set); i += 2 {
			q.Set(set[i], set[i+1])
		}
		return signTableSAS(q, "devstoreaccount1", devKey())
	}

	t.Run("policy supplies everything", func(t *testing.T) {
		a := newAuthenticator(sasTime)
		a.SetPolicyStore(Table, store)
		g, err := authenticateSAS(t, a, withPolicy("full"), nil)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if err := g.Authorize(OpQueryEntities, Target{Name: "mytable", PartitionKey: "", RowKey: ""}); err != nil {
			t.Errorf("read allowed by the policy: %v", err)
		}
		wantError(t, g.Authorize(OpInsertEntity, Target{Name: "mytable", PartitionKey: "p", RowKey: "r"}), 403, azerr.AuthorizationPermissionMismatch)
	})
	t.Run("URL supplies sp, policy supplies se", func(t *testing.T) {
		a := newAuthenticator(sasTime)
		a.SetPolicyStore(Table, store)
		g, err := authenticateSAS(t, a, withPolicy("expiry", "sp", "a"), nil)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if err := g.Authorize(OpInsertEntity, Target{Name: "mytable", PartitionKey: "p", RowKey: "r"}); err != nil {
			t.Errorf("insert allowed by sp: %v", err)
		}
	})
	for _, tc := range []struct {
		name  string
		query url.Values
		store PolicyStore
	}{
		{"field in both URL and policy", withPolicy("full", "se", "2030-01-01T00:00:00Z"), store},
		{"sp in both URL and policy", withPolicy("full", "sp", "r"), store},
		{"no expiry anywhere", withPolicy("empty", "sp", "r"), store},
		{"no permission anywhere", withPolicy("expiry"), store},
		{"policy expired", withPolicy("expired"), store},
		{"unknown policy", withPolicy("nosuch"), store},
		{"policy on another table", withPolicy("full", "tn", "othertable"), store},
		{"no policy store", withPolicy("full"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthenticator(sasTime)
			a.SetPolicyStore(Table, tc.store)
			_, err := authenticateSAS(t, a, tc.query, nil)
			wantError(t, err, 403, azerr.AuthenticationFailed)
		})
	}
	t.Run("store failure is returned unchanged", func(t *testing.T) {
		boom := errors.New("disk on fire")
		a := newAuthenticator(sasTime)
		a.SetPolicyStore(Table, &policyMap{err: boom})
		_, err := authenticateSAS(t, a, withPolicy("full"), nil)
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want the store's error", err)
		}
	})
	t.Run("the store is not consulted before the signature verifies", func(t *testing.T) {
		a := newAuthenticator(sasTime)
		a.SetPolicyStore(Table, &policyMap{err: errors.New("must not be called")})
		q := withPolicy("full")
		q.Set("sig", hmacBase64([]byte("wrong"), "x"))
		_, err := authenticateSAS(t, a, q, nil)
		wantError(t, err, 403, azerr.AuthenticationFailed)
	})
	t.Run("deleting the policy revokes the SAS", func(t *testing.T) {
		revocable := &policyMap{policies: map[[2]string]AccessPolicy{{"mytable", "full"}: full}}
		a := newAuthenticator(sasTime)
		a.SetPolicyStore(Table, revocable)
		q := withPolicy("full")
		if _, err := authenticateSAS(t, a, q, nil); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
		revocable.mu.Lock()
		delete(revocable.policies, [2]string{"mytable", "full"})
		revocable.mu.Unlock()
		_, err := authenticateSAS(t, a, q, nil)
		wantError(t, err, 403, azerr.AuthenticationFailed)
	})
}
