/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/shardgate/shardgate/internal/ir"
)

// dirtyRoutes lists the routes the store marked, by namespace/name.
func dirtyRoutes(st *Store) []string {
	var out []string
	for k := range st.dirty.Routes {
		out = append(out, k.NN.String())
	}
	slices.Sort(out)
	return out
}

// TestStoreMarksOnlyDependents: each kind of event marks exactly the
// routes and Gateways that depend on the object, once, at insert time.
func TestStoreMarksOnlyDependents(t *testing.T) {
	in := benchInput(50)
	st := NewStore(testController)
	st.Load(in)
	st.takeDirty()

	// A new Service: only the route naming it.
	svc := in.Services[7].DeepCopy()
	st.Delete(in.Services[7])
	st.takeDirty()
	if !st.Upsert(svc) {
		t.Fatal("a new Service is not relevant")
	}
	if got := dirtyRoutes(st); !slices.Equal(got, []string{"lease-7/app-7"}) {
		t.Fatalf("a new Service marked %v", got)
	}
	if _, ok := st.dirty.Clusters[types.NamespacedName{Namespace: "lease-7", Name: "app-7"}]; !ok || len(st.dirty.Gateways) != 0 {
		t.Fatalf("a new Service marked clusters %v and Gateways %v", st.dirty.Clusters, st.dirty.Gateways)
	}
	st.takeDirty()

	// A status-only update: stored, relevant checked once, nothing marked.
	checks := st.relevantChecks
	upd := svc.DeepCopy()
	upd.ResourceVersion = "99"
	upd.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.7"}}
	if st.Upsert(upd) {
		t.Fatal("a status-only update is relevant")
	}
	if st.relevantChecks != checks+1 {
		t.Fatalf("Relevant ran %d times for one update", st.relevantChecks-checks)
	}
	if len(st.dirty.Routes)+len(st.dirty.Gateways)+len(st.dirty.Clusters) != 0 {
		t.Fatal("a status-only update marked something")
	}
	if got := st.Input(Facts{}).Services; !slices.Contains(got, upd) {
		t.Fatal("the store does not hold the updated object")
	}

	// A route moved to another Service in another namespace, then a
	// ReferenceGrant there: only that route.
	rt := in.HTTPRoutes[3].DeepCopy()
	other := gatewayv1.Namespace("lease-9")
	rt.Spec.Rules[0].BackendRefs[0].Namespace = &other
	rt.Spec.Rules[0].BackendRefs[0].Name = "app-9"
	rt.Generation++
	st.Upsert(rt)
	st.takeDirty()
	grant := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "lease-9"},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "HTTPRoute", Namespace: "lease-3"}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Kind: "Service"}},
		}}
	st.Upsert(grant)
	if got := dirtyRoutes(st); !slices.Equal(got, []string{"lease-3/app-3"}) {
		t.Fatalf("a ReferenceGrant marked %v", got)
	}
	st.takeDirty()
	// The Service app-9 now has two routes.
	st.Delete(in.Services[9])
	if got := dirtyRoutes(st); !slices.Equal(got, []string{"lease-3/app-3", "lease-9/app-9"}) {
		t.Fatalf("deleting a Service marked %v", got)
	}
	st.takeDirty()

	// Namespace labels: the routes in it (listener selectors read them).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease-11", Labels: map[string]string{"team": "a"}}}
	st.Upsert(ns)
	st.takeDirty()
	ns2 := ns.DeepCopy()
	ns2.Labels = map[string]string{"team": "b"}
	st.Upsert(ns2)
	if got := dirtyRoutes(st); !slices.Equal(got, []string{"lease-11/app-11"}) {
		t.Fatalf("a Namespace label change marked %v", got)
	}
	st.takeDirty()

	// A Secret: only the Gateways whose listeners name it.
	gw := in.Gateways[0].DeepCopy()
	gw.Generation++
	gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
		TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}})
	st.Upsert(gw)
	if !maps.Equal(st.dirty.Gateways, set[types.NamespacedName]{{Namespace: "default", Name: "gw"}: {}}) || len(st.dirty.Routes) != 0 {
		t.Fatalf("a Gateway update marked Gateways %v and routes %v", st.dirty.Gateways, st.dirty.Routes)
	}
	st.takeDirty()
	st.Upsert(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}})
	if len(st.dirty.Gateways) != 0 {
		t.Fatal("a Secret no listener names marked a Gateway")
	}
	st.Upsert(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cert", Namespace: "default"}})
	if len(st.dirty.Gateways) != 1 || len(st.dirty.Routes) != 0 {
		t.Fatalf("a listener's Secret marked Gateways %v and routes %v", st.dirty.Gateways, st.dirty.Routes)
	}
	st.takeDirty()

	// A CA ConfigMap: only the Gateways whose spec.tls.frontend names it.
	gw = gw.DeepCopy()
	gw.Generation++
	gw.Spec.TLS = &gatewayv1.GatewayTLSConfig{Frontend: &gatewayv1.FrontendTLSConfig{Default: gatewayv1.TLSConfig{
		Validation: &gatewayv1.FrontendTLSValidation{CACertificateRefs: []gatewayv1.ObjectReference{{Kind: "ConfigMap", Name: "ca"}}}}}}
	st.Upsert(gw)
	st.takeDirty()
	st.Upsert(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: "default"}, Data: map[string]string{"ca.crt": "x"}})
	if len(st.dirty.Gateways) != 0 {
		t.Fatal("a ConfigMap no Gateway names marked a Gateway")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "default", UID: "cm"}, Data: map[string]string{"ca.crt": "a"}}
	st.Upsert(cm)
	if !maps.Equal(st.dirty.Gateways, set[types.NamespacedName]{{Namespace: "default", Name: "gw"}: {}}) || len(st.dirty.Routes) != 0 {
		t.Fatalf("a CA ConfigMap marked Gateways %v and routes %v", st.dirty.Gateways, st.dirty.Routes)
	}
	st.takeDirty()
	same := cm.DeepCopy()
	same.Labels = map[string]string{"touched": "yes"}
	if st.Upsert(same) || len(st.dirty.Gateways) != 0 {
		t.Fatal("a CA ConfigMap change that leaves its data alone marked a Gateway")
	}
	changed := same.DeepCopy()
	changed.Data["ca.crt"] = "b"
	if !st.Upsert(changed) || len(st.dirty.Gateways) != 1 {
		t.Fatal("a CA ConfigMap data change marked no Gateway")
	}
	st.takeDirty()
	st.Delete(changed)
	if len(st.dirty.Gateways) != 1 {
		t.Fatal("deleting a CA ConfigMap marked no Gateway")
	}
}

// TestTranslatorTenantFlowIsIncremental: a new Service and route together
// are patched into the Gateway, which is not translated
// again in full, and the output equals a fresh translation.
func TestTranslatorTenantFlowIsIncremental(t *testing.T) {
	_, st, tr, f := benchTranslator(200)
	for i := 200; i < 220; i++ {
		svc, rt := benchLease(i)
		st.Upsert(svc)
		st.Upsert(rt)
		got := tr.Translate(f)
		if want := Translate(st.Input(f)); !sameOutput(got, want) {
			t.Fatalf("lease %d: the Translator differs from Translate", i)
		}
		if len(got.StatusChanged) != 1 || got.StatusChanged[0].NN.Name != rt.Name {
			t.Fatalf("lease %d: status changed for %v, want only the new route", i, got.StatusChanged)
		}
	}
	if tr.Stats.Full != 1 || tr.Stats.Patched != 20 {
		t.Fatalf("want one full translation and 20 patches, got %+v", tr.Stats)
	}
}

// TestStoreServiceRelevantOnlyWhenNamed: a new lease's Service, stored
// before the route that names it, asks for no translation (Upsert false);
// the route does, and its translation has a cluster naming the Service
// port (its endpoints are the xDS side's). Once named, a change of the
// Service's ports does ask for one, and an EndpointSlice never does.
func TestStoreServiceRelevantOnlyWhenNamed(t *testing.T) {
	_, st, tr, f := benchTranslator(20)
	svc, rt := benchLease(100)
	if st.Upsert(svc) {
		t.Fatal("a Service no route names asked for a translation")
	}
	if !st.Upsert(rt) {
		t.Fatal("the route naming it asked for none")
	}
	got := tr.Translate(f)
	if want := Translate(st.Input(f)); !sameOutput(got, want) {
		t.Fatal("the Translator differs from Translate")
	}
	cluster := func(out *Output) *ir.Cluster {
		for _, c := range out.Gateways[0].Clusters {
			if c.Name == "lease-100/app-100/80" {
				return c
			}
		}
		t.Fatal("the new route has no cluster")
		return nil
	}
	want := ir.ServicePort{Namespace: "lease-100", Name: "app-100", Port: "http"}
	if c := cluster(got); c.Service != want {
		t.Fatalf("the new route's cluster names %+v; want %+v", c.Service, want)
	}
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "lease-100", Name: "app-100-x",
		Labels: map[string]string{discoveryv1.LabelServiceName: "app-100"}}}
	if st.Upsert(es) {
		t.Fatal("an EndpointSlice asked for a translation")
	}
	svc2 := svc.DeepCopy()
	svc2.ResourceVersion = "changed"
	svc2.Spec.Ports[0].Name = "web"
	if !st.Upsert(svc2) {
		t.Fatal("a named Service's change asked for no translation")
	}
	got = tr.Translate(f)
	if want := Translate(st.Input(f)); !sameOutput(got, want) {
		t.Fatal("after the change, the Translator differs from Translate")
	}
	if c := cluster(got); c.Service.Port != "web" {
		t.Fatalf("after its port was renamed, the cluster names port %q, want web", c.Service.Port)
	}
}

// TestStoreInputIsASnapshot: an Input's lists stay as they were taken while
// the store replaces, removes and adds objects, and a later Input sees the
// changes. (The lists are copied on write.)
func TestStoreInputIsASnapshot(t *testing.T) {
	in := benchInput(20)
	st := NewStore(testController)
	st.Load(in)
	first := st.Input(Facts{})
	want := slices.Clone(first.HTTPRoutes)
	wantSvcs := slices.Clone(first.Services)

	// Added after the snapshot: no copy is needed, and none is visible.
	extra := in.HTTPRoutes[0].DeepCopy()
	extra.Name = "extra"
	st.Upsert(extra)
	second := st.Input(Facts{})
	if len(second.HTTPRoutes) != len(want)+1 || !slices.Contains(second.HTTPRoutes, extra) {
		t.Fatalf("the second Input has %d routes, want %d with the new one", len(second.HTTPRoutes), len(want)+1)
	}
	wantSecond := slices.Clone(second.HTTPRoutes)

	// Replaced and removed in place: both earlier Inputs keep their lists.
	upd := in.HTTPRoutes[3].DeepCopy()
	upd.ResourceVersion = "42"
	st.Upsert(upd)
	st.Delete(in.HTTPRoutes[5])
	st.Delete(in.Services[2])
	extra2 := in.HTTPRoutes[1].DeepCopy()
	extra2.Name = "extra-2"
	st.Upsert(extra2)
	if !slices.Equal(first.HTTPRoutes, want) || !slices.Equal(first.Services, wantSvcs) {
		t.Fatal("the first Input's lists changed after it was taken")
	}
	if !slices.Equal(second.HTTPRoutes, wantSecond) {
		t.Fatal("the second Input's routes changed after it was taken")
	}
	if cap(first.HTTPRoutes) != len(first.HTTPRoutes) {
		t.Fatalf("an Input's list has room to append into (cap %d, len %d)", cap(first.HTTPRoutes), len(first.HTTPRoutes))
	}

	third := st.Input(Facts{})
	if !slices.Contains(third.HTTPRoutes, upd) || slices.Contains(third.HTTPRoutes, in.HTTPRoutes[3]) ||
		slices.Contains(third.HTTPRoutes, in.HTTPRoutes[5]) || !slices.Contains(third.HTTPRoutes, extra2) ||
		len(third.HTTPRoutes) != len(want)+1 || slices.Contains(third.Services, in.Services[2]) {
		t.Fatal("a later Input does not show the replaced, removed and added objects")
	}
}
