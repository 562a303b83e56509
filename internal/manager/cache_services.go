package manager

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	"github.com/shardgate/shardgate/internal/infra"
)

// The Service transform of cacheOptions, beside slimEndpointSlice's.

// serviceCachedWhole reports whether the cache keeps s whole: a Service
// shardgate provisions or manages, or one whose status or annotations
// something reads.
//   - Envoy Services (labelled shardgate.io/gateway, or, made by an earlier
//     version, app.kubernetes.io/managed-by: shardgate; controlled by their
//     Gateway): the infra controller compares them with what it applies,
//     and the Gateway's addresses come from their status.loadBalancer.
//   - Services controlled by a LeasedIP (or by anything of shardgate's or
//     the Gateway API's groups): the LeasedIP controller compares them,
//     indexes them by their metallb.io annotations, and reads their
//     addresses and IP families.
//   - Akash's leased-IP Services (akash.network/service-target: metal-lb):
//     the Akash IP endpoints render their ports, selector, annotations,
//     creation time and status.
//   - Every LoadBalancer Service: its status.loadBalancer is an address,
//     and they are few (each holds an address of a pool).
func serviceCachedWhole(s *corev1.Service) bool {
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		return true
	}
	if _, ok := s.Labels[infra.LabelOwnGateway]; ok {
		return true
	}
	if s.Labels[infra.LabelManagedBy] == infra.LabelManagedByValue || s.Labels[akash.LabelServiceTarget] == akash.ServiceTargetMetalLB {
		return true
	}
	for _, ref := range s.OwnerReferences {
		if g, _, _ := strings.Cut(ref.APIVersion, "/"); g == shardgatev1alpha1.GroupVersion.Group || g == gatewayv1.GroupName {
			return true
		}
	}
	return false
}

// slimService drops from a tenant's Service (one serviceCachedWhole does
// not keep whole) what nothing in shardgate reads of it. It keeps:
//   - metadata but annotations and generateName: name, namespace, uid,
//     resourceVersion (the translator's change tracking), labels (label
//     selectors of cached lists), owner references (whether a LeasedIP or
//     a Gateway controls an object of the name it provisions), timestamps
//     and finalizers;
//   - spec.ports whole (the translator: port, name, appProtocol; Akash
//     ProviderHosts and their API: port), spec.selector (the LeasedIP
//     controller copies its target Service's) and spec.type.
//
// Dropped: annotations, spec.clusterIP(s), externalIPs, externalName,
// sessionAffinity(Config), ipFamilies, ipFamilyPolicy, loadBalancer* and
// healthCheckNodePort, traffic policies and distribution,
// publishNotReadyAddresses, allocateLoadBalancerNodePorts, and status.
// A reader of any other field must be added here first.
func slimService(s *corev1.Service) {
	s.Annotations, s.GenerateName = nil, ""
	s.Spec = corev1.ServiceSpec{Type: s.Spec.Type, Ports: s.Spec.Ports, Selector: s.Spec.Selector}
	s.Status = corev1.ServiceStatus{}
}
