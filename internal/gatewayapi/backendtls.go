/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

const (
	kindBackendTLSPolicy = "BackendTLSPolicy"
	kindConfigMap        = "ConfigMap"
)

// policyTarget is what a BackendTLSPolicy targetRef selects: a Service of
// the policy's own namespace, and one of its ports by name ("" for all).
type policyTarget struct {
	svc     types.NamespacedName
	section string
}

// resolvedPolicy is one BackendTLSPolicy with its validation resolved.
type resolvedPolicy struct {
	policy  *gatewayv1.BackendTLSPolicy
	targets []policyTarget
	// tls is what the policy asks for; Invalid when it cannot be honoured
	// (then connections must fail rather than go out in plaintext).
	tls *ir.UpstreamTLS
	// acceptReason is "" when the policy is valid (Accepted=True,
	// unless it loses a conflict).
	acceptReason, acceptMsg string
	// refsReason is "" when every reference resolves.
	refsReason, refsMsg string
}

// backendTLS is the resolution of every BackendTLSPolicy of a snapshot:
// which policy applies to each target (the oldest of those selecting it).
type backendTLS struct {
	policies []*resolvedPolicy // by precedence: oldest first, then namespace/name
	winners  map[policyTarget]*resolvedPolicy
}

// policyLess is the spec's precedence: the older creationTimestamp, then
// namespace/name alphabetically.
func policyLess(a, b *gatewayv1.BackendTLSPolicy) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// backendTLSIndex resolves the snapshot's policies once per Index.
func (idx *Index) backendTLSIndex() *backendTLS {
	if idx.btls != nil {
		return idx.btls
	}
	bt := &backendTLS{winners: map[policyTarget]*resolvedPolicy{}}
	pols := make([]*gatewayv1.BackendTLSPolicy, 0, len(idx.policies))
	for _, p := range idx.policies {
		if p != nil {
			pols = append(pols, p)
		}
	}
	sort.SliceStable(pols, func(i, j int) bool { return policyLess(pols[i], pols[j]) })
	for i, p := range pols {
		if i > 0 && pols[i-1].Namespace == p.Namespace && pols[i-1].Name == p.Name {
			continue // an informer cache holds one object per name
		}
		rp := idx.policyCache[nn(p.Namespace, p.Name)]
		if rp == nil || rp.policy != p {
			rp = idx.resolvePolicy(p)
			if idx.policyCache != nil {
				idx.policyCache[nn(p.Namespace, p.Name)] = rp
			}
		}
		bt.policies = append(bt.policies, rp)
		for _, t := range rp.targets {
			if _, taken := bt.winners[t]; !taken {
				bt.winners[t] = rp
			}
		}
	}
	idx.btls = bt
	return bt
}

// policyTargets lists the Services a policy selects. A targetRef names a
// Service of the policy's own namespace (the API has no namespace field),
// so a policy can never reach another namespace's Service; other kinds
// are not supported and select nothing.
func policyTargets(p *gatewayv1.BackendTLSPolicy) []policyTarget {
	var out []policyTarget
	for _, ref := range p.Spec.TargetRefs {
		if ref.Group != "" || ref.Kind != kindService || ref.Name == "" {
			continue
		}
		t := policyTarget{svc: nn(p.Namespace, string(ref.Name))}
		if ref.SectionName != nil {
			t.section = string(*ref.SectionName)
		}
		out = append(out, t)
	}
	return out
}

// resolvePolicy checks a policy's validation: its CA certificates (in
// ConfigMaps of its own namespace only), hostname, subject alt names and
// options.
func (idx *Index) resolvePolicy(p *gatewayv1.BackendTLSPolicy) *resolvedPolicy {
	rp := &resolvedPolicy{policy: p, targets: policyTargets(p)}
	v := &p.Spec.Validation
	invalid := func(reason gatewayv1.PolicyConditionReason, msg string) *resolvedPolicy {
		if rp.acceptReason == "" {
			rp.acceptReason, rp.acceptMsg = string(reason), msg
		}
		rp.tls = &ir.UpstreamTLS{Invalid: true}
		return rp
	}
	tls := &ir.UpstreamTLS{SNI: string(v.Hostname)}
	var bundle strings.Builder
	valid := 0
	for _, ref := range v.CACertificateRefs {
		if ref.Group != "" || ref.Kind != kindConfigMap {
			rp.setRefs(gatewayv1.BackendTLSPolicyReasonInvalidKind,
				fmt.Sprintf("caCertificateRef %s: kind %s/%s is not supported, only core ConfigMap", ref.Name, ref.Group, ref.Kind))
			continue
		}
		// Always the policy's own namespace: a reference can never read
		// another namespace's ConfigMap.
		cm, ok := idx.configMaps[nn(p.Namespace, string(ref.Name))]
		if !ok {
			rp.setRefs(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef,
				fmt.Sprintf("ConfigMap %s/%s not found", p.Namespace, ref.Name))
			continue
		}
		if msg := caBundleProblem(cm.Data[corev1.ServiceAccountRootCAKey]); msg != "" {
			rp.setRefs(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef,
				fmt.Sprintf("ConfigMap %s/%s: %s", p.Namespace, ref.Name, msg))
			continue
		}
		valid++
		bundle.WriteString(strings.TrimRight(cm.Data[corev1.ServiceAccountRootCAKey], "\n"))
		bundle.WriteString("\n")
	}
	switch {
	case len(v.CACertificateRefs) > 0 && v.WellKnownCACertificates != nil && *v.WellKnownCACertificates != "":
		return invalid(gatewayv1.PolicyReasonInvalid, "caCertificateRefs and wellKnownCACertificates are mutually exclusive")
	case len(v.CACertificateRefs) > 0:
		if valid == 0 {
			return invalid(gatewayv1.BackendTLSPolicyReasonNoValidCACertificate,
				"no caCertificateRef resolves to a valid CA certificate: "+rp.refsMsg)
		}
		tls.CACertificates = bundle.String()
	case v.WellKnownCACertificates != nil && *v.WellKnownCACertificates == gatewayv1.WellKnownCACertificatesSystem:
		tls.SystemCAs = true
	case v.WellKnownCACertificates != nil && *v.WellKnownCACertificates != "":
		return invalid(gatewayv1.PolicyReasonInvalid,
			fmt.Sprintf("wellKnownCACertificates %q is not supported, only System", *v.WellKnownCACertificates))
	default:
		return invalid(gatewayv1.PolicyReasonInvalid, "one of caCertificateRefs and wellKnownCACertificates is required")
	}
	if tls.SNI == "" || strings.HasPrefix(tls.SNI, "*") || !validRouteHostname(tls.SNI) {
		return invalid(gatewayv1.PolicyReasonInvalid, fmt.Sprintf("hostname %q is not a valid DNS name", tls.SNI))
	}
	for i, san := range v.SubjectAltNames {
		switch san.Type {
		case gatewayv1.HostnameSubjectAltNameType:
			if san.URI != "" || !validRouteHostname(string(san.Hostname)) {
				return invalid(gatewayv1.PolicyReasonInvalid, fmt.Sprintf("subjectAltNames[%d]: invalid Hostname %q", i, san.Hostname))
			}
			tls.SubjectAltNames = append(tls.SubjectAltNames, ir.SubjectAltName{Type: ir.SANHostname, Value: string(san.Hostname)})
		case gatewayv1.URISubjectAltNameType:
			u, err := url.Parse(string(san.URI))
			if san.Hostname != "" || err != nil || u.Scheme == "" || strings.ContainsAny(string(san.URI), " \t\r\n") {
				return invalid(gatewayv1.PolicyReasonInvalid, fmt.Sprintf("subjectAltNames[%d]: invalid URI %q", i, san.URI))
			}
			tls.SubjectAltNames = append(tls.SubjectAltNames, ir.SubjectAltName{Type: ir.SANURI, Value: string(san.URI)})
		default:
			return invalid(gatewayv1.PolicyReasonInvalid, fmt.Sprintf("subjectAltNames[%d]: type %q is not supported", i, san.Type))
		}
	}
	if len(p.Spec.Options) > 0 {
		keys := make([]string, 0, len(p.Spec.Options))
		for k := range p.Spec.Options {
			keys = append(keys, string(k))
		}
		sort.Strings(keys)
		return invalid(gatewayv1.PolicyReasonInvalid, "options are not supported: "+strings.Join(keys, ", "))
	}
	rp.tls = tls
	return rp
}

func (rp *resolvedPolicy) setRefs(reason gatewayv1.PolicyConditionReason, msg string) {
	if rp.refsReason == "" {
		rp.refsReason, rp.refsMsg = string(reason), msg
	}
}

// caBundleProblem says why PEM data is not a CA bundle: it must hold at
// least one certificate, and every PEM block must be a certificate that
// parses.
func caBundleProblem(data string) string {
	if strings.TrimSpace(data) == "" {
		return "no " + corev1.ServiceAccountRootCAKey
	}
	rest := []byte(data)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Sprintf("%s holds a %s PEM block, not a CERTIFICATE", corev1.ServiceAccountRootCAKey, b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Sprintf("%s: certificate %d does not parse: %v", corev1.ServiceAccountRootCAKey, n+1, err)
		}
		n++
	}
	if n == 0 || strings.TrimSpace(string(rest)) != "" {
		return corev1.ServiceAccountRootCAKey + " is not a PEM certificate bundle"
	}
	return ""
}

// policyFor returns the policy that applies to a Service port: the one
// selecting the port by name, else the one selecting the whole Service.
func (bt *backendTLS) policyFor(svc types.NamespacedName, portName string) *resolvedPolicy {
	if portName != "" {
		if rp := bt.winners[policyTarget{svc: svc, section: portName}]; rp != nil {
			return rp
		}
	}
	return bt.winners[policyTarget{svc: svc}]
}

// upstreamTLS is the TLS the proxy speaks to a Service port for gw, nil
// for plaintext.
func (idx *Index) upstreamTLS(gw *gatewayv1.Gateway, svc types.NamespacedName, portName string) *ir.UpstreamTLS {
	if len(idx.policies) == 0 {
		return nil
	}
	rp := idx.backendTLSIndex().policyFor(svc, portName)
	if rp == nil {
		return nil
	}
	t := *rp.tls
	if !t.Invalid {
		t.ClientCertificate = idx.backendClientCert(gw).secret
	}
	return &t
}

// applyBackendTLS sets the TLS of a cluster built for gw from backend b.
func (idx *Index) applyBackendTLS(gw *gatewayv1.Gateway, c *ir.Cluster, b backend) {
	if b.svc == nil {
		return
	}
	c.TLS = idx.upstreamTLS(gw, nn(b.svc.Namespace, b.svc.Name), b.port.Name)
}

// clientCert is a Gateway's resolved spec.tls.backend.clientCertificateRef.
type clientCert struct {
	set         bool   // the Gateway names one
	secret      string // the IR secret name when it resolves
	reason, msg string // ResolvedRefs=False reason when it does not
	cert, key   []byte
}

// backendClientCert resolves gw's backend client certificate, once per
// Index. A Secret of another namespace needs a ReferenceGrant there.
func (idx *Index) backendClientCert(gw *gatewayv1.Gateway) clientCert {
	if gw.Spec.TLS == nil || gw.Spec.TLS.Backend == nil || gw.Spec.TLS.Backend.ClientCertificateRef == nil {
		return clientCert{}
	}
	k := nn(gw.Namespace, gw.Name)
	if cc, ok := idx.clientCerts[k]; ok {
		return cc
	}
	cc := resolveClientCert(idx, gw)
	if idx.clientCerts == nil {
		idx.clientCerts = map[types.NamespacedName]clientCert{}
	}
	idx.clientCerts[k] = cc
	return cc
}

func resolveClientCert(idx *Index, gw *gatewayv1.Gateway) clientCert {
	ref := gw.Spec.TLS.Backend.ClientCertificateRef
	cc := clientCert{set: true}
	group, kind := "", kindSecret
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	ns := gw.Namespace
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	if group != "" || kind != kindSecret {
		cc.reason, cc.msg = string(gatewayv1.GatewayReasonInvalidClientCertificateRef),
			fmt.Sprintf("clientCertificateRef %s: kind %s/%s is not supported, only core Secret", ref.Name, group, kind)
		return cc
	}
	if ns != gw.Namespace && !idx.granted(groupGateway, kindGateway, gw.Namespace, "", kindSecret, ns, string(ref.Name)) {
		cc.reason, cc.msg = string(gatewayv1.GatewayReasonRefNotPermitted),
			fmt.Sprintf("clientCertificateRef Secret %s/%s is not permitted by any ReferenceGrant", ns, ref.Name)
		return cc
	}
	sec, ok := idx.secrets[nn(ns, string(ref.Name))]
	if !ok {
		cc.reason, cc.msg = string(gatewayv1.GatewayReasonInvalidClientCertificateRef),
			fmt.Sprintf("clientCertificateRef Secret %s/%s not found", ns, ref.Name)
		return cc
	}
	if msg := tlsSecretProblem(sec); msg != "" {
		cc.reason, cc.msg = string(gatewayv1.GatewayReasonInvalidClientCertificateRef),
			fmt.Sprintf("clientCertificateRef Secret %s/%s: %s", ns, ref.Name, msg)
		return cc
	}
	cc.secret = ns + "/" + string(ref.Name)
	cc.cert, cc.key = sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]
	return cc
}

// gatewayResolvedRefs is the Gateway's ResolvedRefs condition, set when
// the Gateway names a backend client certificate (nil otherwise).
func (idx *Index) gatewayResolvedRefs(gw *gatewayv1.Gateway) *metav1.Condition {
	cc := idx.backendClientCert(gw)
	if !cc.set {
		return nil
	}
	typ := string(gatewayv1.GatewayConditionResolvedRefs)
	c := condition(typ, true, string(gatewayv1.GatewayReasonResolvedRefs), "All references are resolved", gw.Generation)
	if cc.reason != "" {
		c = condition(typ, false, cc.reason, cc.msg, gw.Generation)
	}
	return &c
}

// PolicyStatuses is the desired status.ancestors entries of ours of each
// BackendTLSPolicy that applies to a cluster of one of our Gateways.
type PolicyStatuses map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus

// gatewayServices says which Service ports a Gateway's IR sends to: the
// cluster names of each Service.
type gatewayServices func(gw types.NamespacedName, svc types.NamespacedName) []string

// policyStatuses computes the status of every policy: for each of our
// Gateways (ancestors, sorted) whose clusters include a Service port the
// policy selects, Accepted (Conflicted when another policy takes one of
// those targets) and ResolvedRefs.
func (idx *Index) policyStatuses(served []types.NamespacedName, uses gatewayServices) PolicyStatuses {
	if len(idx.policies) == 0 {
		return nil
	}
	bt := idx.backendTLSIndex()
	out := PolicyStatuses{}
	for _, rp := range bt.policies {
		p := rp.policy
		var ancestors []gatewayv1.PolicyAncestorStatus
		for _, gw := range served {
			matched, lost := false, false
			for _, t := range rp.targets {
				for _, cluster := range uses(gw, t.svc) {
					if !idx.clusterInSection(t, cluster) {
						continue
					}
					matched = true
					if bt.winners[t] != rp {
						lost = true
					}
				}
			}
			if !matched {
				continue
			}
			ancestors = append(ancestors, idx.policyAncestor(rp, gw, lost, bt))
			if len(ancestors) == 16 { // the API's maximum
				break
			}
		}
		if len(ancestors) > 0 {
			out[nn(p.Namespace, p.Name)] = ancestors
		}
	}
	return out
}

// clusterInSection reports whether a cluster ("ns/svc/port") is a port
// the target selects.
func (idx *Index) clusterInSection(t policyTarget, cluster string) bool {
	if t.section == "" {
		return true
	}
	port, err := strconv.Atoi(cluster[strings.LastIndexByte(cluster, '/')+1:])
	if err != nil {
		return false
	}
	svc := idx.services[t.svc]
	if svc == nil {
		return false
	}
	for _, sp := range svc.Spec.Ports {
		if int(sp.Port) == port {
			return sp.Name == t.section
		}
	}
	return false
}

func (idx *Index) policyAncestor(rp *resolvedPolicy, gw types.NamespacedName, lost bool, bt *backendTLS) gatewayv1.PolicyAncestorStatus {
	gen := rp.policy.Generation
	ns := gatewayv1.Namespace(gw.Namespace)
	group := gatewayv1.Group(groupGateway)
	kind := gatewayv1.Kind(kindGateway)
	typ := string(gatewayv1.PolicyConditionAccepted)
	var accepted metav1.Condition
	switch {
	case lost:
		accepted = condition(typ, false, string(gatewayv1.PolicyReasonConflicted),
			"Another BackendTLSPolicy takes precedence for the same target: "+conflictWinners(rp, bt), gen)
	case rp.acceptReason != "":
		accepted = condition(typ, false, rp.acceptReason, rp.acceptMsg, gen)
	default:
		accepted = condition(typ, true, string(gatewayv1.PolicyReasonAccepted), "Policy is accepted", gen)
	}
	typ = string(gatewayv1.BackendTLSPolicyConditionResolvedRefs)
	refs := condition(typ, true, string(gatewayv1.BackendTLSPolicyReasonResolvedRefs), "All references are resolved", gen)
	if rp.refsReason != "" {
		refs = condition(typ, false, rp.refsReason, rp.refsMsg, gen)
	}
	return gatewayv1.PolicyAncestorStatus{
		AncestorRef:    gatewayv1.ParentReference{Group: &group, Kind: &kind, Namespace: &ns, Name: gatewayv1.ObjectName(gw.Name)},
		ControllerName: gatewayv1.GatewayController(idx.controllerName),
		Conditions:     []metav1.Condition{accepted, refs},
	}
}

// conflictWinners names the policies that took rp's targets.
func conflictWinners(rp *resolvedPolicy, bt *backendTLS) string {
	var names []string
	for _, t := range rp.targets {
		if w := bt.winners[t]; w != nil && w != rp {
			n := w.policy.Namespace + "/" + w.policy.Name
			if len(names) == 0 || names[len(names)-1] != n {
				names = append(names, n)
			}
		}
	}
	return strings.Join(names, ", ")
}

// irServices indexes the clusters of Gateway IRs by Service, for
// policyStatuses over a full translation.
func irServices(gws []*ir.Gateway) ([]types.NamespacedName, gatewayServices) {
	served := make([]types.NamespacedName, 0, len(gws))
	by := make(map[types.NamespacedName]map[types.NamespacedName][]string, len(gws))
	for _, g := range gws {
		k := nn(g.Namespace, g.Name)
		served = append(served, k)
		m := map[types.NamespacedName][]string{}
		for _, c := range g.Clusters {
			if svc, ok := clusterService(c.Name); ok {
				m[svc] = append(m[svc], c.Name)
			}
		}
		by[k] = m
	}
	sort.Slice(served, func(i, j int) bool {
		if served[i].Namespace != served[j].Namespace {
			return served[i].Namespace < served[j].Namespace
		}
		return served[i].Name < served[j].Name
	})
	return served, func(gw, svc types.NamespacedName) []string { return by[gw][svc] }
}

// clusterService is the Service of a cluster name "ns/svc/port".
func clusterService(name string) (types.NamespacedName, bool) {
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		return types.NamespacedName{}, false
	}
	return nn(parts[0], parts[1]), true
}
