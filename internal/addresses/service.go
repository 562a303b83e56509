package addresses

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/leasehosts"
)

// Protocol is lip's protocol as a Service port protocol (TCP when unset).
func Protocol(lip *shardgatev1alpha1.LeasedIP) corev1.Protocol {
	if lip.Spec.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return corev1.Protocol(strings.ToUpper(lip.Spec.Protocol))
}

// DesiredService is the LoadBalancer Service of lip, in lip's namespace:
//   - named LeasedIPServiceName(lip);
//   - one port, externalPort → port, with the protocol;
//   - the selector copied from target (the Service spec.service names);
//   - annotations metallb.io/allow-shared-ip: <sharing key>, and
//     metallb.io/address-pool: <pool> when spec.pool is set;
//   - metallb.io/loadBalancerIPs: <pin> when pin is not empty (see Pin);
//   - the lease labels and lip as its controller.
//
// It carries its TypeMeta, for server-side apply.
func DesiredService(lip *shardgatev1alpha1.LeasedIP, target *corev1.Service, pin string) *corev1.Service {
	annotations := map[string]string{AnnotationAllowSharedIP: LeasedIPSharingKey(lip)}
	if lip.Spec.Pool != "" {
		annotations[AnnotationAddressPool] = lip.Spec.Pool
	}
	if pin != "" {
		annotations[AnnotationLoadBalancerIPs] = pin
	}
	isController, block := true, true
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        LeasedIPServiceName(lip),
			Namespace:   lip.Namespace,
			Labels:      leasehosts.LeaseLabels(lip.Spec.Lease),
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         shardgatev1alpha1.GroupVersion.String(),
				Kind:               "LeasedIP",
				Name:               lip.Name,
				UID:                lip.UID,
				Controller:         &isController,
				BlockOwnerDeletion: &block,
			}},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: maps.Clone(target.Spec.Selector),
			Ports: []corev1.ServicePort{{
				Protocol:   Protocol(lip),
				Port:       lip.Spec.ExternalPort,
				TargetPort: intstr.FromInt32(lip.Spec.Port),
			}},
		},
	}
}

// ServiceUpToDate reports whether existing already has everything desired
// sets, so that applying it would change nothing: type, the one port,
// selector, our annotations (the pin exactly, present or absent), labels
// and the controller reference.
func ServiceUpToDate(existing, desired *corev1.Service) bool {
	if existing.Spec.Type != desired.Spec.Type || len(existing.Spec.Ports) != 1 {
		return false
	}
	e, d := existing.Spec.Ports[0], desired.Spec.Ports[0]
	if e.Port != d.Port || e.Protocol != d.Protocol || e.TargetPort != d.TargetPort {
		return false
	}
	if !maps.Equal(existing.Spec.Selector, desired.Spec.Selector) {
		return false
	}
	for _, k := range []string{AnnotationAllowSharedIP, AnnotationAddressPool, AnnotationLoadBalancerIPs} {
		ev, eok := existing.Annotations[k]
		dv, dok := desired.Annotations[k]
		if eok != dok || ev != dv {
			return false
		}
	}
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	ref := metav1.GetControllerOf(existing)
	return ref != nil && ref.UID == desired.OwnerReferences[0].UID
}

// ControlledBy reports whether o's controller is the LeasedIP with uid.
func ControlledBy(o metav1.Object, uid string) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && string(ref.UID) == uid && ref.Kind == "LeasedIP" && strings.HasPrefix(ref.APIVersion, shardgatev1alpha1.GroupVersion.Group+"/")
}

// LeasedIPController returns the name of the LeasedIP controlling o, or "".
func LeasedIPController(o metav1.Object) string {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "LeasedIP" || !strings.HasPrefix(ref.APIVersion, shardgatev1alpha1.GroupVersion.Group+"/") {
		return ""
	}
	return ref.Name
}

// IngressIP is the first address in svc's status.loadBalancer.ingress, or
// "".
func IngressIP(svc *corev1.Service) string {
	if svc == nil {
		return ""
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
	}
	return ""
}

// Pin chooses the metallb.io/loadBalancerIPs value of lip's Service.
//
// MetalLB does not prefer an address already carrying a sharing key: it
// takes the first address of the pool that is free or shareable, and with
// several pools it tries them in map order. Two ports of one endpoint would
// then get different IPs as soon as an address earlier in the pool is free.
// So a Service that has no address yet asks for the address its siblings
// (other LeasedIP Services with the same sharing key, in namespaces of the
// same owner: the caller passes only those) already have. When the siblings disagree the address most of them use
// wins, then the lowest. With spec.pool set only sibling addresses inside
// that pool count, since an address from another pool cannot be had: pool
// is spec.pool's IPAddressPool and its spec.addresses decide; when it is
// nil, siblings whose metallb.io/ip-allocated-from-pool (written by MetalLB)
// or metallb.io/address-pool names the pool.
//
// A Service that has an address keeps whatever pin it has (current is its
// present annotation value), so nothing changes once assigned: not on
// restart, not when a sibling goes away. Without a sibling address there is
// no pin, and MetalLB chooses.
func Pin(lip *shardgatev1alpha1.LeasedIP, pool *metallbv1beta1.IPAddressPool, own *corev1.Service, siblings []corev1.Service) string {
	if own != nil && IngressIP(own) != "" {
		return own.Annotations[AnnotationLoadBalancerIPs]
	}
	key := LeasedIPSharingKey(lip)
	counts := map[string]int{}
	for i := range siblings {
		s := &siblings[i]
		if own != nil && s.UID == own.UID {
			continue
		}
		if s.Namespace == lip.Namespace && s.Name == LeasedIPServiceName(lip) {
			continue
		}
		if s.Annotations[AnnotationAllowSharedIP] != key || LeasedIPController(s) == "" || s.DeletionTimestamp != nil {
			continue
		}
		ip := IngressIP(s)
		if ip == "" {
			continue
		}
		if lip.Spec.Pool != "" {
			if addr, err := netip.ParseAddr(ip); pool != nil && (err != nil || !PoolContains(pool, addr)) {
				continue
			}
			if pool == nil && s.Annotations[AnnotationIPAllocatedFromPool] != lip.Spec.Pool && s.Annotations[AnnotationAddressPool] != lip.Spec.Pool {
				continue
			}
		}
		counts[ip]++
	}
	if len(counts) == 0 {
		return ""
	}
	ips := slices.Collect(maps.Keys(counts))
	slices.SortFunc(ips, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		pa, ea := netip.ParseAddr(a)
		pb, eb := netip.ParseAddr(b)
		if ea == nil && eb == nil {
			return pa.Compare(pb)
		}
		return strings.Compare(a, b)
	})
	return ips[0]
}
