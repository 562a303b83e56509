package controllers_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/idna"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
	"github.com/shardgate/shardgate/xds/translate"
)

// The integration part of the hostile-input matrix (RELIABILITY.md,
// "Hostile input"): what the real apiserver refuses (CRD schema and CEL),
// and the conditions the running controller writes for what it accepts.
// The translator and hostname engine cases that the apiserver would refuse
// are table tests in internal/gatewayapi and internal/hostnames.

const ownerAnnotation = "akash.network/owner"

// hostileStatusWrites sums shardgate_status_writes_total{kind}.
func hostileStatusWrites(kind string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "shardgate_status_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func hostileRoute(ns, name string, mut ...func(*gatewayv1.HTTPRoute)) *gatewayv1.HTTPRoute {
	r := httpRoute(ns, name, "default", "api", name+".apps.test")
	for _, m := range mut {
		m(r)
	}
	return r
}

func hostileLeaseHost(ns, name, host string, mut ...func(*shardgatev1alpha1.LeaseHost)) *shardgatev1alpha1.LeaseHost {
	lh := &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 1, GSeq: 1, OSeq: 1},
			Hostname: host,
			Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			Path:     "/",
		},
	}
	for _, m := range mut {
		m(lh)
	}
	return lh
}

func hostileGateway(ns, name string, listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: listeners},
	}
}

func httpListeners(n int) []gatewayv1.Listener {
	var ls []gatewayv1.Listener
	for i := range n {
		ls = append(ls, gatewayv1.Listener{
			Name: gatewayv1.SectionName(fmt.Sprintf("l%d", i)), Port: 80, Protocol: gatewayv1.HTTPProtocolType,
			Hostname:      new(gatewayv1.Hostname(fmt.Sprintf("l%d.wide.test", i))),
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}},
		})
	}
	return ls
}

func endpointSlice(ns, svc, name string, first, n int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(8080)), Protocol: new(corev1.ProtocolTCP)}},
	}
	for i := first; i < first+n; i++ {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true)},
		})
	}
	return s
}

func listenerCondition(gw *gatewayv1.Gateway, listener, typ string) string {
	for _, l := range gw.Status.Listeners {
		if string(l.Name) == listener {
			return condition(l.Conditions, typ)
		}
	}
	return "<no listener " + listener + ">"
}

// ourParent returns the Accepted and ResolvedRefs of our status.parents
// entry for Gateway gwNS/gw, or "<none>".
func ourParent(ctx context.Context, c client.Client, ns, name, gwNS, gw string) func(Gomega) string {
	return func(g Gomega) string {
		var r gatewayv1.HTTPRoute
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &r)).To(Succeed())
		for _, p := range r.Status.Parents {
			pns := ns
			if p.ParentRef.Namespace != nil {
				pns = string(*p.ParentRef.Namespace)
			}
			if string(p.ControllerName) == shardgatev1alpha1.ControllerName && string(p.ParentRef.Name) == gw && pns == gwNS {
				return condition(p.Conditions, "Accepted") + " " + condition(p.Conditions, "ResolvedRefs")
			}
		}
		return "<none>"
	}
}

var _ = Describe("Hostile input on the real apiserver", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var cfgFile string
	var xds *xdsserver.Server
	var f *fixture
	// gwNS is a provider namespace (no owner marking) for the Gateways
	// these specs create: a Gateway in a tenant's namespace is refused.
	var gwNS string

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		cfgFile = filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(cfgFile, []byte("blockedHostnames:\n  - .apple.com\n  - .paypal.com\nnamespaceOwnerAnnotation: "+ownerAnnotation+"\n"), 0o644)).To(Succeed())
		shard(ctx, c, "default", "gw", "apps.test")
		// Gateway API behaviour is tested on a Gateway that is not a
		// shard: a shard serves only what ownership allows (see
		// isolation_routes_test.go).
		gateway(ctx, c, "default", "api", "apps.test")
		env.RunManager(manager.Options{ConfigPath: cfgFile, MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr,
			OnXDSServer: func(s *xdsserver.Server) { xds = s }})
		f = newFixture(ctx, c, "hostile")
		f.service(ctx, "web")
		gwNS = ownedFixture(ctx, c, "hostile-gw", "").ns
	})

	// What the apiserver refuses. Each entry creates one object and asserts
	// the Invalid error and the field it names.
	DescribeTable("the apiserver refuses",
		func(obj func(ns string) client.Object, field string) {
			err := c.Create(ctx, obj(f.ns))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(field))
		},
		Entry("LeaseHost hostname of 254 characters", func(ns string) client.Object {
			return hostileLeaseHost(ns, "long", strings.Repeat("a.", 126)+"aa")
		}, "spec.hostname"),
		Entry("LeaseHost hostname with a 64-character label", func(ns string) client.Object {
			return hostileLeaseHost(ns, "label", strings.Repeat("a", 64)+".example.test")
		}, "at most 63 characters"),
		Entry("LeaseHost hostname in uppercase", func(ns string) client.Object {
			return hostileLeaseHost(ns, "upper", "EXAMPLE.com")
		}, "spec.hostname"),
		Entry("LeaseHost hostname with a trailing dot", func(ns string) client.Object {
			return hostileLeaseHost(ns, "dot", "example.com.")
		}, "spec.hostname"),
		Entry("LeaseHost hostname in Unicode (Cyrillic look-alike)", func(ns string) client.Object {
			return hostileLeaseHost(ns, "unicode", "аррӏе.com")
		}, "spec.hostname"),
		Entry("LeaseHost wildcard hostname", func(ns string) client.Object {
			return hostileLeaseHost(ns, "wild", "*.example.test")
		}, "spec.hostname"),
		Entry("LeaseHost hostname with a null byte", func(ns string) client.Object {
			return hostileLeaseHost(ns, "nul", "a\x00b.example.test")
		}, "spec.hostname"),
		Entry("LeaseHost with both hostname and subdomain", func(ns string) client.Object {
			return hostileLeaseHost(ns, "both", "a.example.test", func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Subdomain = "a" })
		}, "exactly one of hostname and subdomain"),
		Entry("LeaseHost path of 16k characters", func(ns string) client.Object {
			return hostileLeaseHost(ns, "path16k", "p.example.test", func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Path = "/" + strings.Repeat("a", 16*1024) })
		}, "spec.path"),
		Entry("LeaseHost path of 1025 characters", func(ns string) client.Object {
			return hostileLeaseHost(ns, "path1025", "p.example.test", func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Path = "/" + strings.Repeat("a", 1024) })
		}, "spec.path"),
		Entry("LeaseHost service port 0", func(ns string) client.Object {
			return hostileLeaseHost(ns, "port0", "p.example.test", func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Service.Port = 0 })
		}, "spec.service.port"),
		Entry("HTTPRoute with 17 hostnames (max 16)", func(ns string) client.Object {
			return hostileRoute(ns, "many-hosts", func(r *gatewayv1.HTTPRoute) {
				for i := range 16 {
					r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(fmt.Sprintf("h%d.apps.test", i)))
				}
			})
		}, "spec.hostnames"),
		Entry("HTTPRoute with 1000 hostnames", func(ns string) client.Object {
			return hostileRoute(ns, "thousand-hosts", func(r *gatewayv1.HTTPRoute) {
				for i := range 999 {
					r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(fmt.Sprintf("h%d.apps.test", i)))
				}
			})
		}, "spec.hostnames"),
		Entry("HTTPRoute hostname \"*\"", func(ns string) client.Object {
			return hostileRoute(ns, "star", func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = []gatewayv1.Hostname{"*"} })
		}, "spec.hostnames"),
		Entry("HTTPRoute hostname \"*.*.example.com\"", func(ns string) client.Object {
			return hostileRoute(ns, "star-star", func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = []gatewayv1.Hostname{"*.*.example.com"} })
		}, "spec.hostnames"),
		Entry("HTTPRoute hostname with a trailing dot", func(ns string) client.Object {
			return hostileRoute(ns, "trailing", func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = []gatewayv1.Hostname{"example.com."} })
		}, "spec.hostnames"),
		Entry("HTTPRoute hostname of 254 characters", func(ns string) client.Object {
			return hostileRoute(ns, "long-host", func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(strings.Repeat("a.", 126) + "aa")}
			})
		}, "spec.hostnames"),
		Entry("HTTPRoute path of 16k characters (max 1024)", func(ns string) client.Object {
			return hostileRoute(ns, "path16k", func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
					Type: new(gatewayv1.PathMatchPathPrefix), Value: new("/" + strings.Repeat("a", 16*1024))}}}
			})
		}, "spec.rules[0].matches[0].path.value"),
		Entry("HTTPRoute backendRef port 0", func(ns string) client.Object {
			return hostileRoute(ns, "port0", func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[0].BackendRefs[0].Port = new(gatewayv1.PortNumber(0)) })
		}, "port"),
		Entry("HTTPRoute backendRef port 65536", func(ns string) client.Object {
			return hostileRoute(ns, "port65536", func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[0].BackendRefs[0].Port = new(gatewayv1.PortNumber(65536)) })
		}, "port"),
		Entry("HTTPRoute backend weight over 1000000", func(ns string) client.Object {
			return hostileRoute(ns, "weight", func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[0].BackendRefs[0].Weight = new(int32(1_000_001)) })
		}, "weight"),
		Entry("HTTPRoute with 33 parentRefs (max 32)", func(ns string) client.Object {
			return hostileRoute(ns, "parents33", func(r *gatewayv1.HTTPRoute) {
				r.Spec.ParentRefs = nil
				for i := range 33 {
					r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{Name: "gw", SectionName: new(gatewayv1.SectionName(fmt.Sprintf("l%d", i)))})
				}
			})
		}, "spec.parentRefs"),
		Entry("Gateway with 65 listeners (max 64)", func(ns string) client.Object {
			return hostileGateway(ns, "too-wide", httpListeners(65)...)
		}, "spec.listeners"),
		Entry("Gateway with duplicate listener names", func(ns string) client.Object {
			ls := httpListeners(2)
			ls[1].Name = ls[0].Name
			return hostileGateway(ns, "dup", ls...)
		}, "spec.listeners"),
		Entry("EndpointSlice with 5000 endpoints (max 1000)", func(ns string) client.Object {
			return endpointSlice(ns, "web", "web-5000", 0, 5000)
		}, "endpoints"),
	)

	Describe("IDN homographs and case tricks in LeaseHosts", func() {
		It("blocks the punycode spelling of a Cyrillic look-alike of a blocked name", func() {
			Expect(c.Create(ctx, hostileLeaseHost(f.ns, "homograph", "xn--80ak6aa92e.com"))).To(Succeed())
			Eventually(reserved(ctx, c, f.ns, "homograph")).Should(Equal("False/" + shardgatev1alpha1.ReasonBlocked))
			cond := meta.FindStatusCondition(f.get(ctx, "homograph").Status.Conditions, shardgatev1alpha1.ConditionReserved)
			Expect(cond.Message).To(ContainSubstring("look-alike"))
			Consistently(routeHostnames(ctx, c, f.ns, "homograph"), "500ms").Should(BeNil())
		})

		It("blocks a look-alike below a blocked suffix", func() {
			Expect(c.Create(ctx, hostileLeaseHost(f.ns, "homograph-sub", "login.xn--80ak6aa92e.com"))).To(Succeed())
			Eventually(reserved(ctx, c, f.ns, "homograph-sub")).Should(Equal("False/" + shardgatev1alpha1.ReasonBlocked))
		})

		It("refuses a punycode label that mixes Latin and Cyrillic", func() {
			mixed, err := idna.Punycode.ToASCII("pаypal-login.com") // Cyrillic а
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, hostileLeaseHost(f.ns, "mixed", mixed))).To(Succeed())
			Eventually(reserved(ctx, c, f.ns, "mixed")).Should(Equal("False/" + shardgatev1alpha1.ReasonInvalidHostname))
			cond := meta.FindStatusCondition(f.get(ctx, "mixed").Status.Conditions, shardgatev1alpha1.ConditionReserved)
			Expect(cond.Message).To(ContainSubstring("mixes Latin and Cyrillic"))
			Consistently(routeHostnames(ctx, c, f.ns, "mixed"), "500ms").Should(BeNil())
		})

		It("admits a genuine IDN name", func() {
			ru, err := idna.Lookup.ToASCII("пример.example.test")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, hostileLeaseHost(f.ns, "genuine-idn", ru))).To(Succeed())
			Eventually(reserved(ctx, c, f.ns, "genuine-idn")).Should(Equal("True/" + shardgatev1alpha1.ReasonReserved))
			Eventually(routeHostnames(ctx, c, f.ns, "genuine-idn")).Should(Equal([]string{ru}))
		})
	})

	Describe("a LeaseHost in a namespace its owner does not own (namespaceOwnerAnnotation)", func() {
		var bobNS string
		BeforeAll(func() {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-bob-", Annotations: map[string]string{ownerAnnotation: "akash1bob"}}}
			Expect(c.Create(ctx, ns)).To(Succeed())
			bobNS = ns.Name
		})

		It("refuses another owner's LeaseHost with NamespaceOwnerMismatch, writes no route, and takes no name", func() {
			Expect(c.Create(ctx, hostileLeaseHost(bobNS, "intruder", "squat.example.test"))).To(Succeed())
			Eventually(reserved(ctx, c, bobNS, "intruder")).Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMismatch))
			cond := meta.FindStatusCondition(getLH(ctx, c, bobNS, "intruder").Status.Conditions, shardgatev1alpha1.ConditionReserved)
			Expect(cond.Message).NotTo(ContainSubstring("akash1bob"), "the namespace's owner must not be revealed")
			Consistently(routeHostnames(ctx, c, bobNS, "intruder"), "500ms").Should(BeNil())

			By("a younger LeaseHost of another owner, in its own namespace, gets the name")
			carolNS := f.nsFor(ctx, "akash1carol")
			Expect(c.Create(ctx, hostileLeaseHost(carolNS, "squat-legit", "squat.example.test", func(lh *shardgatev1alpha1.LeaseHost) {
				lh.Spec.Lease.Owner = "akash1carol"
			}))).To(Succeed())
			Eventually(reserved(ctx, c, carolNS, "squat-legit")).Should(Equal("True/" + shardgatev1alpha1.ReasonReserved))
			Eventually(routeHostnames(ctx, c, carolNS, "squat-legit")).Should(Equal([]string{"squat.example.test"}))
		})

		It("admits the namespace owner's own LeaseHost", func() {
			Expect(c.Create(ctx, hostileLeaseHost(bobNS, "own", "bob.example.test", func(lh *shardgatev1alpha1.LeaseHost) {
				lh.Spec.Lease.Owner = "akash1bob"
			}))).To(Succeed())
			Eventually(reserved(ctx, c, bobNS, "own")).Should(Equal("True/" + shardgatev1alpha1.ReasonReserved))
			Eventually(routeHostnames(ctx, c, bobNS, "own")).Should(Equal([]string{"bob.example.test"}))
		})

		It("refuses a LeaseHost whose lease-owner label contradicts the namespace owner", func() {
			Expect(c.Create(ctx, hostileLeaseHost(bobNS, "label-forged", "forged.example.test", func(lh *shardgatev1alpha1.LeaseHost) {
				lh.Spec.Lease.Owner = "akash1bob"
				lh.Labels = map[string]string{shardgatev1alpha1.LabelLeaseOwner: "akash1mallory"}
			}))).To(Succeed())
			Eventually(reserved(ctx, c, bobNS, "label-forged")).Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMismatch))
			Consistently(routeHostnames(ctx, c, bobNS, "label-forged"), "500ms").Should(BeNil())
		})

		It("reads shardgate.io/owner as well as the configured annotation", func() {
			// f.ns carries only shardgate.io/owner: akash1alice.
			Expect(c.Create(ctx, hostileLeaseHost(f.ns, "unannotated", "free.example.test"))).To(Succeed())
			Eventually(reserved(ctx, c, f.ns, "unannotated")).Should(Equal("True/" + shardgatev1alpha1.ReasonReserved))
		})

		It("revokes a held name when the namespace is marked for another owner later", func() {
			g := newFixture(ctx, c, "late")
			Expect(c.Create(ctx, hostileLeaseHost(g.ns, "held", "late.example.test"))).To(Succeed())
			Eventually(reserved(ctx, c, g.ns, "held")).Should(Equal("True/" + shardgatev1alpha1.ReasonReserved))
			Eventually(routeHostnames(ctx, c, g.ns, "held")).Should(Equal([]string{"late.example.test"}))
			var ns corev1.Namespace
			Expect(c.Get(ctx, client.ObjectKey{Name: g.ns}, &ns)).To(Succeed())
			update(ctx, c, &ns, func(n *corev1.Namespace) {
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations[tenancy.OwnerKey] = "akash1bob"
			})
			Eventually(reserved(ctx, c, g.ns, "held")).Should(Equal("False/" + shardgatev1alpha1.ReasonNamespaceOwnerMismatch))
			Eventually(routeHostnames(ctx, c, g.ns, "held")).Should(BeNil())
		})
	})

	Describe("Gateway API objects the controller must refuse with a condition", func() {
		It("accepts a Gateway with 64 listeners and every listener", func() {
			Expect(c.Create(ctx, hostileGateway(gwNS, "wide", httpListeners(64)...))).To(Succeed())
			Eventually(func(g Gomega) {
				var gw gatewayv1.Gateway
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: gwNS, Name: "wide"}, &gw)).To(Succeed())
				g.Expect(condition(gw.Status.Conditions, "Accepted")).To(Equal("True/Accepted"))
				g.Expect(gw.Status.Listeners).To(HaveLen(64))
				for _, l := range gw.Status.Listeners {
					g.Expect(condition(l.Conditions, "Accepted")).To(Equal("True/Accepted"), "listener %s", l.Name)
					g.Expect(condition(l.Conditions, "Conflicted")).To(Equal("False/NoConflicts"), "listener %s", l.Name)
				}
			}).Should(Succeed())
		})

		It("accepts a route with 32 parentRefs on every one", func() {
			r := hostileRoute(f.ns, "parents32", func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = nil
				r.Spec.ParentRefs = nil
				for i := range 32 {
					r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{Namespace: new(gatewayv1.Namespace(gwNS)), Name: "wide", SectionName: new(gatewayv1.SectionName(fmt.Sprintf("l%d", i)))})
				}
			})
			Expect(c.Create(ctx, r)).To(Succeed())
			Eventually(func(g Gomega) {
				var got gatewayv1.HTTPRoute
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(r), &got)).To(Succeed())
				g.Expect(got.Status.Parents).To(HaveLen(32))
				for _, p := range got.Status.Parents {
					g.Expect(condition(p.Conditions, "Accepted")).To(Equal("True/Accepted"))
				}
			}).Should(Succeed())
		})

		It("refuses an invalid path regex with Accepted=False UnsupportedValue", func() {
			r := hostileRoute(f.ns, "bad-regex", func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchRegularExpression), Value: new("/(unclosed")}}}
			})
			Expect(c.Create(ctx, r)).To(Succeed())
			Eventually(ourParent(ctx, c, f.ns, "bad-regex", "default", "api")).Should(HavePrefix("False/UnsupportedValue "))
		})

		It("refuses a header regex too large for Envoy with Accepted=False UnsupportedValue", func() {
			r := hostileRoute(f.ns, "huge-regex", func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{{
					Type: new(gatewayv1.HeaderMatchRegularExpression), Name: "x-tenant", Value: `\pL{100}`}}}}
			})
			Expect(c.Create(ctx, r)).To(Succeed())
			Eventually(ourParent(ctx, c, f.ns, "huge-regex", "default", "api")).Should(HavePrefix("False/UnsupportedValue "))
		})

		It("refuses a parentRef to another namespace's Gateway whose listener allows Same", func() {
			Expect(c.Create(ctx, hostileGateway(gwNS, "same-only", gatewayv1.Listener{
				Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromSame)}},
			}))).To(Succeed())
			other := newFixture(ctx, c, "other")
			Expect(c.Create(ctx, httpRoute(other.ns, "cross-parent", gwNS, "same-only", "x.apps.test"))).To(Succeed())
			Eventually(ourParent(ctx, c, other.ns, "cross-parent", gwNS, "same-only")).Should(HavePrefix("False/NotAllowedByListeners "))
		})

		It("refuses a backendRef to another namespace's Service without a ReferenceGrant", func() {
			other := newFixture(ctx, c, "backend")
			other.service(ctx, "web")
			r := hostileRoute(f.ns, "cross-backend", func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].BackendRefs[0].Namespace = new(gatewayv1.Namespace(other.ns))
			})
			Expect(c.Create(ctx, r)).To(Succeed())
			Eventually(ourParent(ctx, c, f.ns, "cross-backend", "default", "api")).Should(Equal("True/Accepted False/RefNotPermitted"))
		})

		It("gives HTTPS listeners with unusable certificates ResolvedRefs=False with the spec's reason", func() {
			crt, err := os.ReadFile("../internal/gatewayapi/testdata/tls.crt")
			Expect(err).NotTo(HaveOccurred())
			key, err := os.ReadFile("../internal/gatewayapi/testdata/tls.key")
			Expect(err).NotTo(HaveOccurred())
			// A real key that is not the certificate's.
			ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			Expect(err).NotTo(HaveOccurred())
			der, err := x509.MarshalECPrivateKey(ecKey)
			Expect(err).NotTo(HaveOccurred())
			otherKey := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
			other := newFixture(ctx, c, "certs")
			secrets := []*corev1.Secret{
				{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "opaque"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"tls.crt": crt, "tls.key": key}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "garbage"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"), "tls.key": []byte("garbage")}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "mismatch"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": otherKey}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "good"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": key}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: other.ns, Name: "elsewhere"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": key}},
			}
			for _, s := range secrets {
				Expect(c.Create(ctx, s)).To(Succeed())
			}
			https := func(name, host, secretNS, secret string) gatewayv1.Listener {
				ref := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(secret)}
				if secretNS != "" {
					ref.Namespace = new(gatewayv1.Namespace(secretNS))
				}
				return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
					Hostname: new(gatewayv1.Hostname(host)),
					TLS:      &gatewayv1.ListenerTLSConfig{Mode: new(gatewayv1.TLSModeTerminate), CertificateRefs: []gatewayv1.SecretObjectReference{ref}}}
			}
			Expect(c.Create(ctx, hostileGateway(gwNS, "tls",
				https("opaque", "opaque.tls.test", "", "opaque"),
				https("garbage", "garbage.tls.test", "", "garbage"),
				https("mismatch", "mismatch.tls.test", "", "mismatch"),
				https("cross-ns", "cross.tls.test", other.ns, "elsewhere"),
				https("good", "good.tls.test", "", "good"),
			))).To(Succeed())
			Eventually(func(g Gomega) {
				var gw gatewayv1.Gateway
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: gwNS, Name: "tls"}, &gw)).To(Succeed())
				g.Expect(listenerCondition(&gw, "opaque", "ResolvedRefs")).To(Equal("False/InvalidCertificateRef"))
				g.Expect(listenerCondition(&gw, "garbage", "ResolvedRefs")).To(Equal("False/InvalidCertificateRef"))
				g.Expect(listenerCondition(&gw, "mismatch", "ResolvedRefs")).To(Equal("False/InvalidCertificateRef"))
				g.Expect(listenerCondition(&gw, "cross-ns", "ResolvedRefs")).To(Equal("False/RefNotPermitted"))
				g.Expect(listenerCondition(&gw, "good", "ResolvedRefs")).To(Equal("True/ResolvedRefs"))
			}).Should(Succeed())
		})

		It("writes nothing for a Gateway of a nonexistent GatewayClass or its routes", func() {
			gw := hostileGateway(f.ns, "orphan", gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType})
			gw.Spec.GatewayClassName = "does-not-exist"
			Expect(c.Create(ctx, gw)).To(Succeed())
			Expect(c.Create(ctx, httpRoute(f.ns, "to-orphan", f.ns, "orphan", "orphan.apps.test"))).To(Succeed())
			Consistently(func(g Gomega) {
				var got gatewayv1.Gateway
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gw), &got)).To(Succeed())
				g.Expect(condition(got.Status.Conditions, "Accepted")).To(Equal("Unknown/Pending"), "the CRD default, untouched")
				var r gatewayv1.HTTPRoute
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "to-orphan"}, &r)).To(Succeed())
				g.Expect(r.Status.Parents).To(BeEmpty())
			}, "2s").Should(Succeed())
		})
	})

	It("serves 5000 endpoints of one Service from five EndpointSlices of 1000", func() {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: f.ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "big"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		Expect(c.Create(ctx, svc)).To(Succeed())
		for i := range 5 {
			Expect(c.Create(ctx, endpointSlice(f.ns, "big", fmt.Sprintf("big-%d", i), i*1000, 1000))).To(Succeed())
		}
		r := hostileRoute(f.ns, "big", func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[0].BackendRefs[0].Name = "big" })
		Expect(c.Create(ctx, r)).To(Succeed())
		Eventually(ourParent(ctx, c, f.ns, "big", "default", "api")).Should(Equal("True/Accepted True/ResolvedRefs"))
		Expect(xds).NotTo(BeNil())
		cluster := f.ns + "/big/80"
		Eventually(func(g Gomega) int {
			snap, err := xds.Snapshot(types.NamespacedName{Namespace: "default", Name: "api"})
			g.Expect(err).NotTo(HaveOccurred())
			res, ok := snap.GetResources(resourcev3.EndpointType)[cluster]
			g.Expect(ok).To(BeTrue(), "no ClusterLoadAssignment %s", cluster)
			decoded, err := translate.Decode(res) // published as its wire form
			g.Expect(err).NotTo(HaveOccurred())
			n := 0
			for _, le := range decoded.(*endpointv3.ClusterLoadAssignment).Endpoints {
				n += len(le.LbEndpoints)
			}
			return n
		}).Should(Equal(5000))
	})

	It("restores its own status entry that another controller tampered with, keeps theirs, and does not loop", func() {
		const theirs = "example.com/other-controller"
		r := hostileRoute(f.ns, "contested")
		Expect(c.Create(ctx, r)).To(Succeed())
		Eventually(ourParent(ctx, c, f.ns, "contested", "default", "api")).Should(Equal("True/Accepted True/ResolvedRefs"))

		before := hostileStatusWrites("HTTPRoute")
		By("another controller adds its own entry and rewrites ours")
		Eventually(func() error {
			var got gatewayv1.HTTPRoute
			if err := c.Get(ctx, client.ObjectKeyFromObject(r), &got); err != nil {
				return err
			}
			for i := range got.Status.Parents {
				if string(got.Status.Parents[i].ControllerName) == shardgatev1alpha1.ControllerName {
					meta.SetStatusCondition(&got.Status.Parents[i].Conditions, metav1.Condition{
						Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Tampered", Message: "written by another controller", ObservedGeneration: got.Generation})
				}
			}
			got.Status.Parents = append(got.Status.Parents, gatewayv1.RouteParentStatus{
				ParentRef:      gatewayv1.ParentReference{Name: "their-gw"},
				ControllerName: theirs,
				Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "theirs",
					ObservedGeneration: got.Generation, LastTransitionTime: metav1.Now()}},
			})
			return c.Status().Update(ctx, &got)
		}).Should(Succeed())

		Eventually(ourParent(ctx, c, f.ns, "contested", "default", "api")).Should(Equal("True/Accepted True/ResolvedRefs"))
		var got gatewayv1.HTTPRoute
		Expect(c.Get(ctx, client.ObjectKeyFromObject(r), &got)).To(Succeed())
		Expect(got.Status.Parents).To(HaveLen(2))
		Expect(got.Status.Parents).To(ContainElement(HaveField("ControllerName", gatewayv1.GatewayController(theirs))))

		By("no write loop: the route stays unchanged for 3s and we wrote it a bounded number of times")
		rv := got.ResourceVersion
		Consistently(func(g Gomega) string {
			var now gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(r), &now)).To(Succeed())
			return now.ResourceVersion
		}, "3s", "200ms").Should(Equal(rv))
		// At least the one write that restored our entry (so the counter is
		// measuring), at most one retry more.
		Expect(hostileStatusWrites("HTTPRoute") - before).To(BeNumerically(">=", 1))
		Expect(hostileStatusWrites("HTTPRoute") - before).To(BeNumerically("<=", 2))
	})
})

func getLH(ctx context.Context, c client.Client, ns, name string) *shardgatev1alpha1.LeaseHost {
	var lh shardgatev1alpha1.LeaseHost
	Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lh)).To(Succeed())
	return &lh
}
