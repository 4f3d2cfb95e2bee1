package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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
