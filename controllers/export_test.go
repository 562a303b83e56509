package controllers

// Write is write, for the tests that run it against a real apiserver.
var Write = write

// RetryPruned and IsRetrySchemaError are the ProviderHost controller's
// tests of a route written on a CRD without rules[].retry.
var (
	RetryPruned        = retryPruned
	IsRetrySchemaError = isRetrySchemaError
)

// IPServiceUpToDate is the ProviderLeasedIP controller's test of whether a
// leased-IP Service needs writing.
var IPServiceUpToDate = ipServiceUpToDate
