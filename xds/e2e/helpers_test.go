package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/xds"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/xds/translate"
)

const (
	// portName is every test Service's port name; EndpointSlice ports
	// match it.
	portName = "grpc"
	// servicePort is every test Service's port (clusters are
	// "<ns>/<svc>/80").
	servicePort = 80
	// domain is the test Gateways' listener hostname suffix.
	domain = "e2e.test"

	methodEmpty = "/grpc.testing.TestService/EmptyCall"
	methodUnary = "/grpc.testing.TestService/UnaryCall"
	servicePath = "/grpc.testing.TestService/"
)

// backend is a gRPC TestService on backendIP that answers every call with
// the response header "backend: <name>".
type backend struct {
	name  string
	port  int32
	calls atomic.Int64
}

type echoServer struct {
	testgrpc.UnimplementedTestServiceServer
	b *backend
}

func (s echoServer) answer(ctx context.Context) error {
	s.b.calls.Add(1)
	return grpc.SetHeader(ctx, metadata.Pairs("backend", s.b.name))
}

func (s echoServer) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, s.answer(ctx)
}

func (s echoServer) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{Hostname: s.b.name}, s.answer(ctx)
}

// startBackend serves a backend until the spec ends.
func startBackend(name string) *backend {
	GinkgoHelper()
	lis, err := net.Listen("tcp", net.JoinHostPort(backendIP, "0"))
	Expect(err).NotTo(HaveOccurred())
	b := &backend{name: name, port: int32(lis.Addr().(*net.TCPAddr).Port)}
	g := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(g, echoServer{b: b})
	go func() { _ = g.Serve(lis) }()
	DeferCleanup(g.Stop)
	return b
}

// namespace creates a namespace of the spec's own.
func namespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(env.Client.Create(ctx, ns)).To(Succeed())
	dumps.Add(env.Client, ns.Name)
	return ns.Name
}

// dumps are the namespaces the running spec created; a spec that fails
// prints their objects.
var dumps testenv.Dumps

var _ = AfterEach(func() { dumps.Flush(context.Background(), GinkgoWriter, CurrentSpecReport().Failed()) })

func ensureGatewayClass(ctx context.Context) {
	GinkgoHelper()
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}
	Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, class))).To(Succeed())
}

// gateway creates Gateway ns/name with one HTTP listener on port 80 for
// "*.e2e.test" and waits until its config is published. Its API listeners
// (what grpc-go clients read) follow its routes' hostnames.
func gateway(ctx context.Context, ns, name string) types.NamespacedName {
	GinkgoHelper()
	nn := types.NamespacedName{Namespace: ns, Name: name}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{httpListener("http", 80)}},
	}
	Expect(env.Client.Create(ctx, gw)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(srv.PublishErrors()).NotTo(HaveKey(nn), "publish errors")
		g.Expect(resources(g, nn, resourcev3.RouteType)).To(HaveKey(httpRouteTable))
	}).Should(Succeed(), "Gateway %s published", nn)
	return nn
}

// servesHost waits until gw's route table has a virtual host for
// "<host>.e2e.test": from then on a grpc-go client of xds:///<host>.e2e.test
// finds its API listener.
func servesHost(gw types.NamespacedName, host string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		rc, ok := resources(g, gw, resourcev3.RouteType)[httpRouteTable].(*routev3.RouteConfiguration)
		g.Expect(ok).To(BeTrue())
		var hosts []string
		for _, vh := range rc.GetVirtualHosts() {
			hosts = append(hosts, vh.GetName())
		}
		g.Expect(hosts).To(ContainElement(host + "." + domain))
	}).Should(Succeed(), "Gateway %s serves %s.%s", gw, host, domain)
}

// httpListener is an HTTP listener for "*.e2e.test".
func httpListener(name string, port gatewayv1.PortNumber) gatewayv1.Listener {
	return gatewayv1.Listener{
		Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPProtocolType, Port: port,
		Hostname: ptr.To(gatewayv1.Hostname("*." + domain)),
	}
}

// resources returns the published resources of one type of a Gateway.
func resources(g Gomega, gw types.NamespacedName, typeURL string) map[string]cachetypes.Resource {
	snap, err := srv.Snapshot(gw)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]cachetypes.Resource{}
	for name, r := range snap.GetResources(typeURL) {
		decoded, err := translate.Decode(r) // published as wire forms
		g.Expect(err).NotTo(HaveOccurred())
		out[name] = decoded
	}
	return out
}

// service creates a Service with port "grpc" 80 → 8080, speaking h2c.
func service(ctx context.Context, ns, name string) types.NamespacedName {
	GinkgoHelper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{
				Name: portName, Port: servicePort, TargetPort: intstr.FromInt32(8080),
				AppProtocol: ptr.To("kubernetes.io/h2c"),
			}},
		},
	}
	Expect(env.Client.Create(ctx, svc)).To(Succeed())
	return client.ObjectKeyFromObject(svc)
}

// backendService creates a Service whose endpoints are the backends: one
// real EndpointSlice per backend (each listens on its own port), holding
// backendIP.
func backendService(ctx context.Context, ns, name string, bs ...*backend) types.NamespacedName {
	GinkgoHelper()
	nn := service(ctx, ns, name)
	for _, b := range bs {
		Expect(env.Client.Create(ctx, endpointSlice(nn, name+"-"+b.name, b.port, true))).To(Succeed())
	}
	return nn
}

// endpointSlice is an EndpointSlice of svc with one endpoint, backendIP, on
// the port named like the test Services' port.
func endpointSlice(svc types.NamespacedName, name string, port int32, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: svc.Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{backendIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

// findBackendIP returns the first global unicast IPv4 address of an
// interface that is up: an address of this machine (traffic to it stays
// on the machine) that the apiserver accepts in an EndpointSlice, unlike
// 127.0.0.0/8 and link-local addresses.
func findBackendIP() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip4 := ipn.IP.To4(); ip4 != nil && ip4.IsGlobalUnicast() {
					return ip4.String(), nil
				}
			}
		}
	}
	return "", fmt.Errorf("no interface that is up has a global unicast IPv4 address for the test backends")
}

type backendRef struct {
	svc    string
	weight int32
}

func to(svc string) backendRef                   { return backendRef{svc: svc, weight: 1} }
func weighted(svc string, w int32) backendRef    { return backendRef{svc: svc, weight: w} }
func exact(path string) gatewayv1.HTTPRouteMatch { return pathMatch(gatewayv1.PathMatchExact, path) }
func prefix(path string) gatewayv1.HTTPRouteMatch {
	return pathMatch(gatewayv1.PathMatchPathPrefix, path)
}

func pathMatch(t gatewayv1.PathMatchType, path string) gatewayv1.HTTPRouteMatch {
	return gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(t), Value: ptr.To(path)}}
}

func withHeader(m gatewayv1.HTTPRouteMatch, name, value string) gatewayv1.HTTPRouteMatch {
	m.Headers = append(m.Headers, gatewayv1.HTTPHeaderMatch{
		Type: ptr.To(gatewayv1.HeaderMatchExact), Name: gatewayv1.HTTPHeaderName(name), Value: value,
	})
	return m
}

func rule(m gatewayv1.HTTPRouteMatch, refs ...backendRef) gatewayv1.HTTPRouteRule {
	r := gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{m}}
	for _, ref := range refs {
		r.BackendRefs = append(r.BackendRefs, gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: gatewayv1.ObjectName(ref.svc), Port: ptr.To(gatewayv1.PortNumber(servicePort)),
			},
			Weight: ptr.To(ref.weight),
		}})
	}
	return r
}

// httpRoute creates an HTTPRoute for host "<host>.e2e.test" on gw.
func httpRoute(ctx context.Context, gw types.NamespacedName, name, host string, rules ...gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRoute {
	GinkgoHelper()
	r := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: gw.Namespace},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw.Name)}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host + "." + domain)},
			Rules:           rules,
		},
	}
	Expect(env.Client.Create(ctx, r)).To(Succeed())
	return r
}

// setBackend points every rule of route at svc, with a merge patch of the
// spec (no conflict with the controller's status writes).
func setBackend(ctx context.Context, r *gatewayv1.HTTPRoute, svc string) error {
	rules := make([]gatewayv1.HTTPRouteRule, len(r.Spec.Rules))
	for i, old := range r.Spec.Rules {
		rules[i] = rule(old.Matches[0], to(svc))
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rules": rules}})
	if err != nil {
		return err
	}
	return env.Client.Patch(ctx, r.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
}

// clientCert writes a client certificate for gw (from ca) and the xDS CA
// into a new directory and returns their paths.
type certFiles struct{ ca, cert, key string }

func writeCerts(ca *pki.CA, gw types.NamespacedName) certFiles {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	f := certFiles{ca: filepath.Join(dir, "ca.crt"), cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key")}
	Expect(os.WriteFile(f.ca, xdsCA.CertPEM(), 0o600)).To(Succeed())
	if ca != nil {
		certPEM, keyPEM, err := ca.IssueGateway(gw)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(f.cert, certPEM, 0o600)).To(Succeed())
		Expect(os.WriteFile(f.key, keyPEM, 0o600)).To(Succeed())
	} else {
		f.cert, f.key = "", ""
	}
	return f
}

var nodeSeq atomic.Int64

// bootstrap is a grpc-go xDS bootstrap for node cluster "<ns>/<name>",
// with file-based mTLS channel credentials (gRFC A65).
func bootstrap(nodeCluster string, f certFiles) (nodeID string, _ []byte) {
	GinkgoHelper()
	creds := map[string]any{"ca_certificate_file": f.ca}
	if f.cert != "" {
		creds["certificate_file"], creds["private_key_file"] = f.cert, f.key
	}
	nodeID = fmt.Sprintf("e2e-%s-%d", GinkgoT().Name(), nodeSeq.Add(1))
	b, err := json.Marshal(map[string]any{
		"xds_servers": []any{map[string]any{
			"server_uri":      xdsTarget,
			"channel_creds":   []any{map[string]any{"type": "tls", "config": creds}},
			"server_features": []string{"xds_v3"},
		}},
		"node": map[string]any{"id": nodeID, "cluster": nodeCluster},
	})
	Expect(err).NotTo(HaveOccurred())
	return nodeID, b
}

// xdsClient is a gRPC client of xds:///<host>.e2e.test using gw's config
// and a client certificate for gw.
func xdsClient(gw types.NamespacedName, host string) (testgrpc.TestServiceClient, string) {
	GinkgoHelper()
	node, bs := bootstrap(gw.Namespace+"/"+gw.Name, writeCerts(xdsCA, gw))
	return dialXDS(bs, host), node
}

// dialXDS dials xds:///<host>.e2e.test with the bootstrap bs (and opts).
func dialXDS(bs []byte, host string, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	GinkgoHelper()
	return dialTarget(bs, "xds:///"+host+"."+domain, opts...)
}

// dialTarget dials an xds:/// target with the bootstrap bs (and opts).
func dialTarget(bs []byte, target string, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	GinkgoHelper()
	builder, err := xds.NewXDSResolverWithConfigForTesting(bs)
	Expect(err).NotTo(HaveOccurred())
	cc, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithResolvers(builder),
		grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cc.Close)
	return testgrpc.NewTestServiceClient(cc)
}

// call makes one RPC (EmptyCall or UnaryCall, by full method) with the
// given request headers and returns the backend that answered.
func call(ctx context.Context, c testgrpc.TestServiceClient, method string, headers ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if len(headers) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, headers...)
	}
	var md metadata.MD
	var err error
	switch method {
	case methodEmpty:
		_, err = c.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&md))
	case methodUnary:
		_, err = c.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.Header(&md))
	default:
		return "", fmt.Errorf("unknown method %s", method)
	}
	if err != nil {
		return "", err
	}
	if v := md.Get("backend"); len(v) == 1 {
		return v[0], nil
	}
	return "", fmt.Errorf("no backend header in %v", md)
}

// answeredBy polls until an RPC is answered and returns who answered.
func answeredBy(ctx context.Context, c testgrpc.TestServiceClient, method string, headers ...string) func() (string, error) {
	return func() (string, error) { return call(ctx, c, method, headers...) }
}

type metav1Condition = metav1.Condition

func objectMeta(nn types.NamespacedName) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}
}

// answeredOnlyBy is answeredBy over n calls: the one backend that answered
// all of them, or "mixed: a,b,…" while the client still balances over
// more than one (a config made of several changes may reach the client in
// steps, each published as soon as it is translated).
func answeredOnlyBy(ctx context.Context, c testgrpc.TestServiceClient, method string, n int) func() (string, error) {
	return func() (string, error) {
		seen := []string{}
		for range n {
			got, err := call(ctx, c, method)
			if err != nil {
				return "", err
			}
			if !slices.Contains(seen, got) {
				seen = append(seen, got)
			}
		}
		if len(seen) == 1 {
			return seen[0], nil
		}
		return "mixed: " + strings.Join(seen, ","), nil
	}
}
