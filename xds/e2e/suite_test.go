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
// grpc-go's xDS clients are proxyless clients, served as in production: each
// presents its Gateway's client certificate, the server knows it for a gRPC
// library by its node's user agent, and it reads the Gateway's API
// listeners (one per hostname its routes serve, xds:///<host>.e2e.test),
// whose HttpConnectionManager uses RDS for the Gateway's own route table
// ("http-80"), with the Gateway's translated routes, clusters and load
// assignments. No test hook shapes what it reads.
package e2e_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
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
		OnXDSServer:      func(s *xdsserver.Server) { got <- s },
		OnXDSCredentials: func(c *xdsserver.Credentials) { gotCreds <- c },
		// Long enough that only a proxyless client's acknowledgement of
		// phase one, never the timeout, releases phase two of a two-phase
		// publish on a loaded machine (twophase_test.go checks it).
		XDSPhaseTwoTimeout: 30 * time.Second,
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

// httpRouteTable is the RouteConfiguration of a Gateway's port-80 HTTP
// listener (xds/translate naming).
const httpRouteTable = "http-80"
