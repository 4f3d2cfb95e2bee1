package pebble

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tabula-dev/tabula/internal/store/storetest"
)

func TestObjectsContractOnDisk(t *testing.T) {
	storetest.RunObjects(t, func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		dir := t.TempDir()
		return mustOpen(t, dir, Options{}), func() storetest.ObjectStore { return mustOpen(t, dir, Options{}) }
	})
}

func TestObjectsContractInMemory(t *testing.T) {
	storetest.RunObjects(t, func(t *testing.T) (storetest.ObjectStore, func() storetest.ObjectStore) {
		fs := vfs.NewMem()
		return mustOpenFS(t, "db", fs), func() storetest.ObjectStore { return mustOpenFS(t, "db", fs) }
	})
}

func mustOpenFS(t testing.TB, dir string, fs vfs.FS) *Store {
	t.Helper()
	s, err := open(dir, fs)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}
