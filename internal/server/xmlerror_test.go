package server

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// A 500 is this server's failure, logged as such with its cause, unless it is a copy source
// on another server that could not be reached (CannotVerifyCopySource), which is that
// server's: the request's own line says so, and the error log stays for what Tabula must fix.
func TestAnUnreachableCopySourceIsNotLoggedAsAFailure(t *testing.T) {
	for _, tc := range []struct {
		err    error
		logged bool
	}{
		{errors.New("the store broke"), true},
		{func() error {
			e := azerr.Newf(azerr.CannotVerifyCopySource, "Could not verify the copy source: dial tcp 127.0.0.1:1: connection refused")
			e.Status = 500
			return e
		}(), false},
	} {
		var out bytes.Buffer
		rq := &Request{}
		w := httptest.NewRecorder()
		Begin(rq, w, httptest.NewRequest("PUT", "/c/b", nil), "2021-08-06")
		WriteXMLError(rq, tc.err, slog.New(slog.NewTextHandler(&out, nil)))
		if w.Code != 500 {
			t.Fatalf("%v answered %d", tc.err, w.Code)
		}
		if got := strings.Contains(out.String(), "request failed"); got != tc.logged {
			t.Errorf("%v: logged as a failure %v, want %v (%q)", tc.err, got, tc.logged, out.String())
		}
	}
}
