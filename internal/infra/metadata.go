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
// without those under a reserved prefix; nil when there are none. Build
// has already narrowed them to the allow-list (AllowedAnnotation). The
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

// AllowedAnnotation says whether a Gateway's spec.infrastructure
// annotation key is copied onto its Envoy objects: an allow-list, not
// everything but a deny-list, because the Service's annotations are read by
// whatever load-balancer controller the cluster runs, and many of them pin
// addresses or pools (MetalLB's, Cilium LB-IPAM's "lbipam.cilium.io/ips",
// kube-vip's "kube-vip.io/loadBalancerIPs", the clouds'
// "service.beta.kubernetes.io/..."). A key without a prefix is copied, and
// so is one under a prefix in allowed (the config's
// envoy.annotationPrefixes); a key under a reserved prefix never is.
// Gateways in tenant namespaces are never provisioned at all.
func AllowedAnnotation(key string, allowed []string) bool {
	if ReservedAnnotation(key) {
		return false
	}
	if !strings.Contains(key, "/") {
		return true
	}
	for _, p := range allowed {
		if p != "" && strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// allowedInfrastructure returns gw, or a copy of it whose
// spec.infrastructure.annotations keep only the AllowedAnnotation keys.
// Build narrows the Gateway with it before anything reads the annotations.
func allowedInfrastructure(gw *gatewayv1.Gateway, allowed []string) *gatewayv1.Gateway {
	if gw.Spec.Infrastructure == nil || len(gw.Spec.Infrastructure.Annotations) == 0 {
		return gw
	}
	var keep map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue
	narrowed := false
	for k, v := range gw.Spec.Infrastructure.Annotations {
		if !AllowedAnnotation(string(k), allowed) {
			narrowed = true
			continue
		}
		if keep == nil {
			keep = map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{}
		}
		keep[k] = v
	}
	if !narrowed {
		return gw
	}
	out := *gw
	infra := *gw.Spec.Infrastructure
	infra.Annotations = keep
	out.Spec.Infrastructure = &infra
	return &out
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
