package akash

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// AnnotationAllowSharedIP is the MetalLB sharing annotation Akash's IP
// operator writes and reads back. MetalLB v0.15 still honours this
// deprecated prefix: it reads metallb.io/allow-shared-ip first and falls
// back to metallb.universe.tf/allow-shared-ip (controller/service.go), so
// the Service keeps Akash's exact shape.
const AnnotationAllowSharedIP = "metallb.universe.tf/allow-shared-ip"

// AnnotationAddressPool is the MetalLB pool annotation Akash's IP operator
// writes on leased-IP Services when its pool is not DefaultMetalLBPool
// (MetalLB v0.15 reads it after metallb.io/address-pool).
const AnnotationAddressPool = "metallb.universe.tf/address-pool"

// DefaultMetalLBPool is the pool Akash's IP operator assigns leased IPs
// from by default. Services of that pool carry no pool annotation: MetalLB
// picks any auto-assigning pool for them.
const DefaultMetalLBPool = "default"

// ErrInvalidLeasedIP is wrapped by every IPLease error.
var ErrInvalidLeasedIP = errors.New("invalid ProviderLeasedIP")

// IPLease is the lease of lip, validated: the owner and provider are Akash
// account addresses (bech32, as the provider's IP operator requires), the
// dseq is a decimal uint64, the protocol TCP or UDP (any case; returned upper-case), the ports 1-65535,
// the Service name a DNS label, and the sharing key the owner's own
// ("<owner>-ip-<endpoint>"), so that an address is never shared across
// owners. An owner containing "-ip-" is refused: its keys would be
// ambiguous with another owner's.
func IPLease(lip *akashv1.ProviderLeasedIP) (Lease, corev1.Protocol, error) {
	s := lip.Spec
	id := s.LeaseID
	dseq, err := strconv.ParseUint(id.DSeq, 10, 64)
	if err != nil {
		return Lease{}, "", fmt.Errorf("%w: spec.lease_id.dseq %q is not an unsigned integer", ErrInvalidLeasedIP, id.DSeq)
	}
	l := Lease{Owner: id.Owner, DSeq: dseq, GSeq: id.GSeq, OSeq: id.OSeq, Provider: id.Provider}
	var proto corev1.Protocol
	switch strings.ToUpper(s.Protocol) {
	case "TCP":
		proto = corev1.ProtocolTCP
	case "UDP":
		proto = corev1.ProtocolUDP
	default:
		return Lease{}, "", fmt.Errorf("%w: spec.protocol %q is not TCP or UDP", ErrInvalidLeasedIP, s.Protocol)
	}
	switch {
	case l.Owner == "" || l.Provider == "":
		return Lease{}, "", fmt.Errorf("%w: spec.lease_id needs an owner and a provider", ErrInvalidLeasedIP)
	case ValidateAddress(l.Owner) != nil:
		return Lease{}, "", fmt.Errorf("%w: spec.lease_id.owner: %w", ErrInvalidLeasedIP, ValidateAddress(l.Owner))
	case ValidateAddress(l.Provider) != nil:
		return Lease{}, "", fmt.Errorf("%w: spec.lease_id.provider: %w", ErrInvalidLeasedIP, ValidateAddress(l.Provider))
	case strings.Contains(l.Owner, "-ip-"):
		return Lease{}, "", fmt.Errorf("%w: an owner containing \"-ip-\" makes sharing keys ambiguous", ErrInvalidLeasedIP)
	case s.Port == 0 || s.Port > 65535 || s.ExternalPort == 0 || s.ExternalPort > 65535:
		return Lease{}, "", fmt.Errorf("%w: spec.port %d and spec.external_port %d must be ports (1-65535)", ErrInvalidLeasedIP, s.Port, s.ExternalPort)
	case !strings.HasPrefix(s.SharingKey, l.Owner+"-ip-") || len(s.SharingKey) == len(l.Owner)+len("-ip-"):
		return Lease{}, "", fmt.Errorf("%w: spec.sharing_key must be the owner's own (%s-ip-<endpoint>): an address is never shared across owners", ErrInvalidLeasedIP, l.Owner)
	}
	name := IPServiceName(s.ServiceName, s.ExternalPort, string(proto))
	if errs := validation.IsDNS1035Label(name); s.ServiceName == "" || len(errs) > 0 {
		return Lease{}, "", fmt.Errorf("%w: spec.service_name %q does not make a valid Service name %q: %s", ErrInvalidLeasedIP, s.ServiceName, name, strings.Join(errs, "; "))
	}
	return l, proto, nil
}

// IPServiceName is the LoadBalancer Service's name, as Akash's IP operator
// names it: <service_name>-ip-<external_port>-<protocol>, lowercased.
func IPServiceName(service string, externalPort uint32, protocol string) string {
	return strings.ToLower(fmt.Sprintf("%s-ip-%d-%s", service, externalPort, protocol))
}

// IPServiceFor is the LoadBalancer Service of lip, in the lease namespace,
// exactly as Akash's IP operator writes it (the provider lists these by
// label to report lease IPs and usage): the lease labels plus
// akash.network: "true" and akash.network/service-target: metal-lb; one
// port named like the Service, external_port to port; the selector of the
// lease's workload pods of service_name; the MetalLB sharing annotation,
// and the pool annotation naming pool unless pool is DefaultMetalLBPool
// (or ""). It carries no owner reference: the ProviderLeasedIP lives in
// another namespace. lip must have passed IPLease.
func IPServiceFor(lip *akashv1.ProviderLeasedIP, l Lease, proto corev1.Protocol, pool string) *corev1.Service {
	s := lip.Spec
	name := IPServiceName(s.ServiceName, s.ExternalPort, string(proto))
	labels := l.Labels()
	labels[LabelManaged] = "true"
	labels[LabelServiceTarget] = ServiceTargetMetalLB
	annotations := map[string]string{AnnotationAllowSharedIP: s.SharingKey}
	if pool != "" && pool != DefaultMetalLBPool {
		annotations[AnnotationAddressPool] = pool
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   l.Namespace(),
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{
				Name:       name,
				Protocol:   proto,
				Port:       int32(s.ExternalPort),
				TargetPort: intstr.FromInt32(int32(s.Port)),
			}},
			Selector: map[string]string{
				LabelManaged:         "true",
				LabelManifestService: s.ServiceName,
			},
		},
	}
}
