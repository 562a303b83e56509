package status

// RestoreBackoff is restoreBackoff, for the integration tests (package
// status_test, which the harness's imports keep outside this package).
const RestoreBackoff = restoreBackoff
