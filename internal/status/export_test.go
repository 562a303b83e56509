package status

import "time"

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
