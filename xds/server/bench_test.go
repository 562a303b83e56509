package server

import (
	"fmt"
	"maps"
	"slices"
	"syscall"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/build"
)

// pipelineInput is one Gateway with n HTTPRoutes, each with its own
// hostname and Service, and the Services' EndpointSlices (one each, of two
// endpoints).
func pipelineInput(n int) (*gatewayapi.Input, []*discoveryv1.EndpointSlice) {
	const controller = "shardgate.io/gateway-controller"
	gwNN := types.NamespacedName{Namespace: "default", Name: "gw"}
	in := &gatewayapi.Input{ControllerName: controller, Runtime: map[types.NamespacedName]gatewayapi.GatewayRuntime{
		gwNN: {Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.1"}}},
	}}
	rv := 0
	meta := func(ns, name string) metav1.ObjectMeta {
		rv++
		return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(rv), UID: types.UID(fmt.Sprint(rv)), Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, rv, 0, time.UTC))}
	}
	in.GatewayClasses = []*gatewayv1.GatewayClass{{ObjectMeta: meta("", "shardgate"), Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}}
	from := gatewayv1.NamespacesFromAll
	in.Gateways = []*gatewayv1.Gateway{{ObjectMeta: meta(gwNN.Namespace, gwNN.Name), Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate",
		Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}}}}}}}
	var eslices []*discoveryv1.EndpointSlice
	for i := range n {
		svc, es, rt := pipelineLease(i, meta)
		in.HTTPRoutes = append(in.HTTPRoutes, rt)
		in.Services = append(in.Services, svc)
		eslices = append(eslices, es)
	}
	return in, eslices
}

// newWithSlices is a server that holds the slices, as the controller's
// EndpointSlice handler hands them over at start.
func newWithSlices(eslices []*discoveryv1.EndpointSlice) *Server {
	s := New(Options{Log: logr.Discard()})
	for _, es := range eslices {
		s.UpdateEndpointSlice(nil, es)
	}
	return s
}

// pipelineLease is lease i: its Service, its EndpointSlice of two
// endpoints, and an HTTPRoute for its own hostname on Gateway default/gw.
func pipelineLease(i int, meta func(ns, name string) metav1.ObjectMeta) (*corev1.Service, *discoveryv1.EndpointSlice, *gatewayv1.HTTPRoute) {
	port, pnum, pname := gatewayv1.PortNumber(80), int32(8080), "http"
	gwNS := gatewayv1.Namespace("default")
	ns, name := fmt.Sprintf("lease-%d", i%500), fmt.Sprintf("app-%d", i)
	rt := &gatewayv1.HTTPRoute{ObjectMeta: meta(ns, name), Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: &gwNS}}},
		Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(name + ".example.com")},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: &port}}}}}},
	}}
	svc := &corev1.Service{ObjectMeta: meta(ns, name), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: pname, Port: 80}}}}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: func() metav1.ObjectMeta {
			m := meta(ns, name+"-x")
			m.Labels = map[string]string{discoveryv1.LabelServiceName: name}
			return m
		}(),
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &pnum}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.244.%d.%d", i/250%250, i%250+1)}},
			{Addresses: []string{fmt.Sprintf("10.245.%d.%d", i/250%250, i%250+1)}}},
	}
	return svc, es, rt
}

// pipeline is n routes translated and published, the way the controller
// keeps them, with a meter of what each change then costs.
func pipeline(b *testing.B, n int) (*gatewayapi.Input, []*discoveryv1.EndpointSlice, *gatewayapi.Store, *gatewayapi.Translator, gatewayapi.Facts, *Server, *changeMeter) {
	return pipelineMetered(b, n, newChangeMeter)
}

// pipelineMetered is pipeline with the meter meter makes.
func pipelineMetered(b *testing.B, n int, meter func(*testing.B, *Server, string) *changeMeter) (*gatewayapi.Input, []*discoveryv1.EndpointSlice, *gatewayapi.Store, *gatewayapi.Translator, gatewayapi.Facts, *Server, *changeMeter) {
	in, eslices := pipelineInput(n)
	st := gatewayapi.NewStore(in.ControllerName)
	st.Load(in)
	tr := gatewayapi.NewTranslator(st)
	facts := gatewayapi.FactsOf(in)
	s := newWithSlices(eslices)
	s.Publish(tr.Translate(facts).Gateways)
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	return in, eslices, st, tr, facts, s, meter(b, s, NodeGroup(types.NamespacedName{Namespace: "default", Name: "gw"}))
}

// BenchmarkPipelineOneRouteChange: 10k routes on one Gateway; each
// iteration replaces one route (as an update does) and runs everything a
// change costs before it is sent: the Gateway API translation, the xDS
// translation, validation and versioning, the snapshot update, and the
// responses go-control-plane builds and marshals on a proxy's watches
// (changeMeter). It reports the bytes serialized per change
// (serialized-B/op: by the checker, plus the tables' own fields in the
// response) and the bytes of the responses (response-B/op, the virtual
// hosts among them copied, not serialized). Target: ≤ 2 ms per change.
func BenchmarkPipelineOneRouteChange(b *testing.B) { pipelineOneRouteChange(b, nil) }

// pipelineOneRouteChange runs BenchmarkPipelineOneRouteChange, after
// connect (when not nil) has connected a client to the pipeline's server.
func pipelineOneRouteChange(b *testing.B, connect func(*testing.B, *Server)) {
	in, _, st, tr, facts, s, m := pipeline(b, 10_000)
	if connect != nil {
		connect(b, s)
	}
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
		b.Fatalf("%d patches for %d changes: the change was not incremental (%+v)", tr.Stats.Patched, b.N, tr.Stats)
	}
	m.report()
}

// BenchmarkPipelineOneEndpointChange: 10k routes on one Gateway, each on
// its own Service; each iteration one EndpointSlice gets a new address and
// goes through everything the change costs, as the controller's
// EndpointSlice handler hands it to the server: the endpoint table, the
// load assignment built, validated and handed to the EDS cache by
// xds/endpoints, with no Gateway API or cluster translation and no
// snapshot, and the response on a proxy's watches, with the proxy's next
// EDS request naming every cluster (changeMeter). It reports the time
// from the EndpointSlice to the new load assignment in the cache
// (to-cache-ms/op, which answers the proxy's open watch). Target: ≤ 1 ms
// to new load assignments.
func BenchmarkPipelineOneEndpointChange(b *testing.B) {
	_, eslices, _, tr, _, s, m := pipeline(b, 10_000)
	group := NodeGroup(types.NamespacedName{Namespace: "default", Name: "gw"})
	before, stats := s.gateways[group].published, tr.Stats
	var toCache time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		k := i % len(eslices)
		es := eslices[k].DeepCopy()
		es.ResourceVersion = fmt.Sprint(2_000_000 + i)
		es.Endpoints[1].Addresses = []string{fmt.Sprintf("10.246.%d.%d", i/250%250, i%250+1)}
		start := time.Now()
		s.UpdateEndpointSlice(eslices[k], es)
		toCache += time.Since(start)
		eslices[k] = es
		m.respond()
	}
	b.StopTimer()
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	if s.gateways[group].published != before {
		b.Fatal("an endpoint change published the Gateway's config")
	}
	if tr.Stats != stats {
		b.Fatalf("an endpoint change was translated: %+v, then %+v", stats, tr.Stats)
	}
	b.ReportMetric(float64(toCache)/float64(time.Millisecond)/float64(b.N), "to-cache-ms/op")
	m.report()
}

// BenchmarkPipelineTenantFlow: 10k routes on one Gateway, each on its own
// Service; each iteration a new lease arrives (its Service, EndpointSlice
// and route, with a new hostname: the slice to the server, the others to
// the Gateway API store, as the controller's handlers hand them over) and
// goes through everything a change costs before it is sent, as
// BenchmarkPipelineOneRouteChange.
func BenchmarkPipelineTenantFlow(b *testing.B) { pipelineTenantFlow(b, nil) }

// BenchmarkPipelineTenantFlowDelta is BenchmarkPipelineTenantFlow with the
// watches of the production bootstrap, delta ADS (newDeltaChangeMeter): a
// response carries what changed, but go-control-plane compares every
// cluster's version for the wildcard CDS watch, and the route table, one
// resource, is sent whole.
func BenchmarkPipelineTenantFlowDelta(b *testing.B) {
	pipelineTenantFlowMetered(b, nil, newDeltaChangeMeter)
}

// pipelineTenantFlow runs BenchmarkPipelineTenantFlow, after connect (when
// not nil) has connected a client to the pipeline's server.
func pipelineTenantFlow(b *testing.B, connect func(*testing.B, *Server)) {
	pipelineTenantFlowMetered(b, connect, newChangeMeter)
}

// pipelineTenantFlowMetered is pipelineTenantFlow with the meter meter
// makes.
func pipelineTenantFlowMetered(b *testing.B, connect func(*testing.B, *Server), meter func(*testing.B, *Server, string) *changeMeter) {
	_, _, st, tr, facts, s, m := pipelineMetered(b, 10_000, meter)
	if connect != nil {
		connect(b, s)
	}
	rv := 1_000_000
	meta := func(ns, name string) metav1.ObjectMeta {
		rv++
		return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(rv), UID: types.UID(fmt.Sprint(rv)), Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(rv) * time.Second))}
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 10_000
	for b.Loop() {
		svc, es, rt := pipelineLease(i, meta)
		st.Upsert(svc)
		s.UpdateEndpointSlice(nil, es)
		st.Upsert(rt)
		i++
		s.Publish(tr.Translate(facts).Gateways)
		m.respond()
	}
	b.StopTimer()
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	if tr.Stats.Full != 1 {
		b.Fatalf("a new lease translated the Gateway in full (%+v)", tr.Stats)
	}
	m.report()
}

// BenchmarkPublishOneRouteChange is the xDS half of the above: the IR of
// 10k routes with one virtual host changed, published (translation,
// validation, versioning, snapshot) and serialized for the responses.
func BenchmarkPublishOneRouteChange(b *testing.B) {
	in, eslices := pipelineInput(10_000)
	gw := gatewayapi.Translate(in).Gateways[0]
	s := newWithSlices(eslices)
	s.Publish([]*ir.Gateway{gw})
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	m := newChangeMeter(b, s, NodeGroup(types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}))
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		// A new IR, as the Gateway API layer makes it: the changed
		// virtual host gets a new routes array, the others keep theirs,
		// and the IR's change names it.
		next := *gw
		next.Listeners = slices.Clone(gw.Listeners)
		vhs := slices.Clone(next.Listeners[0].VirtualHosts)
		k := i % len(vhs)
		vhs[k].Routes = slices.Clone(vhs[k].Routes)
		vhs[k].Routes[0].Match.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: fmt.Sprintf("/v%d", i)}
		next.Listeners[0].VirtualHosts = vhs
		next.Change = &ir.Change{Generation: gw.Change.Generation + 1, Since: gw.Change.Generation,
			VirtualHosts: []ir.VirtualHostRef{{Listener: next.Listeners[0].Name, Name: vhs[k].Name}}}
		gw = &next
		b.StartTimer()
		s.Publish([]*ir.Gateway{gw})
		m.respond()
	}
	b.StopTimer()
	if errs := s.PublishErrors(); len(errs) > 0 {
		b.Fatal(errs)
	}
	m.report()
}

// changeMeter holds one proxy's state-of-the-world watches on the server's
// cache, as the ADS server opens them for a proxy of the Gateway (every type;
// EDS names the clusters of the last CDS response), and counts what each
// change costs: the bytes the checker serialized, and the responses
// go-control-plane builds for the watches that fire (every response is
// marshalled as the server marshals it to send it).
//
// It also reports the process's CPU time per change (cpu-ms/op, the
// collector's share included): on a machine shared with other work, the
// wall time per op measures the machine's load as much as the change.
type changeMeter struct {
	b                    *testing.B
	s                    *Server
	group                string
	watches              map[string]*meterWatch
	serialized, response int
	cpu                  time.Duration
	// published is the config the checker's count was taken for: an
	// endpoint change checks and publishes none.
	published *published
	// deltas, when not nil, are delta watches instead of watches
	// (newDeltaChangeMeter).
	deltas map[string]*deltaMeterWatch
}

type meterWatch struct {
	sub     stream.Subscription
	names   []string
	version string
	out     chan cachev3.Response
	cancel  func()
}

func newChangeMeter(b *testing.B, s *Server, group string) *changeMeter {
	m := &changeMeter{b: b, s: s, group: group, watches: map[string]*meterWatch{}}
	for _, typ := range build.TypeOrder {
		var names []string
		switch typ {
		case resourcev3.RouteType:
			snap, err := s.cache.GetSnapshot(group)
			if err != nil {
				b.Fatal(err)
			}
			names = slices.Sorted(maps.Keys(snap.GetResources(typ)))
		case resourcev3.EndpointType:
			snap, err := s.cache.GetSnapshot(group)
			if err != nil {
				b.Fatal(err)
			}
			names = slices.Sorted(maps.Keys(snap.GetResources(resourcev3.ClusterType)))
		}
		m.watches[typ] = &meterWatch{sub: stream.NewSotwSubscription(names, true), names: names}
		m.watch(typ)
	}
	// The first responses: the proxy's initial config.
	m.drain(false)
	m.published = s.gateways[group].published
	m.cpu = cpuTime(b)
	return m
}

// watch opens typ's watch again, at the version last received.
func (m *changeMeter) watch(typ string) {
	w := m.watches[typ]
	w.out = make(chan cachev3.Response, 1)
	req := &cachev3.Request{Node: &core.Node{Id: "bench", Cluster: m.group}, TypeUrl: typ, ResourceNames: w.names, VersionInfo: w.version}
	cancel, err := m.s.cache.CreateWatch(req, w.sub, w.out)
	if err != nil {
		m.b.Fatal(err)
	}
	w.cancel = cancel
}

// drain takes every response the last change triggered, marshals it as
// the server does to send it, and opens the watch again; a CDS response
// makes the EDS watch name its clusters, as a proxy's next EDS request does.
func (m *changeMeter) drain(count bool) {
	if m.deltas != nil {
		m.drainDelta(count)
		return
	}
	for _, typ := range build.TypeOrder {
		w := m.watches[typ]
		var resp cachev3.Response
		select {
		case resp = <-w.out:
		default:
			continue
		}
		out, err := resp.GetDiscoveryResponse()
		if err != nil {
			m.b.Fatal(err)
		}
		w.sub.SetReturnedResources(resp.GetReturnedResources())
		w.version = out.GetVersionInfo()
		if count {
			for _, a := range out.GetResources() {
				m.response += len(a.GetValue())
				m.serialized += len(a.GetValue())
			}
			// A wire form's checked bytes are copied, not serialized.
			switch raw := resp.(type) {
			case *cachev3.RawResponse:
				for _, r := range raw.GetRawResources() {
					m.serialized -= len(r.Resource.ProtoReflect().GetUnknown())
				}
			}
		}
		if typ == resourcev3.ClusterType {
			names := make([]string, 0, len(out.GetResources()))
			for name := range resp.GetReturnedResources() {
				names = append(names, name)
			}
			slices.Sort(names)
			e := m.watches[resourcev3.EndpointType]
			if !slices.Equal(names, e.names) {
				e.cancel()
				e.names = names
				e.sub.SetResourceSubscription(names)
				m.watch(resourcev3.EndpointType)
			}
		}
		m.watch(typ)
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// respond counts the checker's serialization, when the change published a
// config, and the responses of the watches the change fired (load
// assignments are serialized there, once for every proxy).
func (m *changeMeter) respond() {
	st := m.s.gateways[m.group]
	if st.published != m.published {
		m.serialized += st.builder.Encoded()
		m.published = st.published
	}
	m.drain(true)
}

func (m *changeMeter) report() {
	m.b.ReportMetric(float64(cpuTime(m.b)-m.cpu)/float64(time.Millisecond)/float64(m.b.N), "cpu-ms/op")
	m.b.ReportMetric(float64(m.serialized)/float64(m.b.N), "serialized-B/op")
	m.b.ReportMetric(float64(m.response)/float64(m.b.N), "response-B/op")
}
