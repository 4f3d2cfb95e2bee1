package postgres

import (
	"testing"

	"github.com/tabula-dev/tabula/internal/store/postgres/pgtest"
	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestObjectsContract(t *testing.T) {
	storetest.RunObjects(t, func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		dsn := pgtest.Start(t)
		return mustOpen(t, dsn, Options{}), func() storetest.ObjectStore { return mustOpen(t, dsn, Options{}) }
	})
}
