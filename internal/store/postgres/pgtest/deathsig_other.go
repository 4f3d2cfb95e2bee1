//go:build !linux

package pgtest

import "os/exec"

// setParentDeathSignal does nothing where there is no parent-death signal: a test binary
// killed outright leaves its cluster running there.
func setParentDeathSignal(*exec.Cmd) {}
