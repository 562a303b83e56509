package akash

import (
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/leasehosts"
)

// HostRoute is the name of the route generated for ph: its normalised
// hostname, in its lease namespace.
func HostRoute(ph *akashv1.ProviderHost) types.NamespacedName {
	return types.NamespacedName{Namespace: HostLease(ph).Namespace(), Name: RouteName(normalised(ph.Spec.Hostname))}
}

// Claims turns the ProviderHosts of the provider's namespace into the
// claims the translator's ownership facts read (leasehosts.FactsInput's
// ProviderHosts), remembering each by UID: a ProviderHost whose
// resourceVersion and hint are unchanged keeps the very claim it had, so
// that the ownership tracker sees it unchanged at the cost of a lookup.
// The zero value is ready for use; a Claims is not safe for concurrent
// use.
type Claims struct {
	byUID map[types.UID]hostClaim
}

// hostClaim is a ProviderHost's claim: the LeaseHost-shaped claim (as
// AsLeaseHost), the resourceVersion it was made from and whether its
// generated route existed (the cold-start hint, as in the ProviderHost
// controller).
type hostClaim struct {
	resourceVersion string
	holding         bool
	lh              *shardgatev1alpha1.LeaseHost
}

// Of returns the claims of the valid ProviderHosts of namespace among phs
// (those being deleted make none), given the HTTPRoutes as stored: a
// ProviderHost whose generated route exists held its name. A ProviderHost
// without a resourceVersion (never stored) gets a new claim every time.
func (c *Claims) Of(namespace string, phs []*akashv1.ProviderHost, routes []*gatewayv1.HTTPRoute) []*shardgatev1alpha1.LeaseHost {
	byName := make(map[types.NamespacedName]*gatewayv1.HTTPRoute)
	for _, rt := range routes {
		if rt.Labels[LabelManaged] == "true" {
			byName[types.NamespacedName{Namespace: rt.Namespace, Name: rt.Name}] = rt
		}
	}
	next := make(map[types.UID]hostClaim, len(phs))
	out := make([]*shardgatev1alpha1.LeaseHost, 0, len(phs))
	for _, ph := range phs {
		if ph.Namespace != namespace || ph.DeletionTimestamp != nil || ValidateHost(ph) != nil {
			continue
		}
		holding := IsGeneratedRoute(byName[HostRoute(ph)], ph)
		hc, ok := c.byUID[ph.UID]
		if !ok || hc.holding != holding || hc.resourceVersion != ph.ResourceVersion || ph.ResourceVersion == "" {
			hc = hostClaim{resourceVersion: ph.ResourceVersion, holding: holding, lh: AsLeaseHost(ph, holding)}
		}
		next[ph.UID] = hc
		out = append(out, hc.lh)
	}
	c.byUID = next
	return out
}

// HostKind is the Kind of ProviderHosts in the hostname engine: the
// provider's own objects (an unmarked lease namespace does not refuse
// them), whose routes carry exactly the annotations of RouteAnnotations
// that their settings ask for.
var HostKind = leasehosts.Kind{Provider: true, RouteAnnotations: RouteAnnotations}
