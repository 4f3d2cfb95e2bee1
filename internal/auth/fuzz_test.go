package auth

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// fuzzPolicies knows policy "p" on every table, fails for "err" and knows nothing else.
type fuzzPolicies struct{}

func (fuzzPolicies) Policy(_ context.Context, _, _, id string) (AccessPolicy, bool, error) {
	switch id {
	case "p":
		return AccessPolicy{ID: id, Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, true, nil
	case "err":
		return AccessPolicy{}, false, azerr.New(azerr.InternalError)
	}
	return AccessPolicy{}, false, nil
}

// exerciseGrant calls everything a Grant offers; none of it may panic, and every refusal must be
// an *azerr.Error.
func exerciseGrant(t *testing.T, g *Grant, table, pk, rk string) {
	ops := []*Operation{nil}
	for _, row := range specTable {
		ops = append(ops, row.op)
	}
	for _, op := range ops {
		if err := g.Authorize(op, Target{Name: table, PartitionKey: pk, RowKey: rk}); err != nil {
			var e *azerr.Error
			if !errors.As(err, &e) {
				t.Fatalf("Authorize(%v) returned %T %v", op, err, err)
			}
		}
	}
	g.KeyRange()
	g.InKeyRange(pk, rk)
}

func FuzzParseSAS(f *testing.F) {
	for _, seed := range []string{
		"sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2030-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=dKEa4zPUq%2FdWdOLrCYusn1Jnz45OJCCdBPi%2BhMWeijk%3D",
		"sv=2019-07-07&tn=mytable&sp=raud&se=2030-01-01T00%3A00%3A00Z&sig=o6Qt4PLMUdoi6549xhHa0YySR3c3WLebsYPq4hkFA3c%3D",
		"sv=2019-07-07&tn=mytable&sp=r&st=2021-01-01T00%3A00%3A00Z&se=2030-01-01T00%3A00%3A00Z&spk=p1&epk=p1&sig=x",
		"sv=2013-08-15&tn=t&si=p&sip=10.0.0.0-10.255.255.255&spr=https&sig=",
		"sv=2020-12-06&ss=bt&srt=o&sp=au&st=2021-01-01&se=2030-01-01T00:00+01:00&ses=s&sip=::1&sig=a+b",
		"sig&sig&sv=9999-99-99&tn=%00&si=err",
	} {
		f.Add(seed)
	}
	a := newAuthenticator(sasTime)
	a.SetPolicyStore(Table, fuzzPolicies{})
	f.Fuzz(func(t *testing.T, rawQuery string) {
		q, _ := url.ParseQuery(rawQuery)
		check := func(q url.Values) error {
			r := sasRequest(q)
			r.ClientIP = net.ParseIP("10.1.2.3")
			g, err := a.Authenticate(context.Background(), r)
			if err != nil {
				var e *azerr.Error
				if !errors.As(err, &e) {
					t.Fatalf("Authenticate returned %T %v", err, err)
				}
				return err
			}
			exerciseGrant(t, g, q.Get("tn"), q.Get("spk"), q.Get("erk"))
			return nil
		}
		check(q)
		// Re-sign whatever parses, so the checks after the signature see fuzzed values too.
		tok, err := parseSAS(q, Table, "/mytable()")
		if err != nil {
			return
		}
		q.Set("sig", hmacBase64(devKey(), tok.stringsToSign("devstoreaccount1")[0]))
		if err := check(q); err != nil && strings.Contains(err.Error(), "Signature did not match") {
			t.Fatalf("re-signed token does not verify: %v", err)
		}
	})
}

func FuzzAuthorizationHeader(f *testing.F) {
	f.Add("SharedKeyLite devstoreaccount1:C34gQnQ/N612IP5frLN2xGODjztDO7WY/yzBvw6ZyKs=", "/devstoreaccount1/Tables", vectorDate)
	f.Add("SharedKey devstoreaccount1:jmS60LCZ7OCJqGgtFQUN3UqL4p6m8QiePS5qZdSRaGA=", "/devstoreaccount1-secondary/t(PartitionKey='%C3%A9',RowKey='%')", "")
	f.Add("Bearer x", "", "Mon, 02 Aug 2021 18:01:40 +0000")
	f.Add(" sharedkey  a:b:c ", "/%zz/'", "garbage")
	a := newAuthenticator(vectorTime)
	f.Fuzz(func(t *testing.T, header, rawPath, date string) {
		r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", rawPath, rawPath, "comp=acl")
		r.Header.Set("Authorization", header)
		r.Header.Set("x-ms-date", date)
		if g, err := a.Authenticate(context.Background(), r); err != nil {
			var e *azerr.Error
			if !errors.As(err, &e) {
				t.Fatalf("Authenticate returned %T %v", err, err)
			}
		} else {
			exerciseGrant(t, g, "t", "p", "r")
		}

		// Any path signed as sent verifies (an empty path is "/" on the wire and when signed).
		signed := rawPath
		if signed == "" {
			signed = "/"
		}
		r = liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", rawPath, signed, "")
		if _, err := a.Authenticate(context.Background(), r); err != nil {
			t.Fatalf("path %q signed as sent: %v", rawPath, err)
		}
		// A path signed decoded verifies when it arrives encoded.
		if decoded, err := url.PathUnescape(signed); err == nil {
			r = liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", escapePath(decoded, keepPathChar), decoded, "")
			if _, err := a.Authenticate(context.Background(), r); err != nil {
				t.Fatalf("path %q signed decoded, sent encoded: %v", decoded, err)
			}
		}
	})
}

func FuzzParseAccounts(f *testing.F) {
	f.Add("devstoreaccount1:" + DevelopmentAccountKey)
	f.Add("a1b:AAAA:BBBB;c2d:Zm9v, ,")
	f.Add("x:::,,;;")
	f.Fuzz(func(t *testing.T, s string) {
		accounts, err := ParseAccounts(s)
		if err != nil {
			return
		}
		for _, acct := range accounts {
			if validAccountName(acct.Name) != nil || len(acct.Keys) < 1 || len(acct.Keys) > 2 {
				t.Fatalf("accepted %q with %d keys", acct.Name, len(acct.Keys))
			}
			for _, k := range acct.Keys {
				if len(k) == 0 {
					t.Fatalf("accepted an empty key for %q", acct.Name)
				}
			}
		}
	})
}
