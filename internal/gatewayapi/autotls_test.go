/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/testcert"
)

// Automatic HTTPS fixtures: shard infra/shard (GatewayParameters with
// domain apps.example.test and spec.shard.tls) with a hostless HTTP
// listener on 80; alice (namespace tenant-a) holds shop.example.test
// (route tenant-a/shop) and blog.apps.example.test (route tenant-a/blog,
// under the shard's domain); bob (tenant-b) holds bob.example.test
// (route tenant-b/web). Each held name outside the domain has its
// certificate Secret.

var autoGW = types.NamespacedName{Namespace: "infra", Name: "shard"}

const (
	shopHost = "shop.example.test"
	blogHost = "blog.apps.example.test"
	bobHost  = "bob.example.test"
)

var certCache sync.Map // hosts joined → [2][]byte

// certPEM returns a self-signed certificate and key for the DNS names.
func certPEM(t testing.TB, names ...string) (crt, key []byte) {
	t.Helper()
	k := strings.Join(names, ",")
	if v, ok := certCache.Load(k); ok {
		p := v.([2][]byte)
		return p[0], p[1]
	}
	crt, key = testcert.Pair(t, names...)
	certCache.Store(k, [2][]byte{crt, key})
	return crt, key
}

// autoSecret is the automatic HTTPS Secret of host in ns, with a
// certificate for names (host when none given).
func autoSecret(t testing.TB, ns, host string, names ...string) *corev1.Secret {
	if len(names) == 0 {
		names = []string{host}
	}
	crt, key := certPEM(t, names...)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: autotls.SecretName(host), ResourceVersion: "1"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key},
	}
}

// generatedRoute is a route as shardgate generates it for a LeaseHost
// (UID uid): one parentRef to the shard, without sectionName.
func generatedRoute(ns, name string, uid types.UID, hosts ...string) *gatewayv1.HTTPRoute {
	r := route(func(r *gatewayv1.HTTPRoute) {
		r.Namespace, r.Name = ns, name
		r.CreationTimestamp = metav1.Unix(100, 0)
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Namespace: ptrTo(gatewayv1.Namespace(autoGW.Namespace)), Name: gatewayv1.ObjectName(autoGW.Name)}}
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptrTo(gatewayv1.PathMatchPathPrefix), Value: ptrTo("/")}}}
		for _, h := range hosts {
			r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
		}
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: name, UID: uid, Controller: ptrTo(true)}}
	})
	return r
}

func autoTLSInput(t testing.TB, mode ShardRoutes, redirect bool) *Input {
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}
	in := hostileInput()
	in.Gateways = []*gatewayv1.Gateway{{
		ObjectMeta: metav1.ObjectMeta{Namespace: autoGW.Namespace, Name: autoGW.Name, Generation: 1},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: "shardgate.io", Kind: "GatewayParameters", Name: "shard"}},
			Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: all}},
		},
	}}
	in.GatewayParameters = []*shardgatev1alpha1.GatewayParameters{{
		ObjectMeta: metav1.ObjectMeta{Namespace: autoGW.Namespace, Name: "shard", Generation: 1},
		Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{
			Domain: "apps.example.test",
			TLS:    &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "letsencrypt"}, RedirectHTTP: redirect},
		}},
	}}
	in.Namespaces = append(in.Namespaces,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: aliceNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bobNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra"}})
	in.Services = append(in.Services, service(aliceNS, "web"), service(bobNS, "web"))
	in.HTTPRoutes = []*gatewayv1.HTTPRoute{
		generatedRoute(aliceNS, "shop", "uid-shop", shopHost),
		generatedRoute(aliceNS, "blog", "uid-blog", blogHost),
		generatedRoute(bobNS, "web", "uid-bob", bobHost),
	}
	in.Secrets = []*corev1.Secret{autoSecret(t, aliceNS, shopHost), autoSecret(t, aliceNS, blogHost), autoSecret(t, bobNS, bobHost)}
	in.Runtime = map[types.NamespacedName]GatewayRuntime{autoGW: {Addresses: []gatewayv1.GatewayStatusAddress{{Type: ptrTo(gatewayv1.IPAddressType), Value: "192.0.2.10"}}}}
	in.Ownership = &Ownership{
		Shards: map[types.NamespacedName]ShardRoutes{autoGW: mode},
		Generated: map[types.NamespacedName]GeneratedRoute{
			{Namespace: aliceNS, Name: "shop"}: {LeaseHost: "uid-shop", Hosts: map[types.NamespacedName][]string{autoGW: {shopHost}}},
			{Namespace: aliceNS, Name: "blog"}: {LeaseHost: "uid-blog", Hosts: map[types.NamespacedName][]string{autoGW: {blogHost}}},
			{Namespace: bobNS, Name: "web"}:    {LeaseHost: "uid-bob", Hosts: map[types.NamespacedName][]string{autoGW: {bobHost}}},
		},
		NamespaceOwners: map[string]string{aliceNS: "akash1alice", bobNS: "akash1bob"},
		Holders:         map[string]string{shopHost: "akash1alice", blogHost: "akash1alice", bobHost: "akash1bob"},
	}
	return in
}

// irOf is gw's IR in out, or nil.
func irOf(out *Output, gw types.NamespacedName) *ir.Gateway {
	for _, g := range out.Gateways {
		if g.Namespace == gw.Namespace && g.Name == gw.Name {
			return g
		}
	}
	return nil
}

// listenerOf is gw's IR listener on port, or nil.
func listenerOf(g *ir.Gateway, port int32) *ir.Listener {
	if g == nil {
		return nil
	}
	for i := range g.Listeners {
		if g.Listeners[i].Port == port {
			return &g.Listeners[i]
		}
	}
	return nil
}

// https443 lists "<server> sni=<sni> cert=<certs> <vhost>:<route sources>" for port 443.
func https443(out *Output) []string {
	l := listenerOf(irOf(out, autoGW), 443)
	if l == nil {
		return nil
	}
	var got []string
	for _, s := range l.TLSServers {
		var certs []string
		for _, c := range s.Certificates {
			certs = append(certs, c.Name)
		}
		var vhs []string
		for _, vh := range s.VirtualHosts {
			var srcs []string
			for _, r := range vh.Routes {
				srcs = append(srcs, r.Source.Kind+":"+r.Source.Namespace+"/"+r.Source.Name)
			}
			vhs = append(vhs, vh.Name+"="+strings.Join(srcs, ","))
		}
		got = append(got, s.Name+" sni="+strings.Join(s.SNI, ",")+" cert="+strings.Join(certs, ",")+" "+strings.Join(vhs, " "))
	}
	return got
}

func TestAutoTLSServesHeldNamesOn443(t *testing.T) {
	in := autoTLSInput(t, RoutesGenerated, false)
	out := Translate(in)
	want := []string{
		"auto-tls/bob.example.test sni=bob.example.test cert=tenant-b/shardgate-tls.bob.example.test *=Gateway:infra/shard bob.example.test=HTTPRoute:tenant-b/web",
		"auto-tls/shop.example.test sni=shop.example.test cert=tenant-a/shardgate-tls.shop.example.test *=Gateway:infra/shard shop.example.test=HTTPRoute:tenant-a/shop",
	}
	if got := https443(out); !slices.Equal(got, want) {
		t.Fatalf("port 443:\n got %q\nwant %q", got, want)
	}
	g := irOf(out, autoGW)
	var secrets []string
	for _, s := range g.Secrets {
		secrets = append(secrets, s.Name)
	}
	if want := []string{"tenant-a/shardgate-tls.shop.example.test", "tenant-b/shardgate-tls.bob.example.test"}; !slices.Equal(secrets, want) {
		t.Fatalf("IR secrets %q, want %q (none for the name under the shard's domain)", secrets, want)
	}
	// The per-name listeners are not the Gateway's: its status lists its
	// own listener, with the same attached routes as without automatic
	// HTTPS.
	st := out.GatewayStatus[autoGW]
	noTLS := autoTLSInput(t, RoutesGenerated, false)
	noTLS.GatewayParameters[0].Spec.Shard.TLS = nil
	before := Translate(noTLS)
	if https443(before) != nil {
		t.Fatal("a shard without spec.shard.tls serves 443")
	}
	if len(st.Listeners) != 1 || st.Listeners[0].Name != "http" || st.Listeners[0].AttachedRoutes != before.GatewayStatus[autoGW].Listeners[0].AttachedRoutes {
		t.Fatalf("Gateway status listeners %+v, want only http with %d routes", st.Listeners, before.GatewayStatus[autoGW].Listeners[0].AttachedRoutes)
	}
	for _, c := range st.Conditions {
		if c.Status != metav1.ConditionTrue {
			t.Fatalf("Gateway condition %s=%s %s", c.Type, c.Status, c.Message)
		}
	}
	for _, name := range []string{"shop", "blog"} {
		if got := parentOf(out, kindHTTPRoute, aliceNS, name, autoGW); got != "True/Accepted" {
			t.Fatalf("route %s: %s", name, got)
		}
	}
}

// TestAutoTLSServesOnlyValidCertificatesOfHeldNames: every way a name may
// fail to get its 443 server.
func TestAutoTLSServesOnlyValidCertificatesOfHeldNames(t *testing.T) {
	shopOnly := []string{"auto-tls/bob.example.test"}
	cases := []struct {
		name string
		edit func(*Input)
		want []string // the server names on 443
	}{
		{"as is", func(*Input) {}, []string{"auto-tls/bob.example.test", "auto-tls/shop.example.test"}},
		{"no Secret", func(in *Input) { in.Secrets = in.Secrets[1:] }, shopOnly},
		{"Secret of another type", func(in *Input) { in.Secrets[0].Type = corev1.SecretTypeOpaque }, shopOnly},
		{"Secret without key", func(in *Input) { delete(in.Secrets[0].Data, corev1.TLSPrivateKeyKey) }, shopOnly},
		{"key of another certificate", func(in *Input) {
			_, other := certPEM(t, "other.example.test")
			in.Secrets[0].Data[corev1.TLSPrivateKeyKey] = other
		}, shopOnly},
		{"certificate for another name", func(in *Input) { in.Secrets[0] = autoSecret(t, aliceNS, shopHost, "www.example.test") }, shopOnly},
		{"wildcard certificate covering the name", func(in *Input) { in.Secrets[0] = autoSecret(t, aliceNS, shopHost, "*.example.test") }, shopOnly},
		{"certificate with the name among others", func(in *Input) { in.Secrets[0] = autoSecret(t, aliceNS, shopHost, "a.example.test", shopHost) },
			[]string{"auto-tls/bob.example.test", "auto-tls/shop.example.test"}},
		{"Secret in another namespace", func(in *Input) { in.Secrets[0] = autoSecret(t, bobNS, shopHost) }, shopOnly},
		{"name no longer held (revoked)", func(in *Input) {
			in.Ownership.Generated[nn(aliceNS, "shop")] = GeneratedRoute{LeaseHost: "uid-shop", Hosts: map[types.NamespacedName][]string{}}
		}, shopOnly},
		{"name held on another shard", func(in *Input) {
			in.Ownership.Generated[nn(aliceNS, "shop")] = GeneratedRoute{LeaseHost: "uid-shop",
				Hosts: map[types.NamespacedName][]string{{Namespace: "infra", Name: "other"}: {shopHost}}}
		}, shopOnly},
		{"route not generated (forged controller)", func(in *Input) { in.HTTPRoutes[0].OwnerReferences[0].UID = "forged" }, shopOnly},
		{"route does not list the name", func(in *Input) { in.HTTPRoutes[0].Spec.Hostnames = []gatewayv1.Hostname{"else.example.test"} }, shopOnly},
		{"no spec.shard.tls", func(in *Input) { in.GatewayParameters[0].Spec.Shard.TLS = nil }, nil},
		{"not a shard", func(in *Input) { in.Ownership.Shards = map[types.NamespacedName]ShardRoutes{} }, nil},
		{"443 taken by a TLS listener", func(in *Input) {
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{Name: "tls", Port: 443, Protocol: gatewayv1.TLSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptrTo(gatewayv1.TLSModePassthrough)}})
		}, nil},
		{"443 listener with the name", func(in *Input) {
			crt, key := certPEM(t, shopHost)
			in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "shop-cert"}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}})
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{Name: "shop", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
				Hostname: ptrTo(gatewayv1.Hostname(shopHost)), AllowedRoutes: in.Gateways[0].Spec.Listeners[0].AllowedRoutes,
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "shop-cert"}}}})
		}, []string{"auto-tls/bob.example.test", "shop"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := autoTLSInput(t, RoutesGenerated, false)
			c.edit(in)
			out := Translate(in)
			var got []string
			if l := listenerOf(irOf(out, autoGW), 443); l != nil {
				for _, s := range l.TLSServers {
					got = append(got, s.Name)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("443 servers %q, want %q", got, c.want)
			}
			for _, l := range out.GatewayStatus[autoGW].Listeners {
				if strings.HasPrefix(string(l.Name), autoTLSPrefix) {
					t.Fatalf("Gateway status lists %s", l.Name)
				}
			}
		})
	}
}

// TestAutoTLSKeepsTheListenersAllowedRoutes: a per-name listener takes
// only the routes a listener of the Gateway allows: with the HTTP
// listener open to bob's namespace alone, alice's name keeps its server
// but serves no route of hers (404, and 421 for other hosts).
func TestAutoTLSKeepsTheListenersAllowedRoutes(t *testing.T) {
	in := autoTLSInput(t, RoutesGenerated, false)
	in.Gateways[0].Spec.Listeners[0].AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptrTo(gatewayv1.NamespacesFromSelector),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "bob"}}}}
	for _, ns := range in.Namespaces {
		if ns.Name == bobNS {
			ns.Labels = map[string]string{"team": "bob"}
		}
	}
	want := []string{
		"auto-tls/bob.example.test sni=bob.example.test cert=tenant-b/shardgate-tls.bob.example.test *=Gateway:infra/shard bob.example.test=HTTPRoute:tenant-b/web",
		"auto-tls/shop.example.test sni=shop.example.test cert=tenant-a/shardgate-tls.shop.example.test *=Gateway:infra/shard shop.example.test=",
	}
	out := Translate(in)
	if got := https443(out); !slices.Equal(got, want) {
		t.Fatalf("port 443:\n got %q\nwant %q", got, want)
	}
	if got := parentOf(out, kindHTTPRoute, aliceNS, "shop", autoGW); got != "False/"+string(gatewayv1.RouteReasonNotAllowedByListeners) {
		t.Fatalf("alice's route: %s", got)
	}
}

// TestAutoTLSJoinsTheShardsHTTPSListener: with the provider's wildcard
// HTTPS listener on 443, the per-name servers join its port; the
// wildcard listener keeps its status and its own server.
func TestAutoTLSJoinsTheShardsHTTPSListener(t *testing.T) {
	in := autoTLSInput(t, RoutesGenerated, false)
	crt, key := certPEM(t, "*.apps.example.test")
	in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "wildcard"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}})
	gw := in.Gateways[0]
	gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{Name: "apps-https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
		Hostname: ptrTo(gatewayv1.Hostname("*.apps.example.test")), AllowedRoutes: gw.Spec.Listeners[0].AllowedRoutes,
		TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "wildcard"}}}})
	out := Translate(in)
	want := []string{
		"auto-tls/bob.example.test sni=bob.example.test cert=tenant-b/shardgate-tls.bob.example.test *=Gateway:infra/shard bob.example.test=HTTPRoute:tenant-b/web",
		"auto-tls/shop.example.test sni=shop.example.test cert=tenant-a/shardgate-tls.shop.example.test *=Gateway:infra/shard shop.example.test=HTTPRoute:tenant-a/shop",
		"apps-https sni=*.apps.example.test cert=infra/wildcard *=Gateway:infra/shard *.apps.example.test= blog.apps.example.test=HTTPRoute:tenant-a/blog",
	}
	if got := https443(out); !slices.Equal(got, want) {
		t.Fatalf("port 443:\n got %q\nwant %q", got, want)
	}
	ls := out.GatewayStatus[autoGW].Listeners
	if len(ls) != 2 || ls[1].Name != "apps-https" || ls[1].AttachedRoutes != 1 {
		t.Fatalf("listener status %+v", ls)
	}
}

// httpRoutesOf lists "<match> <action>" of host's virtual host on port 80.
func httpRoutesOf(out *Output, host string) []string {
	l := listenerOf(irOf(out, autoGW), 80)
	if l == nil {
		return nil
	}
	var got []string
	for _, vh := range l.VirtualHosts {
		if vh.Name != host {
			continue
		}
		for _, r := range vh.Routes {
			m := string(r.Match.Path.Type) + ":" + r.Match.Path.Value
			switch {
			case r.Redirect != nil:
				got = append(got, m+" redirect "+r.Redirect.Scheme+":"+itoa(r.Redirect.Port)+" "+itoa(int32(r.Redirect.StatusCode)))
			default:
				got = append(got, m+" "+r.Source.Namespace+"/"+r.Source.Name)
			}
		}
	}
	return got
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// solverRoute is cert-manager's HTTP-01 solver route for host in ns, as
// cert-manager v1.21 writes it (pkg/issuer/acme/http/httproute.go).
func solverRoute(ns, name, host, token string) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.Unix(200, 0),
			Labels:          map[string]string{"acme.cert-manager.io/http01-solver": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "acme.cert-manager.io/v1", Kind: "Challenge", Name: name, UID: "uid-challenge", Controller: ptrTo(true)}}},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Group: ptrTo(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptrTo(gatewayv1.Kind("Gateway")),
				Namespace: ptrTo(gatewayv1.Namespace(autoGW.Namespace)), Name: gatewayv1.ObjectName(autoGW.Name), SectionName: ptrTo(gatewayv1.SectionName("http"))}}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptrTo(gatewayv1.PathMatchExact), Value: ptrTo("/.well-known/acme-challenge/" + token)}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
					Group: ptrTo(gatewayv1.Group("")), Kind: ptrTo(gatewayv1.Kind("Service")), Namespace: ptrTo(gatewayv1.Namespace(ns)),
					Name: gatewayv1.ObjectName("cm-acme-http-solver-x"), Port: ptrTo(gatewayv1.PortNumber(8089))}, Weight: ptrTo(int32(1))}}},
			}},
		},
	}
}

func TestAutoTLSRedirectsHTTP(t *testing.T) {
	in := autoTLSInput(t, RoutesGenerated, true)
	in.HTTPRoutes = append(in.HTTPRoutes, solverRoute(aliceNS, "cm-acme-http-solver-shop", shopHost, "tok"))
	in.Services = append(in.Services, service(aliceNS, "cm-acme-http-solver-x"))
	in.Services[len(in.Services)-1].Spec.Ports[0].Port = 8089
	out := Translate(in)
	if got, want := httpRoutesOf(out, shopHost), []string{
		"Exact:/.well-known/acme-challenge/tok tenant-a/cm-acme-http-solver-shop",
		// A challenge path the solver does not serve reaches what it
		// reached without the redirect.
		"PathPrefix:/.well-known/acme-challenge/ tenant-a/shop",
		"PathPrefix:/ redirect https:443 301",
	}; !slices.Equal(got, want) {
		t.Fatalf("port 80 %s:\n got %q\nwant %q", shopHost, got, want)
	}
	if got, want := httpRoutesOf(out, bobHost), []string{"PathPrefix:/.well-known/acme-challenge/ tenant-b/web", "PathPrefix:/ redirect https:443 301"}; !slices.Equal(got, want) {
		t.Fatalf("port 80 %s: got %q, want %q", bobHost, got, want)
	}
	// The name under the domain has no per-name server: not redirected.
	if got, want := httpRoutesOf(out, blogHost), []string{"PathPrefix:/ tenant-a/blog"}; !slices.Equal(got, want) {
		t.Fatalf("port 80 %s: got %q, want %q", blogHost, got, want)
	}
	// On 443 the name is served by its route.
	for _, s := range listenerOf(irOf(out, autoGW), 443).TLSServers {
		for _, vh := range s.VirtualHosts {
			for _, r := range vh.Routes {
				if r.Redirect != nil {
					t.Fatalf("443 server %s redirects", s.Name)
				}
			}
		}
	}

	// Without a certificate, no redirect; with redirectHTTP false, none.
	noCert := autoTLSInput(t, RoutesGenerated, true)
	noCert.Secrets = noCert.Secrets[1:]
	if got, want := httpRoutesOf(Translate(noCert), shopHost), []string{"PathPrefix:/ tenant-a/shop"}; !slices.Equal(got, want) {
		t.Fatalf("no certificate: port 80 %s: got %q, want %q", shopHost, got, want)
	}
	if got, want := httpRoutesOf(Translate(autoTLSInput(t, RoutesGenerated, false)), shopHost), []string{"PathPrefix:/ tenant-a/shop"}; !slices.Equal(got, want) {
		t.Fatalf("redirectHTTP false: port 80 %s: got %q, want %q", shopHost, got, want)
	}
}

// TestShardAdmitsACMESolverRoutesOnly: cert-manager's HTTP-01 solver
// routes are admitted on a shard, in either routes mode, for the names
// generated routes of their own namespace hold there, and only for paths
// under /.well-known/acme-challenge/; every forgery stays refused.
func TestShardAdmitsACMESolverRoutesOnly(t *testing.T) {
	notOwned := "False/" + shardgatev1alpha1.ReasonHostnameNotOwned
	solver := func(mut func(*gatewayv1.HTTPRoute)) func(*Input) string {
		return func(in *Input) string {
			r := solverRoute(aliceNS, "cm-acme-http-solver-x", shopHost, "tok")
			mut(r)
			in.HTTPRoutes = append(in.HTTPRoutes, r)
			return r.Namespace + "/" + r.Name
		}
	}
	path := func(typ gatewayv1.PathMatchType, v string) func(*gatewayv1.HTTPRoute) {
		return func(r *gatewayv1.HTTPRoute) {
			r.Spec.Rules[0].Matches[0].Path = &gatewayv1.HTTPPathMatch{Type: &typ, Value: &v}
		}
	}
	cases := []struct {
		name      string
		add       func(*Input) string
		generated string // Accepted status on a Generated shard
		owned     string // on an Owned shard
	}{
		{"cert-manager's solver route", solver(func(*gatewayv1.HTTPRoute) {}), "True/Accepted", "True/Accepted"},
		{"PathPrefix under the challenge path", solver(path(gatewayv1.PathMatchPathPrefix, "/.well-known/acme-challenge/")), "True/Accepted", "True/Accepted"},
		{"solver for a held name under the shard's domain", solver(func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = []gatewayv1.Hostname{blogHost} }), "True/Accepted", "True/Accepted"},
		{"forged for a name another tenant holds", func(in *Input) string {
			r := solverRoute(bobNS, "forged", shopHost, "tok")
			in.HTTPRoutes = append(in.HTTPRoutes, r)
			return bobNS + "/forged"
		}, notOwned, notOwned},
		{"forged in an unmarked namespace", func(in *Input) string {
			r := solverRoute("other", "forged", shopHost, "tok")
			in.HTTPRoutes = append(in.HTTPRoutes, r)
			return "other/forged"
		}, notOwned, notOwned},
		{"own name, Exact /", solver(path(gatewayv1.PathMatchExact, "/")), notOwned, "True/Accepted"},
		{"own name, PathPrefix /", solver(path(gatewayv1.PathMatchPathPrefix, "/")), notOwned, "True/Accepted"},
		{"own name, PathPrefix /.well-known/", solver(path(gatewayv1.PathMatchPathPrefix, "/.well-known/")), notOwned, "True/Accepted"},
		{"own name, challenge path without its slash", solver(path(gatewayv1.PathMatchPathPrefix, "/.well-known/acme-challenge")), notOwned, "True/Accepted"},
		{"own name, regular expression", solver(path(gatewayv1.PathMatchRegularExpression, "/.well-known/acme-challenge/.*")), notOwned, "True/Accepted"},
		{"own name, a rule without matches", solver(func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[0].Matches = nil }), notOwned, "True/Accepted"},
		{"own name, a second rule for /", solver(func(r *gatewayv1.HTTPRoute) {
			rule := *r.Spec.Rules[0].DeepCopy()
			rule.Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptrTo(gatewayv1.PathMatchPathPrefix), Value: ptrTo("/")}}}
			r.Spec.Rules = append(r.Spec.Rules, rule)
		}), notOwned, "True/Accepted"},
		{"own name, a filter", solver(func(r *gatewayv1.HTTPRoute) {
			r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x", Value: "y"}}}}}
		}), notOwned, "True/Accepted"},
		{"own name, a backend filter", solver(func(r *gatewayv1.HTTPRoute) {
			r.Spec.Rules[0].BackendRefs[0].Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x", Value: "y"}}}}}
		}), notOwned, "True/Accepted"},
		{"an extra hostname it does not hold", solver(func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = append(r.Spec.Hostnames, bobHost) }), notOwned, notOwned},
		{"no hostnames", solver(func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = nil }), notOwned, notOwned},
		{"a name held on another shard only", func(in *Input) string {
			in.Ownership.Generated[nn(aliceNS, "shop")] = GeneratedRoute{LeaseHost: "uid-shop",
				Hosts: map[types.NamespacedName][]string{{Namespace: "infra", Name: "other"}: {shopHost}}}
			return solver(func(*gatewayv1.HTTPRoute) {})(in)
		}, notOwned, "True/Accepted"},
	}
	for _, mode := range []ShardRoutes{RoutesGenerated, RoutesOwned} {
		for _, c := range cases {
			t.Run(string(mode)+"/"+c.name, func(t *testing.T) {
				in := autoTLSInput(t, mode, false)
				in.Services = append(in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: aliceNS, Name: "cm-acme-http-solver-x"},
					Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8089}}}})
				key := c.add(in)
				ns, name, _ := strings.Cut(key, "/")
				out := Translate(in)
				want := c.generated
				if mode == RoutesOwned {
					want = c.owned
				}
				if got := parentOf(out, kindHTTPRoute, ns, name, autoGW); got != want {
					t.Fatalf("%s on the %s shard: %s, want %s", key, mode, got, want)
				}
				servedHere := slices.ContainsFunc(served(out, autoGW), func(s string) bool { return strings.HasSuffix(s, " "+key) })
				if servedHere != (want == "True/Accepted") {
					t.Fatalf("%s served %v, want %v: %q", key, servedHere, want == "True/Accepted", served(out, autoGW))
				}
			})
		}
	}
}

// TestSolverRouteServedAheadOfTheGeneratedRoute: the real solver route's
// Exact challenge path comes before the generated route's PathPrefix /
// on the HTTP port, in Generated mode, without redirect.
func TestSolverRouteServedAheadOfTheGeneratedRoute(t *testing.T) {
	in := autoTLSInput(t, RoutesGenerated, false)
	in.Secrets = nil // issuance pending: no certificate yet
	in.HTTPRoutes = append(in.HTTPRoutes, solverRoute(aliceNS, "cm-acme-http-solver-shop", shopHost, "tok"))
	in.Services = append(in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: aliceNS, Name: "cm-acme-http-solver-x"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8089}}}})
	out := Translate(in)
	if got, want := httpRoutesOf(out, shopHost), []string{
		"Exact:/.well-known/acme-challenge/tok tenant-a/cm-acme-http-solver-shop",
		"PathPrefix:/ tenant-a/shop",
	}; !slices.Equal(got, want) {
		t.Fatalf("port 80 %s:\n got %q\nwant %q", shopHost, got, want)
	}
	if https443(out) != nil {
		t.Fatal("served on 443 without a certificate")
	}
}

// TestTranslatorAutoTLSMatchesTranslate: the events automatic HTTPS
// depends on (a certificate Secret appearing, renewed, broken, deleted;
// spec.shard.tls and redirectHTTP changing; a name revoked and given
// back, with and without an ownership delta; a new lease whose Secret is
// there already; an edit of a served route; a solver route coming and
// going) each leave the Translator's output equal to Translate's, and do
// what they should to port 443.
func TestTranslatorAutoTLSMatchesTranslate(t *testing.T) {
	servers := func(out *Output) []string {
		var got []string
		if l := listenerOf(irOf(out, autoGW), 443); l != nil {
			for _, s := range l.TLSServers {
				got = append(got, s.Name)
			}
		}
		return got
	}
	shop, bob := "auto-tls/"+shopHost, "auto-tls/"+bobHost
	gen := uint64(1)
	withParams := func(in *Input, f func(*shardgatev1alpha1.GatewayParameters)) {
		p := in.GatewayParameters[0].DeepCopy()
		p.Generation++
		f(p)
		in.GatewayParameters = []*shardgatev1alpha1.GatewayParameters{p}
	}
	// withSecret puts s in place of the Secret of its name (adds it);
	// without s, deletes the Secret of host in ns.
	withSecret := func(in *Input, ns, host string, s *corev1.Secret) {
		in.Secrets = slices.DeleteFunc(slices.Clone(in.Secrets), func(o *corev1.Secret) bool {
			return o.Namespace == ns && o.Name == autotls.SecretName(host)
		})
		if s != nil {
			in.Secrets = append(in.Secrets, s)
		}
	}
	withOwnership := func(in *Input, delta bool, f func(*Ownership)) {
		o := *in.Ownership
		o.Generated = maps.Clone(o.Generated)
		f(&o)
		o.Delta = nil
		if delta {
			o.Delta = &OwnershipDelta{Since: in.Ownership.Gen, Routes: []types.NamespacedName{{Namespace: aliceNS, Name: "shop"}}}
		}
		gen++
		o.Gen = gen
		in.Ownership = &o
	}
	revoke := func(o *Ownership) {
		o.Generated[nn(aliceNS, "shop")] = GeneratedRoute{LeaseHost: "uid-shop", Hosts: map[types.NamespacedName][]string{}}
	}
	restore := func(o *Ownership) {
		o.Generated[nn(aliceNS, "shop")] = GeneratedRoute{LeaseHost: "uid-shop", Hosts: map[types.NamespacedName][]string{autoGW: {shopHost}}}
	}
	steps := []struct {
		name string
		edit func(*Input)
		want []string
	}{
		{"start: bob's certificate only", func(in *Input) { withSecret(in, aliceNS, shopHost, nil) }, []string{bob}},
		{"shop's Secret appears", func(in *Input) { withSecret(in, aliceNS, shopHost, autoSecret(t, aliceNS, shopHost)) }, []string{bob, shop}},
		{"shop's certificate renewed", func(in *Input) {
			s := autoSecret(t, aliceNS, shopHost, shopHost, "renewed.example.test")
			withSecret(in, aliceNS, shopHost, s)
		}, []string{bob, shop}},
		{"shop's Secret broken", func(in *Input) {
			withSecret(in, aliceNS, shopHost, autoSecret(t, aliceNS, shopHost, "www.example.test"))
		}, []string{bob}},
		{"shop's Secret fixed", func(in *Input) { withSecret(in, aliceNS, shopHost, autoSecret(t, aliceNS, shopHost)) }, []string{bob, shop}},
		{"redirectHTTP on", func(in *Input) {
			withParams(in, func(p *shardgatev1alpha1.GatewayParameters) { p.Spec.Shard.TLS.RedirectHTTP = true })
		}, []string{bob, shop}},
		{"a solver route for shop", func(in *Input) {
			in.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), solverRoute(aliceNS, "cm-acme-http-solver-shop", shopHost, "tok"))
		}, []string{bob, shop}},
		{"shop revoked (delta)", func(in *Input) { withOwnership(in, true, revoke) }, []string{bob}},
		{"shop held again (delta)", func(in *Input) { withOwnership(in, true, restore) }, []string{bob, shop}},
		{"shop revoked (no delta)", func(in *Input) { withOwnership(in, false, revoke) }, []string{bob}},
		{"shop held again (no delta)", func(in *Input) { withOwnership(in, false, restore) }, []string{bob, shop}},
		{"shop's route edited", func(in *Input) {
			in.HTTPRoutes = slices.Clone(in.HTTPRoutes)
			r := in.HTTPRoutes[0].DeepCopy()
			r.Generation++
			r.Spec.Rules[0].Matches[0].Path.Value = ptrTo("/shop")
			in.HTTPRoutes[0] = r
		}, []string{bob, shop}},
		{"the solver route goes", func(in *Input) { in.HTTPRoutes = in.HTTPRoutes[:len(in.HTTPRoutes)-1] }, []string{bob, shop}},
		{"a new lease whose Secret is there", func(in *Input) {
			in.Secrets = append(slices.Clone(in.Secrets), autoSecret(t, "tenant-c", "carol.example.test"))
			in.Namespaces = append(slices.Clone(in.Namespaces), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-c"}})
			in.Services = append(slices.Clone(in.Services), service("tenant-c", "web"))
			in.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), generatedRoute("tenant-c", "web", "uid-carol", "carol.example.test"))
			withOwnership(in, false, func(o *Ownership) {
				o.Generated[nn("tenant-c", "web")] = GeneratedRoute{LeaseHost: "uid-carol", Hosts: map[types.NamespacedName][]string{autoGW: {"carol.example.test"}}}
			})
		}, []string{bob, "auto-tls/carol.example.test", shop}},
		{"redirectHTTP off", func(in *Input) {
			withParams(in, func(p *shardgatev1alpha1.GatewayParameters) { p.Spec.Shard.TLS.RedirectHTTP = false })
		}, []string{bob, "auto-tls/carol.example.test", shop}},
		{"spec.shard.tls removed", func(in *Input) {
			withParams(in, func(p *shardgatev1alpha1.GatewayParameters) { p.Spec.Shard.TLS = nil })
		}, nil},
		{"spec.shard.tls back", func(in *Input) {
			withParams(in, func(p *shardgatev1alpha1.GatewayParameters) {
				p.Spec.Shard.TLS = &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "letsencrypt"}}
			})
		}, []string{bob, "auto-tls/carol.example.test", shop}},
		{"bob's Secret deleted", func(in *Input) { withSecret(in, bobNS, bobHost, nil) }, []string{"auto-tls/carol.example.test", shop}},
		// Issuance pending: no Secret, a solver route; revoking the name
		// changes no listener (a patch), and the solver route goes too.
		{"shop's Secret deleted", func(in *Input) { withSecret(in, aliceNS, shopHost, nil) }, []string{"auto-tls/carol.example.test"}},
		{"a solver route for shop again", func(in *Input) {
			in.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), solverRoute(aliceNS, "cm-acme-http-solver-shop", shopHost, "tok2"))
		}, []string{"auto-tls/carol.example.test"}},
		{"shop revoked while pending (delta)", func(in *Input) { withOwnership(in, true, revoke) }, []string{"auto-tls/carol.example.test"}},
		{"shop held again while pending (no delta)", func(in *Input) { withOwnership(in, false, restore) }, []string{"auto-tls/carol.example.test"}},
		{"shop revoked while pending (no delta)", func(in *Input) { withOwnership(in, false, revoke) }, []string{"auto-tls/carol.example.test"}},
	}
	for seed := range 4 {
		r := mrand.New(mrand.NewPCG(uint64(seed), 39))
		in := autoTLSInput(t, []ShardRoutes{RoutesGenerated, RoutesOwned}[seed%2], false)
		in.Services = append(in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: aliceNS, Name: "cm-acme-http-solver-x"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8089}}}})
		in.Ownership.Gen = gen
		st := NewStore(testController)
		tr := NewTranslator(st)
		prev := &Input{}
		for i, s := range steps {
			next := *in
			s.edit(&next)
			applyShuffled(r, st, prev, &next)
			got, want := tr.Translate(FactsOf(&next)), Translate(&next)
			if !sameOutput(got, want) {
				t.Fatalf("seed %d step %d (%s): the Translator's output differs from Translate's:\n%s", seed, i, s.name, cmp.Diff(bare(want), bare(got)))
			}
			if g := servers(got); !slices.Equal(g, s.want) {
				t.Fatalf("seed %d step %d (%s): 443 servers %q, want %q", seed, i, s.name, g, s.want)
			}
			prev, in = &next, &next
		}
	}
}

// TestAutoTLSServesOwnedTenantRoutes: on an Owned shard, a tenant's own
// route for exactly a name it holds is served on that name's 443 server
// beside the generated route; another tenant's route for the name is
// refused and served nowhere.
func TestAutoTLSServesOwnedTenantRoutes(t *testing.T) {
	in := autoTLSInput(t, RoutesOwned, false)
	own := tenantRoute(aliceNS, "extra", autoGW, shopHost)
	own.Spec.ParentRefs[0].SectionName = nil
	own.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptrTo(gatewayv1.PathMatchPathPrefix), Value: ptrTo("/extra")}}}
	own.CreationTimestamp = metav1.Unix(300, 0)
	foreign := tenantRoute(bobNS, "steal", autoGW, shopHost)
	foreign.Spec.ParentRefs[0].SectionName = nil
	foreign.CreationTimestamp = metav1.Unix(1, 0)
	in.HTTPRoutes = append(in.HTTPRoutes, own, foreign)
	out := Translate(in)
	want := []string{
		"auto-tls/bob.example.test sni=bob.example.test cert=tenant-b/shardgate-tls.bob.example.test *=Gateway:infra/shard bob.example.test=HTTPRoute:tenant-b/web",
		"auto-tls/shop.example.test sni=shop.example.test cert=tenant-a/shardgate-tls.shop.example.test *=Gateway:infra/shard shop.example.test=HTTPRoute:tenant-a/extra,HTTPRoute:tenant-a/shop",
	}
	if got := https443(out); !slices.Equal(got, want) {
		t.Fatalf("port 443:\n got %q\nwant %q", got, want)
	}
	if got := parentOf(out, kindHTTPRoute, bobNS, "steal", autoGW); got != "False/"+shardgatev1alpha1.ReasonHostnameNotOwned {
		t.Fatalf("bob's route for alice's name: %s", got)
	}
}

func TestChallengeCopy(t *testing.T) {
	prefix := func(v string) *ir.PathMatch { return &ir.PathMatch{Type: ir.MatchPathPrefix, Value: v} }
	for _, tc := range []struct {
		name string
		rt   ir.Route
		copy bool
	}{
		{"root prefix", ir.Route{Match: ir.Match{Path: prefix("/")}}, true},
		{"well-known prefix", ir.Route{Match: ir.Match{Path: prefix("/.well-known")}}, true},
		{"well-known prefix with slash", ir.Route{Match: ir.Match{Path: prefix("/.well-known/")}}, true},
		{"challenge prefix without slash", ir.Route{Match: ir.Match{Path: prefix("/.well-known/acme-challenge")}}, true},
		{"a name sharing the first letters", ir.Route{Match: ir.Match{Path: prefix("/.well")}}, false},
		{"another prefix", ir.Route{Match: ir.Match{Path: prefix("/api")}}, false},
		{"already under the prefix", ir.Route{Match: ir.Match{Path: prefix("/.well-known/acme-challenge/x")}}, false},
		{"exact", ir.Route{Match: ir.Match{Path: &ir.PathMatch{Type: ir.MatchExact, Value: "/"}}}, false},
		{"regex", ir.Route{Match: ir.Match{Path: &ir.PathMatch{Type: ir.MatchRegularExpression, Value: "/.*"}}}, false},
		{"prefix rewrite", ir.Route{Match: ir.Match{Path: prefix("/")}, Rewrite: &ir.Rewrite{Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/app"}}}, false},
		{"prefix redirect", ir.Route{Match: ir.Match{Path: prefix("/")}, Redirect: &ir.Redirect{Path: &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/app"}}}, false},
		{"full path rewrite", ir.Route{Match: ir.Match{Path: prefix("/")}, Rewrite: &ir.Rewrite{Path: &ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/app"}}}, true},
	} {
		tc.rt.Name = "r"
		c, ok := challengeCopy(&tc.rt)
		if ok != tc.copy {
			t.Errorf("%s: copied %v, want %v", tc.name, ok, tc.copy)
			continue
		}
		if ok && (c.Match.Path.Type != ir.MatchPathPrefix || c.Match.Path.Value != acmeChallengePrefix || c.Name != "r/acme-challenge" || tc.rt.Match.Path.Value == acmeChallengePrefix) {
			t.Errorf("%s: copy %+v (match %+v)", tc.name, c, c.Match.Path)
		}
	}
}
