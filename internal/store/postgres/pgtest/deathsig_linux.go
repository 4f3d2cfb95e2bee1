package pgtest

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel send the postmaster SIGQUIT (an immediate shutdown, which
// takes its backends down with it) when the thread that started it exits.
func setParentDeathSignal(cmd *exec.Cmd) { cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT }
