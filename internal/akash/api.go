package akash

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/addresses"
)

// The bodies of the Akash operators' HTTP API. Field names and encodings
// are those of the provider's Go types, which its clients decode: Akash's
// market LeaseID (lowercase keys, dseq a number, bseq always present), the
// hostname operator's managed-hostnames and ignore-list entries, the IP
// operator's AddressUsage, state entries and LeaseIPStatus (Go field names
// as keys), and the version information both operators serve.

// LeaseIDJSON is a lease ID as Akash's market LeaseID encodes it. BSeq (the
// bid sequence) is always written; the provider's operators leave it 0, as
// the lease's objects (ProviderHost, ProviderLeasedIP, labels) do not carry
// it.
type LeaseIDJSON struct {
	Owner    string `json:"owner"`
	DSeq     uint64 `json:"dseq"`
	GSeq     uint32 `json:"gseq"`
	OSeq     uint32 `json:"oseq"`
	Provider string `json:"provider"`
	BSeq     uint32 `json:"bseq"`
}

// JSON is l as a LeaseIDJSON.
func (l Lease) JSON() LeaseIDJSON {
	return LeaseIDJSON{Owner: l.Owner, DSeq: l.DSeq, GSeq: l.GSeq, OSeq: l.OSeq, Provider: l.Provider}
}

// ManagedHostname is one entry of GET /managed-hostnames (keyed by hostname).
type ManagedHostname struct {
	LeaseID      LeaseIDJSON
	Namespace    string
	ExternalPort uint32
	ServiceName  string
	LastUpdate   string
}

// IgnoreEntry is one entry of GET /ignore-list (keyed by lease ID string):
// a lease with a ProviderHost that was refused for bad input.
type IgnoreEntry struct {
	Hostnames     []string `json:"hostnames"`
	LastError     string   `json:"last-error"`
	LastErrorType string   `json:"last-error-type"`
	FailedAt      string   `json:"failed-at"`
	FailureCount  uint     `json:"failure-count"`
	Namespace     string   `json:"namespace"`
}

// AddressUsage is GET /usage: Available is the size of the leased-IP pool
// (as MetalLB's addresses_total metric of that pool, which Akash's IP
// operator reads, counts it) and InUse the addresses assigned from it.
type AddressUsage struct {
	Available uint
	InUse     uint
}

// IPState is one entry of GET /state (grouped by lease ID string).
type IPState struct {
	LastChangeTime string      `json:"last-event-time,omitempty"`
	LeaseID        LeaseIDJSON `json:"lease-id"`
	Namespace      string      `json:"namespace"`
	Port           uint32      `json:"port"`
	ExternalPort   uint32      `json:"external-port"`
	ServiceName    string      `json:"service-name"`
	SharingKey     string      `json:"sharing-key"`
}

// LeaseIPStatus is one entry of GET /ip-lease-status/{owner}/{dseq}/{gseq}/{oseq}.
type LeaseIPStatus struct {
	Port         uint32
	ExternalPort uint32
	ServiceName  string
	IP           string
	Protocol     string
}

// ErrorResponse is the IP operator's error body.
type ErrorResponse struct {
	Error string
	Code  int
}

// ManagedHostnames renders the generated routes (akash.network: "true",
// with lease labels, one hostname and one backend) as the hostname
// operator's map. Other routes are skipped.
func ManagedHostnames(routes []gatewayv1.HTTPRoute) map[string]ManagedHostname {
	out := map[string]ManagedHostname{}
	for i := range routes {
		r := &routes[i]
		l, ok := LeaseFromLabels(r.Labels)
		if !ok || r.Labels[LabelManaged] != "true" || len(r.Spec.Hostnames) == 0 || len(r.Spec.Rules) == 0 ||
			len(r.Spec.Rules[0].BackendRefs) == 0 || r.Spec.Rules[0].BackendRefs[0].Port == nil {
			continue
		}
		b := r.Spec.Rules[0].BackendRefs[0]
		out[string(r.Spec.Hostnames[0])] = ManagedHostname{
			LeaseID:      l.JSON(),
			Namespace:    l.Namespace(),
			ExternalPort: uint32(*b.Port),
			ServiceName:  string(b.Name),
			LastUpdate:   r.CreationTimestamp.Time.String(),
		}
	}
	return out
}

// Refused is a ProviderHost refused for bad input, for the ignore list.
type Refused struct {
	Lease    Lease
	Hostname string
	Err      error
	At       time.Time
}

// IgnoreList renders refused ProviderHosts, grouped by lease.
func IgnoreList(refused []Refused) map[string]IgnoreEntry {
	out := map[string]IgnoreEntry{}
	for _, r := range refused {
		k := r.Lease.String()
		e, ok := out[k]
		if !ok {
			e = IgnoreEntry{Namespace: r.Lease.Namespace(), LastErrorType: fmt.Sprintf("%T", r.Err)}
		}
		e.Hostnames = append(e.Hostnames, r.Hostname)
		slices.Sort(e.Hostnames)
		e.FailureCount++
		if at := r.At.UTC().String(); at >= e.FailedAt {
			e.FailedAt, e.LastError, e.LastErrorType = at, r.Err.Error(), fmt.Sprintf("%T", r.Err)
		}
		out[k] = e
	}
	return out
}

// Usage is the usage of the leased-IP pool named pool ("" is
// DefaultMetalLBPool), from its IPAddressPool status: InUse is what is
// assigned from it, Available its size (assigned plus free). Other pools,
// the shards' own among them, do not count. Like Akash's IP operator, a
// pool that does not exist reports zero for both.
func Usage(pools []metallbv1beta1.IPAddressPool, pool string) AddressUsage {
	if pool == "" {
		pool = DefaultMetalLBPool
	}
	var u AddressUsage
	for _, p := range addresses.Usage(pools) {
		if p.Name != pool {
			continue
		}
		u.InUse = uint(max(p.Assigned, 0))
		u.Available = uint(max(p.Assigned, 0) + max(p.Available, 0))
		break
	}
	return u
}

// isIPService: svc is a leased-IP Service as Akash lists them.
func isIPService(svc *corev1.Service) bool {
	return svc.Labels[LabelManaged] == "true" && svc.Labels[LabelServiceTarget] == ServiceTargetMetalLB && len(svc.Spec.Ports) == 1
}

// State renders the leased-IP Services, grouped by lease ID string.
func State(services []corev1.Service) map[string][]IPState {
	out := map[string][]IPState{}
	for i := range services {
		svc := &services[i]
		l, ok := LeaseFromLabels(svc.Labels)
		if !ok || !isIPService(svc) {
			continue
		}
		p := svc.Spec.Ports[0]
		out[l.String()] = append(out[l.String()], IPState{
			LastChangeTime: svc.CreationTimestamp.UTC().String(),
			LeaseID:        l.JSON(),
			Namespace:      l.Namespace(),
			Port:           uint32(p.TargetPort.IntValue()),
			ExternalPort:   uint32(p.Port),
			ServiceName:    svc.Spec.Selector[LabelManifestService],
			SharingKey:     svc.Annotations[AnnotationAllowSharedIP],
		})
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b IPState) int {
			return strings.Compare(fmt.Sprintf("%s/%05d", a.ServiceName, a.ExternalPort), fmt.Sprintf("%s/%05d", b.ServiceName, b.ExternalPort))
		})
	}
	return out
}

// ErrInvalidLeaseService is wrapped by LeaseIPStatuses' errors; its text is
// that of the IP operator's, which the provider shows.
var ErrInvalidLeaseService = errors.New("metal lb error lease service error")

// LeaseIPStatuses renders the leased-IP Services of one lease. Like Akash's
// IP operator, a Service without exactly one address is an error (the
// address is not assigned yet).
func LeaseIPStatuses(services []corev1.Service) ([]LeaseIPStatus, error) {
	var out []LeaseIPStatus
	for i := range services {
		svc := &services[i]
		if !isIPService(svc) {
			continue
		}
		if n := len(svc.Status.LoadBalancer.Ingress); n != 1 {
			return nil, fmt.Errorf("%w: service %q has %d load balancers and is invalid", ErrInvalidLeaseService, svc.Name, n)
		}
		p := svc.Spec.Ports[0]
		out = append(out, LeaseIPStatus{
			Port:         uint32(p.TargetPort.IntValue()),
			ExternalPort: uint32(p.Port),
			ServiceName:  svc.Spec.Selector[LabelManifestService],
			IP:           svc.Status.LoadBalancer.Ingress[0].IP,
			Protocol:     string(p.Protocol),
		})
	}
	slices.SortFunc(out, func(a, b LeaseIPStatus) int {
		return strings.Compare(fmt.Sprintf("%s/%05d/%s", a.ServiceName, a.ExternalPort, a.Protocol), fmt.Sprintf("%s/%05d/%s", b.ServiceName, b.ExternalPort, b.Protocol))
	})
	return out, nil
}
