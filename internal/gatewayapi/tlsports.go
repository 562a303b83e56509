/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// compatibleProtocols says whether two listeners on one port can be
// served together: the same protocol, or TLS listeners of both modes
// (Terminate and Passthrough: TLSRouteModeMixed), which share one Envoy
// listener whose filter chains are selected by SNI.
func compatibleProtocols(a, b ir.Protocol) bool {
	return a == b || tlsMode(a) && tlsMode(b)
}

func tlsMode(p ir.Protocol) bool {
	return p == ir.ProtocolTLSTerminate || p == ir.ProtocolTLSPassthrough
}

// portProtocol is the IR protocol of a port whose listeners passed
// markConflicts: their shared protocol, or ProtocolTLSMixed when TLS
// listeners of both modes share it.
func portProtocol(ls []*listenerState) ir.Protocol {
	p := ls[0].proto
	for _, l := range ls[1:] {
		if l.proto != p {
			return ir.ProtocolTLSMixed
		}
	}
	return p
}

// tlsRoutes builds the SNI table of a TLS port. One SNI is served by one
// route: the oldest (then alphabetical) wins. A route terminates TLS (it
// carries its listener's certificates) when the listener that owns its SNI
// is a Terminate listener; on a mixed port the others pass through.
func tlsRoutes(port []*listenerState, emitted map[RouteKey]bool) []ir.TLSRoute {
	type cand struct {
		r       ir.TLSRoute
		created metav1.Time
		key     RouteKey
	}
	var cands []cand
	for _, l := range port {
		for k, a := range l.attached {
			for _, h := range a.hostname {
				if owner(port, h) != l {
					continue
				}
				tr := ir.TLSRoute{
					Name:   k.NN.Namespace + "/" + k.NN.Name + "/" + domain(h),
					SNI:    h,
					Source: ir.Source{Kind: k.Kind, Namespace: k.NN.Namespace, Name: k.NN.Name},
				}
				if l.proto == ir.ProtocolTLSTerminate {
					tr.Certificates = l.certs
				}
				for _, rule := range a.route.rules {
					tr.Backends = append(tr.Backends, rule.tlsBackends...)
					tr.InvalidWeight += rule.tlsInvalidWeight
				}
				cands = append(cands, cand{r: tr, created: a.route.created, key: k})
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.r.SNI != b.r.SNI {
			return hostnameMoreSpecific(a.r.SNI, b.r.SNI)
		}
		if !a.created.Equal(&b.created) {
			return a.created.Before(&b.created)
		}
		return routeKeyLess(a.key, b.key)
	})
	var out []ir.TLSRoute
	for i, c := range cands {
		if i > 0 && cands[i-1].r.SNI == c.r.SNI {
			continue
		}
		emitted[c.key] = true
		out = append(out, c.r)
	}
	return out
}
