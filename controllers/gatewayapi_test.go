package controllers_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// histogram returns the sample count and sum of a histogram in the
// in-process registry.
func histogram(name string) (uint64, float64) {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			var n uint64
			var sum float64
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
				sum += m.GetHistogram().GetSampleSum()
			}
			return n, sum
		}
	}
	return 0, 0
}

// statusWrites sums shardgate_status_writes_total from the in-process
// manager's registry.
func statusWrites() float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() == "shardgate_status_writes_total" {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func condition(cs []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(cs, t)
	if c == nil {
		return "<none>"
	}
	return string(c.Status) + "/" + c.Reason
}

func httpRoute(ns, name, gwNS, gw, host string) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Namespace: new(gatewayv1.Namespace(gwNS)), Name: gatewayv1.ObjectName(gw),
			}}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: new(gatewayv1.PortNumber(80))},
			}}}}},
		},
	}
}

var _ = Describe("Gateway API status on the real apiserver", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr})
		// Not a shard: this suite is about Gateway API status, and a shard
		// serves only the routes that ownership allows.
		gateway(ctx, c, "default", "gw", "apps.test")
	})

	It("accepts our GatewayClass and the Gateway", func() {
		Eventually(func(g Gomega) {
			var gc gatewayv1.GatewayClass
			g.Expect(c.Get(ctx, client.ObjectKey{Name: "shardgate"}, &gc)).To(Succeed())
			g.Expect(condition(gc.Status.Conditions, "Accepted")).To(Equal("True/Accepted"))
			var gw gatewayv1.Gateway
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw)).To(Succeed())
			g.Expect(condition(gw.Status.Conditions, "Accepted")).To(Equal("True/Accepted"))
			g.Expect(gw.Status.Listeners).To(HaveLen(1))
			g.Expect(condition(gw.Status.Listeners[0].Conditions, "Accepted")).To(Equal("True/Accepted"))
		}).Should(Succeed())
	})

	It("attaches 1000 HTTPRoutes with at most 1.05 status writes per route + 10", func() {
		f := newFixture(ctx, c, "attach")
		f.service(ctx, "web")
		before := statusWrites()
		tn0, ts0 := histogram("shardgate_translate_duration_seconds")
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for i := 0; i < 1000; i++ {
			wg.Add(1)
			go func(i int) {
				defer GinkgoRecover()
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				Expect(c.Create(ctx, httpRoute(f.ns, fmt.Sprintf("r%04d", i), "default", "gw", fmt.Sprintf("r%d.apps.test", i)))).To(Succeed())
			}(i)
		}
		wg.Wait()
		applied := time.Since(start)
		Eventually(func(g Gomega) {
			var gw gatewayv1.Gateway
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw)).To(Succeed())
			g.Expect(gw.Status.Listeners).To(HaveLen(1))
			g.Expect(gw.Status.Listeners[0].AttachedRoutes).To(BeNumerically("==", 1000))
			var routes gatewayv1.HTTPRouteList
			g.Expect(c.List(ctx, &routes, client.InNamespace(f.ns))).To(Succeed())
			accepted := 0
			for _, r := range routes.Items {
				for _, p := range r.Status.Parents {
					if string(p.ControllerName) == shardgatev1alpha1.ControllerName && condition(p.Conditions, "Accepted") == "True/Accepted" {
						accepted++
					}
				}
			}
			g.Expect(accepted).To(Equal(1000))
		}).WithTimeout(60 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
		total := time.Since(start)
		// Count once the writer is done: the count holds still for a
		// second. A straggling write lands within that window and starts
		// the wait again, so it is counted.
		var writes float64
		Eventually(func(g Gomega) {
			now := statusWrites()
			g.Consistently(statusWrites).WithTimeout(time.Second).WithPolling(50 * time.Millisecond).Should(Equal(now))
			writes = now - before
		}).WithTimeout(60 * time.Second).Should(Succeed())
		tn, ts := histogram("shardgate_translate_duration_seconds")
		AddReportEntry("translations during attach", fmt.Sprintf("%d translations, %.0f ms in total", tn-tn0, (ts-ts0)*1000))
		AddReportEntry("attach 1000 routes", fmt.Sprintf("creates %s, all Accepted and attachedRoutes=1000 after %s, %.0f status writes (%.3f per route)",
			applied.Round(time.Millisecond), total.Round(time.Millisecond), writes, writes/1000))
		GinkgoWriter.Printf("attach: creates %s, all Accepted after %s, %.0f status writes\n", applied, total, writes)
		Expect(writes).To(BeNumerically("<=", 1.05*1000+10))
	})

	It("never modifies another controller's status.parents entry", func() {
		f := newFixture(ctx, c, "foreign")
		f.service(ctx, "web")
		r := httpRoute(f.ns, "shared", "default", "gw", "shared.apps.test")
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{Namespace: new(gatewayv1.Namespace("default")), Name: "other-gw"})
		Expect(c.Create(ctx, r)).To(Succeed())
		foreign := gatewayv1.RouteParentStatus{
			ParentRef: gatewayv1.ParentReference{
				Group: new(gatewayv1.Group(gatewayv1.GroupName)), Kind: new(gatewayv1.Kind("Gateway")),
				Namespace: new(gatewayv1.Namespace("default")), Name: "other-gw",
			},
			ControllerName: "example.com/other-controller",
			Conditions: []metav1.Condition{{
				Type: "Accepted", Status: metav1.ConditionFalse, Reason: "TheirReason", Message: "theirs",
				LastTransitionTime: metav1.NewTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)), ObservedGeneration: 1,
			}},
		}
		Eventually(func() error {
			var got gatewayv1.HTTPRoute
			if err := c.Get(ctx, client.ObjectKeyFromObject(r), &got); err != nil {
				return err
			}
			got.Status.Parents = append(got.Status.Parents, foreign)
			return c.Status().Update(ctx, &got)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			var got gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(r), &got)).To(Succeed())
			var ours, theirs int
			for _, p := range got.Status.Parents {
				switch string(p.ControllerName) {
				case shardgatev1alpha1.ControllerName:
					ours++
					g.Expect(condition(p.Conditions, "Accepted")).To(Equal("True/Accepted"))
				case "example.com/other-controller":
					theirs++
					g.Expect(equality.Semantic.DeepEqual(p, foreign)).To(BeTrue(), "foreign entry changed: %+v", p)
				}
			}
			g.Expect(ours).To(Equal(1))
			g.Expect(theirs).To(Equal(1))
		}).Should(Succeed())

		By("a change to the route rewrites our entry and keeps theirs")
		update(ctx, c, r, func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = []gatewayv1.Hostname{"nomatch.elsewhere.test"} })
		Eventually(func(g Gomega) {
			var got gatewayv1.HTTPRoute
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(r), &got)).To(Succeed())
			found := false
			for _, p := range got.Status.Parents {
				if string(p.ControllerName) == shardgatev1alpha1.ControllerName {
					g.Expect(condition(p.Conditions, "Accepted")).To(Equal("False/NoMatchingListenerHostname"))
				}
				if string(p.ControllerName) == "example.com/other-controller" {
					found = true
					g.Expect(equality.Semantic.DeepEqual(p, foreign)).To(BeTrue(), "foreign entry changed: %+v", p)
				}
			}
			g.Expect(found).To(BeTrue())
		}).Should(Succeed())
	})
})
