package e2e_test

import (
	"context"
	"encoding/json"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

var _ = Describe("NACK", func() {
	It("records one NACK, does not resend, and shows it on the Gateway until a new config is accepted", func(ctx SpecContext) {
		ns := namespace(ctx, "nack")
		gw := gateway(ctx, ns, "gw")
		backendService(ctx, ns, "web", startBackend("web"))
		r := httpRoute(ctx, gw, "r", "nack", rule(prefix("/"), to("web")))
		c, _ := xdsClient(gw, "nack")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("web"))
		// A proxy that refuses every route table with a route for
		// "/e2e-nack", as Envoy refuses a table it cannot load.
		proxy, err := dialADS(ctx, gw, "nack-proxy", adsOptions{reject: "/e2e-nack"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		Expect(proxy.wait(ns+"/web/80", 30*time.Second)).To(Succeed())
		node := proxy.Node().GetId()
		Expect(nacksFor(node)).To(BeEmpty())
		metricBefore := nackMetric(resourcev3.RouteType)
		resendsBefore := srv.Resends()

		By("publishing a route table the proxy refuses")
		Expect(setRules(ctx, r, rule(prefix("/"), to("web")), rule(prefix("/e2e-nack"), to("web")))).To(Succeed())
		Eventually(func() []xdsserver.NACK { return nacksFor(node) }).Should(HaveLen(1))
		nack := nacksFor(node)[0]
		Expect(nack.TypeURL).To(Equal(resourcev3.RouteType))
		Expect(nack.NodeCluster).To(Equal(xdsserver.NodeGroup(gw)))
		Expect(nack.Version).To(Equal(version(gw, resourcev3.RouteType)), "the NACKed version is the one published")
		GinkgoWriter.Printf("NACK: %+v\n", nack)
		tables := proxy.routeTables()

		By("keeping the last good config on the proxy; other clients are served")
		Expect(proxy.has("/e2e-nack")).To(BeFalse())
		Expect(call(ctx, c, methodEmpty)).To(Equal("web"))

		By("not resending the rejected version")
		// go-control-plane alone resends a NACKed version thousands of
		// times a second; for two seconds, ours must not. The window is
		// the assertion.
		Consistently(func(g Gomega) {
			g.Expect(nacksFor(node)).To(HaveLen(1))
			g.Expect(srv.Resends() - resendsBefore).To(BeNumerically("<=", 1))
			g.Expect(proxy.routeTables()).To(BeNumerically("<=", tables+1))
		}).WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		resends := srv.Resends() - resendsBefore
		metric := nackMetric(resourcev3.RouteType) - metricBefore
		AddReportEntry("NACK", map[string]any{"nacks recorded for the node": len(nacksFor(node)), "resends in 2s": resends,
			"route tables refused by the proxy":                      proxy.Refused(),
			"shardgate_xds_nacks_total{RouteConfiguration} increase": metric})
		GinkgoWriter.Printf("after 2 s: %d NACK records for the node, %d resends, %d route tables refused, shardgate_xds_nacks_total +%v\n",
			len(nacksFor(node)), resends, proxy.Refused(), metric)
		Expect(nacksFor(node)).To(HaveLen(1))
		Expect(resends).To(BeNumerically("<=", 1))
		Expect(proxy.Refused()).To(BeNumerically("<=", 2))
		Expect(metric).To(BeNumerically(">=", 1))
		Expect(metric).To(BeNumerically("<=", 2))
		Expect(call(ctx, c, methodEmpty)).To(Equal("web"))

		By("showing the rejection on the Gateway")
		Eventually(programmed(ctx, gw)).Should(And(
			HaveField("Status", BeEquivalentTo("False")),
			HaveField("Reason", Equal(string(gatewayv1.GatewayReasonInvalid))),
			HaveField("Message", And(ContainSubstring("rejected"), ContainSubstring("RouteConfiguration"), ContainSubstring(node))),
		))
		By("emitting one Warning Event on the Gateway")
		nacked := corev1.EventTypeWarning + "/" + shardgatev1alpha1.ReasonConfigNACKed + "/Publish"
		Eventually(gatewayEvents(ctx, gw)).Should(HaveKeyWithValue(nacked, 1))

		By("clearing once a config the proxy accepts is published")
		Expect(setRules(ctx, r, rule(prefix("/"), to("web")), rule(prefix("/e2e-fixed"), to("web")))).To(Succeed())
		Eventually(func() string { return version(gw, resourcev3.RouteType) }).ShouldNot(Equal(nack.Version))
		Expect(proxy.wait("/e2e-fixed", 30*time.Second)).To(Succeed())
		Eventually(func() map[types.NamespacedName]string { return srv.PublishErrors() }).ShouldNot(HaveKey(gw))
		Eventually(programmed(ctx, gw)).Should(HaveField("Message", Not(ContainSubstring("rejected"))))
		Expect(call(ctx, c, methodEmpty)).To(Equal("web"))
		Expect(srv.Resends() - resendsBefore).To(BeNumerically("<=", 1))
		By("emitting a Normal Event when the rejection clears, and no second Warning")
		Eventually(gatewayEvents(ctx, gw)).Should(Equal(map[string]int{
			nacked: 1,
			corev1.EventTypeNormal + "/" + shardgatev1alpha1.ReasonConfigPublished + "/Publish": 1,
		}))
	})
})

// setRules replaces route's rules, with a merge patch of the spec (no
// conflict with the controller's status writes).
func setRules(ctx context.Context, r *gatewayv1.HTTPRoute, rules ...gatewayv1.HTTPRouteRule) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rules": rules}})
	if err != nil {
		return err
	}
	return env.Client.Patch(ctx, r.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
}

// gatewayEvents lists the events.k8s.io Events regarding gw as
// "Type/Reason/Action" with how many times each was emitted.
func gatewayEvents(ctx context.Context, gw types.NamespacedName) func(Gomega) map[string]int {
	return func(g Gomega) map[string]int {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(gw.Namespace))).To(Succeed())
		out := map[string]int{}
		for _, ev := range list.Items {
			if ev.Regarding.Kind != "Gateway" || ev.Regarding.Name != gw.Name {
				continue
			}
			n := 1
			if ev.Series != nil {
				n = int(ev.Series.Count)
			}
			out[ev.Type+"/"+ev.Reason+"/"+ev.Action] += n
		}
		return out
	}
}

func nacksFor(node string) []xdsserver.NACK {
	var out []xdsserver.NACK
	for _, n := range srv.NACKs() {
		if n.NodeID == node {
			out = append(out, n)
		}
	}
	return out
}

// version is the published version of one type of a Gateway's snapshot.
func version(gw types.NamespacedName, typeURL string) string {
	snap, err := srv.Snapshot(gw)
	if err != nil {
		return ""
	}
	return snap.GetVersion(typeURL)
}

// nackMetric reads shardgate_xds_nacks_total for one type URL.
func nackMetric(typeURL string) float64 {
	GinkgoHelper()
	v, err := testenv.Counter("shardgate_xds_nacks_total", "type_url", typeURL)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// programmed returns the Gateway's Programmed condition.
func programmed(ctx SpecContext, gw types.NamespacedName) func(Gomega) metav1Condition {
	return func(g Gomega) metav1Condition {
		var obj gatewayv1.Gateway
		g.Expect(env.Client.Get(ctx, gw, &obj)).To(Succeed())
		cond := meta.FindStatusCondition(obj.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
		g.Expect(cond).NotTo(BeNil())
		return *cond
	}
}
