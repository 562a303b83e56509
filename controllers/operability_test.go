package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// tableRows asks the apiserver for path as a meta.k8s.io Table (what
// kubectl get prints) and returns each row as column name → cell.
func tableRows(ctx context.Context, cfg *rest.Config, path string) func(Gomega) map[string]map[string]string {
	return func(g Gomega) map[string]map[string]string {
		hc, err := rest.HTTPClientFor(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := hc.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
		var table metav1.Table
		g.Expect(json.Unmarshal(body, &table)).To(Succeed(), string(body))
		out := map[string]map[string]string{}
		for _, row := range table.Rows {
			cells := map[string]string{}
			for i, col := range table.ColumnDefinitions {
				if col.Priority == 0 {
					cells[col.Name] = fmt.Sprint(row.Cells[i])
				}
			}
			out[cells["Name"]] = cells
		}
		return out
	}
}

// eventsAbout lists the events.k8s.io Events regarding one object, as
// "Type/Reason/Action" with how many times each was emitted (an Event the
// recorder repeats is one object with a series count).
func eventsAbout(ctx context.Context, c client.Client, ns, kind, name string) func(Gomega) map[string]int {
	return func(g Gomega) map[string]int {
		var list eventsv1.EventList
		g.Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		out := map[string]int{}
		for _, ev := range list.Items {
			if ev.Regarding.Kind != kind || ev.Regarding.Name != name {
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

var _ = Describe("what an operator sees: printer columns and Events", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var alice, bob *fixture
	const infra = "default"

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr})
		shard(ctx, c, infra, "shard-a", "shard-a.ops.test")
		shard(ctx, c, infra, "shard-b", "shard-b.ops.test")
		// shard-b, whose listener cannot carry shard-a's names, does not
		// select alice-nosvc: that LeaseHost is Ready once shard-a admits it.
		update(ctx, c, &shardgatev1alpha1.GatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: infra, Name: "shard-b"}},
			func(p *shardgatev1alpha1.GatewayParameters) {
				p.Spec.Shard.LeaseSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "shard", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a-only"},
				}}}
			})
		bob = ownedFixture(ctx, c, "bob", "akash1bob")
		bob.service(ctx, "web")
		bob.leaseHost(ctx, "bob-web", "web.shard-b.ops.test", owner("akash1bob", 1))
		Eventually(reserved(ctx, c, bob.ns, "bob-web")).Should(Equal("True/Reserved"))
		alice = ownedFixture(ctx, c, "alice", "akash1alice")
		alice.service(ctx, "web")
		alice.leaseHost(ctx, "alice-web", "", owner("akash1alice", 1), func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Subdomain = "web" })
		alice.leaseHost(ctx, "alice-nosvc", "nosvc.shard-a.ops.test", owner("akash1alice", 2), service("missing"),
			func(lh *shardgatev1alpha1.LeaseHost) { lh.Labels = map[string]string{"shard": "a-only"} })
	})

	It("shows a LeaseHost refused on one shard as 1/2 admitted and not ready, and a missing Service as not ready, in kubectl's table", func() {
		rows := tableRows(ctx, env.Config, "/apis/shardgate.io/v1alpha1/namespaces/"+alice.ns+"/leasehosts")
		Eventually(func(g Gomega) {
			got := rows(g)
			g.Expect(got).To(HaveKey("alice-web"))
			g.Expect(got["alice-web"]).To(Equal(map[string]string{
				"Name": "alice-web", "Owner": "akash1alice", "DSeq": "1", "Hostname": "<nil>", "Subdomain": "web",
				"Reserved": "True", "Ready": "False", "Admitted": "1/2", "Reason": shardgatev1alpha1.ReasonPartiallyAdmitted,
				"Age": got["alice-web"]["Age"],
			}), "alice-web row: %v", got["alice-web"])
			g.Expect(got["alice-nosvc"]).To(HaveKeyWithValue("Reserved", "True"), "alice-nosvc row: %v", got["alice-nosvc"])
			g.Expect(got["alice-nosvc"]).To(HaveKeyWithValue("Ready", "False"), "alice-nosvc row: %v", got["alice-nosvc"])
			g.Expect(got["alice-nosvc"]).To(HaveKeyWithValue("Reason", shardgatev1alpha1.ReasonBackendNotFound), "alice-nosvc row: %v", got["alice-nosvc"])
		}).Should(Succeed())
	})

	It("emits one Warning for the refusing shard and one for the missing backend, and none again when nothing changes", func() {
		refusal := corev1.EventTypeWarning + "/" + shardgatev1alpha1.ReasonHostnameInUse + "/Admit"
		missing := corev1.EventTypeWarning + "/" + shardgatev1alpha1.ReasonBackendNotFound + "/Route"
		Eventually(eventsAbout(ctx, c, alice.ns, "LeaseHost", "alice-web")).Should(HaveKeyWithValue(refusal, 1))
		Eventually(eventsAbout(ctx, c, alice.ns, "LeaseHost", "alice-nosvc")).Should(HaveKeyWithValue(missing, 1))

		By("re-reconciling both LeaseHosts without changing their decisions")
		for _, name := range []string{"alice-web", "alice-nosvc"} {
			update(ctx, c, alice.get(ctx, name), func(lh *shardgatev1alpha1.LeaseHost) {
				if lh.Labels == nil {
					lh.Labels = map[string]string{}
				}
				lh.Labels["touched"] = "yes"
			})
		}
		// Events come from decisions, not reconciles: for this window the
		// counts must stay exactly where they are.
		Consistently(func(g Gomega) {
			g.Expect(eventsAbout(ctx, c, alice.ns, "LeaseHost", "alice-web")(g)).To(HaveKeyWithValue(refusal, 1))
			g.Expect(eventsAbout(ctx, c, alice.ns, "LeaseHost", "alice-nosvc")(g)).To(HaveKeyWithValue(missing, 1))
		}, "3s", "200ms").Should(Succeed())

		By("creating the Service: the LeaseHost becomes ready with a Normal Event")
		alice.service(ctx, "missing")
		// The route's parent status catches up with the new Service first;
		// a loaded machine may take a while.
		Eventually(func(g Gomega) {
			lh := alice.get(ctx, "alice-nosvc")
			ready := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil(), "status: %+v", lh.Status)
			g.Expect(ready.Reason).To(Equal(shardgatev1alpha1.ReasonAdmitted), "status: %+v", lh.Status)
		}, "2m").Should(Succeed())
		Eventually(eventsAbout(ctx, c, alice.ns, "LeaseHost", "alice-nosvc")).Should(
			HaveKeyWithValue(corev1.EventTypeNormal+"/"+shardgatev1alpha1.ReasonAdmitted+"/Route", 1))
	})

	It("shows a LeasedIP's IP and reason, with an Event for waiting and a Warning for a missing workload", func() {
		lip := func(name, svc string) *shardgatev1alpha1.LeasedIP {
			return &shardgatev1alpha1.LeasedIP{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: alice.ns},
				Spec: shardgatev1alpha1.LeasedIPSpec{
					Lease: shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 1}, Endpoint: name,
					Service: svc, Port: 8080, ExternalPort: 5000, Protocol: "TCP",
				},
			}
		}
		Expect(c.Create(ctx, lip("waiting", "web"))).To(Succeed())
		Expect(c.Create(ctx, lip("orphan", "nowhere"))).To(Succeed())
		// No MetalLB runs in this environment, so no IP is ever assigned.
		rows := tableRows(ctx, env.Config, "/apis/shardgate.io/v1alpha1/namespaces/"+alice.ns+"/leasedips")
		Eventually(func(g Gomega) {
			got := rows(g)
			g.Expect(got["waiting"]).To(HaveKeyWithValue("Allocated", "False"), "waiting row: %v", got["waiting"])
			g.Expect(got["waiting"]).To(HaveKeyWithValue("Reason", shardgatev1alpha1.ReasonPending), "waiting row: %v", got["waiting"])
			g.Expect(got["waiting"]).To(HaveKeyWithValue("IP", "<nil>"), "waiting row: %v", got["waiting"])
			g.Expect(got["orphan"]).To(HaveKeyWithValue("Reason", shardgatev1alpha1.ReasonSelectorNotFound), "orphan row: %v", got["orphan"])
		}).Should(Succeed())
		Eventually(eventsAbout(ctx, c, alice.ns, "LeasedIP", "waiting")).Should(Equal(map[string]int{
			corev1.EventTypeNormal + "/" + shardgatev1alpha1.ReasonPending + "/Allocate": 1,
		}))
		Eventually(eventsAbout(ctx, c, alice.ns, "LeasedIP", "orphan")).Should(Equal(map[string]int{
			corev1.EventTypeWarning + "/" + shardgatev1alpha1.ReasonSelectorNotFound + "/Allocate": 1,
		}))
	})
})
