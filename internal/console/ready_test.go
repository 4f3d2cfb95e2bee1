package console

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/pebble"
)

// brokenDisk is a store whose reads work and whose writes, it says, cannot.
type brokenDisk struct {
	store.Store
	err error
}

func (b brokenDisk) CanWrite() error { return b.err }

func TestReadyzIsNotReadyOnceTheStoreCannotWrite(t *testing.T) {
	st, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, c := range []struct {
		name   string
		store  store.Store
		status int
		body   string
	}{
		{"a working store", st, 200, "ready"},
		{"a store whose disk failed", brokenDisk{st, errors.New("WAL write: input/output error")}, 503, "the store refuses writes: WAL write: input/output error"},
		{"a store that says it can write", brokenDisk{st, nil}, 200, "ready"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(Handler(Options{Store: c.store}))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || !strings.Contains(string(b), c.body) {
				t.Errorf("/readyz: %d %q, want %d with %q", resp.StatusCode, b, c.status, c.body)
			}
		})
	}
}
