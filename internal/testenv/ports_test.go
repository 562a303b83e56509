/*
Copyright The shardgate Authors.
*/

package testenv

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestFreePortReservesOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := reservableRange()
	if hi-lo < 100 {
		t.Skipf("ephemeral range starts at %d: no room below it on this machine", hi)
	}
	seen := map[int]bool{}
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < lo || port >= hi {
			t.Fatalf("port %d outside [%d, %d)", port, lo, hi)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true

		// Another process opening the reservation file cannot lock it:
		// flock is per open file, so a second open in this process
		// stands in for the other process.
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "shardgate-test-ports", strconv.Itoa(port)), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("port %d: a second lock got %v, want EWOULDBLOCK", port, err)
		}

		// And the port is usable by the process it is meant for.
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		l.Close()
	}
}
