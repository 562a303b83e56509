/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// backend is a resolved (or unresolved) backendRef.
type backend struct {
	cluster string // "" when unresolved
	reason  string // route ResolvedRefs reason when unresolved
	msg     string
	proto   ir.ClusterProtocol
	ws      bool
	svc     *corev1.Service
	port    corev1.ServicePort
}

// resolveBackend resolves a backendRef of a route of kind rk in routeNS.
func (idx *Index) resolveBackend(rk *routeKind, routeNS string, ref gatewayv1.BackendObjectReference) backend {
	group, kind := "", kindService
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if group != "" || kind != kindService {
		return backend{reason: string(gatewayv1.RouteReasonInvalidKind),
			msg: fmt.Sprintf("backendRef %s: kind %s/%s is not supported", ref.Name, group, kind)}
	}
	ns := routeNS
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	if ns != routeNS && !idx.granted(groupGateway, rk.name, routeNS, "", kindService, ns, string(ref.Name)) {
		return backend{reason: string(gatewayv1.RouteReasonRefNotPermitted),
			msg: fmt.Sprintf("backendRef Service %s/%s is not permitted by any ReferenceGrant", ns, ref.Name)}
	}
	svc, ok := idx.services[nn(ns, string(ref.Name))]
	if !ok {
		return backend{reason: string(gatewayv1.RouteReasonBackendNotFound),
			msg: fmt.Sprintf("Service %s/%s not found", ns, ref.Name)}
	}
	if ref.Port == nil {
		return backend{reason: string(gatewayv1.RouteReasonBackendNotFound),
			msg: fmt.Sprintf("backendRef Service %s/%s: port is required", ns, ref.Name)}
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == *ref.Port {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil {
		return backend{reason: string(gatewayv1.RouteReasonBackendNotFound),
			msg: fmt.Sprintf("Service %s/%s has no port %d", ns, ref.Name, *ref.Port)}
	}
	b := backend{
		cluster: ns + "/" + string(ref.Name) + "/" + strconv.Itoa(int(sp.Port)),
		proto:   ir.ClusterTCP,
		svc:     svc,
		port:    *sp,
	}
	if rk.appProtocol {
		proto, ws, ok := appProtocol(sp.AppProtocol)
		if !ok {
			return backend{reason: string(gatewayv1.RouteReasonUnsupportedProtocol),
				msg: fmt.Sprintf("Service %s/%s port %d: appProtocol %q is not supported", ns, ref.Name, sp.Port, *sp.AppProtocol)}
		}
		b.proto, b.ws = proto, ws
		if rk.grpc {
			b.proto = ir.ClusterH2C
		}
	}
	return b
}

// appProtocol maps a Service port's appProtocol to how Envoy talks to it.
func appProtocol(p *string) (proto ir.ClusterProtocol, websocket, ok bool) {
	if p == nil {
		return ir.ClusterHTTP1, false, true
	}
	switch *p {
	case "", "http", "HTTP", "kubernetes.io/http":
		return ir.ClusterHTTP1, false, true
	case "kubernetes.io/h2c", "h2c", "grpc", "http2":
		return ir.ClusterH2C, false, true
	case "kubernetes.io/ws", "kubernetes.io/wss":
		return ir.ClusterHTTP1, true, true
	}
	return "", false, false
}

// addCluster records a resolved backend in a Gateway's cluster set. A
// Service port used over several protocols gets the most capable one: H2C
// over HTTP1 over TCP (a TCP proxy ignores HTTP settings).
func (idx *Index) addCluster(gw *gatewayv1.Gateway, clusters map[string]*ir.Cluster, b backend) {
	c, ok := clusters[b.cluster]
	if !ok {
		c = &ir.Cluster{Name: b.cluster, Protocol: b.proto, Service: b.servicePort()}
		idx.applyBackendTLS(gw, c, b)
		clusters[b.cluster] = c
	}
	if protoRank(b.proto) > protoRank(c.Protocol) {
		c.Protocol = b.proto
	}
	if b.ws {
		c.WebSocket = true
	}
}

func protoRank(p ir.ClusterProtocol) int {
	switch p {
	case ir.ClusterH2C:
		return 2
	case ir.ClusterHTTP1:
		return 1
	}
	return 0
}

// servicePort names the Service port b sends to, by the port's name: the
// xDS side finds its endpoints in the Service's EndpointSlices.
func (b backend) servicePort() ir.ServicePort {
	return ir.ServicePort{Namespace: b.svc.Namespace, Name: b.svc.Name, Port: b.port.Name}
}
