package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkObserve measures what observing costs a request: metrics alone (the request log
// off), and a text log line written to a discarding buffer.
func BenchmarkObserve(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq := &Request{}
		Begin(rq, w, r, "2021-08-06")
		rq.Note("Get Entity", "t")
		w.WriteHeader(200)
	})
	for _, tc := range []struct {
		name string
		log  *RequestLog
	}{
		{"bare", nil},
		{"log-off", &RequestLog{}},
		{"log-on", &RequestLog{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			handler := http.Handler(h)
			if tc.log != nil {
				handler = observe(Endpoint{Name: "table"}, h, tc.log, nil)
			}
			r := httptest.NewRequest("GET", "/devstoreaccount1/t()", nil)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				handler.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}
