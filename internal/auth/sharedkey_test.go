package auth

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestSharedKeyGrantsEverythingInItsAccount(t *testing.T) {
	g, err := newAuthenticator(vectorTime).Authenticate(context.Background(), sharedKeyRequest(devKey()))
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	for _, row := range specTable {
		op := row.op
		if err := g.Authorize(op, Target{Name: "anytable", PartitionKey: "pk", RowKey: "rk"}); err != nil {
			t.Errorf("Authorize(%v) = %v, want nil", op, err)
		}
	}
	if _, _, _, _, ok := g.KeyRange(); ok {
		t.Errorf("account key grant has a key range")
	}
	if !g.InKeyRange("any", "thing") {
		t.Errorf("account key grant excludes an entity")
	}
}

func TestSharedKeyAcceptsEitherAccountKey(t *testing.T) {
	second := []byte("second key bytes, not the emulator's")
	acct := Account{Name: "devstoreaccount1", Keys: [][]byte{devKey(), second}}
	a := newAuthenticator(vectorTime, acct)
	for i, key := range acct.Keys {
		if _, err := a.Authenticate(context.Background(), sharedKeyRequest(key)); err != nil {
			t.Errorf("signed with key %d: %v", i+1, err)
		}
	}
}

// Signature checks reuse pooled HMAC state per key; requests signed with either key or a wrong
// one, checked at once, must each get their own answer (run with -race).
func TestSharedKeyChecksAreSafeForConcurrentUse(t *testing.T) {
	second := []byte("second key bytes, not the emulator's")
	a := newAuthenticator(vectorTime, Account{Name: "devstoreaccount1", Keys: [][]byte{devKey(), second}})
	keys := [][]byte{devKey(), second, []byte("not an account key")}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(keys)
				r := sharedKeyRequest(keys[k])
				if i%2 == 0 {
					r = liteRequest(keys[k], "devstoreaccount1", "devstoreaccount1", "/devstoreaccount1/t()", "/devstoreaccount1/t()", "")
				}
				_, err := a.Authenticate(context.Background(), r)
				if wantOK := k < 2; (err == nil) != wantOK {
					t.Errorf("key %d: err = %v", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// decodeSignature must read exactly what base64.DecodeString reads, malformed text included.
func TestDecodeSignatureMatchesDecodeString(t *testing.T) {
	valid := SignSharedKeyLite(devKey(), vectorDate, "/devstoreaccount1/Tables")
	for _, s := range []string{
		"", valid, valid + "junk", valid[:20], valid[:43], "!!!!", "QUJD", "QUJD=", "QQ==QUJD", "QUJD====",
		strings.Repeat("QUJD", 40), strings.Repeat("QUJD", 40) + "!", base64.StdEncoding.EncodeToString(make([]byte, 64)),
	} {
		var buf [64]byte
		want, _ := base64.StdEncoding.DecodeString(s)
		if got := decodeSignature(buf[:0], s); string(got) != string(want) {
			t.Errorf("decodeSignature(%q) = %x, want %x", s, got, want)
		}
	}
}

func TestSharedKeyMismatchSaysWhatWasSigned(t *testing.T) {
	r := sharedKeyRequest([]byte("not the account key"))
	_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
	e := wantError(t, err, 403, azerr.AuthenticationFailed)
	want := "Server used following string to sign: 'POST\n\napplication/json\n" + vectorDate + "\n/devstoreaccount1/devstoreaccount1/Tables'."
	if !strings.HasPrefix(e.Message, azerr.New(azerr.AuthenticationFailed).Message+"\n") || !strings.Contains(e.Message, want) {
		t.Errorf("message %q lacks Azure's first line or the detail %q", e.Message, want)
	}
	if strings.Contains(e.Message, DevelopmentAccountKey) {
		t.Errorf("message echoes the account key")
	}
}

// TestSharedKeySignsEveryLine changes each signed part of a valid SharedKey request in turn.
func TestSharedKeySignsEveryLine(t *testing.T) {
	for name, change := range map[string]func(r *Request){
		"method":       func(r *Request) { r.Method = "PUT" },
		"content type": func(r *Request) { r.Header.Set("Content-Type", "application/json;odata=nometadata") },
		"content md5":  func(r *Request) { r.Header.Set("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==") },
		"date":         func(r *Request) { r.Header.Set("x-ms-date", "Mon, 02 Aug 2021 18:01:41 GMT") },
		"path":         func(r *Request) { r.RawPath = "/devstoreaccount1/Tables()" },
		"comp":         func(r *Request) { r.Query.Set("comp", "acl") },
	} {
		t.Run(name, func(t *testing.T) {
			r := sharedKeyRequest(devKey())
			change(r)
			_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
			wantError(t, err, 403, azerr.AuthenticationFailed)
		})
	}
}

// Of the query only comp is signed: restype, $filter, $format etc. may change freely.
func TestSharedKeyIgnoresQueryParametersOtherThanComp(t *testing.T) {
	r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", "/devstoreaccount1/", "/devstoreaccount1/", "restype=service&comp=properties")
	r.Query.Set("timeout", "30")
	r.Query.Set("$format", "application/json")
	if _, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r); err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
}

func TestSharedKeyDate(t *testing.T) {
	later := "Mon, 02 Aug 2021 18:30:00 GMT"
	for _, tc := range []struct {
		name                 string
		xmsDate, date, signs string
		wantErr              bool
	}{
		{"x-ms-date only", vectorDate, "", vectorDate, false},
		{"Date only", "", vectorDate, vectorDate, false},
		{"x-ms-date wins over Date", vectorDate, later, vectorDate, false},
		{"signing Date while x-ms-date differs fails", vectorDate, later, later, true},
		{"neither header", "", "", vectorDate, true},
		{"not RFC 1123", "2021-08-02T18:01:40Z", "", "2021-08-02T18:01:40Z", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.xmsDate != "" {
				h.Set("x-ms-date", tc.xmsDate)
			}
			if tc.date != "" {
				h.Set("Date", tc.date)
			}
			h.Set("Authorization", "SharedKeyLite devstoreaccount1:"+SignSharedKeyLite(devKey(), tc.signs, "/devstoreaccount1/devstoreaccount1/Tables"))
			r := &Request{Method: "GET", RawPath: "/devstoreaccount1/Tables", Header: h, Account: "devstoreaccount1"}
			_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
			if tc.wantErr {
				wantError(t, err, 403, azerr.AuthenticationFailed)
			} else if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
		})
	}
}

func TestSharedKeyClockSkew(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offset  time.Duration // server clock minus request date
		skew    time.Duration
		wantErr bool
	}{
		{"14 minutes late", 14 * time.Minute, DefaultMaxClockSkew, false},
		{"15 minutes late", 15 * time.Minute, DefaultMaxClockSkew, false},
		{"16 minutes late", 16 * time.Minute, DefaultMaxClockSkew, true},
		{"16 minutes early", -16 * time.Minute, DefaultMaxClockSkew, true},
		{"a day late, check disabled", 24 * time.Hour, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthenticator(vectorTime.Add(tc.offset))
			a.MaxClockSkew = tc.skew
			_, err := a.Authenticate(context.Background(), sharedKeyRequest(devKey()))
			if tc.wantErr {
				wantError(t, err, 403, azerr.AuthenticationFailed)
			} else if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
		})
	}
}

func TestSharedKeyAccount(t *testing.T) {
	other := Account{Name: "otheraccount", Keys: [][]byte{[]byte("other key")}}
	a := newAuthenticator(vectorTime, DevelopmentAccount(), other)
	t.Run("unknown account", func(t *testing.T) {
		r := liteRequest(devKey(), "nosuchaccount", "nosuchaccount", "/Tables", "/Tables", "")
		_, err := a.Authenticate(context.Background(), r)
		wantError(t, err, 403, azerr.AuthenticationFailed)
	})
	t.Run("key of another hosted account", func(t *testing.T) {
		// Correctly signed with otheraccount's key, sent to devstoreaccount1.
		r := liteRequest(other.Keys[0], "devstoreaccount1", "otheraccount", "/Tables", "/Tables", "")
		_, err := a.Authenticate(context.Background(), r)
		wantError(t, err, 403, azerr.AuthenticationFailed)
	})
	t.Run("host label in upper case", func(t *testing.T) {
		r := liteRequest(devKey(), "DEVSTOREACCOUNT1", "devstoreaccount1", "/Tables", "/Tables", "")
		if _, err := a.Authenticate(context.Background(), r); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	})
	t.Run("endpoint without the account segment", func(t *testing.T) {
		// TableEndpoint=http://localhost:8902: the client sends /Tables and signs
		// /devstoreaccount1/Tables; the router falls back to the default account.
		r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", "/Tables", "/Tables", "")
		if _, err := a.Authenticate(context.Background(), r); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	})
}

func TestSharedKeySecondaryEndpoint(t *testing.T) {
	a := newAuthenticator(vectorTime)
	for _, tc := range []struct{ name, rawPath, signedPath string }{
		{"host style", "/Tables", "/Tables"},
		{"path style, client signs what it sends", "/devstoreaccount1-secondary/Tables", "/devstoreaccount1-secondary/Tables"},
		{"path style, client signs the primary path (Azurite)", "/devstoreaccount1-secondary/Tables", "/devstoreaccount1/Tables"},
		{"path style service root", "/devstoreaccount1-secondary", "/devstoreaccount1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The router strips "-secondary"; the header names the primary account.
			r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", tc.rawPath, tc.signedPath, "restype=service&comp=stats")
			if _, err := a.Authenticate(context.Background(), r); err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
		})
	}
}

// Clients escape entity keys differently and may sign a different spelling of the path than
// the one that arrives; every spelling below must verify.
func TestSharedKeyPathSpellings(t *testing.T) {
	a := newAuthenticator(vectorTime)
	for _, tc := range []struct{ name, wire, signed string }{
		{"Go aztables (url.PathEscape keys), signed as sent",
			"/devstoreaccount1/t(PartitionKey='O%27%27Brien%20%2C',RowKey='%C3%A9')",
			"/devstoreaccount1/t(PartitionKey='O%27%27Brien%20%2C',RowKey='%C3%A9')"},
		{"signed decoded, sent encoded",
			"/devstoreaccount1/t(PartitionKey='a%20b',RowKey='%C3%A9')",
			"/devstoreaccount1/t(PartitionKey='a b',RowKey='é')"},
		{"signed minimally encoded (WHATWG URL), sent with quotes escaped",
			"/devstoreaccount1/t%28PartitionKey=%27a%20b%27,RowKey=%27x%27%29",
			"/devstoreaccount1/t(PartitionKey='a%20b',RowKey='x')"},
		{"signed with Python legacy quote, sent unescaped by a proxy",
			"/devstoreaccount1/t(PartitionKey='a:b@c',RowKey='x')",
			"/devstoreaccount1/t(PartitionKey='a%3Ab%40c',RowKey='x')"},
		{"signed with encodeURIComponent keys, sent minimally encoded",
			"/devstoreaccount1/t(PartitionKey='a;b&c',RowKey='x')",
			"/devstoreaccount1/t(PartitionKey='a%3Bb%26c',RowKey='x')"},
		{"signed as Go url.URL.EscapedPath, sent raw",
			"/devstoreaccount1/t(PartitionKey='p',RowKey='r')",
			"/devstoreaccount1/t%28PartitionKey=%27p%27,RowKey=%27r%27%29"},
		{"lower-case hex on the wire",
			"/devstoreaccount1/t(PartitionKey='%c3%a9',RowKey='x')",
			"/devstoreaccount1/t(PartitionKey='%C3%A9',RowKey='x')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", tc.wire, tc.signed, "")
			if _, err := a.Authenticate(context.Background(), r); err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
		})
	}
	t.Run("a different path still fails", func(t *testing.T) {
		r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1",
			"/devstoreaccount1/t(PartitionKey='a',RowKey='x')", "/devstoreaccount1/t(PartitionKey='b',RowKey='x')", "")
		_, err := a.Authenticate(context.Background(), r)
		wantError(t, err, 403, azerr.AuthenticationFailed)
	})
}

func TestMalformedAuthorizationHeader(t *testing.T) {
	sig := SignSharedKeyLite(devKey(), vectorDate, "/devstoreaccount1/devstoreaccount1/Tables")
	for _, value := range []string{
		"",
		"SharedKey",
		"SharedKey devstoreaccount1",
		"SharedKeyLite devstoreaccount1" + sig,
		"SharedKeyLite :" + sig,
		"SharedKeyLite devstoreaccount1:",
		"Basic ZGV2OnB3",
		"Sharedkeylight devstoreaccount1:" + sig,
	} {
		t.Run(value, func(t *testing.T) {
			r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", "/devstoreaccount1/Tables", "/devstoreaccount1/Tables", "")
			r.Header.Set("Authorization", value)
			_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
			wantError(t, err, 400, azerr.InvalidAuthenticationInfo)
		})
	}
	t.Run("two Authorization headers", func(t *testing.T) {
		r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", "/devstoreaccount1/Tables", "/devstoreaccount1/Tables", "")
		r.Header.Add("Authorization", r.Header.Get("Authorization"))
		_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
		wantError(t, err, 400, azerr.InvalidAuthenticationInfo)
	})
	t.Run("signature that is not base64 is a mismatch, not malformed", func(t *testing.T) {
		r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1", "/devstoreaccount1/Tables", "/devstoreaccount1/Tables", "")
		r.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:not*base64")
		_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
		wantError(t, err, 403, azerr.AuthenticationFailed)
	})
}

func TestBearerTokenIsChallenged(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig")
	_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), &Request{Method: "GET", RawPath: "/Tables", Header: h, Account: "devstoreaccount1"})
	e := wantError(t, err, 401, azerr.InvalidAuthenticationInfo)
	if !strings.HasPrefix(e.Header.Get("WWW-Authenticate"), "Bearer authorization_uri=https://login.microsoftonline.com/") {
		t.Errorf("WWW-Authenticate = %q", e.Header.Get("WWW-Authenticate"))
	}
}

func TestAnonymousRequest(t *testing.T) {
	for _, tc := range []struct {
		version string
		status  int
		code    azerr.Code
	}{
		{"", 403, azerr.AuthenticationFailed},
		{"2019-07-07", 403, azerr.AuthenticationFailed},
		{"2020-10-02", 403, azerr.AuthenticationFailed},
		{"2020-12-06", 401, azerr.InvalidAuthenticationInfo},
		{"2025-01-05", 401, azerr.InvalidAuthenticationInfo},
	} {
		t.Run("x-ms-version "+tc.version, func(t *testing.T) {
			h := http.Header{}
			if tc.version != "" {
				h.Set("x-ms-version", tc.version)
			}
			// SAS fields without sig are still anonymous.
			r := &Request{Method: "GET", RawPath: "/Tables", Query: mustQuery(t, "sv=2019-02-02&se=2030-01-01"), Header: h, Account: "devstoreaccount1"}
			_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
			e := wantError(t, err, tc.status, tc.code)
			challenge := e.Header.Get("WWW-Authenticate")
			if tc.status == 401 {
				want := "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize resource_id=https://storage.azure.com"
				if challenge != want {
					t.Errorf("WWW-Authenticate = %q, want %q", challenge, want)
				}
				if e.Message != "Server failed to authenticate the request. Please refer to the information in the www-authenticate header." {
					t.Errorf("message = %q", e.Message)
				}
			} else if challenge != "" {
				t.Errorf("403 carries WWW-Authenticate %q", challenge)
			}
		})
	}
}

// The Authorization header decides when a request carries both it and a SAS.
func TestAuthorizationHeaderTakesPrecedenceOverSAS(t *testing.T) {
	q := signTableSAS(mustQuery(t, "sv=2019-07-07&tn=mytable&sp=r&se=2030-01-01T00:00:00Z"), "devstoreaccount1", devKey())
	r := sasRequest(q)
	r.Header.Set("x-ms-date", vectorDate)
	r.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+base64.StdEncoding.EncodeToString([]byte("wrong")))
	_, err := newAuthenticator(vectorTime).Authenticate(context.Background(), r)
	wantError(t, err, 403, azerr.AuthenticationFailed)
}

func TestAlternativePathsExcludeTheRawPath(t *testing.T) {
	raw := "/devstoreaccount1/t(PartitionKey='a%20b',RowKey='c')"
	paths := alternativePaths(raw, "devstoreaccount1")
	seen := map[string]bool{}
	for _, p := range paths {
		if p == raw || seen[p] {
			t.Errorf("alternativePaths lists %q twice or includes the raw path", p)
		}
		seen[p] = true
	}
	if !seen["/devstoreaccount1/t(PartitionKey='a b',RowKey='c')"] {
		t.Errorf("alternativePaths(%q) = %q lacks the decoded path", raw, paths)
	}
}

func BenchmarkAuthenticateSharedKeyLite(b *testing.B) {
	// A Go SDK point query: SharedKeyLite, x-ms-date, $format in the query.
	r := liteRequest(devKey(), "devstoreaccount1", "devstoreaccount1",
		"/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')", "/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')",
		url.Values{"$format": {"application/json;odata=minimalmetadata"}}.Encode())
	a := newAuthenticator(vectorTime)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAuthenticateSharedKey(b *testing.B) {
	// A Python SDK Create Table request: SharedKey, Date and x-ms-date, Content-Type signed.
	r := sharedKeyRequest(devKey())
	a := newAuthenticator(vectorTime)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
