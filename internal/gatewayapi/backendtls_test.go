/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

func testPolicy(ns, name, svc, ca, host string) *gatewayv1.BackendTLSPolicy {
	return &gatewayv1.BackendTLSPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: types.UID(ns + "/" + name), ResourceVersion: "1"},
		Spec: gatewayv1.BackendTLSPolicySpec{
			TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: gatewayv1.ObjectName(svc)}}},
			Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: gatewayv1.PreciseHostname(host),
				CACertificateRefs: []gatewayv1.LocalObjectReference{{Kind: "ConfigMap", Name: gatewayv1.ObjectName(ca)}}},
		},
	}
}

func clusterNamed(t *testing.T, out *Output, name string) *ir.Cluster {
	t.Helper()
	for _, g := range out.Gateways {
		for _, c := range g.Clusters {
			if c.Name == name {
				return c
			}
		}
	}
	t.Fatalf("no cluster %s", name)
	return nil
}

// A hostile tenant names another tenant's Service and CA ConfigMap in its
// policy: it reaches neither. Its policy selects its own Service of that
// name and reads its own namespace's ConfigMaps only.
func TestBackendTLSPolicyStaysInItsNamespace(t *testing.T) {
	in := loadInput(t, "testdata/backend-tls-tenants.in.yaml")
	crt, _ := tlsPEM(t)
	out := Translate(in)
	a := clusterNamed(t, out, "tenant-a/api/443")
	if a.TLS == nil || a.TLS.Invalid || a.TLS.SNI != "a.example.com" || a.TLS.CACertificates != strings.TrimRight(string(crt), "\n")+"\n" {
		t.Fatalf("tenant-a's Service must keep its own policy's TLS, got %+v", a.TLS)
	}
	b := clusterNamed(t, out, "tenant-b/api/443")
	if b.TLS == nil || !b.TLS.Invalid {
		t.Fatalf("tenant-b's policy reads only tenant-b's ConfigMaps (none named ca): its Service must fail closed, got %+v", b.TLS)
	}
	st := out.BackendTLSPolicyStatus[types.NamespacedName{Namespace: "tenant-b", Name: "steal"}]
	if len(st) != 1 || st[0].Conditions[0].Reason != string(gatewayv1.BackendTLSPolicyReasonNoValidCACertificate) ||
		!strings.Contains(st[0].Conditions[1].Message, "tenant-b/ca not found") {
		t.Fatalf("tenant-b's policy status: %+v", st)
	}
	if web := clusterNamed(t, out, "tenant-b/web/80"); web.TLS != nil {
		t.Fatalf("a Service no policy selects stays plaintext: %+v", web.TLS)
	}
	// The hostile tenant now brings its own "ca" with a bundle of its
	// choosing: its own Service uses it, tenant-a's is unchanged.
	in.ConfigMaps = append(in.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "ca"},
		Data: map[string]string{"ca.crt": string(crt)}})
	out = Translate(in)
	if a2 := clusterNamed(t, out, "tenant-a/api/443"); !ir.SameUpstreamTLS(a.TLS, a2.TLS) {
		t.Fatalf("tenant-b's ConfigMap changed tenant-a's TLS: %+v", a2.TLS)
	}
	if b2 := clusterNamed(t, out, "tenant-b/api/443"); b2.TLS == nil || b2.TLS.SNI != "evil.example.com" {
		t.Fatalf("tenant-b's own policy applies to its own Service: %+v", b2.TLS)
	}
}

// The Store marks only what a policy or a CA ConfigMap touches, and never
// another namespace's Services.
func TestBackendTLSStoreMarksOnlyTargets(t *testing.T) {
	s := NewStore(testController)
	p := testPolicy("tenant-b", "steal", "api", "ca", "evil.example.com")
	s.Upsert(p)
	d := s.takeDirty()
	if _, ok := d.Clusters[nn("tenant-b", "api")]; !ok || len(d.Clusters) != 1 {
		t.Fatalf("a new policy must mark its own Service only: %v", d.Clusters)
	}
	// A status write (same generation) marks nothing.
	st := p.DeepCopy()
	st.ResourceVersion = "2"
	st.Status.Ancestors = []gatewayv1.PolicyAncestorStatus{{ControllerName: "x"}}
	if s.Upsert(st) {
		t.Fatal("a status-only update of a policy must not be relevant")
	}
	if d := s.takeDirty(); len(d.Clusters)+len(d.Policies) != 0 {
		t.Fatalf("a status-only update marked %v %v", d.Clusters, d.Policies)
	}
	// tenant-a's ConfigMap of the same name is not the policy's.
	if s.Upsert(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ca", UID: "a"}, Data: map[string]string{"ca.crt": "x"}}) {
		t.Fatal("a ConfigMap that nothing names cannot alter a translation")
	}
	if s.configMaps[nn("tenant-a", "ca")] == nil {
		t.Fatal("a new ConfigMap is stored all the same")
	}
	if d := s.takeDirty(); len(d.Clusters)+len(d.Policies) != 0 {
		t.Fatalf("another namespace's ConfigMap marked %v %v", d.Clusters, d.Policies)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "ca", UID: "b", ResourceVersion: "1"}, Data: map[string]string{"ca.crt": "x"}}
	s.Upsert(cm)
	d = s.takeDirty()
	if _, ok := d.Clusters[nn("tenant-b", "api")]; !ok || len(d.Clusters) != 1 || len(d.Policies) != 1 {
		t.Fatalf("the policy's ConfigMap must mark the policy and its Service: %v %v", d.Clusters, d.Policies)
	}
	// A change to another key of the ConfigMap is not relevant.
	other := cm.DeepCopy()
	other.ResourceVersion = "2"
	other.Data["unrelated"] = "y"
	if s.Upsert(other) {
		t.Fatal("only ca.crt is read: another key's change must not be relevant")
	}
	// Retargeting the policy marks the Service it left and the one it
	// selects now.
	moved := testPolicy("tenant-b", "steal", "web", "ca", "evil.example.com")
	moved.Generation = 2
	s.Upsert(moved)
	d = s.takeDirty()
	if len(d.Clusters) != 2 {
		t.Fatalf("retargeting marks both Services: %v", d.Clusters)
	}
	s.Delete(moved)
	d = s.takeDirty()
	if _, ok := d.Clusters[nn("tenant-b", "web")]; !ok || len(d.Clusters) != 1 {
		t.Fatalf("deleting marks the Service it selected: %v", d.Clusters)
	}
	// Once deleted, its ConfigMap marks nothing.
	cm2 := cm.DeepCopy()
	cm2.ResourceVersion = "3"
	cm2.Data["ca.crt"] = "changed"
	s.Upsert(cm2)
	if d := s.takeDirty(); len(d.Clusters)+len(d.Policies) != 0 {
		t.Fatalf("a ConfigMap no policy names marked %v %v", d.Clusters, d.Policies)
	}
}

// Precedence: the older policy, then namespace/name; ties on time break by
// name; observedGeneration follows metadata.generation.
func TestBackendTLSPolicyPrecedence(t *testing.T) {
	t0 := metav1.Now()
	a := testPolicy("ns", "b-older", "svc", "ca", "old.example.com")
	a.CreationTimestamp = t0
	b := testPolicy("ns", "a-newer", "svc", "ca", "new.example.com")
	b.CreationTimestamp = metav1.NewTime(t0.Add(1e9))
	b.Generation = 7
	c := testPolicy("ns", "c-older", "svc", "ca", "tie.example.com")
	c.CreationTimestamp = t0
	if !policyLess(a, b) || !policyLess(a, c) || policyLess(c, a) || policyLess(b, c) {
		t.Fatal("precedence: creationTimestamp first, then name")
	}
	idx := NewIndex(&Input{ControllerName: testController, BackendTLSPolicies: []*gatewayv1.BackendTLSPolicy{b, c, a},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}}})
	bt := idx.backendTLSIndex()
	if w := bt.policyFor(nn("ns", "svc"), "https"); w == nil || w.policy != a {
		t.Fatalf("winner %v, want ns/b-older", w)
	}
	st := idx.policyStatuses([]types.NamespacedName{nn("ns", "gw")}, func(_, svc types.NamespacedName) []string {
		if svc == nn("ns", "svc") {
			return []string{"ns/svc/443"}
		}
		return nil
	})
	got := st[nn("ns", "a-newer")]
	if len(got) != 1 || got[0].Conditions[0].Reason != string(gatewayv1.PolicyReasonConflicted) || got[0].Conditions[0].ObservedGeneration != 7 {
		t.Fatalf("the newer policy must be Conflicted at its generation: %+v", got)
	}
}
