/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
)

// routeSettings are the settings an HTTPRoute's annotations give every rule
// (shardgatev1alpha1.Annotation*).
type routeSettings struct {
	maxRequestBodyBytes uint32
	retryIdempotentOnly bool
	idleTimeout         *metav1.Duration
	webSocket           bool
}

// settingsAnnotations are the annotations routeSettings reads.
var settingsAnnotations = [...]string{
	shardgatev1alpha1.AnnotationMaxRequestBodyBytes, shardgatev1alpha1.AnnotationRetryIdempotentOnly,
	shardgatev1alpha1.AnnotationIdleTimeout, shardgatev1alpha1.AnnotationWebSocket,
}

// httpRouteSettings reads the annotations; an unreadable value is an
// UnsupportedValue naming the annotation.
func httpRouteSettings(annotations map[string]string) (routeSettings, *ruleError) {
	var s routeSettings
	if v, ok := annotations[shardgatev1alpha1.AnnotationMaxRequestBodyBytes]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return s, unsupported("annotation %s: %q is not a byte count (1-4294967295)", shardgatev1alpha1.AnnotationMaxRequestBodyBytes, v)
		}
		s.maxRequestBodyBytes = uint32(n)
	}
	if v, ok := annotations[shardgatev1alpha1.AnnotationRetryIdempotentOnly]; ok {
		switch v {
		case "true":
			s.retryIdempotentOnly = true
		case "false":
		default:
			return s, unsupported("annotation %s: %q is neither \"true\" nor \"false\"", shardgatev1alpha1.AnnotationRetryIdempotentOnly, v)
		}
	}
	if v, ok := annotations[shardgatev1alpha1.AnnotationIdleTimeout]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return s, unsupported("annotation %s: %q is not a duration (for example 60s, 5m or 1h)", shardgatev1alpha1.AnnotationIdleTimeout, v)
		}
		s.idleTimeout = &metav1.Duration{Duration: d}
	}
	if v, ok := annotations[shardgatev1alpha1.AnnotationWebSocket]; ok {
		switch v {
		case "true":
			s.webSocket = true
		case "false":
		default:
			return s, unsupported("annotation %s: %q is neither \"true\" nor \"false\"", shardgatev1alpha1.AnnotationWebSocket, v)
		}
	}
	return s, nil
}

// apply sets the settings on a compiled rule's routes. They share one
// retry policy (a new one when it changes).
func (s routeSettings) apply(routes []ir.Route) {
	if s == (routeSettings{}) {
		return
	}
	var retry *ir.Retry
	for i := range routes {
		r := &routes[i]
		r.MaxRequestBodyBytes = s.maxRequestBodyBytes
		r.IdleTimeout = s.idleTimeout
		r.WebSocket = s.webSocket
		if s.retryIdempotentOnly && r.Retry != nil {
			if retry == nil {
				cp := *r.Retry
				cp.IdempotentOnly = true
				retry = &cp
			}
			r.Retry = retry
		}
	}
}

// settingsChanged reports whether two versions of an HTTPRoute differ in
// the annotations the translator reads (an annotation change leaves
// metadata.generation alone).
func settingsChanged(oldAnn, newAnn map[string]string) bool {
	for _, k := range settingsAnnotations {
		o, oOK := oldAnn[k]
		n, nOK := newAnn[k]
		if o != n || oOK != nOK {
			return true
		}
	}
	return false
}
