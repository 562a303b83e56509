package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// The field managers of Akash's own operators: the objects they left
// behind carry these, not shardgate's.
const (
	hostnameOperator = "akash-hostname-operator"
	ipOperator       = "akash-ip-operator"
	migrationPool    = "leased-ips"
)

// objectEvents records, from one watch started at a known resource
// version, every event about the objects of one kind, and how many times
// each object's spec, labels or annotations changed.
type objectEvents struct {
	mu      sync.Mutex
	events  []string // "TYPE ns/name"
	writes  map[string]int
	last    map[string]client.Object
	closed  bool
	cancel  context.CancelFunc
	differs func(a, b client.Object) bool
}

func watchFrom(ctx context.Context, env *testenv.Env, list client.ObjectList, rv string, differs func(a, b client.Object) bool) *objectEvents {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(ctx)
	w, err := wc.Watch(wctx, list, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	Expect(err).NotTo(HaveOccurred())
	oe := &objectEvents{writes: map[string]int{}, last: map[string]client.Object{}, cancel: cancel, differs: differs}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				oe.mu.Lock()
				if !ok || ev.Type == watch.Error {
					// A watch that ends early may have missed events:
					// the spec fails rather than trust it.
					oe.closed = wctx.Err() == nil
					oe.mu.Unlock()
					return
				}
				o, isObj := ev.Object.(client.Object)
				if isObj {
					key := o.GetNamespace() + "/" + o.GetName()
					oe.events = append(oe.events, string(ev.Type)+" "+key)
					if prev, seen := oe.last[key]; !seen || differs(prev, o) {
						oe.writes[key]++
					}
					oe.last[key] = o
				}
				oe.mu.Unlock()
			}
		}
	}()
	return oe
}

// about lists the event types seen for ns/name.
func (oe *objectEvents) about(key string) []string {
	oe.mu.Lock()
	defer oe.mu.Unlock()
	var out []string
	for _, e := range oe.events {
		if strings.HasSuffix(e, " "+key) {
			out = append(out, strings.SplitN(e, " ", 2)[0])
		}
	}
	return out
}

func (oe *objectEvents) writesTo(key string) int {
	oe.mu.Lock()
	defer oe.mu.Unlock()
	return oe.writes[key]
}

func (oe *objectEvents) seen(key string) int {
	oe.mu.Lock()
	defer oe.mu.Unlock()
	n := 0
	for _, e := range oe.events {
		if strings.HasSuffix(e, " "+key) {
			n++
		}
	}
	return n
}

func (oe *objectEvents) broken() bool {
	oe.mu.Lock()
	defer oe.mu.Unlock()
	return oe.closed
}

func routeDiffers(a, b client.Object) bool {
	ra, rb := a.(*gatewayv1.HTTPRoute), b.(*gatewayv1.HTTPRoute)
	return !equality.Semantic.DeepEqual(ra.Spec, rb.Spec) || !equality.Semantic.DeepEqual(ra.Labels, rb.Labels) ||
		!equality.Semantic.DeepEqual(ra.Annotations, rb.Annotations)
}

func serviceDiffers(a, b client.Object) bool {
	sa, sb := a.(*corev1.Service), b.(*corev1.Service)
	return !equality.Semantic.DeepEqual(sa.Spec, sb.Spec) || !equality.Semantic.DeepEqual(sa.Labels, sb.Labels) ||
		!equality.Semantic.DeepEqual(sa.Annotations, sb.Annotations)
}

// renderOperatorServices renders the chart in Akash mode into
// akash-services, as `helm upgrade --set akash.operatorServices=true`
// does, and returns its operator Services and its Deployment.
func renderOperatorServices() ([]*corev1.Service, *appsv1.Deployment) {
	root, err := testenv.Root()
	Expect(err).NotTo(HaveOccurred())
	chrt, err := loader.Load(filepath.Join(root, "charts", "shardgate"))
	Expect(err).NotTo(HaveOccurred())
	values := map[string]any{"akash": map[string]any{"enabled": true, "operatorServices": true}}
	Expect(chartutil.ProcessDependenciesWithMerge(chrt, values)).To(Succeed())
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion("v1.37.2")
	Expect(err).NotTo(HaveOccurred())
	caps.KubeVersion = *kv
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: "shardgate", Namespace: "akash-services", Revision: 2, IsUpgrade: true}, caps)
	Expect(err).NotTo(HaveOccurred())
	files, err := engine.Render(chrt, vals)
	Expect(err).NotTo(HaveOccurred())
	var svcs []*corev1.Service
	var dep *appsv1.Deployment
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(content) {
			var head metav1.TypeMeta
			Expect(yaml.Unmarshal([]byte(doc), &head)).To(Succeed())
			switch head.Kind {
			case "Service":
				var s corev1.Service
				Expect(yaml.Unmarshal([]byte(doc), &s)).To(Succeed())
				if s.Name == "operator-hostname" || s.Name == "operator-ip" {
					s.Namespace = "akash-services"
					svcs = append(svcs, &s)
				}
			case "Deployment":
				dep = &appsv1.Deployment{}
				Expect(yaml.Unmarshal([]byte(doc), dep)).To(Succeed())
			}
		}
	}
	return svcs, dep
}

var _ = Describe("Akash migration", Ordered, func() {
	ctx := context.Background()
	var (
		env  *testenv.Env
		c    client.Client
		stop func() error
		// metricsAddr is the running manager's metrics address.
		metricsAddr string
		xds         *xdsserver.Server
		apiAddr     string
		routeEv     *objectEvents
		svcEv       *objectEvents
	)
	leaseA := akash.Lease{Owner: akashAlice, DSeq: 41, GSeq: 1, OSeq: 1, Provider: akashProvider}
	leaseB := akash.Lease{Owner: akashBob, DSeq: 42, GSeq: 1, OSeq: 1, Provider: akashProvider}
	shardRef := types.NamespacedName{Namespace: "akash-edge", Name: "edge"}
	// The hostnames the provider leased, by lease.
	hosts := map[string]akash.Lease{"web.example.com": leaseA, "api.example.com": leaseA, "shop.example.com": leaseB}
	// The leased-IP Services Akash's IP operator wrote: alice's endpoint
	// on TCP and UDP 5000 (one sharing key, one address), bob's on TCP 6000.
	type leasedIP struct {
		name   string
		lease  akash.Lease
		port   uint32
		ext    uint32
		proto  string
		key    string
		svcKey types.NamespacedName
	}
	ips := []*leasedIP{
		{name: "a-tcp", lease: leaseA, port: 5000, ext: 5000, proto: "TCP", key: akashAlice + "-ip-game"},
		{name: "a-udp", lease: leaseA, port: 5000, ext: 5000, proto: "UDP", key: akashAlice + "-ip-game"},
		{name: "b-tcp", lease: leaseB, port: 6000, ext: 6000, proto: "TCP", key: akashBob + "-ip-db"},
	}
	routeUID := map[string]types.UID{}
	svcUID := map[types.NamespacedName]types.UID{}
	svcIP := map[types.NamespacedName]string{}
	operatorUID := map[string]types.UID{}
	operatorRV := map[string]string{}

	api := func(path string) (int, []byte) {
		resp, err := http.Get("http://" + apiAddr + path)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	getRoute := func(host string) (*gatewayv1.HTTPRoute, error) {
		var r gatewayv1.HTTPRoute
		err := c.Get(ctx, types.NamespacedName{Namespace: hosts[host].Namespace(), Name: host}, &r)
		return &r, err
	}
	ipOf := func(nn types.NamespacedName) string {
		var s corev1.Service
		if err := c.Get(ctx, nn, &s); err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return ""
		}
		return s.Status.LoadBalancer.Ingress[0].IP
	}
	oldParent := gatewayv1.ParentReference{Namespace: new(gatewayv1.Namespace("akash-gateway")), Name: "akash-gateway"}
	// fence writes a marker route outside every lease and waits until the
	// route watch delivers it: every write to a route committed before the
	// fence has then been counted.
	fenceN := 0
	fence := func() {
		fenceN++
		name := fmt.Sprintf("fence-%d", fenceN)
		Expect(c.Create(ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}})).To(Succeed())
		Eventually(func() int { return routeEv.seen("default/" + name) }).Should(BeNumerically(">=", 1))
	}

	BeforeAll(func() {
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		env, err = testenv.Start(ctx, testenv.Options{MetalLB: true, DefaultPool: true,
			ExtraCRDPaths: []string{filepath.Join(root, "crds", "akash")}})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		apiAddr = lis.Addr().String()
		Expect(lis.Close()).To(Succeed())
		Expect(c.Create(ctx, &metallbv1beta1.IPAddressPool{
			ObjectMeta: metav1.ObjectMeta{Name: migrationPool, Namespace: testenv.MetalLBNamespace},
			Spec:       metallbv1beta1.IPAddressPoolSpec{Addresses: []string{"127.243.0.0/28"}, AvoidBuggyIPs: true, AutoAssign: new(false)},
		})).To(Succeed())
		for _, ns := range []string{"lease", "akash-services", "akash-gateway", "akash-edge"} {
			Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
	})
	AfterAll(func() {
		if routeEv != nil {
			routeEv.cancel()
		}
		if svcEv != nil {
			svcEv.cancel()
		}
		if stop != nil {
			Expect(stop()).To(Succeed())
		}
		if env != nil {
			Expect(env.Stop()).To(Succeed())
		}
	})

	It("before: the old operators' routes, leased-IP Services and operator Services", func() {
		hostnameOp, ipOp := client.FieldOwner(hostnameOperator), client.FieldOwner(ipOperator)
		// The old Gateway, of NGINX Gateway Fabric's class.
		Expect(c.Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: "gateway.nginx.org/nginx-gateway-controller"}})).To(Succeed())
		Expect(c.Create(ctx, &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "akash-gateway", Namespace: "akash-gateway"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "nginx", Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}}}}}})).To(Succeed())
		for _, l := range []akash.Lease{leaseA, leaseB} {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
			ns.Labels[akash.LabelManaged] = "true"
			Expect(c.Create(ctx, ns)).To(Succeed())
			dumps.Add(c, ns.Name)
			Expect(c.Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
				Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
					Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
			})).To(Succeed())
			Expect(c.Create(ctx, &akashv1.Manifest{
				ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Namespace: "lease"},
				Spec: akashv1.ManifestSpec{
					LeaseID: akashv1.LeaseID{Owner: l.Owner, DSeq: fmt.Sprint(l.DSeq), GSeq: l.GSeq, OSeq: l.OSeq, Provider: l.Provider},
					Group: akashv1.ManifestGroup{Name: "g", Services: []akashv1.ManifestService{{Name: "web", Count: 1,
						Expose: []akashv1.ManifestServiceExpose{{Port: 8080, ExternalPort: 80, Proto: "TCP", Global: true}}}}},
				},
			})).To(Succeed())
		}
		for host, l := range hosts {
			Expect(c.Create(ctx, &akashv1.ProviderHost{
				ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(host, ".", "-"), Namespace: "lease"},
				Spec: akashv1.ProviderHostSpec{Owner: l.Owner, Provider: l.Provider, Hostname: host,
					Dseq: l.DSeq, Gseq: l.GSeq, Oseq: l.OSeq, ServiceName: "web", ExternalPort: 80},
			})).To(Succeed())
			// Akash's Gateway API mode: named after the hostname, the
			// lease labels, a parentRef to the old Gateway.
			lbls := l.Labels()
			lbls[akash.LabelManaged] = "true"
			r := &gatewayv1.HTTPRoute{
				ObjectMeta: metav1.ObjectMeta{Name: host, Namespace: l.Namespace(), Labels: lbls,
					Annotations: map[string]string{"nginx.org/proxy-read-timeout": "60s"}},
				Spec: gatewayv1.HTTPRouteSpec{
					CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{oldParent}},
					Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
					Rules: []gatewayv1.HTTPRouteRule{{
						Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new("/")}}},
						BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: new(gatewayv1.PortNumber(80))}}}},
					}},
				},
			}
			Expect(c.Create(ctx, r, hostnameOp)).To(Succeed())
			routeUID[host] = r.UID
		}
		for _, ip := range ips {
			Expect(c.Create(ctx, &akashv1.ProviderLeasedIP{
				ObjectMeta: metav1.ObjectMeta{Name: ip.name, Namespace: "lease", Labels: map[string]string{akash.LabelManaged: "true"}},
				Spec: akashv1.ProviderLeasedIPSpec{
					LeaseID:     akashv1.LeaseID{Owner: ip.lease.Owner, DSeq: fmt.Sprint(ip.lease.DSeq), GSeq: ip.lease.GSeq, OSeq: ip.lease.OSeq, Provider: ip.lease.Provider},
					ServiceName: "web", Port: ip.port, ExternalPort: ip.ext, Protocol: ip.proto, SharingKey: ip.key,
				},
			})).To(Succeed())
			// Akash's IP operator: <svc>-ip-<port>-<proto>, the lease
			// labels, MetalLB's sharing and pool annotations.
			name := fmt.Sprintf("web-ip-%d-%s", ip.ext, strings.ToLower(ip.proto))
			lbls := ip.lease.Labels()
			lbls[akash.LabelManaged] = "true"
			lbls[akash.LabelServiceTarget] = akash.ServiceTargetMetalLB
			s := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ip.lease.Namespace(), Labels: lbls,
					Annotations: map[string]string{"metallb.universe.tf/allow-shared-ip": ip.key, "metallb.universe.tf/address-pool": migrationPool}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
					Selector: map[string]string{akash.LabelManaged: "true", akash.LabelManifestService: "web"},
					Ports: []corev1.ServicePort{{Name: name, Protocol: corev1.Protocol(ip.proto), Port: int32(ip.ext),
						TargetPort: intstr.FromInt32(int32(ip.port))}}},
			}
			Expect(c.Create(ctx, s, ipOp)).To(Succeed())
			ip.svcKey = client.ObjectKeyFromObject(s)
			svcUID[ip.svcKey] = s.UID
		}
		for _, ip := range ips {
			Eventually(func() string { return ipOf(ip.svcKey) }).ShouldNot(BeEmpty(), "MetalLB assigns %s", ip.svcKey)
			svcIP[ip.svcKey] = ipOf(ip.svcKey)
		}
		Expect(svcIP[ips[0].svcKey]).To(Equal(svcIP[ips[1].svcKey]), "one sharing key, one address")
		// The old operators' Services, as their charts create them.
		for _, name := range []string{"operator-hostname", "operator-ip"} {
			s := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "akash-services",
					Labels: map[string]string{"app.kubernetes.io/name": name}},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/name": name},
					Ports: []corev1.ServicePort{{Name: "rest", Port: 8080, TargetPort: intstr.FromString("rest"), Protocol: corev1.ProtocolTCP}}},
			}
			Expect(c.Create(ctx, s, client.FieldOwner("helm"))).To(Succeed())
			operatorUID[name], operatorRV[name] = s.UID, s.ResourceVersion
		}

		// Watch every route and Service from here on.
		var rl gatewayv1.HTTPRouteList
		Expect(c.List(ctx, &rl)).To(Succeed())
		routeEv = watchFrom(ctx, env, &gatewayv1.HTTPRouteList{}, rl.ResourceVersion, routeDiffers)
		var sl corev1.ServiceList
		Expect(c.List(ctx, &sl)).To(Succeed())
		svcEv = watchFrom(ctx, env, &corev1.ServiceList{}, sl.ResourceVersion, serviceDiffers)
	})

	It("installs shardgate alongside, in Akash mode with operatorServices=false: the old operator Services are untouched", func() {
		shard(ctx, c, shardRef.Namespace, shardRef.Name, "example.com")
		cfg, err := config.Parse([]byte(fmt.Sprintf("akash:\n  enabled: true\n  apiAddress: %q\n  metalLBPool: %s\n", apiAddr, migrationPool)))
		Expect(err).NotTo(HaveOccurred())
		port, err := testenv.FreePort()
		Expect(err).NotTo(HaveOccurred())
		metricsAddr = fmt.Sprintf("127.0.0.1:%d", port)
		stop = env.RunManager(manager.Options{Config: cfg, Log: GinkgoLogr, MetricsAddress: metricsAddr, MetricsInsecure: true,
			OnXDSServer: func(s *xdsserver.Server) { xds = s }})
		Eventually(func() int { code, _ := api("/health"); return code }).Should(Equal(http.StatusOK))
	})

	It("adopts every route and leased-IP Service in place, serves every hostname, and answers the provider", func() {
		for host := range hosts {
			Eventually(func(g Gomega) {
				r, err := getRoute(host)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(r.UID).To(Equal(routeUID[host]))
				// parentRefs is atomic: the shard replaces the old Gateway.
				g.Expect(r.Spec.ParentRefs).To(HaveLen(1))
				g.Expect(string(r.Spec.ParentRefs[0].Name)).To(Equal(shardRef.Name))
				g.Expect(string(*r.Spec.ParentRefs[0].Namespace)).To(Equal(shardRef.Namespace))
				g.Expect(r.Annotations).To(HaveKeyWithValue("nginx.org/proxy-read-timeout", "60s"), "the old annotations stay")
				l, ok := akash.LeaseFromLabels(r.Labels)
				g.Expect(ok).To(BeTrue(), "the lease labels stay")
				g.Expect(l).To(Equal(hosts[host]))
				g.Expect(r.Status.Parents).NotTo(BeEmpty())
				accepted := meta.FindStatusCondition(r.Status.Parents[0].Conditions, "Accepted")
				g.Expect(accepted).NotTo(BeNil())
				g.Expect(accepted.Status).To(Equal(metav1.ConditionTrue), accepted.Message)
			}).Should(Succeed(), host)
			Eventually(func() int { return len(vhostRoutes(xds, shardRef, host)) }).Should(BeNumerically(">", 0), "the shard serves %s", host)
		}
		for _, ip := range ips {
			Eventually(func(g Gomega) {
				var s corev1.Service
				g.Expect(c.Get(ctx, ip.svcKey, &s)).To(Succeed())
				g.Expect(s.UID).To(Equal(svcUID[ip.svcKey]))
				g.Expect(wroteByManager(&s, shardgatev1alpha1.FieldOwner)).To(BeTrue(), "shardgate applied its fields to %s", ip.svcKey)
				g.Expect(s.Status.LoadBalancer.Ingress).To(HaveLen(1))
				g.Expect(s.Status.LoadBalancer.Ingress[0].IP).To(Equal(svcIP[ip.svcKey]))
			}).Should(Succeed(), ip.svcKey.String())
		}

		// The provider's view, through the operators' API.
		Eventually(func(g Gomega) {
			code, body := api("/managed-hostnames")
			g.Expect(code).To(Equal(http.StatusOK))
			var got map[string]map[string]json.RawMessage
			g.Expect(json.Unmarshal(body, &got)).To(Succeed())
			g.Expect(got).To(HaveLen(len(hosts)))
			for host, l := range hosts {
				g.Expect(got).To(HaveKey(host))
				g.Expect(string(got[host]["Namespace"])).To(Equal(fmt.Sprintf("%q", l.Namespace())))
			}
		}).Should(Succeed())
		for _, l := range []akash.Lease{leaseA, leaseB} {
			Eventually(func(g Gomega) {
				code, body := api(fmt.Sprintf("/ip-lease-status/%s/%d/%d/%d", l.Owner, l.DSeq, l.GSeq, l.OSeq))
				g.Expect(code).To(Equal(http.StatusOK), string(body))
				var st []map[string]any
				g.Expect(json.Unmarshal(body, &st)).To(Succeed())
				want := 0
				for _, ip := range ips {
					if ip.lease != l {
						continue
					}
					want++
					g.Expect(st).To(ContainElement(And(HaveKeyWithValue("Protocol", ip.proto), HaveKeyWithValue("IP", svcIP[ip.svcKey]),
						HaveKeyWithValue("ExternalPort", BeNumerically("==", ip.ext)))))
				}
				g.Expect(st).To(HaveLen(want))
			}).Should(Succeed())
		}
		Eventually(func(g Gomega) {
			code, body := api("/state")
			g.Expect(code).To(Equal(http.StatusOK))
			var state map[string][]map[string]json.RawMessage
			g.Expect(json.Unmarshal(body, &state)).To(Succeed())
			g.Expect(state[leaseA.String()]).To(HaveLen(2))
			g.Expect(state[leaseB.String()]).To(HaveLen(1))
		}).Should(Succeed())
		// Two addresses in use: alice's TCP and UDP share one.
		Eventually(func() string { _, body := api("/usage"); return string(body) }).Should(Equal(`{"Available":15,"InUse":2}` + "\n"))

		// Nothing deleted or re-created, the old operator Services untouched.
		fence()
		Expect(routeEv.broken()).To(BeFalse())
		Expect(svcEv.broken()).To(BeFalse())
		for host, l := range hosts {
			Expect(routeEv.about(l.Namespace()+"/"+host)).NotTo(ContainElement(Or(Equal("DELETED"), Equal("ADDED"))), host)
			Expect(routeEv.about(l.Namespace() + "/" + host)).NotTo(BeEmpty())
		}
		for _, ip := range ips {
			Expect(svcEv.about(ip.svcKey.String())).NotTo(ContainElement("DELETED"))
			Expect(svcEv.about(ip.svcKey.String())).NotTo(ContainElement("ADDED"))
		}
		for name, uid := range operatorUID {
			var s corev1.Service
			Expect(c.Get(ctx, types.NamespacedName{Namespace: "akash-services", Name: name}, &s)).To(Succeed())
			Expect(s.UID).To(Equal(uid))
			Expect(s.ResourceVersion).To(Equal(operatorRV[name]), "%s untouched", name)
		}
		var inServices corev1.ServiceList
		Expect(c.List(ctx, &inServices, client.InNamespace("akash-services"))).To(Succeed())
		Expect(inServices.Items).To(HaveLen(2), "shardgate adds no operator Service with operatorServices=false")
	})

	It("answers the old hostname operator's one write of its parentRef once, and converges", func() {
		host := "web.example.com"
		key := hosts[host].Namespace() + "/" + host
		fence()
		before := routeEv.writesTo(key)
		// One write by the old operator; a conflict with a status write
		// writes nothing, and it reads and tries again.
		Eventually(func() error {
			r, err := getRoute(host)
			if err != nil {
				return err
			}
			r.Spec.ParentRefs = []gatewayv1.ParentReference{oldParent}
			return c.Update(ctx, r, client.FieldOwner(hostnameOperator))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			r, err := getRoute(host)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.UID).To(Equal(routeUID[host]))
			g.Expect(r.Spec.ParentRefs).To(HaveLen(1))
			g.Expect(string(r.Spec.ParentRefs[0].Name)).To(Equal(shardRef.Name))
		}).Should(Succeed())
		// No write loop: over the next twenty events of the route watch,
		// the route is written no more than the operator's write and
		// shardgate's answer.
		for range 20 {
			fence()
		}
		Expect(routeEv.broken()).To(BeFalse())
		Expect(routeEv.writesTo(key)-before).To(Equal(2), "the operator's write and shardgate's answer")
		Expect(routeEv.about(key)).NotTo(ContainElement(Or(Equal("DELETED"), Equal("ADDED"))))
		Eventually(func() int { return len(vhostRoutes(xds, shardRef, host)) }).Should(BeNumerically(">", 0))
	})

	It("cuts the operator Services over to shardgate as the chart renders them", func() {
		rendered, dep := renderOperatorServices()
		Expect(rendered).To(HaveLen(2))
		Expect(dep).NotTo(BeNil())
		pods := labels.Set(dep.Spec.Template.Labels)
		var apiPort int32
		for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
			if p.Name == "akash-api" {
				apiPort = p.ContainerPort
			}
		}
		Expect(apiPort).NotTo(BeZero(), "the Deployment names the Akash API port")
		// The old operators' charts go (guide step 4), the release's
		// Services take their names (step 5).
		for name := range operatorUID {
			Expect(c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "akash-services"}})).To(Succeed())
		}
		for _, s := range rendered {
			Eventually(func() error { return c.Create(ctx, s.DeepCopy(), client.FieldOwner("helm")) }).Should(Succeed())
		}
		for _, name := range []string{"operator-hostname", "operator-ip"} {
			var s corev1.Service
			Expect(c.Get(ctx, types.NamespacedName{Namespace: "akash-services", Name: name}, &s)).To(Succeed())
			Expect(s.UID).NotTo(Equal(operatorUID[name]))
			// What the provider's SRV lookup _rest._tcp.<name>.akash-services finds.
			Expect(s.Spec.Ports).To(ContainElement(And(
				HaveField("Name", "rest"), HaveField("Port", int32(8080)), HaveField("Protocol", corev1.ProtocolTCP),
				HaveField("TargetPort", intstr.FromString("akash-api")))))
			sel := labels.SelectorFromSet(s.Spec.Selector)
			Expect(sel.Matches(pods)).To(BeTrue(), "%s selects shardgate's pods", name)
			Expect(sel.Matches(labels.Set{"app.kubernetes.io/name": name})).To(BeFalse(), "%s no longer selects the old operator", name)
		}
	})

	It("rolls back: with shardgate stopped, routes and Services stay with their UIDs and the lease labels the old operators list by", func() {
		Expect(stop()).To(Succeed())
		stop = nil
		fence()
		Expect(routeEv.broken()).To(BeFalse())
		Expect(svcEv.broken()).To(BeFalse())
		for _, l := range []akash.Lease{leaseA, leaseB} {
			var rl gatewayv1.HTTPRouteList
			Expect(c.List(ctx, &rl, client.InNamespace(l.Namespace()), client.MatchingLabels(l.Labels()), client.MatchingLabels{akash.LabelManaged: "true"})).To(Succeed())
			want := 0
			for host, hl := range hosts {
				if hl == l {
					want++
					Expect(rl.Items).To(ContainElement(And(HaveField("Name", host), HaveField("UID", routeUID[host]))))
				}
			}
			Expect(rl.Items).To(HaveLen(want))
			var sl corev1.ServiceList
			Expect(c.List(ctx, &sl, client.InNamespace(l.Namespace()), client.MatchingLabels(l.Labels()),
				client.MatchingLabels{akash.LabelManaged: "true", akash.LabelServiceTarget: akash.ServiceTargetMetalLB})).To(Succeed())
			want = 0
			for _, ip := range ips {
				if ip.lease == l {
					want++
					Expect(sl.Items).To(ContainElement(And(HaveField("Name", ip.svcKey.Name), HaveField("UID", svcUID[ip.svcKey]))))
					Expect(ipOf(ip.svcKey)).To(Equal(svcIP[ip.svcKey]))
				}
			}
			Expect(sl.Items).To(HaveLen(want))
		}
		for host, l := range hosts {
			Expect(routeEv.about(l.Namespace()+"/"+host)).NotTo(ContainElement(Or(Equal("DELETED"), Equal("ADDED"))), host)
		}
		for _, ip := range ips {
			Expect(svcEv.about(ip.svcKey.String())).NotTo(ContainElement("DELETED"))
			Expect(svcEv.about(ip.svcKey.String())).NotTo(ContainElement("ADDED"))
		}
		// The re-installed hostname operator writes its parentRef back, and
		// it stays.
		host := "shop.example.com"
		// One write by the old operator; a conflict with a status write
		// writes nothing, and it reads and tries again.
		Eventually(func() error {
			r, err := getRoute(host)
			if err != nil {
				return err
			}
			r.Spec.ParentRefs = []gatewayv1.ParentReference{oldParent}
			return c.Update(ctx, r, client.FieldOwner(hostnameOperator))
		}).Should(Succeed())
		for range 5 {
			fence()
		}
		r, err := getRoute(host)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Spec.ParentRefs).To(HaveLen(1))
		Expect(r.Spec.ParentRefs[0].Name).To(Equal(oldParent.Name))
		Expect(r.Spec.ParentRefs[0].Namespace).To(Equal(oldParent.Namespace))
		Expect(r.UID).To(Equal(routeUID[host]))
	})
})

// wroteByManager: obj has fields of field manager m.
func wroteByManager(obj client.Object, m string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == m {
			return true
		}
	}
	return false
}
