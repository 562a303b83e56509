package controllers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/statuscli"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

const (
	// Akash account addresses (bech32, "akash" prefix, 20 bytes), as the
	// provider's operators require.
	akashAlice    = "akash1v9kxjcm9qqqqqqqqqqqqqqqqqqqqqqqqf38utt"
	akashBob      = "akash1vfhkyqqqqqqqqqqqqqqqqqqqqqqqqqqqmzrs9e"
	akashProvider = "akash1wpex7anfv3jhyqqqqqqqqqqqqqqqqqqqg92yhj"
	// akashLeasedPool is akash.metalLBPool in these tests: a pool of its
	// own, apart from the one the shards' Services take addresses from.
	akashLeasedPool = "leased-ips"
)

// akashLog collects the manager's log lines, to see what start-up says.
type akashLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *akashLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, prefix+" "+args)
		l.mu.Unlock()
	}, funcr.Options{})
}

func (l *akashLog) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

var _ = Describe("Akash drop-in mode", Ordered, func() {
	ctx := context.Background()
	var (
		env     *testenv.Env
		c       client.Client
		stop    func() error
		apiAddr string
		cfg     config.Config
	)
	apiResp := func(path string) (*http.Response, []byte) {
		resp, err := http.Get("http://" + apiAddr + path)
		if err != nil {
			return &http.Response{}, []byte(err.Error())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	api := func(path string) (int, []byte) {
		resp, body := apiResp(path)
		return resp.StatusCode, body
	}
	leaseNS := func(l akash.Lease, owner string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
		ns.Labels[akash.LabelManaged] = "true"
		if owner != "" {
			ns.Labels[akash.LabelLeaseOwner] = owner
		}
		Expect(c.Create(ctx, ns)).To(Succeed())
		dumps.Add(c, ns.Name)
		return ns.Name
	}
	service := func(ns, name string, port int32) {
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: name},
				Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(8080)}}},
		})).To(Succeed())
	}
	providerHost := func(name, host string, l akash.Lease, svc string, port uint32) *akashv1.ProviderHost {
		ph := &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lease"},
			Spec: akashv1.ProviderHostSpec{Owner: l.Owner, Provider: l.Provider, Hostname: host,
				Dseq: l.DSeq, Gseq: l.GSeq, Oseq: l.OSeq, ServiceName: svc, ExternalPort: port},
		}
		Expect(c.Create(ctx, ph)).To(Succeed())
		return ph
	}
	route := func(ns, name string) func() (*gatewayv1.HTTPRoute, error) {
		return func() (*gatewayv1.HTTPRoute, error) {
			var r gatewayv1.HTTPRoute
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &r)
			return &r, err
		}
	}
	notFound := func(ns, name string) func() bool {
		return func() bool {
			_, err := route(ns, name)()
			return apierrors.IsNotFound(err)
		}
	}
	events := func(name string) func(Gomega) map[string]int {
		return eventsAbout(ctx, c, "lease", "ProviderHost", name)
	}
	messages := func(name string) string {
		return strings.Join(eventNotes(ctx, c, "lease", "ProviderHost", name), "\n")
	}
	var xds *xdsserver.Server
	start := func(log logr.Logger) {
		stop = env.RunManager(manager.Options{Config: cfg, Log: log,
			OnXDSServer: func(s *xdsserver.Server) { xds = s }})
	}

	leaseA := akash.Lease{Owner: akashAlice, DSeq: 1, GSeq: 1, OSeq: 1, Provider: akashProvider}
	leaseA2 := akash.Lease{Owner: akashAlice, DSeq: 2, GSeq: 1, OSeq: 1, Provider: akashProvider}
	leaseB := akash.Lease{Owner: akashBob, DSeq: 3, GSeq: 1, OSeq: 1, Provider: akashProvider}

	BeforeAll(func() {
		var err error
		// The Akash CRDs are installed later: start-up must wait for them.
		env, err = testenv.Start(ctx, testenv.Options{MetalLB: true, DefaultPool: true})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		apiAddr = lis.Addr().String()
		Expect(lis.Close()).To(Succeed())
		cfg, err = config.Parse([]byte(fmt.Sprintf("blockedHostnames: [\".blocked.example\"]\nakash:\n  enabled: true\n  apiAddress: %q\n  metalLBPool: %s\n", apiAddr, akashLeasedPool)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Akash.Namespace).To(Equal("lease"))
		// The leased-IP pool (16 addresses, 15 usable with avoidBuggyIPs):
		// only Services that name it get its addresses.
		leased := &metallbv1beta1.IPAddressPool{
			ObjectMeta: metav1.ObjectMeta{Name: akashLeasedPool, Namespace: testenv.MetalLBNamespace},
			Spec:       metallbv1beta1.IPAddressPoolSpec{Addresses: []string{"127.241.0.0/28"}, AvoidBuggyIPs: true, AutoAssign: new(false)},
		}
		Expect(c.Create(ctx, leased)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease"}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "akash-edge"}})).To(Succeed())
		shard(ctx, c, "akash-edge", "edge", "example.com")
	})
	AfterAll(func() {
		if stop != nil {
			Expect(stop()).To(Succeed())
		}
		if env != nil {
			Expect(env.Stop()).To(Succeed())
		}
	})

	It("waits, saying why, until the Akash CRDs are served, then starts", func() {
		var log akashLog
		start(log.logger())
		Eventually(func() bool { return log.contains("does not serve the Akash CRDs") }).Should(BeTrue())
		Expect(log.contains("providerhosts.akash.network")).To(BeTrue())
		code, _ := api("/health")
		Expect(code).To(BeZero(), "the API must not answer before start-up")
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "crds", "akash")}, MaxTime: 2 * time.Minute})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { code, _ := api("/health"); return code }).Should(Equal(http.StatusOK))
		_, body := api("/health")
		Expect(string(body)).To(Equal("OK"))
	})

	var nsA, nsA2, nsB string
	It("routes a reserved ProviderHost in Akash's shape, in the lease namespace", func() {
		nsA, nsA2, nsB = leaseNS(leaseA, akashAlice), leaseNS(leaseA2, akashAlice), leaseNS(leaseB, "")
		for _, ns := range []string{nsA, nsA2, nsB} {
			service(ns, "web", 80)
		}
		providerHost("a-web", "Web.Example.COM", leaseA, "web", 80)
		var r *gatewayv1.HTTPRoute
		Eventually(func() error { var err error; r, err = route(nsA, "web.example.com")(); return err }).Should(Succeed())
		Expect(r.Labels).To(Equal(map[string]string{
			"akash.network": "true", "akash.network/lease.id.owner": akashAlice, "akash.network/lease.id.dseq": "1",
			"akash.network/lease.id.gseq": "1", "akash.network/lease.id.oseq": "1", "akash.network/lease.id.provider": akashProvider,
		}))
		Expect(r.Spec.Hostnames).To(Equal([]gatewayv1.Hostname{"web.example.com"}))
		Expect(r.Spec.ParentRefs).To(HaveLen(1))
		Expect(string(r.Spec.ParentRefs[0].Name)).To(Equal("edge"))
		Expect(string(*r.Spec.ParentRefs[0].Namespace)).To(Equal("akash-edge"))
		Expect(r.Spec.Rules).To(HaveLen(1))
		Expect(*r.Spec.Rules[0].Matches[0].Path.Value).To(Equal("/"))
		Expect(string(r.Spec.Rules[0].BackendRefs[0].Name)).To(Equal("web"))
		Expect(int32(*r.Spec.Rules[0].BackendRefs[0].Port)).To(Equal(int32(80)))
		// No Manifest: Akash's defaults. No rule timeouts (nothing caps a
		// response), a 60 s idle timeout, WebSockets, and the tries that
		// fit in next_timeout (2 of 3).
		Expect(r.Spec.Rules[0].Timeouts).To(BeNil())
		Expect(*r.Spec.Rules[0].Retry.Attempts).To(Equal(1))
		Expect(r.Annotations).To(Equal(map[string]string{
			shardgatev1alpha1.AnnotationMaxRequestBodyBytes: "1048576",
			shardgatev1alpha1.AnnotationRetryIdempotentOnly: "true",
			shardgatev1alpha1.AnnotationIdleTimeout:         "1m",
			shardgatev1alpha1.AnnotationWebSocket:           "true",
		}))
		Expect(r.OwnerReferences).To(BeEmpty())
		Eventually(events("a-web")).Should(HaveKey("Normal/Reserved/Reserve"))
		// The shard serves it: the ownership facts know the ProviderHost.
		Eventually(func(g Gomega) {
			r, err := route(nsA, "web.example.com")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.Parents).To(HaveLen(1))
			accepted := meta.FindStatusCondition(r.Status.Parents[0].Conditions, "Accepted")
			g.Expect(accepted).NotTo(BeNil())
			g.Expect(accepted.Status).To(Equal(metav1.ConditionTrue), accepted.Message)
		}).Should(Succeed())
	})

	It("refuses another owner, withholds from the same owner's other deployment, and names nobody", func() {
		providerHost("b-web", "web.example.com", leaseB, "web", 80)
		Eventually(events("b-web")).Should(HaveKey("Warning/HostnameInUse/Reserve"))
		providerHost("a2-web", "web.example.com", leaseA2, "web", 80)
		Eventually(events("a2-web")).Should(HaveKey("Warning/Withheld/Reserve"))
		Consistently(notFound(nsB, "web.example.com"), "2s").Should(BeTrue())
		Expect(notFound(nsA2, "web.example.com")()).To(BeTrue())
		Expect(messages("b-web")).To(ContainSubstring("HostnameInUse: "))
		Expect(messages("b-web")).NotTo(ContainSubstring(akashAlice))
		Expect(messages("b-web")).NotTo(ContainSubstring(nsA))
	})

	It("refuses blocked names, a lease namespace of another owner and bad input, with an Event and no route", func() {
		providerHost("a-blocked", "x.blocked.example", leaseA, "web", 80)
		Eventually(events("a-blocked")).Should(HaveKey("Warning/Blocked/Reserve"))
		providerHost("a-empty", "", leaseA, "web", 80)
		Eventually(events("a-empty")).Should(HaveKey("Warning/InvalidProviderHost/Reserve"))
		providerHost("a-port0", "port0.example.com", leaseA, "web", 0)
		Eventually(events("a-port0")).Should(HaveKey("Warning/InvalidProviderHost/Reserve"))
		providerHost("a-nosvc", "nosvc.example.com", leaseA, "missing", 80)
		Eventually(events("a-nosvc")).Should(HaveKey("Warning/ServiceNotFound/Route"))
		// An owner that is not an Akash account address: the provider's
		// hostname operator ignores such a ProviderHost; shardgate says why.
		leaseX := akash.Lease{Owner: "akash1alicexxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", DSeq: 1, GSeq: 1, OSeq: 1, Provider: akashProvider}
		nsX := leaseNS(leaseX, "")
		service(nsX, "web", 80)
		providerHost("x-badowner", "badowner.example.com", leaseX, "web", 80)
		Eventually(events("x-badowner")).Should(HaveKey("Warning/InvalidProviderHost/Reserve"))
		Expect(messages("x-badowner")).To(ContainSubstring("spec.owner"))
		// A lease namespace labelled with another owner.
		leaseM := akash.Lease{Owner: akashAlice, DSeq: 9, GSeq: 1, OSeq: 1, Provider: akashProvider}
		nsM := leaseNS(leaseM, akashBob)
		service(nsM, "web", 80)
		providerHost("m-web", "mallory.example.com", leaseM, "web", 80)
		Eventually(events("m-web")).Should(HaveKey("Warning/" + shardgatev1alpha1.ReasonNamespaceOwnerMismatch + "/Reserve"))
		Consistently(func() bool {
			return notFound(nsA, "x.blocked.example")() && notFound(nsA, "port0.example.com")() &&
				notFound(nsA, "nosvc.example.com")() && notFound(nsM, "mallory.example.com")() &&
				notFound(nsX, "badowner.example.com")()
		}, "2s").Should(BeTrue())
		// A LeaseHost is admitted by the same engine: the name is taken.
		tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "akash-tenant", Annotations: map[string]string{tenancy.OwnerKey: akashBob}}}
		Expect(c.Create(ctx, tenant)).To(Succeed())
		lh := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Name: "steal", Namespace: tenant.Name},
			Spec: shardgatev1alpha1.LeaseHostSpec{Lease: shardgatev1alpha1.LeaseRef{Owner: akashBob, DSeq: 7},
				Hostname: "web.example.com", Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80}},
		}
		Expect(c.Create(ctx, lh)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(lh), lh)).To(Succeed())
			for _, cond := range lh.Status.Conditions {
				if cond.Type == "Reserved" {
					return cond.Reason
				}
			}
			return ""
		}).Should(Equal(shardgatev1alpha1.ReasonHostnameInUse))
		Expect(c.Delete(ctx, lh)).To(Succeed())
	})

	It("honours the Manifest's http_options on the route", func() {
		leaseC := akash.Lease{Owner: akashAlice, DSeq: 4, GSeq: 1, OSeq: 1, Provider: akashProvider}
		nsC := leaseNS(leaseC, akashAlice)
		service(nsC, "api", 443)
		Expect(c.Create(ctx, &akashv1.Manifest{
			ObjectMeta: metav1.ObjectMeta{Name: nsC, Namespace: "lease"},
			Spec: akashv1.ManifestSpec{
				LeaseID: akashv1.LeaseID{Owner: akashAlice, DSeq: "4", GSeq: 1, OSeq: 1, Provider: akashProvider},
				Group: akashv1.ManifestGroup{Name: "g", Services: []akashv1.ManifestService{{Name: "api", Count: 1,
					Expose: []akashv1.ManifestServiceExpose{{Port: 8443, ExternalPort: 443, Proto: "TCP", Global: true,
						HTTPOptions: akashv1.ManifestServiceExposeHTTPOptions{MaxBodySize: 4 << 20, ReadTimeout: 30_000, SendTimeout: 10_000,
							NextTries: 4, NextTimeout: 90_000, NextCases: []string{"error", "502"}}}}}}},
			},
		})).To(Succeed())
		providerHost("c-api", "api.example.com", leaseC, "api", 443)
		Eventually(func(g Gomega) {
			r, err := route(nsC, "api.example.com")()
			g.Expect(err).NotTo(HaveOccurred())
			rule := r.Spec.Rules[0]
			g.Expect(rule.Timeouts).To(BeNil())
			g.Expect(*rule.Retry.Attempts).To(Equal(3))
			g.Expect(rule.Retry.Codes).To(Equal([]gatewayv1.HTTPRouteRetryStatusCode{502}))
			g.Expect(r.Annotations).To(Equal(map[string]string{
				shardgatev1alpha1.AnnotationMaxRequestBodyBytes: "4194304",
				shardgatev1alpha1.AnnotationRetryIdempotentOnly: "true",
				shardgatev1alpha1.AnnotationIdleTimeout:         "30s",
				shardgatev1alpha1.AnnotationWebSocket:           "true",
			}))
		}).Should(Succeed())
		// The shard serves it with the body limit and spares POST, PATCH
		// and LOCK from retries.
		Eventually(func(g Gomega) {
			routes := vhostRoutes(xds, types.NamespacedName{Namespace: "akash-edge", Name: "edge"}, "api.example.com")
			g.Expect(routes).NotTo(BeEmpty())
			for _, rt := range routes {
				g.Expect(bufferLimit(g, rt)).To(Equal(uint32(4 << 20)))
				g.Expect(rt.GetRoute().GetRetryPolicy().GetRetriableRequestHeaders()).To(HaveLen(1))
				// The read timeout is an idle timeout, for the route and
				// for each try; no total timeout.
				g.Expect(rt.GetRoute().GetIdleTimeout().AsDuration()).To(Equal(30 * time.Second))
				g.Expect(rt.GetRoute().GetRetryPolicy().GetPerTryIdleTimeout().AsDuration()).To(Equal(30 * time.Second))
				g.Expect(rt.GetRoute().GetTimeout()).NotTo(BeNil())
				g.Expect(rt.GetRoute().GetTimeout().AsDuration()).To(BeZero())
			}
		}).Should(Succeed())

		By("listing non_idempotent in next_cases and raising max_body_size")
		var m akashv1.Manifest
		Expect(c.Get(ctx, types.NamespacedName{Namespace: "lease", Name: nsC}, &m)).To(Succeed())
		update(ctx, c, &m, func(m *akashv1.Manifest) {
			o := &m.Spec.Group.Services[0].Expose[0].HTTPOptions
			o.MaxBodySize = 8 << 20
			o.NextCases = []string{"error", "502", "non_idempotent"}
		})
		Eventually(func(g Gomega) map[string]string {
			r, err := route(nsC, "api.example.com")()
			g.Expect(err).NotTo(HaveOccurred())
			return r.Annotations
		}).Should(Equal(map[string]string{shardgatev1alpha1.AnnotationMaxRequestBodyBytes: "8388608",
			shardgatev1alpha1.AnnotationIdleTimeout: "30s", shardgatev1alpha1.AnnotationWebSocket: "true"}))
		Eventually(func(g Gomega) {
			routes := vhostRoutes(xds, types.NamespacedName{Namespace: "akash-edge", Name: "edge"}, "api.example.com")
			g.Expect(routes).NotTo(BeEmpty())
			for _, rt := range routes {
				g.Expect(bufferLimit(g, rt)).To(Equal(uint32(8 << 20)))
				g.Expect(rt.GetRoute().GetRetryPolicy().GetRetriableRequestHeaders()).To(BeEmpty())
			}
		}).Should(Succeed())
	})

	It("adopts a route Akash's own hostname operator wrote, in place", func() {
		leaseD := akash.Lease{Owner: akashAlice, DSeq: 6, GSeq: 1, OSeq: 1, Provider: akashProvider}
		nsD := leaseNS(leaseD, akashAlice)
		service(nsD, "web", 80)
		labels := leaseD.Labels()
		labels[akash.LabelManaged] = "true"
		old := &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Name: "old.example.com", Namespace: nsD, Labels: labels,
				Annotations: map[string]string{"nginx.org/proxy-read-timeout": "60"}},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
					Namespace: new(gatewayv1.Namespace("akash-gateway")), Name: "akash-gateway"}}},
				Hostnames: []gatewayv1.Hostname{"old.example.com"},
				Rules: []gatewayv1.HTTPRouteRule{{
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new("/")}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: new(gatewayv1.PortNumber(80))}}}},
				}},
			},
		}
		Expect(c.Create(ctx, old)).To(Succeed())
		providerHost("d-old", "old.example.com", leaseD, "web", 80)
		Eventually(func(g Gomega) {
			r, err := route(nsD, "old.example.com")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.UID).To(Equal(old.UID), "adopted in place, not re-created")
			g.Expect(r.Spec.ParentRefs).To(HaveLen(1))
			g.Expect(string(r.Spec.ParentRefs[0].Name)).To(Equal("edge"))
			g.Expect(r.Spec.Rules[0].Retry).NotTo(BeNil())
			g.Expect(r.Annotations).To(HaveKeyWithValue(shardgatev1alpha1.AnnotationIdleTimeout, "1m"))
		}).Should(Succeed())
		Eventually(events("d-old")).Should(HaveKey("Normal/Reserved/Reserve"))

		// The provider edits the hostname: the old name's route goes.
		var ph akashv1.ProviderHost
		Expect(c.Get(ctx, types.NamespacedName{Namespace: "lease", Name: "d-old"}, &ph)).To(Succeed())
		update(ctx, c, &ph, func(p *akashv1.ProviderHost) { p.Spec.Hostname = "renamed.example.com" })
		Eventually(func() error { _, err := route(nsD, "renamed.example.com")(); return err }).Should(Succeed())
		Eventually(notFound(nsD, "old.example.com")).Should(BeTrue())
	})

	It("answers the hostname operator's API with Akash's JSON", func() {
		var hosts map[string]map[string]json.RawMessage
		Eventually(func(g Gomega) {
			code, body := api("/managed-hostnames")
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(json.Unmarshal(body, &hosts)).To(Succeed())
			g.Expect(hosts).To(HaveKey("web.example.com"))
			g.Expect(hosts).To(HaveKey("api.example.com"))
		}).Should(Succeed())
		e := hosts["web.example.com"]
		Expect(e).To(HaveKey("LastUpdate"))
		Expect(string(e["LeaseID"])).To(MatchJSON(fmt.Sprintf(`{"owner":%q,"dseq":1,"gseq":1,"oseq":1,"provider":%q,"bseq":0}`, akashAlice, akashProvider)))
		Expect(string(e["Namespace"])).To(Equal(fmt.Sprintf("%q", nsA)))
		Expect(string(e["ExternalPort"])).To(Equal("80"))
		Expect(string(e["ServiceName"])).To(Equal(`"web"`))
		Expect(hosts).NotTo(HaveKey("x.blocked.example"))

		code, body := api("/ignore-list")
		Expect(code).To(Equal(http.StatusOK))
		var ignored map[string]map[string]json.RawMessage
		Expect(json.Unmarshal(body, &ignored)).To(Succeed())
		entry, ok := ignored[leaseA.String()]
		Expect(ok).To(BeTrue(), string(body))
		for _, k := range []string{"hostnames", "last-error", "last-error-type", "failed-at", "failure-count", "namespace"} {
			Expect(entry).To(HaveKey(k))
		}
		Expect(string(entry["namespace"])).To(Equal(fmt.Sprintf("%q", nsA)))
		Expect(string(entry["hostnames"])).To(ContainSubstring("nosvc.example.com"))
	})

	It("answers as the operators' HTTP server does: headers, /version, methods", func() {
		// The listings: no JSON content type of their own (Go sniffs the
		// body), Cache-Control and Last-Modified, one document and a newline.
		for _, path := range []string{"/managed-hostnames", "/ignore-list", "/ignored-leases", "/usage", "/state"} {
			resp, body := apiResp(path)
			Expect(resp.StatusCode).To(Equal(http.StatusOK), path)
			Expect(resp.Header.Get("Content-Type")).To(Equal("text/plain; charset=utf-8"), path)
			Expect(resp.Header.Get("Cache-Control")).To(Equal("no-cache, max-age=0"), path)
			_, err := http.ParseTime(resp.Header.Get("Last-Modified"))
			Expect(err).NotTo(HaveOccurred(), path)
			Expect(json.Valid(body)).To(BeTrue(), path)
			Expect(bytes.HasSuffix(body, []byte("}\n"))).To(BeTrue(), path)
		}
		_, body := apiResp("/ignored-leases")
		Expect(string(body)).To(Equal("{}\n"))

		// /version: the version information, with the provider's keys.
		resp, body := apiResp("/version")
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.Header.Get("Content-Type")).To(Equal("text/plain; charset=utf-8"))
		Expect(resp.Header.Get("Cache-Control")).To(BeEmpty())
		var v map[string]json.RawMessage
		Expect(json.Unmarshal(body, &v)).To(Succeed())
		Expect(v).To(HaveLen(8))
		for _, k := range []string{"name", "server_name", "version", "commit", "build_tags", "go", "build_deps", "cosmos_sdk_version"} {
			Expect(v).To(HaveKey(k))
		}
		Expect(string(v["name"])).To(Equal(`"shardgate"`))

		// Only GET, except /health.
		post, err := http.Post("http://"+apiAddr+"/version", "text/plain", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(post.Body.Close()).To(Succeed())
		Expect(post.StatusCode).To(Equal(http.StatusMethodNotAllowed))
		post, err = http.Post("http://"+apiAddr+"/health", "text/plain", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(post.Body.Close()).To(Succeed())
		Expect(post.StatusCode).To(Equal(http.StatusOK))
	})

	It("shows ProviderHosts in shardgate status (SOURCE ProviderHost)", func() {
		Eventually(func(g Gomega) {
			var out bytes.Buffer
			_, err := statuscli.Run(ctx, c, statuscli.Options{Namespace: "lease", Format: statuscli.FormatJSON}, &out)
			g.Expect(err).NotTo(HaveOccurred())
			var doc statuscli.Document
			g.Expect(json.Unmarshal(out.Bytes(), &doc)).To(Succeed())
			byName := map[string]statuscli.Row{}
			for _, r := range doc.Items {
				g.Expect(r.Source).To(Equal(statuscli.SourceProviderHost))
				byName[r.LeaseHost] = r
			}
			g.Expect(byName["a-web"]).To(MatchFields(IgnoreExtras, Fields{
				"Owner": Equal(akashAlice), "DSeq": Equal(uint64(1)), "Shard": Equal("edge"), "Gateway": Equal("akash-edge/edge"),
				"Host": Equal("web.example.com"), "Route": Equal("web.example.com"), "Reserved": Equal("True"), "Admitted": Equal("True"),
			}))
			g.Expect(byName["b-web"]).To(MatchFields(IgnoreExtras, Fields{"Reason": Equal("HostnameInUse"), "Admitted": Equal("False")}))
			g.Expect(byName["b-web"].Message).NotTo(ContainSubstring(akashAlice))
			g.Expect(byName["a-blocked"]).To(MatchFields(IgnoreExtras, Fields{"Reason": Equal("Blocked")}))
			g.Expect(byName["a-nosvc"].Reserved).To(Equal("False"))
		}).Should(Succeed())
	})

	It("follows ProviderHosts in shardgate status --watch", func() {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		out := &lockedBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- statuscli.Execute(wctx, statuscli.Config{Kubeconfig: env.Kubeconfig, Namespace: "lease", Watch: true, Output: "wide"}, out, io.Discard) // -o wide has SOURCE
		}()
		line := func(words ...string) func() bool {
			return func() bool {
				for _, l := range strings.Split(out.String(), "\n") {
					all := true
					for _, w := range words {
						all = all && strings.Contains(l, w)
					}
					if all {
						return true
					}
				}
				return false
			}
		}
		Eventually(line("ProviderHost", "a-web", "edge", "web.example.com")).Should(BeTrue(), "the listing")

		By("a new ProviderHost: its row, then its admitted row once the shard answers")
		leaseW := akash.Lease{Owner: akashAlice, DSeq: 7, GSeq: 1, OSeq: 1, Provider: akashProvider}
		nsW := leaseNS(leaseW, akashAlice)
		service(nsW, "web", 80)
		providerHost("w-web", "watched.example.com", leaseW, "web", 80)
		Eventually(line("ProviderHost", "w-web", "edge", "watched.example.com", "True")).Should(BeTrue(), out.String())

		By("a refused ProviderHost: its row carries the Event's reason")
		leaseWB := akash.Lease{Owner: akashBob, DSeq: 8, GSeq: 1, OSeq: 1, Provider: akashProvider}
		leaseNS(leaseWB, akashBob)
		providerHost("wb-web", "watched.example.com", leaseWB, "web", 80)
		Eventually(line("ProviderHost", "wb-web", "HostnameInUse")).Should(BeTrue(), out.String())

		cancel()
		Eventually(done).Should(Receive(BeNil()))
		got := out.String()
		Expect(strings.Count(got, "NAMESPACE")).To(Equal(1), "rows of changes go under the first header:\n"+got)
		Expect(strings.Count(got, "a-web")).To(Equal(1), "an unchanged ProviderHost is printed once:\n"+got)
		var ph akashv1.ProviderHost
		for _, name := range []string{"w-web", "wb-web"} {
			Expect(c.Get(ctx, types.NamespacedName{Namespace: "lease", Name: name}, &ph)).To(Succeed())
			Expect(c.Delete(ctx, &ph)).To(Succeed())
		}
	})

	It("comes back after a restart with the same holders and rewrites nothing", func() {
		before, err := route(nsA, "web.example.com")()
		Expect(err).NotTo(HaveOccurred())
		Expect(stop()).To(Succeed())
		stop = nil
		// A lease ends while no controller runs: its route goes on start.
		var gone akashv1.ProviderHost
		Expect(c.Get(ctx, types.NamespacedName{Namespace: "lease", Name: "c-api"}, &gone)).To(Succeed())
		Expect(c.Delete(ctx, &gone)).To(Succeed())
		start(GinkgoLogr)
		// A new ProviderHost is routed only after the rebuild; the
		// earlier ones were queued before it.
		leaseP := akash.Lease{Owner: akashAlice, DSeq: 5, GSeq: 1, OSeq: 1, Provider: akashProvider}
		nsP := leaseNS(leaseP, akashAlice)
		service(nsP, "web", 80)
		providerHost("p-web", "probe.example.com", leaseP, "web", 80)
		Eventually(func() error { _, err := route(nsP, "probe.example.com")(); return err }).Should(Succeed())
		Consistently(func(g Gomega) {
			after, err := route(nsA, "web.example.com")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(after.UID).To(Equal(before.UID))
			g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
			g.Expect(notFound(nsB, "web.example.com")()).To(BeTrue())
			g.Expect(notFound(nsA2, "web.example.com")()).To(BeTrue())
		}, "3s").Should(Succeed())
		var routes gatewayv1.HTTPRouteList
		Expect(c.List(ctx, &routes, client.MatchingLabels{akash.LabelManaged: "true", akash.LabelLeaseDSeq: "4"})).To(Succeed())
		Expect(routes.Items).To(BeEmpty(), "the ended lease's route")
	})

	It("promotes the oldest waiter when the lease ends", func() {
		var ph akashv1.ProviderHost
		Expect(c.Get(ctx, types.NamespacedName{Namespace: "lease", Name: "a-web"}, &ph)).To(Succeed())
		Expect(c.Delete(ctx, &ph)).To(Succeed())
		Eventually(notFound(nsA, "web.example.com")).Should(BeTrue())
		// The oldest waiter (creationTimestamp, then UID), of whichever
		// owner, is promoted; the other keeps waiting.
		var b, a2 akashv1.ProviderHost
		Expect(c.Get(ctx, types.NamespacedName{Namespace: "lease", Name: "b-web"}, &b)).To(Succeed())
		Expect(c.Get(ctx, types.NamespacedName{Namespace: "lease", Name: "a2-web"}, &a2)).To(Succeed())
		winner, winnerNS, loserNS, loserReason := "b-web", nsB, nsA2, "Warning/Withheld/Reserve"
		if a2.CreationTimestamp.Before(&b.CreationTimestamp) || (a2.CreationTimestamp.Equal(&b.CreationTimestamp) && a2.UID < b.UID) {
			winner, winnerNS, loserNS, loserReason = "a2-web", nsA2, nsB, "Warning/HostnameInUse/Reserve"
		}
		Eventually(func() error { _, err := route(winnerNS, "web.example.com")(); return err }).Should(Succeed())
		Eventually(events(winner)).Should(HaveKey("Normal/Reserved/Reserve"))
		Consistently(notFound(loserNS, "web.example.com"), "2s").Should(BeTrue())
		loser := map[string]string{"b-web": "a2-web", "a2-web": "b-web"}[winner]
		Expect(events(loser)(Default)).To(HaveKey(loserReason))
	})

	It("writes leased-IP Services in Akash's shape; deleting one removes only its own; an IP never crosses owners", func() {
		lip := func(name string, l akash.Lease, svc string, port, ext uint32, proto, key string) *akashv1.ProviderLeasedIP {
			o := &akashv1.ProviderLeasedIP{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lease", Labels: map[string]string{akash.LabelManaged: "true"}},
				Spec: akashv1.ProviderLeasedIPSpec{
					LeaseID:     akashv1.LeaseID{Owner: l.Owner, DSeq: fmt.Sprint(l.DSeq), GSeq: l.GSeq, OSeq: l.OSeq, Provider: l.Provider},
					ServiceName: svc, Port: port, ExternalPort: ext, Protocol: proto, SharingKey: key,
				},
			}
			Expect(c.Create(ctx, o)).To(Succeed())
			return o
		}
		svc := func(ns, name string) func() (*corev1.Service, error) {
			return func() (*corev1.Service, error) {
				var s corev1.Service
				err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s)
				return &s, err
			}
		}
		ipOf := func(ns, name string) func() string {
			return func() string {
				s, err := svc(ns, name)()
				if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
					return ""
				}
				return s.Status.LoadBalancer.Ingress[0].IP
			}
		}
		lip("a-tcp", leaseA2, "web", 8080, 80, "TCP", akashAlice+"-ip-myip")
		udp := lip("a-udp", leaseA2, "web", 8080, 80, "UDP", akashAlice+"-ip-myip")
		Eventually(ipOf(nsA2, "web-ip-80-tcp")).ShouldNot(BeEmpty())
		Eventually(ipOf(nsA2, "web-ip-80-udp")).ShouldNot(BeEmpty())
		Expect(ipOf(nsA2, "web-ip-80-udp")()).To(Equal(ipOf(nsA2, "web-ip-80-tcp")()), "one sharing key, one address")
		s, err := svc(nsA2, "web-ip-80-tcp")()
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		Expect(s.Spec.Ports).To(HaveLen(1))
		Expect(s.Spec.Ports[0].Name).To(Equal("web-ip-80-tcp"))
		Expect(s.Spec.Ports[0].Port).To(Equal(int32(80)))
		Expect(s.Spec.Ports[0].TargetPort.IntValue()).To(Equal(8080))
		Expect(s.Spec.Selector).To(Equal(map[string]string{"akash.network": "true", "akash.network/manifest-service": "web"}))
		Expect(s.Annotations).To(HaveKeyWithValue("metallb.universe.tf/allow-shared-ip", akashAlice+"-ip-myip"))
		Expect(s.Annotations).To(HaveKeyWithValue("metallb.universe.tf/address-pool", akashLeasedPool))
		Expect(netip.MustParsePrefix("127.241.0.0/28").Contains(netip.MustParseAddr(ipOf(nsA2, "web-ip-80-tcp")()))).To(BeTrue(), "from the leased pool")
		Expect(s.Labels).To(HaveKeyWithValue("akash.network/service-target", "metal-lb"))
		Expect(s.Labels).To(HaveKeyWithValue("akash.network/lease.id.dseq", "2"))

		// Another owner naming alice's sharing key gets nothing.
		lip("b-steal", leaseB, "web", 8080, 80, "TCP", akashAlice+"-ip-myip")
		Eventually(eventsAbout(ctx, c, "lease", "ProviderLeasedIP", "b-steal")).Should(HaveKey("Warning/InvalidProviderLeasedIP/Allocate"))
		Consistently(func() bool { _, err := svc(nsB, "web-ip-80-tcp")(); return apierrors.IsNotFound(err) }, "2s").Should(BeTrue())

		// The IP operator's API.
		Eventually(func(g Gomega) {
			code, body := api(fmt.Sprintf("/ip-lease-status/%s/2/1/1", akashAlice))
			g.Expect(code).To(Equal(http.StatusOK), string(body))
			var st []map[string]any
			g.Expect(json.Unmarshal(body, &st)).To(Succeed())
			g.Expect(st).To(HaveLen(2))
			g.Expect(st[0]).To(HaveKeyWithValue("Port", BeNumerically("==", 8080)))
			g.Expect(st[0]).To(HaveKeyWithValue("ExternalPort", BeNumerically("==", 80)))
			g.Expect(st[0]).To(HaveKeyWithValue("ServiceName", "web"))
			g.Expect(st[0]).To(HaveKeyWithValue("Protocol", "TCP"))
			g.Expect(st[0]).To(HaveKeyWithValue("IP", ipOf(nsA2, "web-ip-80-tcp")()))
			g.Expect(st[1]).To(HaveKeyWithValue("Protocol", "UDP"))
		}).Should(Succeed())
		code, _ := api(fmt.Sprintf("/ip-lease-status/%s/3/1/1", akashBob))
		Expect(code).To(Equal(http.StatusNoContent))
		code, _ = api(fmt.Sprintf("/ip-lease-status/%s/x/1/1", akashBob))
		Expect(code).To(Equal(http.StatusNotFound))
		// An owner that is not an Akash account address: 404, no body.
		resp, body := apiResp("/ip-lease-status/akash1alice/2/1/1")
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
		Expect(body).To(BeEmpty())
		// The leased pool only: its 15 usable addresses, one assigned (TCP
		// and UDP share it); not the shards' pool.
		Eventually(func(g Gomega) {
			resp, body := apiResp("/usage")
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(string(body)).To(Equal(`{"Available":15,"InUse":1}` + "\n"))
		}).Should(Succeed())
		code, body = api("/state")
		Expect(code).To(Equal(http.StatusOK))
		var state map[string][]map[string]json.RawMessage
		Expect(json.Unmarshal(body, &state)).To(Succeed())
		Expect(state[leaseA2.String()]).To(HaveLen(2))
		for _, k := range []string{"last-event-time", "lease-id", "namespace", "port", "external-port", "service-name", "sharing-key"} {
			Expect(state[leaseA2.String()][0]).To(HaveKey(k))
		}
		Expect(bytes.Contains(state[leaseA2.String()][0]["lease-id"], []byte(`"dseq":2`))).To(BeTrue())

		// Deleting one removes only its own Service.
		Expect(c.Delete(ctx, udp)).To(Succeed())
		Eventually(func() bool { _, err := svc(nsA2, "web-ip-80-udp")(); return apierrors.IsNotFound(err) }).Should(BeTrue())
		Consistently(ipOf(nsA2, "web-ip-80-tcp"), "2s").ShouldNot(BeEmpty())

		// One deleted while no controller runs: its Service goes on start,
		// the others stay.
		other := lip("a-other", leaseA2, "api", 9000, 9000, "TCP", akashAlice+"-ip-myip")
		Eventually(ipOf(nsA2, "api-ip-9000-tcp")).ShouldNot(BeEmpty())
		Expect(stop()).To(Succeed())
		stop = nil
		Expect(c.Delete(ctx, other)).To(Succeed())
		start(GinkgoLogr)
		Eventually(func() bool { _, err := svc(nsA2, "api-ip-9000-tcp")(); return apierrors.IsNotFound(err) }).Should(BeTrue())
		Consistently(ipOf(nsA2, "web-ip-80-tcp"), "2s").ShouldNot(BeEmpty())
	})
})

// eventNotes are "Reason: note" of the events.k8s.io Events regarding one
// object.
func eventNotes(ctx context.Context, c client.Client, ns, kind, name string) []string {
	var list eventsv1.EventList
	Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out = append(out, ev.Reason+": "+ev.Note)
		}
	}
	return out
}

// bufferLimit is the request body limit rt enables the buffer filter with
// (0: the filter stays disabled on rt).
func bufferLimit(g Gomega, rt *routev3.Route) uint32 {
	cfg, ok := rt.GetTypedPerFilterConfig()["envoy.filters.http.buffer"]
	if !ok {
		return 0
	}
	var fc routev3.FilterConfig
	g.Expect(cfg.UnmarshalTo(&fc)).To(Succeed())
	var b bufferv3.BufferPerRoute
	g.Expect(fc.GetConfig().UnmarshalTo(&b)).To(Succeed())
	return b.GetBuffer().GetMaxRequestBytes().GetValue()
}

// lockedBuffer is a bytes.Buffer one goroutine writes while another reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
