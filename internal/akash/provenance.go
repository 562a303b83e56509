package akash

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// Provenance: which labelled objects shardgate wrote.
//
// Akash's labels (akash.network: "true" and the lease labels) are what the
// provider lists generated objects by, but any tenant can write them on an
// object in its own namespace, naming another tenant's lease. The API
// therefore reports an object only when its provenance holds: it lives in
// the lease namespace of the lease its labels name (computed from the lease
// ID, never read from the object), and a live ProviderHost (or
// ProviderLeasedIP) of that lease, in the provider's namespace, which
// tenants cannot write, asks for exactly that object. Field managers are
// not evidence: any client may name any field manager.

// GeneratedRoutes keeps the routes shardgate generated for a live, valid
// ProviderHost of hosts: a route of the lease namespace of its labels'
// lease, named after a ProviderHost's normalised hostname, with that
// ProviderHost's lease labels and hostname (IsGeneratedRoute).
func GeneratedRoutes(routes []gatewayv1.HTTPRoute, hosts []akashv1.ProviderHost) []gatewayv1.HTTPRoute {
	byRoute := map[types.NamespacedName][]*akashv1.ProviderHost{}
	for i := range hosts {
		ph := &hosts[i]
		if ph.DeletionTimestamp != nil || ValidateHost(ph) != nil {
			continue
		}
		nn := types.NamespacedName{Namespace: HostLease(ph).Namespace(), Name: RouteName(normalised(ph.Spec.Hostname))}
		byRoute[nn] = append(byRoute[nn], ph)
	}
	var out []gatewayv1.HTTPRoute
	for i := range routes {
		r := &routes[i]
		l, ok := LeaseFromLabels(r.Labels)
		if !ok || r.Namespace != l.Namespace() {
			continue
		}
		for _, ph := range byRoute[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}] {
			if IsGeneratedRoute(r, ph) {
				out = append(out, *r)
				break
			}
		}
	}
	return out
}

// GeneratedIPServices keeps the leased-IP Services shardgate wrote for a
// live, valid ProviderLeasedIP of leased: a Service of the lease namespace
// of its labels' lease, named as that ProviderLeasedIP's Service
// (IPServiceName), of that lease.
func GeneratedIPServices(services []corev1.Service, leased []akashv1.ProviderLeasedIP) []corev1.Service {
	type key struct {
		lease Lease
		name  string
	}
	wanted := map[key]bool{}
	for i := range leased {
		lip := &leased[i]
		if lip.DeletionTimestamp != nil {
			continue
		}
		l, proto, err := IPLease(lip)
		if err != nil {
			continue
		}
		wanted[key{l, IPServiceName(lip.Spec.ServiceName, lip.Spec.ExternalPort, string(proto))}] = true
	}
	var out []corev1.Service
	for i := range services {
		svc := &services[i]
		l, ok := LeaseFromLabels(svc.Labels)
		if !ok || svc.Namespace != l.Namespace() || !wanted[key{l, svc.Name}] {
			continue
		}
		out = append(out, *svc)
	}
	return out
}
