package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// delegationSAS signs a blob SAS with the user delegation key k, in the newest layout, which
// Go's azblob v1.8.3 signs whatever sv it sends (restated here from its source).
func delegationSAS(t *testing.T, k DelegationKey, q url.Values, container, blob string) url.Values {
	t.Helper()
	value, ok := newAuthenticator(sasTime).DelegationKeyValue("devstoreaccount1", k)
	if !ok {
		t.Fatal("no key for the development account")
	}
	q.Set("skoid", k.ObjectID)
	q.Set("sktid", k.TenantID)
	q.Set("skt", FormatDelegationTime(k.Start))
	q.Set("ske", FormatDelegationTime(k.Expiry))
	q.Set("sks", k.Service)
	q.Set("skv", k.Version)
	resource := "/blob/devstoreaccount1/" + container
	if q.Get("sr") != "c" {
		resource += "/" + blob
	}
	fields := []string{q.Get("sp"), q.Get("st"), q.Get("se"), resource,
		q.Get("skoid"), q.Get("sktid"), q.Get("skt"), q.Get("ske"), q.Get("sks"), q.Get("skv"),
		q.Get("saoid"), q.Get("suoid"), q.Get("scid"), q.Get("skdutid"), q.Get("sduoid"),
		q.Get("sip"), q.Get("spr"), q.Get("sv"), q.Get("sr"), q.Get("snapshot"), q.Get("ses"), "", "",
		q.Get("rscc"), q.Get("rscd"), q.Get("rsce"), q.Get("rscl"), q.Get("rsct")}
	key, _ := base64.StdEncoding.DecodeString(value)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(strings.Join(fields, "\n")))
	q.Set("sig", base64.StdEncoding.EncodeToString(h.Sum(nil)))
	return q
}

func TestUserDelegationSAS(t *testing.T) {
	k := DelegationKey{ObjectID: "oid-1", TenantID: "tid-1", Start: sasTime.Add(-time.Hour), Expiry: sasTime.Add(time.Hour), Service: "b", Version: "2026-12-06"}
	q := delegationSAS(t, k, url.Values{"sv": {"2026-12-06"}, "sr": {"b"}, "sp": {"r"}, "se": {"2030-01-01T00:00:00Z"}, "spr": {"https"}}, "box", "a.txt")
	g, err := sasFor(t, Blob, "/box/a.txt", q)
	if err != nil {
		t.Fatalf("a user delegation SAS: %v", err)
	}
	if err := g.Authorize(OpGetBlob, Target{Name: "box", Blob: "a.txt"}); err != nil {
		t.Fatal(err)
	}
	wantError(t, g.Authorize(OpPutBlob, Target{Name: "box", Blob: "a.txt"}), 403, azerr.AuthorizationPermissionMismatch)

	// A key field changed after signing derives another key: the signature fails.
	forged := url.Values{}
	for name, v := range q {
		forged[name] = v
	}
	forged.Set("skoid", "someone-else")
	_, err = sasFor(t, Blob, "/box/a.txt", forged)
	wantError(t, err, 403, azerr.AuthenticationFailed)

	// A key past its expiry signs nothing, whatever the SAS's own expiry.
	old := k
	old.Start, old.Expiry = sasTime.Add(-3*time.Hour), sasTime.Add(-2*time.Hour)
	_, err = sasFor(t, Blob, "/box/a.txt", delegationSAS(t, old, url.Values{"sv": {"2026-12-06"}, "sr": {"b"}, "sp": {"r"}, "se": {"2030-01-01T00:00:00Z"}}, "box", "a.txt"))
	wantError(t, err, 403, azerr.AuthenticationFailed)

	// A stored policy cannot back a user delegation SAS.
	withPolicy := delegationSAS(t, k, url.Values{"sv": {"2026-12-06"}, "sr": {"c"}, "si": {"p"}}, "box", "")
	_, err = sasFor(t, Blob, "/box/a.txt", withPolicy)
	wantError(t, err, 403, azerr.AuthenticationFailed)
}

// serviceDelegationSAS signs a queue or table SAS with the user delegation key k in the
// layout of sv 2025-07-05 and later: the queue's as @azure/storage-queue 12.31 signs it, the
// table's with its key range after sv. Restated here, not taken from the package.
func serviceDelegationSAS(t *testing.T, k DelegationKey, q url.Values, resource string) url.Values {
	t.Helper()
	value, ok := newAuthenticator(sasTime).DelegationKeyValue("devstoreaccount1", k)
	if !ok {
		t.Fatal("no key for the development account")
	}
	q.Set("skoid", k.ObjectID)
	q.Set("sktid", k.TenantID)
	q.Set("skt", FormatDelegationTime(k.Start))
	q.Set("ske", FormatDelegationTime(k.Expiry))
	q.Set("sks", k.Service)
	q.Set("skv", k.Version)
	if k.DelegatedUserTenantID != "" {
		q.Set("skdutid", k.DelegatedUserTenantID)
	}
	fields := []string{q.Get("sp"), q.Get("st"), q.Get("se"), resource,
		q.Get("skoid"), q.Get("sktid"), q.Get("skt"), q.Get("ske"), q.Get("sks"), q.Get("skv"), q.Get("skdutid"), q.Get("sduoid"),
		q.Get("sip"), q.Get("spr"), q.Get("sv")}
	if strings.HasPrefix(resource, "/table/") {
		fields = append(fields, q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk"))
	}
	key, _ := base64.StdEncoding.DecodeString(value)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(strings.Join(fields, "\n")))
	q.Set("sig", base64.StdEncoding.EncodeToString(h.Sum(nil)))
	return q
}

func TestQueueAndTableUserDelegationSAS(t *testing.T) {
	key := func(service string) DelegationKey {
		return DelegationKey{ObjectID: "oid-1", TenantID: "tid-1", Start: sasTime.Add(-time.Hour), Expiry: sasTime.Add(time.Hour), Service: service, Version: "2026-02-06"}
	}
	queueSAS := func(k DelegationKey, sv string) url.Values {
		return serviceDelegationSAS(t, k, url.Values{"sv": {sv}, "sp": {"ra"}, "se": {"2030-01-01T00:00:00Z"}}, "/queue/devstoreaccount1/jobs")
	}

	g, err := sasFor(t, Queue, "/jobs/messages", queueSAS(key("q"), "2026-02-06"))
	if err != nil {
		t.Fatalf("a queue user delegation SAS: %v", err)
	}
	if err := g.Authorize(OpPutMessage, Target{Name: "jobs"}); err != nil {
		t.Fatal(err)
	}
	wantError(t, g.Authorize(OpGetMessages, Target{Name: "jobs"}), 403, azerr.AuthorizationPermissionMismatch)
	_, err = sasFor(t, Queue, "/other/messages", queueSAS(key("q"), "2026-02-06"))
	wantError(t, err, 403, azerr.AuthenticationFailed)

	// Before 2025-07-05 the Queue service took no user delegation SAS.
	_, err = sasFor(t, Queue, "/jobs/messages", queueSAS(key("q"), "2024-08-04"))
	wantError(t, err, 403, azerr.AuthenticationFailed)
	// A blob key signs no queue SAS.
	_, err = sasFor(t, Queue, "/jobs/messages", queueSAS(key("b"), "2026-02-06"))
	wantError(t, err, 403, azerr.AuthorizationServiceMismatch)

	// The key's delegated user tenant is part of the key: a SAS that drops it fails.
	withTenant := key("q")
	withTenant.DelegatedUserTenantID = "tid-2"
	q := queueSAS(withTenant, "2026-02-06")
	if _, err := sasFor(t, Queue, "/jobs/messages", q); err != nil {
		t.Fatalf("a SAS of a key with a delegated user tenant: %v", err)
	}
	q.Del("skdutid")
	_, err = sasFor(t, Queue, "/jobs/messages", q)
	wantError(t, err, 403, azerr.AuthenticationFailed)

	// A table SAS, with its key range.
	tq := serviceDelegationSAS(t, key("t"), url.Values{"sv": {"2026-02-06"}, "tn": {"Orders"}, "sp": {"r"}, "se": {"2030-01-01T00:00:00Z"}, "spk": {"a"}, "epk": {"m"}}, "/table/devstoreaccount1/orders")
	g, err = sasFor(t, Table, "/Orders()", tq)
	if err != nil {
		t.Fatalf("a table user delegation SAS: %v", err)
	}
	if err := g.Authorize(OpQueryEntities, Target{Name: "Orders", PartitionKey: "b", RowKey: "1"}); err != nil {
		t.Fatal(err)
	}
	wantError(t, g.Authorize(OpQueryEntities, Target{Name: "Orders", PartitionKey: "z", RowKey: "1"}), 403, azerr.AuthorizationFailure)
	wantError(t, g.Authorize(OpInsertEntity, Target{Name: "Orders", PartitionKey: "b"}), 403, azerr.AuthorizationPermissionMismatch)
}

func TestIssueDelegationKey(t *testing.T) {
	a := newAuthenticator(sasTime)
	owner := &Grant{account: "devstoreaccount1", bearer: &bearerGrant{objectID: "oid-1", tenantID: "tid-1"}}
	body := []byte(`<?xml version="1.0" encoding="utf-8"?><KeyInfo><Start>2025-06-01T11:00:00Z</Start><Expiry>2025-06-02T12:00:00Z</Expiry><DelegatedUserTid>6f1c3a52-0d3e-4b8e-9a57-2c1d5e7f9b10</DelegatedUserTid></KeyInfo>`)
	answer, err := a.IssueDelegationKey(owner, "devstoreaccount1", Queue, "2026-02-06", body, sasTime)
	if err != nil {
		t.Fatal(err)
	}
	k := DelegationKey{ObjectID: "oid-1", TenantID: "tid-1", Start: sasTime.Add(-time.Hour), Expiry: sasTime.Add(24 * time.Hour), Service: "q", Version: "2026-02-06", DelegatedUserTenantID: "6f1c3a52-0d3e-4b8e-9a57-2c1d5e7f9b10"}
	value, _ := a.DelegationKeyValue("devstoreaccount1", k)
	want := `<?xml version="1.0" encoding="utf-8"?><UserDelegationKey><SignedOid>oid-1</SignedOid><SignedTid>tid-1</SignedTid>` +
		`<SignedStart>2025-06-01T11:00:00Z</SignedStart><SignedExpiry>2025-06-02T12:00:00Z</SignedExpiry><SignedService>q</SignedService>` +
		`<SignedVersion>2026-02-06</SignedVersion><SignedDelegatedUserTid>6f1c3a52-0d3e-4b8e-9a57-2c1d5e7f9b10</SignedDelegatedUserTid><Value>` + value + `</Value></UserDelegationKey>`
	if string(answer) != want {
		t.Fatalf("answer\n%s\nwant\n%s", answer, want)
	}

	for _, c := range []struct {
		name   string
		grant  *Grant
		body   string
		status int
		code   azerr.Code
	}{
		{"an account key", &Grant{account: "devstoreaccount1"}, `<KeyInfo><Expiry>2025-06-01T13:00:00Z</Expiry></KeyInfo>`, 403, azerr.AuthenticationFailed},
		{"a blob reader's token", &Grant{account: "devstoreaccount1", bearer: &bearerGrant{objectID: "o", tenantID: "tid-1", limited: true, roles: []string{"Storage Blob Data Reader"}}}, `<KeyInfo><Expiry>2025-06-01T13:00:00Z</Expiry></KeyInfo>`, 403, azerr.AuthorizationPermissionMismatch},
		{"a token without a tenant", &Grant{account: "devstoreaccount1", bearer: &bearerGrant{objectID: "o"}}, `<KeyInfo><Expiry>2025-06-01T13:00:00Z</Expiry></KeyInfo>`, 403, azerr.AuthenticationFailed},
		{"no expiry", owner, `<KeyInfo><Start>2025-06-01T11:00:00Z</Start></KeyInfo>`, 400, azerr.MissingRequiredXMLNode},
		{"an expiry already past", owner, `<KeyInfo><Start>2025-06-01T10:00:00Z</Start><Expiry>2025-06-01T11:00:00Z</Expiry></KeyInfo>`, 400, azerr.InvalidXMLNodeValue},
		{"an expiry over seven days ahead", owner, `<KeyInfo><Expiry>2025-06-09T12:00:00Z</Expiry></KeyInfo>`, 400, azerr.InvalidXMLNodeValue},
		{"not XML", owner, `KeyInfo`, 400, azerr.InvalidXMLDocument},
		// What Go's azblob suite asks of the real service: a tenant that is no tenant.
		{"the nil GUID as delegated user tenant", owner, `<KeyInfo><Expiry>2025-06-01T13:00:00Z</Expiry><DelegatedUserTid>00000000-0000-0000-0000-000000000000</DelegatedUserTid></KeyInfo>`, 403, azerr.AuthenticationFailed},
		{"a delegated user tenant that is no GUID", owner, `<KeyInfo><Expiry>2025-06-01T13:00:00Z</Expiry><DelegatedUserTid>contoso</DelegatedUserTid></KeyInfo>`, 403, azerr.AuthenticationFailed},
	} {
		_, err := a.IssueDelegationKey(c.grant, "devstoreaccount1", Queue, "2026-02-06", []byte(c.body), sasTime)
		if err == nil {
			t.Errorf("%s: issued a key", c.name)
			continue
		}
		wantError(t, err, c.status, c.code)
	}
	// A queue reader may get a key for queues.
	reader := &Grant{account: "devstoreaccount1", bearer: &bearerGrant{objectID: "o", tenantID: "tid-1", limited: true, roles: []string{"Storage Queue Data Reader"}}}
	if _, err := a.IssueDelegationKey(reader, "devstoreaccount1", Queue, "2026-02-06", []byte(`<KeyInfo><Expiry>2025-06-01T13:00:00Z</Expiry></KeyInfo>`), sasTime); err != nil {
		t.Fatalf("a queue reader's key: %v", err)
	}
}

// A SAS for a delegated user (sduoid) serves requests that carry that user's bearer token too,
// of the key's delegated user tenant.
func TestDelegatedUserSAS(t *testing.T) {
	a := newAuthenticator(sasTime)
	a.OAuth = OAuth{Mode: OAuthBasic}
	k := DelegationKey{ObjectID: "owner", TenantID: "tid-1", Start: sasTime.Add(-time.Hour), Expiry: sasTime.Add(time.Hour), Service: "q", Version: "2026-02-06",
		DelegatedUserTenantID: "6f1c3a52-0d3e-4b8e-9a57-2c1d5e7f9b10"}
	q := serviceDelegationSAS(t, k, url.Values{"sv": {"2026-02-06"}, "sp": {"r"}, "se": {"2030-01-01T00:00:00Z"}, "sduoid": {"user-7"}}, "/queue/devstoreaccount1/jobs")
	token := func(oid, tid string) string {
		payload, _ := json.Marshal(map[string]any{"aud": "https://storage.azure.com", "iss": "https://sts.windows.net/" + tid + "/",
			"nbf": sasTime.Add(-time.Minute).Unix(), "exp": sasTime.Add(time.Hour).Unix(), "oid": oid, "tid": tid})
		return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	}
	request := func(bearer string) *Request {
		h := http.Header{}
		h.Set("x-ms-version", "2026-02-06")
		if bearer != "" {
			h.Set("Authorization", "Bearer "+bearer)
		}
		return &Request{Service: Queue, Method: "GET", RawPath: "/devstoreaccount1/jobs/messages", Path: "/jobs/messages", Query: q, Header: h,
			Account: "devstoreaccount1", Secure: true, TLSOffered: true}
	}
	g, err := a.Authenticate(context.Background(), request(token("user-7", "6f1c3a52-0d3e-4b8e-9a57-2c1d5e7f9b10")))
	if err != nil {
		t.Fatalf("the delegated user with the SAS: %v", err)
	}
	// What the SAS grants, not what the token would.
	if err := g.Authorize(OpPeekMessages, Target{Name: "jobs"}); err != nil {
		t.Fatal(err)
	}
	wantError(t, g.Authorize(OpPutMessage, Target{Name: "jobs"}), 403, azerr.AuthorizationPermissionMismatch)

	for name, bearer := range map[string]string{
		"no token":              "",
		"another user":          token("user-8", "6f1c3a52-0d3e-4b8e-9a57-2c1d5e7f9b10"),
		"another tenant's user": token("user-7", "11111111-2222-3333-4444-555555555555"),
	} {
		if _, err := a.Authenticate(context.Background(), request(bearer)); err == nil {
			t.Errorf("%s: the delegated user's SAS was taken", name)
		} else {
			wantError(t, err, 403, azerr.AuthenticationFailed)
		}
	}
}
