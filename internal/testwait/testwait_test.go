package testwait

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the
// test, so that a failing wait can be observed.
type recorder struct {
	testing.TB
	failed atomic.Bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed.Store(true) }

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	For(t, "the third check", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("checked %d times, want 3", got)
	}
	Succeeds(t, func() error {
		if n.Add(1) < 6 {
			return errors.New("not yet")
		}
		return nil
	})
	if got := n.Load(); got != 6 {
		t.Fatalf("checked %d times, want 6", got)
	}
}

func TestForFailsWhenTheConditionNeverHolds(t *testing.T) {
	r := &recorder{TB: t}
	ForWithin(r, 50*time.Millisecond, "something that never happens", func() bool { return false })
	if !r.failed.Load() {
		t.Fatal("a condition that never held did not fail the test")
	}
}
