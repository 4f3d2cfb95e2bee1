package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// One address serves HTTPS and plain HTTP side by side, and a handler can tell which it got
// and that HTTPS is on offer.
func TestHTTPSAndHTTPShareAnAddress(t *testing.T) {
	port, client := serveHTTPS(t, Limits{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls=%v offered=%v", r.TLS != nil, TLSOffered(r.Context()))
	}))
	// Twice: the second requests reuse the kept-alive connections of the first.
	cases := []struct {
		url, want string
	}{
		{"https://" + port + "/x", "tls=true offered=true"},
		{"https://localhost:" + port[len("127.0.0.1:"):] + "/x", "tls=true offered=true"},
		{"http://" + port + "/x", "tls=false offered=true"},
	}
	for _, tc := range append(cases, cases...) {
		resp, err := client.Get(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != tc.want {
			t.Fatalf("%s: got %q, want %q", tc.url, body, tc.want)
		}
	}
}

// The local CA is made once and reused; its server certificate is renewed when near its end.
func TestTheLocalCAIsKeptAcrossStarts(t *testing.T) {
	dir := t.TempDir()
	first, err := OpenLocalCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := OpenLocalCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(first.CAFile)
	b, _ := os.ReadFile(second.CAFile)
	if string(a) != string(b) {
		t.Fatal("a second start made a new CA: clients that trusted the first would stop working")
	}
	if !first.TLS.Certificates[0].Leaf.NotAfter.Equal(second.TLS.Certificates[0].Leaf.NotAfter) {
		t.Fatal("a second start issued a new server certificate though the first is far from its end")
	}
}

// net/http's own refusals (a header block too large) speak Azure over HTTPS too.
func TestNetHTTPRefusalsCarryAzureErrorsOverHTTPS(t *testing.T) {
	addr, client := serveHTTPS(t, Limits{MaxHeaderBytes: 4 << 10}, http.HandlerFunc(testHandler))
	req, _ := http.NewRequest("GET", "https://"+addr+"/x", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidHeaderValue" || !strings.Contains(string(body), "<Code>InvalidHeaderValue</Code>") {
		t.Fatalf("an oversized header block over HTTPS: %d %s %q", resp.StatusCode, resp.Header.Get("x-ms-error-code"), body)
	}
}

// serveHTTPS serves h over HTTPS and HTTP on one address with a new local CA, and returns the
// address and a client that trusts the CA.
func serveHTTPS(t *testing.T, limits Limits, h http.Handler) (string, *http.Client) {
	t.Helper()
	ca, err := OpenLocalCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g, err := Listen(limits, quiet, Endpoint{Name: "test", Addr: "127.0.0.1:0", Handler: h, ErrorBody: xmlErrorBody})
	if err != nil {
		t.Fatal(err)
	}
	g.TLS = ca.TLS
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	pemBytes, err := os.ReadFile(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("the CA file holds no certificate")
	}
	return g.Addr("test").String(), &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
