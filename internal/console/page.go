package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// The page is plain HTML, CSS and JavaScript in ui/, embedded in the binary: no build step,
// and nothing fetched from a network when it runs (its Content-Security-Policy allows this
// origin only).
//
//go:embed ui
var ui embed.FS

// pageHeaders are sent with every file of the page.
var pageHeaders = http.Header{
	"Content-Security-Policy": {"default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
	"X-Content-Type-Options":  {"nosniff"},
	"Referrer-Policy":         {"no-referrer"},
	// A new binary may bring a new page: the browser asks again rather than mix versions.
	"Cache-Control": {"no-cache"},
}

// routePage serves the page at / and its files under /ui/.
func routePage(mux *http.ServeMux) {
	files, err := fs.Sub(ui, "ui")
	if err != nil {
		panic(err)
	}
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic(err)
	}
	withHeaders := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range pageHeaders {
				w.Header()[k] = v
			}
			h.ServeHTTP(w, r)
		})
	}
	mux.Handle("GET /ui/", withHeaders(http.StripPrefix("/ui/", http.FileServerFS(files))))
	mux.Handle("GET /{$}", withHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(index)
	})))
}
