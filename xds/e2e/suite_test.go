// Package e2e_test checks shardgate's xDS output end to end with real,
// independent xDS clients: grpc-go's xDS resolver and raw ADS clients (state
// of the world and delta) talk to the xDS server of an in-process shardgate
// manager over mTLS, and gRPC backends prove by their name which route an
// RPC took.
//
// Everything runs on the production path: Gateways, HTTPRoutes, Services
// and EndpointSlices live in the real apiserver of the envtest harness, and
// the manager's own reconciler and translators turn them into xDS. The
// apiserver refuses loopback addresses in EndpointSlices, so the backends
// listen on an address of this machine that it accepts (backendIP: the
// first global unicast IPv4 address of an interface that is up, found at
// run time), and the EndpointSlices name that address. Traffic to it never
// leaves the machine. On a machine without such an address the suite runs
// itself again in a private network namespace, where the loopback
// interface also holds 10.244.255.1 (runInNetns). Other addresses in
// 10.244.0.0/16 (endpoints_test.go) are published, never dialled.
//
// grpc-go's xDS client reads only API listeners, so the one test hook,
// manager.Options.XDSAPIListeners, publishes for each test Gateway that
// grpc-go clients use listeners named after the test hostnames, whose
// api_listener is an HttpConnectionManager using RDS for the Gateway's own
// route table ("http-80"). Routes, clusters and load assignments are
// shardgate's translation, unchanged.
package e2e_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/anypb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
	"github.com/shardgate/shardgate/xds/translate"
)

func TestE2E(t *testing.T) {
	testenv.Require(t)
	if os.Getenv(netnsEnv) == "" {
		if _, err := findBackendIP(); err != nil || os.Getenv(netnsEnv+"_FORCE") != "" {
			runInNetns(t)
			return
		}
	}
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
	// backendIP is where the test backends listen: an address of this
	// machine that EndpointSlices may hold.
	backendIP string
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
		XDSAPIListeners:  h.listeners,
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

	if os.Getenv(netnsEnv) != "" {
		backendIP = netnsBackendIP
	} else {
		backendIP, err = findBackendIP()
		Expect(err).NotTo(HaveOccurred())
	}
	GinkgoWriter.Printf("backends listen on %s\n", backendIP)
})

// netnsEnv is set in the environment of a run inside the private network
// namespace that runInNetns made; there the backends listen on
// netnsBackendIP, an address of that namespace's loopback interface.
const (
	netnsEnv       = "SHARDGATE_E2E_NETNS"
	netnsBackendIP = "10.244.255.1"
)

// runInNetns runs this test binary again, with the same arguments, in a
// network namespace of its own (unshare(1)), for a machine with no
// address the backends can use: there the loopback interface also holds
// netnsBackendIP, which the apiserver accepts in EndpointSlices, and
// nothing can leave the namespace. SHARDGATE_E2E_NETNS_FORCE=1 takes this
// path on any machine.
func runInNetns(t *testing.T) {
	args := []string{"--net"}
	if os.Geteuid() != 0 {
		args = append(args, "--map-root-user")
	}
	script := "ip link set lo up && ip addr add " + netnsBackendIP + "/32 dev lo && ip route add default dev lo && exec \"$0\" \"$@\""
	args = append(args, "sh", "-c", script, os.Args[0])
	cmd := exec.Command("unshare", append(args, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	t.Logf("no usable interface address (or %s_FORCE set): running in a private network namespace", netnsEnv)
	if err := cmd.Run(); err != nil {
		t.Fatalf("e2e run in a private network namespace: %v", err)
	}
}

// hooks hold the API listeners grpc-go clients need, per node group; the
// xDS server reads them on every publish.
type hooks struct {
	mu           sync.Mutex
	apiListeners map[string][]*listenerv3.Listener
}

func newHooks() *hooks {
	return &hooks{apiListeners: map[string][]*listenerv3.Listener{}}
}

func (h *hooks) addAPIListeners(gw types.NamespacedName, names ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := xdsserver.NodeGroup(gw)
	for _, name := range names {
		h.apiListeners[g] = append(h.apiListeners[g], apiListener(name, httpRouteTable))
	}
	sort.Slice(h.apiListeners[g], func(i, j int) bool { return h.apiListeners[g][i].GetName() < h.apiListeners[g][j].GetName() })
}

// addAPIListener registers one API listener whose route table is
// routeConfig (for example an HTTPS filter chain's "https-443/<listener>").
func (h *hooks) addAPIListener(gw types.NamespacedName, name, routeConfig string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := xdsserver.NodeGroup(gw)
	h.apiListeners[g] = append(h.apiListeners[g], apiListener(name, routeConfig))
	sort.Slice(h.apiListeners[g], func(i, j int) bool { return h.apiListeners[g][i].GetName() < h.apiListeners[g][j].GetName() })
}

// listeners are the API listeners of a node group (none for a Gateway that
// no grpc-go client uses: it publishes its translated listeners).
func (h *hooks) listeners(group string) []*listenerv3.Listener {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.apiListeners[group])
}

// httpRouteTable is the RouteConfiguration of a Gateway's port-80 HTTP
// listener (xds/translate naming).
const httpRouteTable = "http-80"

// apiListener is what grpc-go reads for target xds:///<name>: an
// HttpConnectionManager with the HTTP filters of shardgate's own HTTP
// listeners, so grpc-go reads the production filter chain too.
func apiListener(name, routeConfig string) *listenerv3.Listener {
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "e2e",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource: &corev3.ConfigSource{
				ResourceApiVersion:    corev3.ApiVersion_V3,
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
			},
			RouteConfigName: routeConfig,
		}},
		HttpFilters: translatedHTTPFilters(),
	})
	if err != nil {
		panic(err)
	}
	// grpc-go reads only api_listener; translate.Validate checks that its
	// route configuration exists.
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}
}

// translatedHTTPFilters are the HTTP filters of the HttpConnectionManager
// that xds/translate writes for an HTTP listener.
func translatedHTTPFilters() []*hcmv3.HttpFilter {
	res, err := translate.Translate(&ir.Gateway{Namespace: "e2e", Name: "filters",
		Listeners: []ir.Listener{{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP}}})
	if err != nil {
		panic(err)
	}
	for _, l := range res.Listeners {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				var hcm hcmv3.HttpConnectionManager
				if f.GetTypedConfig().UnmarshalTo(&hcm) == nil {
					return hcm.GetHttpFilters()
				}
			}
		}
	}
	panic("translated HTTP listener without an HttpConnectionManager")
}
