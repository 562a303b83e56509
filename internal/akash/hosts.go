package akash

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/leasehosts"
)

// HostLease is the lease a ProviderHost belongs to.
func HostLease(ph *akashv1.ProviderHost) Lease {
	s := ph.Spec
	return Lease{Owner: s.Owner, DSeq: s.Dseq, GSeq: s.Gseq, OSeq: s.Oseq, Provider: s.Provider}
}

// ErrInvalidProviderHost is wrapped by every ValidateHost error.
var ErrInvalidProviderHost = errors.New("invalid ProviderHost")

// ValidateHost says what makes ph unusable (nil when nothing does): an empty
// field, an owner or provider that is not an Akash account address (the
// provider's hostname operator ignores such a ProviderHost too), a port
// out of range. Such a ProviderHost claims no name and gets no route.
func ValidateHost(ph *akashv1.ProviderHost) error {
	s := ph.Spec
	switch {
	case s.Hostname == "":
		return fmt.Errorf("%w: spec.hostname is empty", ErrInvalidProviderHost)
	case s.Owner == "":
		return fmt.Errorf("%w: spec.owner is empty", ErrInvalidProviderHost)
	case s.Provider == "":
		return fmt.Errorf("%w: spec.provider is empty", ErrInvalidProviderHost)
	case ValidateAddress(s.Owner) != nil:
		return fmt.Errorf("%w: spec.owner: %w", ErrInvalidProviderHost, ValidateAddress(s.Owner))
	case ValidateAddress(s.Provider) != nil:
		return fmt.Errorf("%w: spec.provider: %w", ErrInvalidProviderHost, ValidateAddress(s.Provider))
	case s.ServiceName == "":
		return fmt.Errorf("%w: spec.service_name is empty", ErrInvalidProviderHost)
	case s.ExternalPort == 0 || s.ExternalPort > 65535:
		return fmt.Errorf("%w: spec.external_port %d is not a port (1-65535)", ErrInvalidProviderHost, s.ExternalPort)
	}
	return nil
}

// RouteName is the name of the route generated for host (normalised): the
// hostname itself, as Akash's hostname operator names it.
func RouteName(host string) string { return host }

// AsLeaseHost is the claim ph makes, in the shape of a LeaseHost, so that it
// goes through exactly the planning, shard selection and hostname engine a
// LeaseHost goes through. It lives in the lease namespace, is named after
// the (normalised) hostname, like its route, and keeps ph's UID, creation time and labels (shards'
// leaseSelectors select ProviderHosts by their labels). holding is the
// cold-start hint: the route generated for the name exists.
func AsLeaseHost(ph *akashv1.ProviderHost, holding bool) *shardgatev1alpha1.LeaseHost {
	l := HostLease(ph)
	lh := &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{
			Name:              RouteName(normalised(ph.Spec.Hostname)),
			Namespace:         l.Namespace(),
			UID:               ph.UID,
			CreationTimestamp: ph.CreationTimestamp,
			Labels:            ph.Labels,
		},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: l.Owner, DSeq: l.DSeq, GSeq: l.GSeq, OSeq: l.OSeq, Provider: l.Provider},
			Hostname: ph.Spec.Hostname,
			Service:  shardgatev1alpha1.ServiceRef{Name: ph.Spec.ServiceName, Port: int32(ph.Spec.ExternalPort)},
		},
	}
	if holding {
		if h, err := hostnames.Normalise(ph.Spec.Hostname); err == nil {
			lh.Status.ReservedHosts = []string{h}
		}
	}
	return lh
}

// RouteFor is the HTTPRoute ph must have, or nil when it holds no name: the
// shape Akash's hostname operator writes in Gateway API mode. It is named
// after the (normalised) hostname and lives in the lease namespace, with
// the label akash.network: "true" and the lease labels, and one rule,
// PathPrefix / to the Service service_name on port external_port. parentRefs
// are the shards on which the name is held. opts adds the rule's retry
// policy, and the annotations for WebSocket upgrades, the idle timeout,
// the request body limit and idempotent-only retries (RouteOptions); the
// rule has no timeouts, so no cap applies to a whole response. It carries no owner reference: the
// ProviderHost lives in another namespace, and the provider's own recovery
// code finds the route by its labels.
func RouteFor(ph *akashv1.ProviderHost, p leasehosts.Plan, decisions map[string]hostnames.Decision, opts RouteOptions) *gatewayv1.HTTPRoute {
	lh := AsLeaseHost(ph, false)
	r := leasehosts.RouteFor(lh, p, decisions)
	if r == nil {
		return nil
	}
	host := string(r.Spec.Hostnames[0])
	r.Name = RouteName(host)
	r.OwnerReferences = nil
	r.Labels = HostLease(ph).Labels()
	r.Labels[LabelManaged] = "true"
	r.Annotations = opts.Annotations()
	r.Spec.Rules[0].Retry = opts.Retry()
	return r
}

func normalised(h string) string {
	if n, err := hostnames.Normalise(h); err == nil {
		return n
	}
	return h
}

// HeldHost is the normalised name ph holds according to decisions, or "".
func HeldHost(p leasehosts.Plan, decisions map[string]hostnames.Decision) string {
	held := leasehosts.Reserved(p, decisions)
	if len(held) == 0 {
		return ""
	}
	return held[0]
}

// IsGeneratedRoute says whether r has the labels of a route generated for
// ph: akash.network: "true" and ph's lease labels. Restart reads this as the
// record that ph held the name.
func IsGeneratedRoute(r *gatewayv1.HTTPRoute, ph *akashv1.ProviderHost) bool {
	if r == nil || r.Labels[LabelManaged] != "true" {
		return false
	}
	l, ok := LeaseFromLabels(r.Labels)
	if !ok || l != HostLease(ph) {
		return false
	}
	return slices.ContainsFunc(r.Spec.Hostnames, func(h gatewayv1.Hostname) bool {
		n, err := hostnames.Normalise(ph.Spec.Hostname)
		return err == nil && string(h) == n
	})
}
