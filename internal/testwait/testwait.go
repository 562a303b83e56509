// Package testwait is the one way plain Go tests wait for a condition: poll
// it until it holds, on gomega's Eventually, with a deadline generous
// enough for a loaded machine. (Ginkgo suites use Eventually directly.)
//
// It is support for tests only: nothing but _test.go files imports it.
package testwait

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// Timeout is how long For and Succeeds wait before failing the test.
const Timeout = 2 * time.Minute

// Poll is how often they check.
const Poll = 10 * time.Millisecond

// For polls cond until it holds, and fails the test, saying what it waited
// for, if it does not within Timeout. cond runs on the test's goroutine, so
// it may itself fail the test.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ForWithin(t, Timeout, what, cond)
}

// ForWithin is For with another deadline.
func ForWithin(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(timeout).WithPolling(Poll).Should(gomega.BeTrue(), "waiting for %s", what)
}

// Succeeds polls cond until it returns nil, and fails the test with its
// last error if it does not within Timeout.
func Succeeds(t testing.TB, cond func() error) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(Timeout).WithPolling(Poll).Should(gomega.Succeed())
}
