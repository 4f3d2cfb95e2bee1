package server

import (
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/azerr"
)

func TestCheckVersion(t *testing.T) {
	soon := time.Now().AddDate(0, 6, 0).Format("2006-01-02")
	for _, v := range []string{"", "2009-09-19", "2026-06-06", soon} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
	// Not a date, or a date no service version will have by the time a client sends it (the
	// JS SDK's "Invalid service version" test sends 3025-01-01; Azure answers 400 naming it).
	for _, v := range []string{"latest", "2026-13-01", "3025-01-01", time.Now().AddDate(2, 0, 0).Format("2006-01-02")} {
		e := azerr.As(CheckVersion(v))
		if e == nil || e.Status != 400 || e.Code != azerr.InvalidHeaderValue || len(e.Details) != 2 || e.Details[1].Value != v {
			t.Errorf("%q: %+v", v, e)
		}
	}
}
