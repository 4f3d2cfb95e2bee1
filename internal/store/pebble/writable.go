package pebble

import "github.com/tabula-dev/tabula/internal/store"

var _ store.Writable = (*Store)(nil)

// CanWrite reports a failed disk: once the write-ahead log or MANIFEST could not be written,
// every commit is refused until the process restarts (see disk.go).
func (s *Store) CanWrite() error {
	return s.failure.get()
}
