package sharding

import (
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ListenerCovers reports whether gw has a listener that can carry every
// composed host x.<domain> of a shard, that is, an HTTP or HTTPS listener
// that allows HTTPRoutes and whose hostname is:
//   - unset or empty (any host);
//   - "*.<domain>";
//   - a wider wildcard "*.<suffix>" with domain ending in ".<suffix>":
//     Gateway API wildcards match any number of leading labels, so
//     "*.example.com" carries "web.shard-a.example.com".
//
// An exact listener hostname never covers a domain, and neither does
// "*.<domain>" cover the domain itself (only names under it). When this
// returns false the controller reports reason NoListenerForDomain: the
// shard cannot carry its LeaseHosts' hosts.
//
// Only hostnames, protocols and allowedRoutes.kinds are considered;
// allowedRoutes.namespaces depends on namespace labels and is left to route
// attachment.
func ListenerCovers(gw *gatewayv1.Gateway, domain string) bool {
	if gw == nil {
		return false
	}
	domain = strings.TrimSuffix(normalise(domain), ".")
	if domain == "" {
		return false
	}
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		if !carriesHTTPRoutes(l) {
			continue
		}
		if l.Hostname == nil || *l.Hostname == "" {
			return true
		}
		h := normalise(string(*l.Hostname))
		suffix, wildcard := strings.CutPrefix(h, "*.")
		if !wildcard {
			continue
		}
		if domain == suffix || strings.HasSuffix(domain, "."+suffix) {
			return true
		}
	}
	return false
}

func carriesHTTPRoutes(l *gatewayv1.Listener) bool {
	if l.Protocol != gatewayv1.HTTPProtocolType && l.Protocol != gatewayv1.HTTPSProtocolType {
		return false
	}
	if l.AllowedRoutes == nil || len(l.AllowedRoutes.Kinds) == 0 {
		// The default kinds for HTTP and HTTPS listeners include HTTPRoute.
		return true
	}
	for _, k := range l.AllowedRoutes.Kinds {
		group := gatewayv1.GroupName
		if k.Group != nil {
			group = string(*k.Group)
		}
		if group == gatewayv1.GroupName && k.Kind == "HTTPRoute" {
			return true
		}
	}
	return false
}
