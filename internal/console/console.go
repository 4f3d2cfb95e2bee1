// Package console is Tabula's operator endpoint, served apart from the storage endpoints
// (--console-addr): Prometheus metrics at /metrics, /healthz and /readyz for supervisors, and
// Go's profiler under /debug/pprof/.
package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tabula-dev/tabula/internal/metrics"
	"github.com/tabula-dev/tabula/internal/store"
)

// readyTimeout bounds the store check of /readyz.
const readyTimeout = 2 * time.Second

// readyKey is read to check that the store answers; it never exists.
var readyKey = store.Key{Space: "\x00ready"}

// Handler serves the console for a server whose data is in st.
func Handler(st store.Store) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// Ready means the store answers reads: a supervisor should send no traffic to a front-end
	// whose database is unreachable.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if _, err := st.Get(ctx, readyKey); err != nil && !errors.Is(err, store.ErrNotFound) {
			http.Error(w, "the store does not answer: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Tabula</title><h1>Tabula</h1><ul><li><a href="/metrics">/metrics</a> (Prometheus)<li><a href="/healthz">/healthz</a><li><a href="/readyz">/readyz</a><li><a href="/debug/pprof/">/debug/pprof/</a></ul>`)
	})
	return mux
}
