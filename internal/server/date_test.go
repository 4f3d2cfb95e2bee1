package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The Date header is the time the response begins, not the time the request did: a request
// that takes seconds (an upload, a copy waiting for its source) would otherwise answer a Date
// before its own Last-Modified.
func TestTheDateIsWhenTheResponseBegins(t *testing.T) {
	for _, how := range []string{"header", "write"} {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var rq Request
			Begin(&rq, w, r, "2025-01-05")
			time.Sleep(1100 * time.Millisecond)
			if how == "header" {
				w.WriteHeader(http.StatusAccepted)
			} else {
				w.Write([]byte("body"))
			}
		})
		srv := httptest.NewServer(observe(Endpoint{Name: "test"}, h, &RequestLog{}, nil))
		sent := time.Now()
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		date, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			t.Fatal(err)
		}
		if !date.After(sent.Truncate(time.Second)) {
			t.Errorf("%s: Date %v is the request's start (sent %v)", how, date, sent)
		}
	}
}
