// Package metricsauth authenticates and authorizes requests to the metrics
// server (/metrics and /debug/config_dump) against the Kubernetes
// apiserver: the request's bearer token through a TokenReview, then its
// user through a SubjectAccessReview of the request path (a non-resource
// URL) with the lower-cased HTTP method as verb. A request without a
// bearer token, or with one the apiserver does not authenticate, gets 401;
// an authenticated user the apiserver does not allow gets 403; a failed
// review (the apiserver unreachable) gets 500 and is not cached.
//
// Both answers are cached for a short TTL (DefaultTTL) in bounded maps
// (DefaultMaxEntries each), as the apiserver's own delegating
// authenticator and authorizer do, so that a Prometheus scraping every few
// seconds costs the apiserver one review of each kind per TTL, and a
// revoked token or role binding stops working within the TTL. Tokens are
// kept only as SHA-256 digests. Concurrent identical reviews are made once.
//
// It does the work of controller-runtime's
// filters.WithAuthenticationAndAuthorization without importing
// k8s.io/apiserver (its authenticator and authorizer factories bring in
// dozens of packages and their package-level state, which the controller
// would carry in every process for two API calls).
package metricsauth
