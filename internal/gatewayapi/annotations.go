/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

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
	// retry is AnnotationRetry's policy (generated Akash routes only),
	// for the rules without a retry field.
	retry *gatewayv1.HTTPRouteRetry
}

// settingsAnnotations are the annotations routeSettings reads.
var settingsAnnotations = [...]string{
	shardgatev1alpha1.AnnotationMaxRequestBodyBytes, shardgatev1alpha1.AnnotationRetryIdempotentOnly,
	shardgatev1alpha1.AnnotationIdleTimeout, shardgatev1alpha1.AnnotationWebSocket, shardgatev1alpha1.AnnotationRetry,
}

// IsGeneratedAkashRoute says whether r is a route shardgate generates for
// an Akash lease: labelled akash.network: "true" with the lease labels, in
// that lease's namespace (the base32hex SHA-224 of the lease ID, which only
// the provider creates). Only such a route may carry its retry policy in
// AnnotationRetry.
func IsGeneratedAkashRoute(r *gatewayv1.HTTPRoute) bool {
	l := r.Labels
	if l["akash.network"] != "true" {
		return false
	}
	id := []string{l["akash.network/lease.id.owner"], l["akash.network/lease.id.dseq"], l["akash.network/lease.id.gseq"],
		l["akash.network/lease.id.oseq"], l["akash.network/lease.id.provider"]}
	for i, v := range id {
		if v == "" {
			return false
		}
		if i >= 1 && i <= 3 {
			if _, err := strconv.ParseUint(v, 10, 64); err != nil {
				return false
			}
		}
	}
	sum := sha256.Sum224([]byte(strings.Join(id, "/")))
	return r.Namespace == strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))
}

// httpRouteSettings reads r's annotations; an unreadable value is an
// UnsupportedValue naming the annotation. AnnotationRetry is read on
// generated Akash routes only (IsGeneratedAkashRoute) and ignored on others.
func httpRouteSettings(r *gatewayv1.HTTPRoute) (routeSettings, *ruleError) {
	annotations := r.Annotations
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
	if v, ok := annotations[shardgatev1alpha1.AnnotationRetry]; ok && IsGeneratedAkashRoute(r) {
		var rt gatewayv1.HTTPRouteRetry
		dec := json.NewDecoder(bytes.NewReader([]byte(v)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rt); err != nil {
			return s, unsupported("annotation %s: %q is not a retry policy: %v", shardgatev1alpha1.AnnotationRetry, v, err)
		}
		if _, err := retry(&rt); err != nil {
			return s, unsupported("annotation %s: %s", shardgatev1alpha1.AnnotationRetry, err.msg)
		}
		s.retry = &rt
	}
	return s, nil
}

// ruleWithRetry is rule, or a copy of it with the annotation's retry
// policy when it has none of its own (the informer's object is never
// changed).
func (s routeSettings) ruleWithRetry(rule *gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRouteRule {
	if s.retry == nil || rule.Retry != nil {
		return rule
	}
	cp := *rule
	cp.Retry = s.retry
	return &cp
}

// apply sets the settings on a compiled rule's routes. They share one
// retry policy (a new one when it changes).
func (s routeSettings) apply(routes []ir.Route) {
	if s.maxRequestBodyBytes == 0 && !s.retryIdempotentOnly && s.idleTimeout == nil && !s.webSocket {
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
