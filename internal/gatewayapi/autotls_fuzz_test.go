/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
)

// sortedShards lists the shards of m in order (map order must not
// decide the draws).
func sortedShards(m map[types.NamespacedName]ShardRoutes) []types.NamespacedName {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// interleaved returns every other byte of b, from the second.
func interleaved(b []byte) []byte {
	out := make([]byte, 0, len(b)/2)
	for i := 1; i < len(b); i += 2 {
		out = append(out, b[i])
	}
	return out
}

// addAutoTLS makes the fuzz input's GatewayParameters turn on automatic
// HTTPS (a domain from a small pool, redirectHTTP or not), some of its
// Gateways shards, some routes generated ones holding some of their names
// (example.com among them, which the test certificate lists), with their
// certificate Secrets (valid, of another type, or with the other
// certificate's key), and an ACME solver-shaped route or two, well formed or
// not. It draws from its own choices, so the rest of a fuzz input stays
// what it was.
func addAutoTLS(c *choices, in *Input, cert, key []byte) {
	if !c.bool() {
		return
	}
	// Parameters "p" with automatic HTTPS in every namespace, named by
	// most Gateways.
	in.GatewayParameters = nil
	for _, ns := range fzNamespaces {
		in.GatewayParameters = append(in.GatewayParameters, &shardgatev1alpha1.GatewayParameters{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
			Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: pick(c, []string{"x.test", "example.com", "foo.example.com", ""}),
				TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "le"}, RedirectHTTP: c.n(3) > 0}}}})
	}
	for _, gw := range in.Gateways {
		if c.n(3) > 0 {
			gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: "p"}}
		}
	}
	// A shard as providers make them: a hostless HTTP listener, and on
	// 443 the provider's wildcard HTTPS listener, a TLS one, or nothing.
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}
	shard := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shard", Generation: 1}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: "shardgate",
		Infrastructure:   &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: "p"}},
		Listeners:        []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: all}}}}
	switch c.n(4) {
	case 0:
		shard.Spec.Listeners = append(shard.Spec.Listeners, gatewayv1.Listener{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
			Hostname: ptrTo(gatewayv1.Hostname("*.example.com")), AllowedRoutes: all,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}})
	case 1:
		shard.Spec.Listeners = append(shard.Spec.Listeners, gatewayv1.Listener{Name: "tls", Port: 443, Protocol: gatewayv1.TLSProtocolType, AllowedRoutes: all,
			TLS: &gatewayv1.ListenerTLSConfig{Mode: ptrTo(gatewayv1.TLSModePassthrough)}})
	}
	in.Gateways = append(in.Gateways, shard)
	in.Runtime[nn("default", "shard")] = GatewayRuntime{Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.9"}}}
	o := &Ownership{Shards: map[types.NamespacedName]ShardRoutes{}, Generated: map[types.NamespacedName]GeneratedRoute{},
		NamespaceOwners: map[string]string{}, Holders: map[string]string{}}
	for _, gw := range in.Gateways {
		if c.n(3) > 0 {
			o.Shards[nn(gw.Namespace, gw.Name)] = pick(c, []ShardRoutes{RoutesGenerated, RoutesOwned})
		}
	}
	for _, ns := range fzNamespaces {
		if c.bool() {
			o.NamespaceOwners[ns] = pick(c, []string{"alice", "bob"})
		}
	}
	for _, r := range in.HTTPRoutes {
		if c.bool() {
			r.Spec.Hostnames = append(r.Spec.Hostnames, "example.com")
		}
		if c.n(3) == 0 {
			continue
		}
		if c.n(4) > 0 {
			r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{Name: "shard", Namespace: ptrTo(gatewayv1.Namespace("default"))})
		}
		g := GeneratedRoute{LeaseHost: "lh", Unowned: true, Hosts: map[types.NamespacedName][]string{}}
		if c.bool() {
			g.Unowned = false
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: "lh", UID: "lh", Controller: ptrTo(true)}}
		}
		for _, sh := range sortedShards(o.Shards) {
			for _, h := range r.Spec.Hostnames {
				if c.n(4) > 0 {
					g.Hosts[sh] = append(g.Hosts[sh], strings.ToLower(string(h)))
					o.Holders[strings.ToLower(string(h))] = pick(c, []string{"alice", "bob"})
				}
			}
		}
		o.Generated[nn(r.Namespace, r.Name)] = g
		for _, h := range r.Spec.Hostnames {
			if c.n(4) == 0 {
				continue
			}
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: autotls.SecretName(string(h))}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}
			switch c.n(6) {
			case 0:
				s.Type = corev1.SecretTypeOpaque
			case 1:
				s.Data[corev1.TLSPrivateKeyKey] = cert
			}
			in.Secrets = append(in.Secrets, s)
		}
	}
	for i := c.n(3); i > 0; i-- {
		path := pick(c, []string{"/.well-known/acme-challenge/t", "/.well-known/acme-challenge/", "/.well-known/", "/"})
		typ := pick(c, []gatewayv1.PathMatchType{gatewayv1.PathMatchExact, gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchRegularExpression})
		gw := pick(c, append([]string{"shard"}, fzGateways...))
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: pick(c, fzNamespaces), Name: pick(c, []string{"solver-a", "solver-b"}), Generation: 1},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw), Namespace: ptrTo(gatewayv1.Namespace(pick(c, fzNamespaces)))}}},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(pick(c, []string{"example.com", "foo.example.com", "*.example.com"}))},
				Rules: []gatewayv1.HTTPRouteRule{{
					Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &typ, Value: &path}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
						Name: gatewayv1.ObjectName(pick(c, fzServices)), Port: ptrTo(gatewayv1.PortNumber(80))}}}},
				}},
			}}
		in.HTTPRoutes = append(in.HTTPRoutes, r)
	}
	in.Ownership = o
}

// TestFuzzAutoTLSReachesItsCases: the fuzz inputs addAutoTLS makes do
// reach per-name servers, redirects and admitted solver routes (else the
// fuzzer would not exercise them), and each translates deterministically
// with every reference resolved.
func TestFuzzAutoTLSReachesItsCases(t *testing.T) {
	cert, key := readTestCert(t)
	r := rand.New(rand.NewPCG(39, 1))
	servers, redirects, solvers := 0, 0, 0
	for range 1500 {
		data := make([]byte, 64+r.IntN(400))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		in := fuzzInput(data, cert, key)
		addAutoTLS(&choices{b: interleaved(data)}, in, cert, key)
		out := Translate(in)
		if !reflect.DeepEqual(bare(out), bare(Translate(in))) {
			t.Fatal("Translate is not deterministic")
		}
		checkReferences(t, out)
		for _, g := range out.Gateways {
			for _, l := range g.Listeners {
				for _, s := range l.TLSServers {
					if strings.HasPrefix(s.Name, autoTLSPrefix) {
						servers++
					}
				}
				for _, vh := range l.VirtualHosts {
					for _, rt := range vh.Routes {
						if strings.HasPrefix(rt.Name, "auto-tls-redirect/") {
							redirects++
						}
						if strings.Contains(rt.Name, "/solver-") {
							solvers++
						}
					}
				}
			}
		}
	}
	t.Logf("per-name servers %d, redirects %d, solver routes served %d", servers, redirects, solvers)
	if servers == 0 || redirects == 0 || solvers == 0 {
		t.Fatalf("the fuzz inputs never reach a case: servers %d, redirects %d, solver routes %d", servers, redirects, solvers)
	}
}

func readTestCert(t *testing.T) (cert, key []byte) {
	cert, err := os.ReadFile("testdata/tls.crt")
	if err != nil {
		t.Fatal(err)
	}
	key, err = os.ReadFile("testdata/tls.key")
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
