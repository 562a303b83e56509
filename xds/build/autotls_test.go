/*
Copyright The shardgate Authors.
*/

package build

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/irtest"
	"github.com/shardgate/shardgate/internal/testcert"
	"github.com/shardgate/shardgate/xds/translate"
)

// autoTLSShard is a shard with automatic HTTPS (a hostless HTTP listener
// on 80, no listener on 443) serving n names, name-<i>.example.org, each
// held by a generated route of its own lease namespace, with its own
// Service and certificate Secret. It returns the Store, a Translator over
// it, the facts, and the Secrets and routes by name.
func autoTLSShard(t testing.TB, n int) (*gatewayapi.Store, *gatewayapi.Translator, gatewayapi.Facts, []*corev1.Secret, []*gatewayv1.HTTPRoute) {
	const controller = "shardgate.io/gateway-controller"
	gw := types.NamespacedName{Namespace: "infra", Name: "shard"}
	from := gatewayv1.NamespacesFromAll
	in := &gatewayapi.Input{ControllerName: controller,
		Runtime: map[types.NamespacedName]gatewayapi.GatewayRuntime{gw: {Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.1"}}}},
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "shardgate", Generation: 1},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}},
		Gateways: []*gatewayv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: gw.Name, Generation: 1},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate",
				Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: "shard"}},
				Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
					AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}}}}}}},
		GatewayParameters: []*shardgatev1alpha1.GatewayParameters{{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: "shard", Generation: 1},
			Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: "shard.provider.test",
				TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "letsencrypt"}}}}}},
	}
	o := &gatewayapi.Ownership{Shards: map[types.NamespacedName]gatewayapi.ShardRoutes{gw: gatewayapi.RoutesGenerated},
		Generated: map[types.NamespacedName]gatewayapi.GeneratedRoute{}, Holders: map[string]string{}, NamespaceOwners: map[string]string{}}
	var secrets []*corev1.Secret
	var routes []*gatewayv1.HTTPRoute
	port := gatewayv1.PortNumber(80)
	gwNS := gatewayv1.Namespace(gw.Namespace)
	for i := range n {
		ns, host := fmt.Sprintf("lease-%d", i), fmt.Sprintf("name-%d.example.org", i)
		meta := metav1.ObjectMeta{Namespace: ns, Name: "web", Generation: 1, UID: types.UID(fmt.Sprint("uid-", i)),
			CreationTimestamp: metav1.Unix(int64(i), 0)}
		rt := &gatewayv1.HTTPRoute{ObjectMeta: meta, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw.Name), Namespace: &gwNS}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: &port}}}}}},
		}}
		routes = append(routes, rt)
		in.HTTPRoutes = append(in.HTTPRoutes, rt)
		in.Services = append(in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		s := certSecret(t, host)
		s.Namespace, s.Name = ns, autotls.SecretName(host)
		secrets = append(secrets, s)
		o.Generated[types.NamespacedName{Namespace: ns, Name: "web"}] = gatewayapi.GeneratedRoute{LeaseHost: "lh", Unowned: true,
			Hosts: map[types.NamespacedName][]string{gw: {host}}}
		o.Holders[host] = "owner"
	}
	in.Secrets = secrets
	in.Ownership = o
	st := gatewayapi.NewStore(controller)
	st.Load(in)
	return st, gatewayapi.NewTranslator(st), gatewayapi.FactsOf(in), secrets, routes
}

func certSecret(t testing.TB, host string) *corev1.Secret { return testcert.Secret(t, host) }

func httpsListenerOf(t *testing.T, c *Config) *listenerv3.Listener {
	t.Helper()
	for _, l := range c.Resources.Listeners {
		if l.GetName() == "https-443" {
			return l
		}
	}
	t.Fatal("no https-443 listener")
	return nil
}

// chainsByName indexes a listener's filter chains, with their
// deterministic serialization.
func chainsByName(t *testing.T, l *listenerv3.Listener) map[string]*listenerv3.FilterChain {
	out := map[string]*listenerv3.FilterChain{}
	for _, fc := range l.GetFilterChains() {
		if _, dup := out[fc.GetName()]; dup {
			t.Fatalf("two filter chains named %s", fc.GetName())
		}
		out[fc.GetName()] = fc
	}
	return out
}

func marshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAutoTLSFilterChainPerName: each name a shard serves with automatic
// HTTPS is a filter chain of its own on 443 (its SNI, its SDS secret, its
// route table, a stable name), and a name coming or going changes no
// other chain of the listener: every other chain is the very message
// published before (the memo builds none of them again) and serializes to
// the same bytes, so Envoy's filter-chain-only update keeps their
// connections. A route change republishes the listener itself unchanged.
// Every config passes go-control-plane's validation and the referential
// checks (translate.Validate), and equals a translation from scratch.
func TestAutoTLSFilterChainPerName(t *testing.T) {
	const n = 40
	st, tr, facts, secrets, routes := autoTLSShard(t, n)
	b := NewBuilder(Options{})
	defer b.Stop()
	build := func(prev *Config) (*Config, *ir.Gateway) {
		t.Helper()
		out := tr.Translate(facts)
		if len(out.Gateways) != 1 {
			t.Fatalf("%d IRs", len(out.Gateways))
		}
		c, err := b.Build(out.Gateways[0], prev)
		if err != nil {
			t.Fatal(err)
		}
		if err := translate.Validate(c.Resources); err != nil {
			t.Fatalf("the published config does not validate: %v", err)
		}
		fresh, err := translate.Translate(out.Gateways[0])
		if err != nil {
			t.Fatal(err)
		}
		got := httpsListenerOf(t, c)
		var want *listenerv3.Listener
		for _, l := range fresh.Listeners {
			if l.GetName() == "https-443" {
				want = l
			}
		}
		if !proto.Equal(got, want) {
			t.Fatal("the built https-443 listener differs from a translation from scratch")
		}
		// Every route table and secret too (the memo hands out unchanged
		// tables and secrets again).
		sameTablesAndSecrets(t, c, fresh)
		return c, out.Gateways[0]
	}
	c1, _ := build(nil)
	l1 := httpsListenerOf(t, c1)
	chains1 := chainsByName(t, l1)
	if len(chains1) != n {
		t.Fatalf("%d filter chains, want %d", len(chains1), n)
	}
	for i := range n {
		host := fmt.Sprintf("name-%d.example.org", i)
		fc := chains1["auto-tls/"+host]
		if fc == nil {
			t.Fatalf("no filter chain auto-tls/%s", host)
		}
		if sni := fc.GetFilterChainMatch().GetServerNames(); !slices.Equal(sni, []string{host}) {
			t.Fatalf("chain %s matches %v", fc.GetName(), sni)
		}
		ctx := &tlsv3.DownstreamTlsContext{}
		if err := fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
			t.Fatal(err)
		}
		sds := ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()
		if want := fmt.Sprintf("lease-%d/%s", i, autotls.SecretName(host)); len(sds) != 1 || sds[0].GetName() != want {
			t.Fatalf("chain %s: SDS secrets %v, want %s", fc.GetName(), sds, want)
		}
	}
	before := map[string][]byte{}
	for name, fc := range chains1 {
		before[name] = marshal(t, fc)
	}

	// others: every chain but skip is the message of chains1, with the
	// same bytes.
	others := func(got map[string]*listenerv3.FilterChain, skip string) {
		t.Helper()
		for name, fc := range chains1 {
			if name == skip {
				continue
			}
			if got[name] != fc {
				t.Errorf("chain %s was built again", name)
			}
			if b := marshal(t, got[name]); string(b) != string(before[name]) {
				t.Errorf("chain %s changed", name)
			}
		}
	}

	// Name 7's certificate goes (revoked): its chain goes, no other
	// changes.
	gone := "auto-tls/name-7.example.org"
	st.Delete(secrets[7])
	c2, _ := build(c1)
	chains2 := chainsByName(t, httpsListenerOf(t, c2))
	if len(chains2) != n-1 || chains2[gone] != nil {
		t.Fatalf("after the Secret went: %d chains, %s there: %v", len(chains2), gone, chains2[gone] != nil)
	}
	others(chains2, gone)

	// It comes back (issued again): its chain alone is new.
	st.Upsert(secrets[7])
	c3, _ := build(c2)
	chains3 := chainsByName(t, httpsListenerOf(t, c3))
	if len(chains3) != n || chains3[gone] == nil {
		t.Fatalf("after the Secret came back: %d chains", len(chains3))
	}
	others(chains3, gone)
	if string(marshal(t, chains3[gone])) != string(before[gone]) {
		t.Error("the chain of the name back differs from its first")
	}

	// A route change (a patch): the listener is the message published
	// before.
	r := routes[3].DeepCopy()
	r.Generation++
	path, prefix := "/v2", gatewayv1.PathMatchPathPrefix
	r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	st.Upsert(r)
	c4, _ := build(c3)
	if httpsListenerOf(t, c4) != httpsListenerOf(t, c3) {
		t.Error("a route change built the https-443 listener again")
	}
	if tr.Stats.Patched == 0 {
		t.Errorf("the route change was not a patch: %+v", tr.Stats)
	}
}

// TestCheckerRechecksAnUnchangedListenerWhenItsReferencesGo: a listener
// that is the message a passed check saw is not walked again, unless a
// route configuration or secret it may refer to went: then the check
// finds the dangling reference.
func TestCheckerRechecksAnUnchangedListenerWhenItsReferencesGo(t *testing.T) {
	gw := irtest.LoadGateway(t, "../translate/testdata/auto-tls.in.yaml")
	res, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	c := &Checker{}
	clone := func(r *translate.Resources) *translate.Resources {
		out := *r
		out.Listeners, out.Routes, out.Clusters, out.Secrets = slices.Clone(r.Listeners), slices.Clone(r.Routes), slices.Clone(r.Clusters), slices.Clone(r.Secrets)
		return &out
	}
	first := clone(res)
	if err := c.Check(first); err != nil {
		t.Fatal(err)
	}
	// The same listeners again, the per-name table gone.
	noTable := clone(first)
	noTable.Routes = slices.DeleteFunc(noTable.Routes, func(rc *routev3.RouteConfiguration) bool {
		return rc.GetName() == "https-443/auto-tls/example.com"
	})
	if err := c.Check(noTable); err == nil || !strings.Contains(err.Error(), "https-443/auto-tls/example.com") {
		t.Fatalf("a listener referring to a route configuration that went passed: %v", err)
	}
	// After a good check again, the same listeners, the per-name secret
	// gone.
	again := clone(res)
	if err := c.Check(again); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(clone(again)); err != nil {
		t.Fatal(err)
	}
	noSecret := clone(again)
	noSecret.Secrets = slices.DeleteFunc(noSecret.Secrets, func(s *tlsv3.Secret) bool {
		return s.GetName() == "lease-alice/shardgate-tls.example.com"
	})
	if err := c.Check(noSecret); err == nil || !strings.Contains(err.Error(), "shardgate-tls.example.com") {
		t.Fatalf("a listener referring to a secret that went passed: %v", err)
	}
}

// TestCheckerValidatesNewChainsOfALargeListener: a listener of many
// filter chains whose previous version passed is validated chain by chain;
// a new chain that Envoy would refuse still fails the check, and the
// previous config's chains with a valid new one pass.
func TestCheckerValidatesNewChainsOfALargeListener(t *testing.T) {
	_, tr, facts, _, _ := autoTLSShard(t, chainwiseListener+6)
	res, err := translate.Translate(tr.Translate(facts).Gateways[0])
	if err != nil {
		t.Fatal(err)
	}
	with := func(chains []*listenerv3.FilterChain) *translate.Resources {
		out := *res
		out.Listeners, out.Routes, out.Clusters, out.Secrets = slices.Clone(res.Listeners), slices.Clone(res.Routes), slices.Clone(res.Clusters), slices.Clone(res.Secrets)
		for i, l := range out.Listeners {
			if l.GetName() == "https-443" {
				out.Listeners[i] = &listenerv3.Listener{Name: l.Name, Address: l.Address, ListenerFilters: l.ListenerFilters, FilterChains: chains}
			}
		}
		return &out
	}
	var l *listenerv3.Listener
	for _, x := range res.Listeners {
		if x.GetName() == "https-443" {
			l = x
		}
	}
	c := &Checker{}
	if err := c.Check(with(l.FilterChains)); err != nil {
		t.Fatal(err)
	}
	// A new chain for another name, its connection manager without a
	// stat prefix (Envoy refuses it).
	bad := proto.Clone(l.FilterChains[0]).(*listenerv3.FilterChain)
	bad.Name = "auto-tls/bad.example.org"
	bad.FilterChainMatch.ServerNames = []string{"bad.example.org"}
	hcm := &hcmv3.HttpConnectionManager{}
	if err := bad.Filters[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	hcm.StatPrefix = ""
	a, err := anypb.New(hcm)
	if err != nil {
		t.Fatal(err)
	}
	bad.Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
	if err := c.Check(with(append(slices.Clone(l.FilterChains), bad))); err == nil || !strings.Contains(err.Error(), "bad.example.org") {
		t.Fatalf("a listener with an invalid new chain passed: %v", err)
	}
	// After a good check, a valid new chain passes.
	if err := c.Check(with(l.FilterChains)); err != nil {
		t.Fatal(err)
	}
	good := proto.Clone(l.FilterChains[0]).(*listenerv3.FilterChain)
	good.Name = "auto-tls/good.example.org"
	good.FilterChainMatch.ServerNames = []string{"good.example.org"}
	if err := c.Check(with(append(slices.Clone(l.FilterChains), good))); err != nil {
		t.Fatalf("a listener with a valid new chain failed: %v", err)
	}
	// A valid new chain whose route table does not exist is refused.
	dangling := proto.Clone(good).(*listenerv3.FilterChain)
	dangling.Name = "auto-tls/dangling.example.org"
	dangling.FilterChainMatch.ServerNames = []string{"dangling.example.org"}
	hcm = &hcmv3.HttpConnectionManager{}
	if err := dangling.Filters[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	hcm.GetRds().RouteConfigName = "https-443/auto-tls/dangling.example.org"
	if a, err = anypb.New(hcm); err != nil {
		t.Fatal(err)
	}
	dangling.Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
	if err := c.Check(with(append(slices.Clone(l.FilterChains), dangling))); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a new chain naming a missing route table passed: %v", err)
	}
	if err := c.Check(with(l.FilterChains)); err != nil {
		t.Fatal(err)
	}
	// Two chains for one name are refused even among known chains.
	dup := proto.Clone(l.FilterChains[1]).(*listenerv3.FilterChain)
	dup.Name = "auto-tls/dup"
	if err := c.Check(with(append(slices.Clone(l.FilterChains), dup))); err == nil || !strings.Contains(err.Error(), "both match server name") {
		t.Fatalf("two chains for one server name passed: %v", err)
	}
}

// sameTablesAndSecrets fails t unless c's route tables and secrets are
// those of fresh, a translation from scratch, in the same order.
func sameTablesAndSecrets(t *testing.T, c *Config, fresh *translate.Resources) {
	t.Helper()
	if len(c.Resources.Routes) != len(fresh.Routes) || len(c.Resources.Secrets) != len(fresh.Secrets) {
		t.Fatalf("%d tables and %d secrets, a translation from scratch has %d and %d",
			len(c.Resources.Routes), len(c.Resources.Secrets), len(fresh.Routes), len(fresh.Secrets))
	}
	for i, rc := range c.Resources.Routes {
		m, err := translate.Decode(rc)
		if err != nil {
			t.Fatal(err)
		}
		if !translate.SameRouteTable(m.(*routev3.RouteConfiguration), fresh.Routes[i]) {
			t.Fatalf("route table %s differs from a translation from scratch", rc.GetName())
		}
	}
	for i, sec := range c.Resources.Secrets {
		if !proto.Equal(sec, fresh.Secrets[i]) {
			t.Fatalf("secret %s differs from a translation from scratch", sec.GetName())
		}
	}
}
