/*
Copyright The shardgate Authors.
*/

package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// FreePort returns a TCP port on 127.0.0.1 for a process the test is about
// to start, and keeps it from every other FreePort caller on the machine
// for as long as this test process lives.
//
// "Listen on :0, close, hand the port over" is not enough on a busy
// machine: the kernel hands the same ephemeral ports to outgoing
// connections and to other test processes doing the same, so the port is
// often taken again before the started process binds it. So the port comes
// from below the kernel's ephemeral range (which outgoing connections and
// ":0" listeners never use), it must be bindable right now, and it is
// reserved with an exclusive flock on a file shared by every test process;
// the kernel drops the lock when the process exits, however it exits.
func FreePort() (int, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	lo, hi := reservableRange()
	if hi-lo < 100 {
		return ephemeralPort()
	}
	dir := filepath.Join(os.TempDir(), "shardgate-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, fmt.Errorf("testenv: free port: %w", err)
	}
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		if ports.held[port] != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return 0, fmt.Errorf("testenv: free port: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close() // another test process holds it
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			f.Close() // in use by something that does not take part
			continue
		}
		l.Close()
		if ports.held == nil {
			ports.held = map[int]*os.File{}
		}
		ports.held[port] = f
		return port, nil
	}
	return ephemeralPort()
}

// ports: the reservations of this process, kept open (and so locked) until
// it exits.
var ports struct {
	mu   sync.Mutex
	held map[int]*os.File
}

// reservableRange is [10000, start of the ephemeral range), at most 20000
// ports.
func reservableRange() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				hi = n
			}
		}
	}
	if hi-lo > 20000 {
		lo = hi - 20000
	}
	return lo, hi
}

// ephemeralPort is the plain way, for a machine whose ephemeral range
// leaves no room below it.
func ephemeralPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
