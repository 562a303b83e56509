package status

import (
	"regexp"
	"runtime"
	"strings"
	"time"
)

// RestoreBackoff is restoreBackoff, for the integration tests (package
// status_test, which the harness's imports keep outside this package).
const RestoreBackoff = restoreBackoff

// SetRetiringWriteDelay sets retiringWriteDelay until the test ends; call it
// before the writer under test takes a Submit.
func SetRetiringWriteDelay(t interface{ Cleanup(func()) }, d time.Duration) {
	old := retiringWriteDelay
	retiringWriteDelay = d
	t.Cleanup(func() { retiringWriteDelay = old })
}

// SetRetiringHold sets retiringWriteDelay and retiringHoldMax until the
// test ends; call it before the writer under test takes a Submit.
func SetRetiringHold(t interface{ Cleanup(func()) }, delay, most time.Duration) {
	oldDelay, oldMost := retiringWriteDelay, retiringHoldMax
	retiringWriteDelay, retiringHoldMax = delay, most
	t.Cleanup(func() { retiringWriteDelay, retiringHoldMax = oldDelay, oldMost })
}

// WriteGoroutines counts the goroutines that run this package's code other
// than a writer's Start itself: its write workers, idle or not. It reads
// every goroutine's stack, so it counts them however they were started.
func WriteGoroutines() int {
	n := 0
	// The first stack is the caller's own.
	for _, g := range strings.Split(allStacks(), "\n\n")[1:] {
		if statusFrame.MatchString(g) && !startFrame.MatchString(g) {
			n++
		}
	}
	return n
}

var (
	// statusFrame: a frame of this package's code (not of its tests,
	// package status_test, whose frames read "status_test.").
	statusFrame = regexp.MustCompile(`(?m)^github\.com/shardgate/shardgate/internal/status\.`)
	// startFrame: a writer's Start itself, not a closure it made
	// ("Start.func1").
	startFrame = regexp.MustCompile(`(?m)^github\.com/shardgate/shardgate/internal/status\.\(\*(Writer|ObjectWriter\[[^\n]*\])\)\.Start\(`)
)

func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
