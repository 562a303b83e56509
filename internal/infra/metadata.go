package infra

import (
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// reservedAnnotationPrefixes are annotation key prefixes shardgate
// decides alone: its own (desired hash, pod-rolling hashes) and MetalLB's,
// whose address pool and IPs come from GatewayParameters and the
// Gateway's spec.addresses. A spec.infrastructure annotation under one of
// them is not propagated.
var reservedAnnotationPrefixes = []string{"shardgate.io/", "metallb.io/", "metallb.universe.tf/"}

// ObjectLabels are the labels of every provisioned object and of the
// Envoy pods: the Gateway's spec.infrastructure.labels, then Labels over
// them, so the selector and managed-by labels always keep shardgate's
// values.
func ObjectLabels(gw *gatewayv1.Gateway) map[string]string {
	out := map[string]string{}
	if gw.Spec.Infrastructure != nil {
		for k, v := range gw.Spec.Infrastructure.Labels {
			out[string(k)] = string(v)
		}
	}
	for k, v := range Labels(gw.Name) {
		out[k] = v
	}
	return out
}

// InfrastructureAnnotations are the Gateway's spec.infrastructure
// annotations that every provisioned object and the Envoy pods carry,
// without those under a reserved prefix; nil when there are none. The
// builders set their own annotations over them.
func InfrastructureAnnotations(gw *gatewayv1.Gateway) map[string]string {
	if gw.Spec.Infrastructure == nil || len(gw.Spec.Infrastructure.Annotations) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range gw.Spec.Infrastructure.Annotations {
		if ReservedAnnotation(string(k)) {
			continue
		}
		out[string(k)] = string(v)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ReservedAnnotation says whether key is under a prefix shardgate keeps to
// itself (see reservedAnnotationPrefixes).
func ReservedAnnotation(key string) bool {
	for _, p := range reservedAnnotationPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
