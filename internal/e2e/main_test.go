package e2e

import (
	"testing"

	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
)

// TestMain stops the throw-away PostgreSQL cluster that the postgres backend's tests start.
func TestMain(m *testing.M) { pgtest.Main(m) }
