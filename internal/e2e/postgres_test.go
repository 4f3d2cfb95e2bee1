package e2e

import (
	"testing"

	"github.com/tabula-dev/tabula/internal/store"
	"github.com/tabula-dev/tabula/internal/store/postgres"
	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

// The SDK suite also runs on PostgreSQL, each test on a fresh database of a throw-away
// cluster (skipped, loudly, where PostgreSQL is not installed; never in CI).
func init() {
	backends = append(backends, backend{"postgres", openPostgres})
}

func openPostgres(t *testing.T) store.Store {
	return openPostgresAt(t, pgtest.Start(t))
}

// openPostgresAt opens a Store on the database at dsn, closed when t ends.
func openPostgresAt(t *testing.T, dsn string) store.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
