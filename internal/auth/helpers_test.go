package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The date every auth.md §4 vector signs, and the server clock that makes it current.
const vectorDate = "Mon, 02 Aug 2021 18:01:40 GMT"

var vectorTime = time.Date(2021, 8, 2, 18, 1, 40, 0, time.UTC)

// sasTime is inside every SAS vector's window (the latest st is 2021-01-01, every se 2030).
var sasTime = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func devKey() []byte { return DevelopmentAccount().Keys[0] }

// hmacBase64 signs with crypto/hmac directly, so vectors are checked independently of the
// package's own signing code.
func hmacBase64(key []byte, stringToSign string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(stringToSign))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func newAuthenticator(now time.Time, accounts ...Account) *Authenticator {
	if len(accounts) == 0 {
		accounts = []Account{DevelopmentAccount()}
	}
	a := NewAuthenticator(accounts)
	a.Now = func() time.Time { return now }
	return a
}

func mustQuery(t testing.TB, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", raw, err)
	}
	return q
}

// wantError fails unless err is an *azerr.Error with status and code, and returns it.
func wantError(t *testing.T, err error, status int, code azerr.Code) *azerr.Error {
	t.Helper()
	var e *azerr.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want *azerr.Error %d %s", err, err, status, code)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("got %d %s (%q), want %d %s", e.Status, e.Code, e.Message, status, code)
	}
	return e
}

// liteRequest is a SharedKeyLite request as the Go SDK sends it: x-ms-date only, signed over
// "/" + signAccount + signedPath [+ ?comp=…].
func liteRequest(key []byte, urlAccount, signAccount, rawPath, signedPath, rawQuery string) *Request {
	q, _ := url.ParseQuery(rawQuery)
	resource := "/" + signAccount + signedPath
	if q.Has("comp") {
		resource += "?comp=" + q.Get("comp")
	}
	h := http.Header{}
	h.Set("x-ms-date", vectorDate)
	h.Set("x-ms-version", "2019-02-02")
	h.Set("Authorization", "SharedKeyLite "+signAccount+":"+SignSharedKeyLite(key, vectorDate, resource))
	return &Request{Method: "GET", RawPath: rawPath, Query: q, Header: h, Account: urlAccount}
}

// sharedKeyRequest is a SharedKey Create Table request as the Python SDK sends it (Date and
// x-ms-date, same value), path-style on the development account.
func sharedKeyRequest(key []byte) *Request {
	h := http.Header{}
	h.Set("x-ms-date", vectorDate)
	h.Set("Date", vectorDate)
	h.Set("x-ms-version", "2019-02-02")
	h.Set("Content-Type", "application/json")
	resource := "/devstoreaccount1/devstoreaccount1/Tables"
	h.Set("Authorization", "SharedKey devstoreaccount1:"+SignSharedKey(key, "POST", "", "application/json", vectorDate, resource))
	return &Request{Method: "POST", RawPath: "/devstoreaccount1/Tables", Query: url.Values{}, Header: h, Account: "devstoreaccount1"}
}

// signAccountSAS sets sig on q with the account SAS layout of auth.md §5, restated here.
func signAccountSAS(q url.Values, account string, key []byte) url.Values {
	fields := []string{account, q.Get("sp"), q.Get("ss"), q.Get("srt"), q.Get("st"), q.Get("se"), q.Get("sip"), q.Get("spr"), q.Get("sv")}
	if q.Get("sv") >= "2020-12-06" {
		fields = append(fields, q.Get("ses"))
	}
	q.Set("sig", hmacBase64(key, strings.Join(fields, "\n")+"\n"))
	return q
}

// signTableSAS sets sig on q with the table SAS layout of auth.md §6, restated here.
func signTableSAS(q url.Values, account string, key []byte) url.Values {
	resource := "/table/" + account + "/" + strings.ToLower(q.Get("tn"))
	var fields []string
	if q.Get("sv") >= "2015-04-05" {
		fields = []string{q.Get("sp"), q.Get("st"), q.Get("se"), resource, q.Get("si"), q.Get("sip"), q.Get("spr"), q.Get("sv"),
			q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk")}
	} else {
		fields = []string{q.Get("sp"), q.Get("st"), q.Get("se"), resource, q.Get("si"), q.Get("sv"),
			q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk")}
	}
	q.Set("sig", hmacBase64(key, strings.Join(fields, "\n")))
	return q
}

func sasRequest(q url.Values) *Request {
	h := http.Header{}
	h.Set("x-ms-version", "2019-02-02")
	return &Request{Method: "GET", RawPath: "/devstoreaccount1/mytable()", Query: q, Header: h,
		Account: "devstoreaccount1", Secure: true}
}
