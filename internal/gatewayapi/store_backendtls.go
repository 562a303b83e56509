/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// policyDeps is what one BackendTLSPolicy reads besides itself: the
// Services it selects and the ConfigMaps it names, all in its own
// namespace.
type policyDeps struct {
	services   []types.NamespacedName
	configMaps []types.NamespacedName
}

func backendTLSPolicyDependencies(p *gatewayv1.BackendTLSPolicy) policyDeps {
	var d policyDeps
	for _, t := range policyTargets(p) {
		d.services = appendUnique(d.services, t.svc)
	}
	for _, ref := range p.Spec.Validation.CACertificateRefs {
		if ref.Group == "" && ref.Kind == kindConfigMap {
			d.configMaps = appendUnique(d.configMaps, nn(p.Namespace, string(ref.Name)))
		}
	}
	return d
}

// policyChanged re-indexes policy k (p nil: deleted) and marks the Services
// it selected and selects: their clusters are built again, and the policy
// resolved again. Call with s.mu held.
func (s *Store) policyChanged(k types.NamespacedName, p *gatewayv1.BackendTLSPolicy) {
	if old, ok := s.policyDeps[k]; ok {
		for _, svc := range old.services {
			s.dirty.Clusters.add(svc)
		}
		for _, cm := range old.configMaps {
			removeFrom(s.policiesByCM, cm, k)
		}
		delete(s.policyDeps, k)
	}
	s.dirty.Policies.add(k)
	if p == nil {
		return
	}
	d := backendTLSPolicyDependencies(p)
	for _, svc := range d.services {
		s.dirty.Clusters.add(svc)
	}
	for _, cm := range d.configMaps {
		addTo(s.policiesByCM, cm, k)
	}
	s.policyDeps[k] = d
}

// configMapChanged marks the Gateways naming ConfigMap k as a frontend CA,
// the policies naming it, and the Services those select. It reports
// whether anything names k: most ConfigMaps are nobody's CA and mark
// nothing. Call with s.mu held.
func (s *Store) configMapChanged(k types.NamespacedName) bool {
	gws := s.gwsByConfigMap[k]
	s.markGateways(gws)
	policies := s.policiesByCM[k]
	for p := range policies.all() {
		s.dirty.Policies.add(p)
		for _, svc := range s.policyDeps[p].services {
			s.dirty.Clusters.add(svc)
		}
	}
	return gws.len() > 0 || policies.len() > 0
}
