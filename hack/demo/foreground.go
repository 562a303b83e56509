package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// foreground makes the demo its terminal's foreground process group, so
// that Ctrl-C interrupts the demo alone. Otherwise the terminal also sends
// SIGINT to `make` and `go run` above it: make then reports
// "*** [Makefile: demo] Interrupt" and exits with an error however cleanly
// the demo stops. The returned function hands the terminal back. Without a
// terminal on stdin it does nothing.
func foreground() (restore func()) {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return func() {}
	}
	prev, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return func() {}
	}
	// A background process group that sets the foreground group gets
	// SIGTTOU; ignore it while the demo switches groups (and back).
	signal.Ignore(syscall.SIGTTOU)
	if err := syscall.Setpgid(0, 0); err != nil {
		signal.Reset(syscall.SIGTTOU)
		return func() {}
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpgrp()); err != nil {
		signal.Reset(syscall.SIGTTOU)
		return func() {}
	}
	return func() {
		_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, prev)
		signal.Reset(syscall.SIGTTOU)
	}
}
