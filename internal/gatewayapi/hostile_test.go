/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"math"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
	xdstranslate "github.com/shardgate/shardgate/xds/translate"
)

// The translator part of the hostile-input matrix (RELIABILITY.md, "Hostile
// input"): objects the apiserver would refuse are fed to Translate directly,
// because a controller must survive whatever its cache holds (older CRD
// versions, other writers, skipped validation). Every case asserts one
// specific outcome; all of them also check that the result's IR, if any,
// becomes Envoy resources that pass ValidateAll and the referential checks.

// hostileInput is one Gateway "gw" in namespace "default" with an HTTP
// listener on port 80, Service web (port 80 → 8080) with one ready endpoint,
// and namespaces default and other.
func hostileInput() *Input {
	return &Input{
		ControllerName: testController,
		GatewayClasses: []*gatewayv1.GatewayClass{{
			ObjectMeta: metav1.ObjectMeta{Name: "shardgate", Generation: 1},
			Spec:       gatewayv1.GatewayClassSpec{ControllerName: testController},
		}},
		Namespaces: []*corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"kubernetes.io/metadata.name": "other"}}},
		},
		Gateways: []*gatewayv1.Gateway{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw", Generation: 1},
			Spec: gatewayv1.GatewaySpec{
				GatewayClassName: "shardgate",
				Listeners:        []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}},
			},
		}},
		Services: []*corev1.Service{service("default", "web")},
		Runtime: map[types.NamespacedName]GatewayRuntime{
			{Namespace: "default", Name: "gw"}: {Addresses: []gatewayv1.GatewayStatusAddress{{Type: ptrTo(gatewayv1.IPAddressType), Value: "192.0.2.10"}}},
		},
	}
}

func service(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

// route is HTTPRoute default/r attached to gw with one rule to web:80.
func route(mut ...func(*gatewayv1.HTTPRoute)) *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "r", Generation: 1},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: ptrTo(gatewayv1.PortNumber(80))},
			}}}}},
		},
	}
	for _, m := range mut {
		m(r)
	}
	return r
}

func withMatch(m gatewayv1.HTTPRouteMatch) func(*gatewayv1.HTTPRoute) {
	return func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{m} }
}

func pathMatch(t gatewayv1.PathMatchType, v string) gatewayv1.HTTPRouteMatch {
	return gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: ptrTo(t), Value: ptrTo(v)}}
}

func headerRegex(v string) gatewayv1.HTTPRouteMatch {
	return gatewayv1.HTTPRouteMatch{Headers: []gatewayv1.HTTPHeaderMatch{{
		Type: ptrTo(gatewayv1.HeaderMatchRegularExpression), Name: "x-tenant", Value: v,
	}}}
}

func routeCond(t *testing.T, out *Output, ns, name, typ string) string {
	t.Helper()
	ps := out.HTTPRouteStatus.At(types.NamespacedName{Namespace: ns, Name: name})
	if len(ps) == 0 {
		return "<no parent status>"
	}
	c := meta.FindStatusCondition(ps[0].Conditions, typ)
	if c == nil {
		return "<none>"
	}
	return string(c.Status) + "/" + c.Reason
}

func listenerCond(t *testing.T, out *Output, listener, typ string) string {
	t.Helper()
	st, ok := out.GatewayStatus[types.NamespacedName{Namespace: "default", Name: "gw"}]
	if !ok {
		return "<no gateway status>"
	}
	for _, l := range st.Listeners {
		if string(l.Name) == listener {
			c := meta.FindStatusCondition(l.Conditions, typ)
			if c == nil {
				return "<none>"
			}
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "<no listener " + listener + ">"
}

// envoyValid turns every IR Gateway into Envoy resources and validates them:
// whatever the input, what we would publish must be valid.
func envoyValid(t *testing.T, out *Output) []*xdstranslate.Resources {
	t.Helper()
	var all []*xdstranslate.Resources
	for _, gw := range out.Gateways {
		res, err := xdstranslate.Translate(gw)
		if err != nil {
			t.Fatalf("xds translate %s/%s: %v", gw.Namespace, gw.Name, err)
		}
		if err := xdstranslate.Validate(res); err != nil {
			t.Fatalf("xds validate %s/%s: %v", gw.Namespace, gw.Name, err)
		}
		if err := xdstranslate.CheckReferences(res); err != nil {
			t.Fatalf("xds references %s/%s: %v", gw.Namespace, gw.Name, err)
		}
		all = append(all, res)
	}
	return all
}

// irRoutes lists every route of every virtual host of the Gateway's IR.
func irRoutes(out *Output) []ir.Route {
	var rs []ir.Route
	for _, gw := range out.Gateways {
		for _, l := range gw.Listeners {
			for _, vh := range l.VirtualHosts {
				rs = append(rs, vh.Routes...)
			}
			for _, s := range l.TLSServers {
				for _, vh := range s.VirtualHosts {
					rs = append(rs, vh.Routes...)
				}
			}
		}
	}
	return rs
}

func irCluster(out *Output, name string) *ir.Cluster {
	for _, gw := range out.Gateways {
		for _, c := range gw.Clusters {
			if c.Name == name {
				return c
			}
		}
	}
	return nil
}

func TestHostileRoutes(t *testing.T) {
	hugePath := "/" + strings.Repeat("a", 16*1024)
	tests := []struct {
		name  string
		route *gatewayv1.HTTPRoute
		setup func(*Input)
		// Expected Accepted and ResolvedRefs of the route's first parent.
		accepted, resolved string
		check              func(t *testing.T, out *Output)
	}{
		{
			name: "route with 1000 hostnames",
			route: route(func(r *gatewayv1.HTTPRoute) {
				for i := range 1000 {
					r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(fmt.Sprintf("h%d.apps.test", i)))
				}
			}),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
			check: func(t *testing.T, out *Output) {
				domains := 0
				for _, l := range out.Gateways[0].Listeners {
					for _, vh := range l.VirtualHosts {
						if len(vh.Routes) > 0 {
							domains += len(vh.Domains)
						}
					}
				}
				if domains < 1000 {
					t.Fatalf("IR serves %d domains; want all 1000", domains)
				}
			},
		},
		{
			name:     "16k-character PathPrefix (CRD limit is 1024)",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchPathPrefix, hugePath))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
			check: func(t *testing.T, out *Output) {
				rs := irRoutes(out)
				if len(rs) != 1 || rs[0].Match.Path.Value != hugePath {
					t.Fatalf("want the one route with the 16k path, got %d routes", len(rs))
				}
			},
		},
		{
			name:     "16k-character Exact path",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchExact, hugePath))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
		},
		{
			name:     "path not starting with /",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchPathPrefix, "no-slash"))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
		},
		{
			name:     "invalid path regex: unbalanced parenthesis",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, "/(api"))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name:     "invalid path regex: backreference (not RE2)",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, `/(a)\1`))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name:     "invalid path regex: lookahead (not RE2)",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, `/(?=admin)`))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name:     "invalid path regex: repeat count over 1000",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, `/a{1001}`))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name:     "path regex too complex: nested repeats",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, `/((a{100}){100}){100}`))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name:     "path regex too complex: Unicode class repeated",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, `/\pL{100}`))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name:     "header regex too complex: three bounded repeats of 1000",
			route:    route(withMatch(headerRegex(`(a|b|c|d|e){0,1000}(a|b|c|d|e){0,1000}(a|b|c|d|e){0,1000}`))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name:     "valid regex larger than Envoy's default RE2 program size is kept",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, `/users/[a-f0-9]{24}/items/[a-f0-9]{24}`))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
		},
		{
			name:     "regex of cost 1003 is kept",
			route:    route(withMatch(pathMatch(gatewayv1.PathMatchRegularExpression, `/[a-z]{1000}`))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
		},
		{
			name:     "invalid header regex",
			route:    route(withMatch(headerRegex("[unclosed"))),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name: "one invalid regex rule among valid rules",
			route: route(func(r *gatewayv1.HTTPRoute) {
				good := r.Spec.Rules[0]
				bad := *good.DeepCopy()
				bad.Matches = []gatewayv1.HTTPRouteMatch{pathMatch(gatewayv1.PathMatchRegularExpression, "/(")}
				r.Spec.Rules = []gatewayv1.HTTPRouteRule{good, bad}
			}),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
			check: func(t *testing.T, out *Output) {
				ps := out.HTTPRouteStatus.At(types.NamespacedName{Namespace: "default", Name: "r"})
				if c := meta.FindStatusCondition(ps[0].Conditions, "PartiallyInvalid"); c == nil || c.Status != metav1.ConditionTrue {
					t.Fatalf("want PartiallyInvalid=True, got %v", ps[0].Conditions)
				}
				for _, r := range irRoutes(out) {
					if r.Match.Path != nil && r.Match.Path.Type == ir.MatchRegularExpression {
						t.Fatalf("invalid regex reached the IR: %q", r.Match.Path.Value)
					}
				}
			},
		},
		{
			name: "parentRef to another namespace's Gateway whose listener allows Same",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Namespace = "other"
				r.Spec.ParentRefs[0].Namespace = ptrTo(gatewayv1.Namespace("default"))
				r.Spec.Rules[0].BackendRefs = nil
			}),
			setup: func(in *Input) {
				in.Gateways[0].Spec.Listeners[0].AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromSame)}}
			},
			accepted: "False/NotAllowedByListeners", resolved: "True/ResolvedRefs",
			check: func(t *testing.T, out *Output) {
				if n := out.GatewayStatus[types.NamespacedName{Namespace: "default", Name: "gw"}].Listeners[0].AttachedRoutes; n != 0 {
					t.Fatalf("attachedRoutes = %d; want 0", n)
				}
			},
		},
		{
			name: "backendRef to another namespace's Service without ReferenceGrant",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Namespace = ptrTo(gatewayv1.Namespace("other"))
			}),
			setup:    func(in *Input) { in.Services = append(in.Services, service("other", "web")) },
			accepted: "True/Accepted", resolved: "False/RefNotPermitted",
			check: func(t *testing.T, out *Output) {
				if irCluster(out, "other/web/80") != nil {
					t.Fatal("the other namespace's Service became a cluster")
				}
			},
		},
		{
			name: "backendRef port 0 (CRD minimum is 1)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Port = ptrTo(gatewayv1.PortNumber(0))
			}),
			accepted: "True/Accepted", resolved: "False/BackendNotFound",
		},
		{
			name: "backendRef port 65536 (CRD maximum is 65535)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Port = ptrTo(gatewayv1.PortNumber(65536))
			}),
			accepted: "True/Accepted", resolved: "False/BackendNotFound",
		},
		{
			name: "backend weights summing past 2^32 (CRD maximum is 1000000 each)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				b := r.Spec.Rules[0].BackendRefs[0]
				b.Weight = ptrTo(int32(math.MaxInt32))
				b2, b3 := b, b
				b2.Name, b3.Name = "web2", "web3"
				r.Spec.Rules[0].BackendRefs = []gatewayv1.HTTPBackendRef{b, b2, b3}
			}),
			setup: func(in *Input) {
				in.Services = append(in.Services, service("default", "web2"), service("default", "web3"))
			},
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
			check: func(t *testing.T, out *Output) {
				// Envoy refuses weighted clusters summing past 2^32-1: the
				// weights must be scaled, keeping every backend.
				res := envoyValid(t, out)
				found := false
				for _, rc := range res[0].Routes {
					for _, vh := range rc.VirtualHosts {
						for _, r := range vh.Routes {
							wc := r.GetRoute().GetWeightedClusters()
							if wc == nil {
								continue
							}
							found = true
							var sum uint64
							for _, c := range wc.Clusters {
								if c.Weight.GetValue() == 0 {
									t.Fatalf("cluster %s lost its share", c.Name)
								}
								sum += uint64(c.Weight.GetValue())
							}
							if len(wc.Clusters) != 3 || sum > math.MaxUint32 {
								t.Fatalf("%d weighted clusters summing to %d; want 3 summing to at most 2^32-1", len(wc.Clusters), sum)
							}
						}
					}
				}
				if !found {
					t.Fatal("no weighted clusters in the Envoy routes")
				}
			},
		},
		{
			name: "negative backend weight",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Weight = ptrTo(int32(-5))
			}),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
		},
		{
			name: "route with 32 parentRefs to 32 listeners",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.ParentRefs = nil
				for i := range 32 {
					r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{Name: "gw", SectionName: ptrTo(gatewayv1.SectionName(fmt.Sprintf("l%d", i)))})
				}
			}),
			setup: func(in *Input) {
				in.Gateways[0].Spec.Listeners = nil
				for i := range 32 {
					in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{
						Name: gatewayv1.SectionName(fmt.Sprintf("l%d", i)), Port: 80, Protocol: gatewayv1.HTTPProtocolType,
						Hostname: ptrTo(gatewayv1.Hostname(fmt.Sprintf("l%d.example.test", i))),
					})
				}
			},
			accepted: "True/Accepted", resolved: "True/ResolvedRefs",
			check: func(t *testing.T, out *Output) {
				ps := out.HTTPRouteStatus.At(types.NamespacedName{Namespace: "default", Name: "r"})
				if len(ps) != 32 {
					t.Fatalf("%d parent entries; want 32", len(ps))
				}
				for _, p := range ps {
					if c := meta.FindStatusCondition(p.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionTrue {
						t.Fatalf("parent %v not accepted", *p.ParentRef.SectionName)
					}
				}
			},
		},
		{
			name: "route to a Gateway of a nonexistent GatewayClass",
			setup: func(in *Input) {
				in.Gateways[0].Spec.GatewayClassName = "does-not-exist"
			},
			route:    route(),
			accepted: "<no parent status>", resolved: "<no parent status>",
			check: func(t *testing.T, out *Output) {
				if len(out.Gateways) != 0 || len(out.GatewayStatus) != 0 {
					t.Fatalf("a Gateway of an unknown class got IR or status: %d IR, %d status", len(out.Gateways), len(out.GatewayStatus))
				}
			},
		},
		{
			name: "route hostname \"*\" (CRD refuses it)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = []gatewayv1.Hostname{"*"}
			}),
			accepted: "False/NoMatchingListenerHostname", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name: "route hostname \"*.*.example.com\" (CRD refuses it)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = []gatewayv1.Hostname{"*.*.example.com"}
			}),
			accepted: "False/NoMatchingListenerHostname", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name: "route hostname over 253 characters (CRD refuses it)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + ".test")}
			}),
			accepted: "False/NoMatchingListenerHostname", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name: "route hostname with a null byte and a trailing dot (CRD refuses it)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = []gatewayv1.Hostname{"a\x00b.example.test", "EXAMPLE.test."}
			}),
			accepted: "False/NoMatchingListenerHostname", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
		{
			name: "empty route hostname (CRD refuses it)",
			route: route(func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = []gatewayv1.Hostname{""}
			}),
			accepted: "False/NoMatchingListenerHostname", resolved: "True/ResolvedRefs",
			check: noRoutes,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := hostileInput()
			if tt.setup != nil {
				tt.setup(in)
			}
			in.HTTPRoutes = append(in.HTTPRoutes, tt.route)
			out := Translate(in)
			if got := routeCond(t, out, tt.route.Namespace, tt.route.Name, "Accepted"); got != tt.accepted {
				t.Errorf("Accepted = %s; want %s (%v)", got, tt.accepted, maps.Collect(out.HTTPRouteStatus.All()))
			}
			if got := routeCond(t, out, tt.route.Namespace, tt.route.Name, "ResolvedRefs"); got != tt.resolved {
				t.Errorf("ResolvedRefs = %s; want %s", got, tt.resolved)
			}
			if tt.check != nil {
				tt.check(t, out)
			}
			envoyValid(t, out)
		})
	}
}

func noRoutes(t *testing.T, out *Output) {
	t.Helper()
	if rs := irRoutes(out); len(rs) != 0 {
		t.Fatalf("a refused route reached the IR: %+v", rs[0].Match)
	}
}

// tlsPEM returns the golden test certificate and key.
func tlsPEM(t *testing.T) ([]byte, []byte) {
	t.Helper()
	crt, err := os.ReadFile("testdata/tls.crt")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("testdata/tls.key")
	if err != nil {
		t.Fatal(err)
	}
	return crt, key
}

func otherKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func TestHostileGateways(t *testing.T) {
	crt, key := tlsPEM(t)
	httpsListener := func(in *Input, secretNS string) {
		ref := gatewayv1.SecretObjectReference{Name: "cert"}
		if secretNS != "" {
			ref.Namespace = ptrTo(gatewayv1.Namespace(secretNS))
		}
		in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{
			Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
			TLS: &gatewayv1.ListenerTLSConfig{Mode: ptrTo(gatewayv1.TLSModeTerminate), CertificateRefs: []gatewayv1.SecretObjectReference{ref}},
		})
	}
	secret := func(ns string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert"}, Type: typ, Data: data}
	}
	tests := []struct {
		name  string
		setup func(*Input)
		// listener name → "Type=Status/Reason" conditions it must have
		want  map[string][]string
		check func(t *testing.T, out *Output)
	}{
		{
			name: "64 listeners on one port",
			setup: func(in *Input) {
				in.Gateways[0].Spec.Listeners = nil
				for i := range 64 {
					in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{
						Name: gatewayv1.SectionName(fmt.Sprintf("l%d", i)), Port: 80, Protocol: gatewayv1.HTTPProtocolType,
						Hostname: ptrTo(gatewayv1.Hostname(fmt.Sprintf("l%d.example.test", i))),
					})
				}
			},
			want: map[string][]string{"l0": {"Accepted=True/Accepted", "Conflicted=False/NoConflicts"}, "l63": {"Accepted=True/Accepted", "Conflicted=False/NoConflicts", "Programmed=True/Programmed"}},
			check: func(t *testing.T, out *Output) {
				if n := len(out.GatewayStatus[types.NamespacedName{Namespace: "default", Name: "gw"}].Listeners); n != 64 {
					t.Fatalf("%d listener statuses; want 64", n)
				}
				if n := len(out.Gateways[0].Listeners); n != 1 {
					t.Fatalf("%d IR listeners; want 1 (one port)", n)
				}
			},
		},
		{
			name: "64 listeners on 64 ports",
			setup: func(in *Input) {
				in.Gateways[0].Spec.Listeners = nil
				for i := range 64 {
					in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{
						Name: gatewayv1.SectionName(fmt.Sprintf("l%d", i)), Port: gatewayv1.PortNumber(8000 + i), Protocol: gatewayv1.HTTPProtocolType,
					})
				}
			},
			want: map[string][]string{"l0": {"Accepted=True/Accepted", "Programmed=True/Programmed"}, "l63": {"Accepted=True/Accepted", "Programmed=True/Programmed"}},
			check: func(t *testing.T, out *Output) {
				if n := len(out.Gateways[0].Listeners); n != 64 {
					t.Fatalf("%d IR listeners; want 64", n)
				}
			},
		},
		{
			name: "duplicate listener names (CRD refuses them)",
			setup: func(in *Input) {
				in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{Name: "http", Port: 81, Protocol: gatewayv1.HTTPProtocolType})
			},
			check: func(t *testing.T, out *Output) {
				st := out.GatewayStatus[types.NamespacedName{Namespace: "default", Name: "gw"}]
				if len(st.Listeners) != 2 {
					t.Fatalf("%d listener statuses; want one per listener (2)", len(st.Listeners))
				}
			},
		},
		{
			name: "certificateRef to another namespace's Secret without ReferenceGrant",
			setup: func(in *Input) {
				httpsListener(in, "other")
				in.Secrets = append(in.Secrets, secret("other", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": crt, "tls.key": key}))
			},
			want:  map[string][]string{"https": {"ResolvedRefs=False/RefNotPermitted", "Programmed=False/Invalid"}, "http": {"Programmed=True/Programmed"}},
			check: noSecrets,
		},
		{
			name: "Opaque Secret as certificate",
			setup: func(in *Input) {
				httpsListener(in, "")
				in.Secrets = append(in.Secrets, secret("default", corev1.SecretTypeOpaque, map[string][]byte{"tls.crt": crt, "tls.key": key}))
			},
			want:  map[string][]string{"https": {"ResolvedRefs=False/InvalidCertificateRef", "Programmed=False/Invalid"}},
			check: noSecrets,
		},
		{
			name: "kubernetes.io/tls Secret with garbage PEM",
			setup: func(in *Input) {
				httpsListener(in, "")
				in.Secrets = append(in.Secrets, secret("default", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n"), "tls.key": []byte("\x00\x01garbage")}))
			},
			want:  map[string][]string{"https": {"ResolvedRefs=False/InvalidCertificateRef"}},
			check: noSecrets,
		},
		{
			name: "kubernetes.io/tls Secret whose key does not match the certificate",
			setup: func(in *Input) {
				httpsListener(in, "")
				in.Secrets = append(in.Secrets, secret("default", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": crt, "tls.key": otherKeyPEM(t)}))
			},
			want:  map[string][]string{"https": {"ResolvedRefs=False/InvalidCertificateRef"}},
			check: noSecrets,
		},
		{
			name: "kubernetes.io/tls Secret with no data",
			setup: func(in *Input) {
				httpsListener(in, "")
				in.Secrets = append(in.Secrets, secret("default", corev1.SecretTypeTLS, nil))
			},
			want:  map[string][]string{"https": {"ResolvedRefs=False/InvalidCertificateRef"}},
			check: noSecrets,
		},
		{
			name: "valid TLS Secret (control)",
			setup: func(in *Input) {
				httpsListener(in, "")
				in.Secrets = append(in.Secrets, secret("default", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": crt, "tls.key": key}))
			},
			want: map[string][]string{"https": {"ResolvedRefs=True/ResolvedRefs", "Programmed=True/Programmed"}},
			check: func(t *testing.T, out *Output) {
				if len(out.Gateways[0].Secrets) != 1 {
					t.Fatalf("%d secrets in the IR; want 1", len(out.Gateways[0].Secrets))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := hostileInput()
			tt.setup(in)
			out := Translate(in)
			for l, conds := range tt.want {
				for _, c := range conds {
					typ, want, _ := strings.Cut(c, "=")
					if got := listenerCond(t, out, l, typ); got != want {
						t.Errorf("listener %s %s = %s; want %s", l, typ, got, want)
					}
				}
			}
			if tt.check != nil {
				tt.check(t, out)
			}
			envoyValid(t, out)
		})
	}
}

func noSecrets(t *testing.T, out *Output) {
	t.Helper()
	for _, gw := range out.Gateways {
		if len(gw.Secrets) != 0 {
			t.Fatalf("an unusable Secret reached the IR: %s", gw.Secrets[0].Name)
		}
	}
}
