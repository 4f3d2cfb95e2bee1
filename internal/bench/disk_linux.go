package bench

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, leaving out metadata a later read does not need.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
