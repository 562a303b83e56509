// Package e2e_test checks shardgate's xDS output end to end with a real,
// independent xDS client: grpc-go's xDS resolver talks ADS over mTLS to the
// xDS server of an in-process shardgate manager, and gRPC backends on
// 127.0.0.1 prove by their name which route an RPC took.
//
// Approach (a) of the xDS issue: Gateways, HTTPRoutes, Services (and, for
// the endpoint test, EndpointSlices) live in the REAL apiserver of the
// envtest harness; the apiserver refuses loopback addresses in
// EndpointSlices, so the traffic tests feed the translator's endpoint input
// directly through manager.Options.MutateInput:
//
//   - hooks.setEndpoints replaces a Service's EndpointSlices by in-memory
//     ones pointing at backends on 127.0.0.1;
//   - hooks.mapPodIPs rewrites the real EndpointSlices of a Service, mapping
//     each (non-loopback, never dialled) address to a backend on 127.0.0.1,
//     so that a change of the EndpointSlice in the apiserver moves traffic.
//
// A separate test (endpoints_test.go) checks EndpointSlice →
// ClusterLoadAssignment with non-loopback addresses created in the
// apiserver and sends no traffic. Nothing here sends traffic anywhere but
// 127.0.0.1 (the xDS server is dialled as "localhost", which /etc/hosts and
// the resolver map to 127.0.0.1 only; the test checks that).
//
// grpc-go's xDS client reads only API listeners, so manager.Options.
// DecorateXDS adds, per Gateway, listeners named after the test hostnames
// whose api_listener is an HttpConnectionManager using RDS for the Gateway's
// own route table ("http-80"). Everything else it reads — routes, clusters,
// load assignments — is shardgate's translation, unchanged, except for the
// one documented patch in hooks.decorate.
package e2e_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/anypb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
	"github.com/shardgate/shardgate/xds/translate"
)

func TestE2E(t *testing.T) {
	testenv.Require(t)
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	RunSpecs(t, "xds e2e")
}

var (
	env   *testenv.Env
	h     = newHooks()
	srv   *xdsserver.Server
	xdsCA *pki.CA
	// xdsCreds are the xDS server's credentials, for the rotation test.
	xdsCreds *xdsserver.Credentials
	// xdsTarget is the xDS server as clients dial it: "localhost:<port>",
	// because the server certificate names localhost, not 127.0.0.1.
	xdsTarget string
	suiteCtx  context.Context
)

var _ = BeforeSuite(func() {
	// localhost must mean 127.0.0.1 and nothing else (network rule).
	addrs, err := net.DefaultResolver.LookupHost(context.Background(), "localhost")
	Expect(err).NotTo(HaveOccurred())
	for _, a := range addrs {
		Expect(net.ParseIP(a).IsLoopback()).To(BeTrue(), "localhost resolves to %s", a)
	}

	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	env, err = testenv.Start(suiteCtx, testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })

	got := make(chan *xdsserver.Server, 1)
	gotCreds := make(chan *xdsserver.Credentials, 1)
	env.RunManager(manager.Options{
		MutateInput:      h.mutate,
		DecorateXDS:      h.decorate,
		OnXDSServer:      func(s *xdsserver.Server) { got <- s },
		OnXDSCredentials: func(c *xdsserver.Credentials) { gotCreds <- c },
	})
	Eventually(got).Should(Receive(&srv))
	Eventually(gotCreds).Should(Receive(&xdsCreds))
	Eventually(srv.Addr).ShouldNot(BeNil())
	_, port, err := net.SplitHostPort(srv.Addr().String())
	Expect(err).NotTo(HaveOccurred())
	xdsTarget = net.JoinHostPort("localhost", port)

	var sec corev1.Secret
	Eventually(func() error {
		return env.Client.Get(suiteCtx, client.ObjectKey{Namespace: testenv.SystemNamespace, Name: manager.XDSCASecret}, &sec)
	}).Should(Succeed())
	xdsCA, err = pki.ParseCA(sec.Data[pki.KeyCert], sec.Data[pki.KeyKey])
	Expect(err).NotTo(HaveOccurred())
	ensureGatewayClass(suiteCtx)
})

// hooks are the test's handles on the manager's translation and xDS
// publishing. All of them are read on every translation.
type hooks struct {
	mu sync.Mutex
	// direct: Service → loopback endpoints that replace its EndpointSlices.
	direct map[types.NamespacedName][]int32
	// podIPs: Service → (address in its real EndpointSlices → loopback
	// port). Unmapped addresses are dropped, so they are never dialled.
	podIPs map[types.NamespacedName]map[string]int32
	// apiListeners: node group → API listener names.
	apiListeners map[string][]string
	// nack: node groups whose route table gets a route grpc-go refuses.
	nack map[string]bool
	// pad: node groups whose route table is padded to about this many
	// bytes (response headers that no request sees), so that a client
	// that stops reading fills its flow-control window.
	pad map[string]int
}

func newHooks() *hooks {
	return &hooks{
		direct:       map[types.NamespacedName][]int32{},
		podIPs:       map[types.NamespacedName]map[string]int32{},
		apiListeners: map[string][]string{},
		nack:         map[string]bool{},
		pad:          map[string]int{},
	}
}

// setEndpoints makes svc's endpoints 127.0.0.1:<port> for each port (on
// the next translation).
func (h *hooks) setEndpoints(svc types.NamespacedName, ports ...int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.direct[svc] = append([]int32(nil), ports...)
}

// mapPodIPs rewrites the addresses of svc's real EndpointSlices.
func (h *hooks) mapPodIPs(svc types.NamespacedName, m map[string]int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.podIPs[svc] = m
}

func (h *hooks) addAPIListeners(gw types.NamespacedName, names ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := xdsserver.NodeGroup(gw)
	h.apiListeners[g] = append(h.apiListeners[g], names...)
	sort.Strings(h.apiListeners[g])
}

func (h *hooks) setNACK(gw types.NamespacedName, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nack[xdsserver.NodeGroup(gw)] = on
}

// mutate edits the translator's input. The objects in it belong to the
// informer cache: they are replaced, never modified.
func (h *hooks) mutate(in *gatewayapi.Input) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*discoveryv1.EndpointSlice, 0, len(in.EndpointSlices))
	for _, s := range in.EndpointSlices {
		svc := types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
		if _, ok := h.direct[svc]; ok {
			continue
		}
		if m, ok := h.podIPs[svc]; ok {
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					if port, ok := m[a]; ok {
						name := fmt.Sprintf("%s-%s", s.Name, strings.ReplaceAll(a, ".", "-"))
						out = append(out, loopbackSlice(svc, name, port, e.Conditions.Ready))
					}
				}
			}
			continue
		}
		out = append(out, s)
	}
	svcs := make([]types.NamespacedName, 0, len(h.direct))
	for svc := range h.direct {
		svcs = append(svcs, svc)
	}
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].String() < svcs[j].String() })
	for _, svc := range svcs {
		for i, port := range h.direct[svc] {
			out = append(out, loopbackSlice(svc, fmt.Sprintf("%s-e2e-%d", svc.Name, i), port, ptr.To(true)))
		}
	}
	in.EndpointSlices = out
}

// loopbackSlice is an EndpointSlice the apiserver would refuse: one ready
// endpoint 127.0.0.1:port for svc's port named "grpc".
func loopbackSlice(svc types.NamespacedName, name string, port int32, ready *bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	s.Name, s.Namespace = name, svc.Namespace
	s.Labels = map[string]string{discoveryv1.LabelServiceName: svc.Name}
	return s
}

// decorate adds the API listeners grpc-go needs, and, when the NACK test
// asks for it, a route grpc-go refuses.
func (h *hooks) decorate(group string, res *translate.Resources) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if names := h.apiListeners[group]; len(names) > 0 {
		// Only the API listeners: go-control-plane's snapshot cache in ADS
		// mode (xds/server builds it with ads=true) answers a
		// state-of-the-world request that names resources only if the
		// names cover every resource of that type in the snapshot
		// (cache/v3/simple.go, respond → superset). Envoy asks for all
		// listeners (wildcard); grpc-go asks for its one listener by name,
		// and would never get an answer while the snapshot also holds the
		// Envoy listener "http-80". The route table, clusters and
		// endpoints grpc-go reads are shardgate's own.
		res.Listeners = res.Listeners[:0]
		for _, name := range names {
			res.Listeners = append(res.Listeners, apiListener(name, httpRouteTable))
		}
	}
	if n := h.pad[group]; n > 0 {
		for _, rc := range res.Routes {
			if rc.GetName() != httpRouteTable {
				continue
			}
			const chunk = 16000 // under Envoy's 16 KiB header value limit
			for i := 0; i*chunk < n; i++ {
				rc.ResponseHeadersToAdd = append(rc.ResponseHeadersToAdd, &corev3.HeaderValueOption{
					Header: &corev3.HeaderValue{Key: fmt.Sprintf("x-e2e-pad-%d", i), Value: padValue(i, chunk)},
				})
			}
		}
	}
	if h.nack[group] {
		for _, rc := range res.Routes {
			if rc.GetName() != httpRouteTable || len(rc.VirtualHosts) == 0 {
				continue
			}
			vh := rc.VirtualHosts[0]
			vh.Routes = append(vh.Routes, &routev3.Route{
				Name:   "e2e/nack",
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/e2e-nack"}},
				Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 404}},
			})
		}
	}
}

// httpRouteTable is the RouteConfiguration of a Gateway's port-80 HTTP
// listener (xds/translate naming).
const httpRouteTable = "http-80"

// apiListener is what grpc-go reads for target xds:///<name>.
func apiListener(name, routeConfig string) *listenerv3.Listener {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		panic(err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "e2e",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource: &corev3.ConfigSource{
				ResourceApiVersion:    corev3.ApiVersion_V3,
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
			},
			RouteConfigName: routeConfig,
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		panic(err)
	}
	// grpc-go reads only api_listener; translate.Validate checks that its
	// route configuration exists.
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}
}

func (h *hooks) setPad(gw types.NamespacedName, bytes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pad[xdsserver.NodeGroup(gw)] = bytes
}

// padValue is n bytes that do not compress to nothing.
func padValue(seed, n int) string {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}
