//go:build !linux

package bench

import "os"

// fdatasync makes f's data durable; where fdatasync(2) is missing, with fsync.
func fdatasync(f *os.File) error { return f.Sync() }
