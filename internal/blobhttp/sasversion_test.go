package blobhttp_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
)

// A request with a shared access signature and no x-ms-version (a SAS URL opened in a browser
// or with curl) runs at the signature's version, sv: it answers that x-ms-version, in that
// version's shape (Get Page Ranges without NextMarker before 2020-10-02). With x-ms-version,
// the header's version it is.
func TestASASRequestWithoutAVersionRunsAtTheSignaturesVersion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		pages := e.container("pages").NewPageBlobClient("disk")
		if _, err := pages.Create(ctx, 4096, nil); err != nil {
			t.Fatal(err)
		}
		// Signed by hand: the SDK signs every version as 2020-12-06 and later (with an
		// encryption scope line), which Azure refuses for older ones.
		dev := auth.DevelopmentAccount()
		expiry := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		mac := hmac.New(sha256.New, dev.Keys[0])
		mac.Write([]byte(strings.Join([]string{dev.Name, "r", "b", "o", "", expiry, "", "https,http", "2019-12-12", ""}, "\n")))
		q := url.Values{"sv": {"2019-12-12"}, "ss": {"b"}, "srt": {"o"}, "sp": {"r"}, "se": {expiry}, "spr": {"https,http"},
			"sig": {base64.StdEncoding.EncodeToString(mac.Sum(nil))}}
		for _, tc := range []struct{ header, answered string }{{"", "2019-12-12"}, {"2025-01-05", "2025-01-05"}} {
			req, _ := http.NewRequest("GET", e.url+"/pages/disk?comp=pagelist&"+q.Encode(), nil)
			if tc.header != "" {
				req.Header.Set("x-ms-version", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("x-ms-version") != tc.answered {
				t.Fatalf("x-ms-version %q: %d, answered at %q: %s", tc.header, resp.StatusCode, resp.Header.Get("x-ms-version"), body)
			}
			if newer := tc.answered >= "2020-10-02"; strings.Contains(string(body), "NextMarker") != newer {
				t.Fatalf("x-ms-version %q: Get Page Ranges at %s: %s", tc.header, tc.answered, body)
			}
		}
	})
}
