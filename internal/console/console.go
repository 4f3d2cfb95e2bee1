// Package console is Tabula's operator endpoint, served apart from the storage endpoints
// (--console-addr): a web page at / to look into and change the data, with its JSON API under
// /api/ (api.go), Prometheus metrics at /metrics, /healthz and /readyz for supervisors, the
// design guide's findings at /insights, the fault rules at /admin/faults (for an account's
// owner), and Go's profiler under /debug/pprof/.
package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/blob"
	"github.com/tabula-dev/tabula/internal/faults"
	"github.com/tabula-dev/tabula/internal/insight"
	"github.com/tabula-dev/tabula/internal/metrics"
	"github.com/tabula-dev/tabula/internal/queue"
	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/table"
)

// readyTimeout bounds the store check of /readyz.
const readyTimeout = 2 * time.Second

// readyKey is read to check that the store answers; it never exists.
var readyKey = store.Key{Space: "\x00ready"}

// Options are what the console shows and steers.
type Options struct {
	Store    store.Store
	Tables   *table.Service    // nil: the page has no tables
	Blobs    *blob.Service     // nil: no containers
	Queues   *queue.Service    // nil: no queues
	Insights *insight.Observer // nil: /insights lists nothing
	Faults   *faults.Set       // nil: no admin API for fault rules
	// Accounts authenticate the admin API: HTTP Basic with an account's name and one of its
	// keys (base64, as in connection strings).
	Accounts []auth.Account
}

// Handler serves the console.
func Handler(o Options) http.Handler {
	st := o.Store
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// Ready means the store answers reads and can take writes: a supervisor should send no
	// traffic to a front-end whose database is unreachable or whose disk has failed.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if _, err := st.Get(ctx, readyKey); err != nil && !errors.Is(err, store.ErrNotFound) {
			http.Error(w, "the store does not answer: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		// A store that still reads but can no longer write is no use behind a load balancer.
		if wr, ok := st.(store.Writable); ok {
			if err := wr.CanWrite(); err != nil {
				http.Error(w, "the store refuses writes: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /insights", func(w http.ResponseWriter, r *http.Request) {
		findings := o.Insights.Findings()
		if findings == nil {
			findings = []insight.Finding{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"findings": findings})
	})
	if o.Faults != nil {
		admin := &faultsAdmin{set: o.Faults, owners: o.Accounts, challenge: true}
		mux.Handle("/admin/faults", admin)
		mux.Handle("/admin/faults/{id}", admin)
		forPage := &faultsAdmin{set: o.Faults, owners: o.Accounts}
		mux.Handle("/api/faults", forPage)
		mux.Handle("/api/faults/{id}", forPage)
	}
	routeAPI(mux, o)
	routePage(mux)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
