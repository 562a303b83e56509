/*
Copyright The shardgate Authors.
*/

package v1alpha1

// Annotations on an HTTPRoute that shardgate honours, for settings the
// Gateway API has no field for. They apply to every rule of the route. A
// value shardgate cannot read makes every rule invalid: the route is not
// Accepted (reason UnsupportedValue, naming the annotation), as an invalid
// rule field would make it.
const (
	// AnnotationMaxRequestBodyBytes limits the request body of every rule
	// of the route to this many bytes (a decimal integer, 1 to
	// 4294967295). A larger request is answered 413 by the proxy, which
	// buffers the body to enforce the limit. Unset: no limit.
	AnnotationMaxRequestBodyBytes = "shardgate.io/max-request-body-bytes"

	// AnnotationRetryIdempotentOnly, "true", restricts the rules' retry
	// policies to requests whose method is idempotent: a POST, PATCH or
	// LOCK request is never retried (NGINX's proxy_next_upstream default).
	// "false" or unset: any request is retried, as the Gateway API says.
	AnnotationRetryIdempotentOnly = "shardgate.io/retry-idempotent-only"

	// AnnotationIdleTimeout sets the idle timeout of every rule of the
	// route (a Gateway API duration such as "60s" or "5m"; "0s" disables
	// it): a request ends when neither side has sent a byte for this long.
	// Unset: the Gateway's GatewayParameters spec.traffic.idleTimeout
	// (60s by default). shardgate sets it on the routes it generates for
	// Akash leases from their read and send timeouts.
	AnnotationIdleTimeout = "shardgate.io/idle-timeout"

	// AnnotationWebSocket, "true", lets every rule of the route upgrade
	// to a WebSocket whatever the Gateway's spec.traffic.webSockets says.
	// shardgate sets it on every route it generates. "false" or unset:
	// the Gateway's setting applies.
	AnnotationWebSocket = "shardgate.io/websocket"

	// AnnotationRetry carries a retry policy, the JSON of an HTTPRoute
	// rule's retry field ({"attempts": 2, "codes": [502], "backoff":
	// "100ms"}), for every rule that has no retry field of its own. It is
	// honoured only on routes shardgate generates for Akash leases (in
	// Akash mode, where the cluster's HTTPRoute CRD drops rules[].retry:
	// Standard-channel CRDs older than v1.7) and ignored on any other route.
	AnnotationRetry = "shardgate.io/retry"
)
