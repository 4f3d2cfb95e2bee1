package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/serviceprops"
)

// Refusals carry Azure's exact messages; the reason goes to the log only.
func TestPreflightRefusalsCarryAzuresMessages(t *testing.T) {
	rules := []serviceprops.CorsRule{{AllowedOrigins: []string{"https://app.example"}, AllowedMethods: []string{"GET"}, AllowedHeaders: []string{"x-ms-meta-*"}}}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
		code    azerr.Code
		message string
	}{
		{"no method", map[string]string{"Origin": "https://app.example"}, 400, azerr.InvalidHeaderValue, "A required CORS header is not present."},
		{"unknown origin", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}, 403, azerr.CorsPreflightFailure, "CORS not enabled or no matching rule found for this request."},
		{"header not allowed", map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-ms-meta-a,authorization"}, 403, azerr.CorsPreflightFailure, "CORS not enabled or no matching rule found for this request."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodOptions, "/devstoreaccount1/c", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			rq := &Request{}
			Begin(rq, httptest.NewRecorder(), r, "2021-08-06")
			var e *azerr.Error
			if err := Preflight(rq, rules, quiet); !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.code || e.Message != tc.message {
				t.Fatalf("got %#v", err)
			}
		})
	}
	r := httptest.NewRequest(http.MethodOptions, "/devstoreaccount1/c", nil)
	r.Header.Set("Origin", "https://app.example")
	r.Header.Set("Access-Control-Request-Method", "GET")
	r.Header.Set("Access-Control-Request-Headers", "x-ms-meta-color")
	w := httptest.NewRecorder()
	rq := &Request{}
	Begin(rq, w, r, "2021-08-06")
	if err := Preflight(rq, rules, quiet); err != nil || w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("allowed preflight: %v %d %v", err, w.Code, w.Header())
	}
}
