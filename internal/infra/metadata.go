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
// Envoy pods: shardgate's Labels, with the Gateway's
// spec.infrastructure.labels over them, except those ReservedLabel
// refuses. So an infrastructure label may replace app.kubernetes.io/name
// (say with ingress-nginx, which Akash's per-lease NetworkPolicies admit)
// or app.kubernetes.io/managed-by, but never the gateway-name label nor
// anything under shardgate.io/, which select the pods.
func ObjectLabels(gw *gatewayv1.Gateway) map[string]string {
	out := Labels(gw.Name)
	if gw.Spec.Infrastructure != nil {
		for k, v := range gw.Spec.Infrastructure.Labels {
			if !ReservedLabel(string(k)) {
				out[string(k)] = string(v)
			}
		}
	}
	return out
}

// ReservedLabel says whether an infrastructure label key is kept from the
// provisioned objects: shardgate's own (shardgate.io/) and the Gateway
// API's gateway-name label, which names the Gateway the objects belong to
// (GEP-1762) and must not say another.
func ReservedLabel(key string) bool {
	return strings.HasPrefix(key, LabelPrefix) || key == LabelGateway
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
