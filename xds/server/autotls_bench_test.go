/*
Copyright The shardgate Authors.
*/

package server

import (
	"fmt"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/testcert"
)

// autoTLSCert is a self-signed certificate and key for host.
func autoTLSCert(tb testing.TB, host string) *corev1.Secret { return testcert.Secret(tb, host) }

// autoTLSShardInput makes pipelineInput's Gateway a shard with automatic
// HTTPS (redirectHTTP on): each route the generated route of a name held
// on it (an Akash-style route, without controller), each with its
// certificate Secret, which it returns by route.
func autoTLSShardInput(tb testing.TB, in *gatewayapi.Input) []*corev1.Secret {
	n := len(in.HTTPRoutes)
	gwNN := types.NamespacedName{Namespace: "default", Name: "gw"}
	in.Gateways[0].Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
		Group: "shardgate.io", Kind: "GatewayParameters", Name: "gw"}}
	in.GatewayParameters = []*shardgatev1alpha1.GatewayParameters{{
		ObjectMeta: metav1.ObjectMeta{Namespace: gwNN.Namespace, Name: "gw", Generation: 1},
		Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: "shard.provider.test",
			TLS: &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "letsencrypt"}, RedirectHTTP: true}}},
	}}
	o := &gatewayapi.Ownership{Shards: map[types.NamespacedName]gatewayapi.ShardRoutes{gwNN: gatewayapi.RoutesGenerated},
		Generated: make(map[types.NamespacedName]gatewayapi.GeneratedRoute, n), Holders: make(map[string]string, n),
		NamespaceOwners: map[string]string{}, Gen: 1}
	secrets := make([]*corev1.Secret, n)
	for i, rt := range in.HTTPRoutes {
		h := string(rt.Spec.Hostnames[0])
		o.Generated[types.NamespacedName{Namespace: rt.Namespace, Name: rt.Name}] = gatewayapi.GeneratedRoute{
			LeaseHost: types.UID("lh-" + rt.Name), Unowned: true, Hosts: map[types.NamespacedName][]string{gwNN: {h}}}
		o.Holders[h] = "owner"
		s := autoTLSCert(tb, h)
		s.Namespace, s.Name, s.ResourceVersion = rt.Namespace, autotls.SecretName(h), fmt.Sprint(i+1)
		secrets[i] = s
	}
	in.Secrets = secrets
	in.Ownership = o
	return secrets
}

// autoTLSPipeline is pipeline's Gateway made a shard with automatic HTTPS:
// each of its n routes is the generated route of a name held on it (an
// Akash-style route, without controller), each with its own Service and
// its certificate Secret, so each name is served on 443 in a TLS server of
// its own. It returns the Secrets by route. The proxy's watches are
// meter's (newDeltaChangeMeter: the production bootstrap's delta ADS).
func autoTLSPipeline(b *testing.B, n int, meter func(*testing.B, *Server, string) *changeMeter) (*gatewayapi.Input, *gatewayapi.Store, *gatewayapi.Translator, gatewayapi.Facts, *Server, *changeMeter, []*corev1.Secret) {
	in, eslices := pipelineInput(n)
	gwNN := types.NamespacedName{Namespace: "default", Name: "gw"}
	secrets := autoTLSShardInput(b, in)
	st := gatewayapi.NewStore(in.ControllerName)
	st.Load(in)
	tr := gatewayapi.NewTranslator(st)
	facts := gatewayapi.FactsOf(in)
	s := newWithSlices(eslices)
	out := tr.Translate(facts)
	s.Publish(out.Gateways)
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	if got := len(out.Gateways[0].Listeners); got != 2 || len(out.Gateways[0].Listeners[1].TLSServers) != n {
		b.Fatalf("want http-80 and https-443 with %d TLS servers, have %+v", n, out.Gateways[0].Listeners)
	}
	return in, st, tr, facts, s, meter(b, s, NodeGroup(gwNN)), secrets
}

// httpsListenerSize is the serialized size of the published https-443
// listener and its number of filter chains.
func httpsListenerSize(b *testing.B, s *Server) (int, int) {
	snap, err := s.cache.GetSnapshot(NodeGroup(types.NamespacedName{Namespace: "default", Name: "gw"}))
	if err != nil {
		b.Fatal(err)
	}
	l, ok := snap.GetResources(resourcev3.ListenerType)["https-443"].(*listenerv3.Listener)
	if !ok {
		b.Fatal("no https-443 listener published")
	}
	return proto.Size(l), len(l.GetFilterChains())
}

// BenchmarkAutoTLSNameChange10k: a shard with automatic HTTPS serving
// 10k names on 443, each in its own TLS server (filter chain), on its own
// Service and with its own certificate Secret; each iteration one name's
// certificate Secret goes or comes back (a certificate revoked, or issued),
// which adds or removes one filter chain, and goes through everything the
// change costs before it is sent, as BenchmarkPipelineOneRouteChange:
// Gateway API translation (the shard's listeners change: a full assembly),
// xDS translation, validation, versioning and the responses. It reports
// the published listener's size (listener-B) and filter chains, and the
// live heap once it is set up (heap-MiB: every object, the translator's
// and the server's state; BenchmarkAutoTLSOneRouteChange10k's shard
// without automatic HTTPS is BenchmarkPipelineOneRouteChange's).
func BenchmarkAutoTLSNameChange10k(b *testing.B) {
	_, st, tr, facts, s, m, secrets := autoTLSPipeline(b, 10_000, newDeltaChangeMeter)
	size, chains := httpsListenerSize(b, s)
	heap := heapInUse()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		k := (i / 2) % len(secrets)
		if i%2 == 0 {
			st.Delete(secrets[k])
		} else {
			st.Upsert(secrets[k])
		}
		i++
		s.Publish(tr.Translate(facts).Gateways)
		m.respond()
	}
	b.StopTimer()
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportMetric(float64(size), "listener-B")
	b.ReportMetric(float64(chains), "filter-chains")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	m.report()
}

// BenchmarkAutoTLSOneRouteChange10k: the same shard; each iteration
// replaces one route (a patch, as in BenchmarkPipelineOneRouteChange): the
// per-name TLS servers must not make a route change cost more than the
// route's virtual hosts. The proxy watches over delta xDS, as the
// production bootstrap has it (DELTA_GRPC): a state-of-the-world route
// watch would have every per-name table sent again on each change
// (BenchmarkAutoTLSOneRouteChange10kSotW).
func BenchmarkAutoTLSOneRouteChange10k(b *testing.B) {
	autoTLSOneRouteChange(b, newDeltaChangeMeter)
}

// BenchmarkAutoTLSOneRouteChange10kSotW is BenchmarkAutoTLSOneRouteChange10k
// with state-of-the-world watches (BenchmarkPipelineOneRouteChange's): the
// route watch names every table, and each change sends them all.
func BenchmarkAutoTLSOneRouteChange10kSotW(b *testing.B) {
	autoTLSOneRouteChange(b, newChangeMeter)
}

func autoTLSOneRouteChange(b *testing.B, meter func(*testing.B, *Server, string) *changeMeter) {
	in, st, tr, facts, s, m, _ := autoTLSPipeline(b, 10_000, meter)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		k := i % len(in.HTTPRoutes)
		r := in.HTTPRoutes[k].DeepCopy()
		r.Generation++
		path, prefix := fmt.Sprintf("/v%d", i), gatewayv1.PathMatchPathPrefix
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
		in.HTTPRoutes[k] = r
		st.Upsert(r)
		s.Publish(tr.Translate(facts).Gateways)
		m.respond()
	}
	b.StopTimer()
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	if tr.Stats.Patched < b.N {
		b.Fatalf("%d patches for %d changes (%+v)", tr.Stats.Patched, b.N, tr.Stats)
	}
	m.report()
}
