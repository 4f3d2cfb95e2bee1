package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestSignedIdentifiersRoundTrip(t *testing.T) {
	body := `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>full</Id><AccessPolicy><Start>2021-01-01T00:00:00Z</Start><Expiry>2030-01-02</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier><SignedIdentifier><Id>bare</Id></SignedIdentifier></SignedIdentifiers>`
	p, err := ParseSignedIdentifiers([]byte(body), "raud")
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 || !p[1].Expiry.IsZero() || !p[0].Expiry.Equal(time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v", p)
	}
	// A date-only Expiry comes back as a full timestamp, as the other forms do.
	want := `<SignedIdentifiers><SignedIdentifier><Id>full</Id><AccessPolicy><Start>2021-01-01T00:00:00.0000000Z</Start><Expiry>2030-01-02T00:00:00.0000000Z</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier><SignedIdentifier><Id>bare</Id></SignedIdentifier></SignedIdentifiers>`
	if got := string(AppendSignedIdentifiers(nil, p)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := string(AppendSignedIdentifiers(nil, nil)); got != "<SignedIdentifiers />" {
		t.Fatalf("empty: %s", got)
	}
}

func TestInvalidSignedIdentifiers(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		code       azerr.Code
	}{
		// The real service's answer (recording TestSetInvalidAccessPolicy).
		{"identifier without Id", `<SignedIdentifiers><SignedIdentifier><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, azerr.InvalidXMLDocument},
		{"six identifiers", `<SignedIdentifiers>` + sixIdentifiers() + `</SignedIdentifiers>`, azerr.InvalidXMLDocument},
		{"repeated Id", `<SignedIdentifiers><SignedIdentifier><Id>a</Id></SignedIdentifier><SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers>`, azerr.InvalidXMLDocument},
		{"bad letter", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Permission>rx</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, azerr.InvalidXMLNodeValue},
		{"bad time", `<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Expiry>tomorrow</Expiry></AccessPolicy></SignedIdentifier></SignedIdentifiers>`, azerr.InvalidXMLNodeValue},
		{"malformed", `<SignedIdentifiers><SignedIdentifier>`, azerr.InvalidXMLDocument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSignedIdentifiers([]byte(tc.body), "raud")
			var e *azerr.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Status != 400 {
				t.Fatalf("got %v, want 400 %s", err, tc.code)
			}
		})
	}
}

func sixIdentifiers() string {
	s := ""
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		s += "<SignedIdentifier><Id>" + id + "</Id></SignedIdentifier>"
	}
	return s
}

func FuzzParseSignedIdentifiers(f *testing.F) {
	f.Add([]byte(`<SignedIdentifiers><SignedIdentifier><Id>full</Id><AccessPolicy><Start>2021-01-01T00:00:00Z</Start><Expiry>2030-01-02</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`))
	f.Add([]byte(`<SignedIdentifiers />`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := ParseSignedIdentifiers(body, "rwdl")
		if err != nil {
			var e *azerr.Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("returned %v", err)
			}
			return
		}
		// What is accepted is written back as a document that reads as the same policies.
		out := AppendSignedIdentifiers(nil, p)
		again, err := ParseSignedIdentifiers(out, "rwdl")
		if err != nil || len(again) != len(p) {
			t.Fatalf("own output %s: %v", out, err)
		}
		if string(AppendSignedIdentifiers(nil, again)) != string(out) {
			t.Fatalf("not stable: %s", out)
		}
	})
}
