package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/prototext"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

// outageDowntime is how long kube-apiserver stays down. Restarting it adds
// a few seconds more before it answers again; together they are longer
// than the leader's RenewDeadline (7 s).
const outageDowntime = 8 * time.Second

// objectState is the stored state of every object shardgate writes or
// decides on in a namespace: LeaseHosts (status), HTTPRoutes (the
// generated ones' spec, every one's status) and Gateways (status), with
// their resourceVersions.
func objectState(ctx context.Context, c client.Client, namespaces ...string) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for _, ns := range namespaces {
		objectStateIn(ctx, c, ns, out)
	}
	return out
}

func objectStateIn(ctx context.Context, c client.Client, ns string, out map[string]string) {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}
	var lhs shardgatev1alpha1.LeaseHostList
	Expect(c.List(ctx, &lhs, client.InNamespace(ns))).To(Succeed())
	for _, o := range lhs.Items {
		out["LeaseHost "+o.Name] = fmt.Sprintf("rv=%s status=%s", o.ResourceVersion, enc(o.Status))
	}
	var routes gatewayv1.HTTPRouteList
	Expect(c.List(ctx, &routes, client.InNamespace(ns))).To(Succeed())
	for _, o := range routes.Items {
		out["HTTPRoute "+o.Name] = fmt.Sprintf("rv=%s labels=%v spec=%s status=%s", o.ResourceVersion, o.Labels, enc(o.Spec), enc(o.Status))
	}
	var gws gatewayv1.GatewayList
	Expect(c.List(ctx, &gws, client.InNamespace(ns))).To(Succeed())
	for _, o := range gws.Items {
		out["Gateway "+o.Name] = fmt.Sprintf("rv=%s status=%s", o.ResourceVersion, enc(o.Status))
	}
}

// idle: the replica's LeaseHost controller has reconciled at least n times
// and neither it nor the status writer has work queued, for a second.
func (r *replica) idle(n float64) func(Gomega) {
	return func(g Gomega) {
		quiet := func(g Gomega) float64 {
			ss, err := r.scrape()
			g.Expect(err).NotTo(HaveOccurred())
			total, _ := ss.sum("controller_runtime_reconcile_total", map[string]string{"controller": "leasehost", "result": "success"})
			g.Expect(total).To(BeNumerically(">=", n))
			for _, q := range []string{"leasehost", "status"} {
				depth, found := ss.sum("workqueue_depth", map[string]string{"name": q})
				g.Expect(found).To(BeTrue(), "workqueue %s", q)
				g.Expect(depth).To(BeZero(), "workqueue %s", q)
			}
			return total
		}
		total := quiet(g)
		// The window is the assertion "nothing more is coming": a late
		// event shows up in it as queued work or another reconcile.
		g.Consistently(quiet).WithTimeout(time.Second).WithPolling(250 * time.Millisecond).Should(Equal(total))
	}
}

var _ = Describe("apiserver outage", Ordered, func() {
	ctx := context.Background()

	It("keeps the xDS stream and its last good config through the outage, then resyncs to what a fresh shardgate computes", func() {
		env, err := testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })

		// Deployed as the chart deploys it: with leader election.
		r := startReplica(env, "shardgate-a", true)
		Eventually(r.isLeader).Should(BeTrue())
		Eventually(r.readyz).Should(Equal(200))
		ca := xdsCA(ctx, env.Client)
		w := setupWorld(ctx, env.Client)
		Eventually(w.settled(ctx, env.Client)).Should(Succeed())
		flaps := watchFlaps(env.Config, w.ns)
		a := connectADS(ca, w.gw, r.xds)
		Eventually(a.serves(w.xdsHosts...)).Should(Succeed())
		as := connectADS(ca, w.shard, r.xds)
		Eventually(as.serves(w.shardHosts...)).Should(Succeed())

		churn := startChurn(ctx, env.Client, w, "pre", 200*time.Millisecond)
		Eventually(churn.written).Should(BeNumerically(">=", 5), "hostname changes written before the outage")
		last, n, failed := churn.stop()
		Expect(failed).To(BeZero())
		Expect(n).To(BeNumerically(">", 3))
		Eventually(a.serves(last)).Should(Succeed())
		updates, _ := a.state()
		before := updates[len(updates)-1]
		cds := a.clusterUpdates()
		Expect(cds).NotTo(BeEmpty(), "no Clusters received")
		clustersBefore := cds[len(cds)-1].names
		Expect(clustersBefore).NotTo(BeEmpty())

		By("stopping kube-apiserver")
		down := time.Now()
		Expect(env.StopAPIServer()).To(Succeed())
		// The churn goes on against the dead apiserver: every write fails.
		churn = startChurn(ctx, env.Client, w, "during", 200*time.Millisecond)
		// Sample readiness and the stream for as long as the outage lasts.
		var ready, notReady int
		sample := time.NewTicker(250 * time.Millisecond)
		for time.Since(down) < outageDowntime {
			if code, err := r.readyz(); err == nil && code == 200 {
				ready++
			} else {
				notReady++
			}
			exited, werr := r.proc.Exited()
			Expect(exited).To(BeFalse(), "shardgate exited during the apiserver outage (%v):\n%s", werr, r.proc.Tail(30))
			_, err := a.state()
			Expect(err).NotTo(HaveOccurred(), "the xDS stream ended during the apiserver outage")
			<-sample.C
		}
		sample.Stop()
		By("starting kube-apiserver again")
		Expect(env.StartAPIServer(ctx)).To(Succeed())
		up := time.Since(down)
		_, okDuring, failedDuring := churn.stop()
		GinkgoWriter.Printf("OUTAGE: apiserver unavailable for %s; shardgate /readyz 200 in %d of %d samples; churn during: %d ok, %d failed\n",
			up.Round(time.Millisecond), ready, ready+notReady, okDuring, failedDuring)
		Expect(notReady).To(BeZero(), "shardgate stopped being ready while serving its last good config")

		updates, err = a.state()
		Expect(err).NotTo(HaveOccurred(), "the xDS stream ended")
		for _, u := range updates {
			if u.at.Before(down) {
				continue
			}
			d := u.domains()
			for h := range before.domains() {
				Expect(d).To(HaveKey(h), "an update at +%s removed %s", u.at.Sub(down).Round(time.Millisecond), h)
			}
			for name := range before.routes {
				Expect(u.routes).To(HaveKey(name), "an update at +%s removed RouteConfiguration %s", u.at.Sub(down).Round(time.Millisecond), name)
			}
		}
		for _, u := range a.clusterUpdates() {
			if u.at.Before(down) {
				continue
			}
			for name := range clustersBefore {
				Expect(u.names).To(HaveKey(name), "a CDS update at +%s removed Cluster %s", u.at.Sub(down).Round(time.Millisecond), name)
			}
		}
		GinkgoWriter.Printf("xDS from the stop until the restart: %d RouteConfiguration and %d Cluster updates, stream up\n",
			countSince(updates, down), len(a.clusterUpdates())-len(cds))
		exited, _ := r.proc.Exited()
		Expect(exited).To(BeFalse(), "shardgate exited after the apiserver outage:\n%s", r.proc.Tail(30))
		// The outage was longer than RenewDeadline: the leader lost its
		// Lease, and the process replaced its manager instead of exiting.
		Expect(r.proc.Tail(2000)).To(ContainSubstring("leader election lost"), "the outage did not cost the leader its Lease; the test did not test that")

		By("changing routes once the apiserver is back")
		resynced := time.Now()
		Eventually(func() error {
			return client.IgnoreAlreadyExists(env.Client.Create(ctx, &gatewayv1.HTTPRoute{
				ObjectMeta: objectMeta(w.ns, "after"),
				Spec: gatewayv1.HTTPRouteSpec{
					CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Namespace: ptr.To(gatewayv1.Namespace(w.gw.Namespace)), Name: gatewayv1.ObjectName(w.gw.Name)}}},
					Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host("after"))},
					Rules:           []gatewayv1.HTTPRouteRule{routeRule("/", "web2")},
				},
			}))
		}).Should(Succeed())
		Eventually(func() error { return w.setChurnHost(ctx, env.Client, host("final")) }).Should(Succeed())
		want := append([]string{host("after"), host("final")}, w.xdsHosts...)
		Eventually(a.serves(want...)).Should(Succeed(), "the changes made after the outage reach xDS")
		Eventually(as.serves(w.shardHosts...)).Should(Succeed(), "the shard's names are still served after the outage")
		GinkgoWriter.Printf("changes made after the restart reached xDS in %s\n", time.Since(resynced).Round(time.Millisecond))
		Eventually(func(g Gomega) {
			var after gatewayv1.HTTPRoute
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "after"}, &after)).To(Succeed())
			g.Expect(routeAccepted(&after)).To(BeTrue())
		}).Should(Succeed(), "the new route is Accepted")
		Eventually(w.settled(ctx, env.Client)).Should(Succeed())
		Eventually(r.idle(float64(len(w.lhs)))).Should(Succeed())
		final := a.latest()
		state := objectState(ctx, env.Client, w.ns, w.gw.Namespace)
		_, err = a.state()
		Expect(err).NotTo(HaveOccurred(), "the xDS stream ended")

		flapped, seen := flaps.result()
		sort.Strings(flapped)
		GinkgoWriter.Printf("status watch: %d object states observed, %d flaps\n", seen, len(flapped))
		Expect(flapped).To(BeEmpty(), "conditions went from True to False")

		By("starting a fresh shardgate against the same apiserver")
		Expect(r.proc.Stop(15 * time.Second)).To(Succeed()) // SIGTERM releases the Lease
		fresh := startReplica(env, "shardgate-fresh", true)
		Eventually(fresh.isLeader).Should(BeTrue())
		b := connectADS(ca, w.gw, fresh.xds)
		Eventually(b.serves(want...)).Should(Succeed())
		bs := connectADS(ca, w.shard, fresh.xds)
		Eventually(bs.serves(w.shardHosts...)).Should(Succeed())
		Eventually(fresh.idle(float64(len(w.lhs)))).Should(Succeed())
		got := b.latest()
		if !sameRoutes(got.routes, final.routes) {
			for name, rc := range final.routes {
				GinkgoWriter.Printf("resynced %s:\n%s\nfresh:\n%s\n", name, prototext.Format(rc), prototext.Format(got.routes[name]))
			}
		}
		Expect(sameRoutes(got.routes, final.routes)).To(BeTrue(), "the resynced RouteConfigurations differ from a fresh shardgate's")
		Expect(objectState(ctx, env.Client, w.ns, w.gw.Namespace)).To(Equal(state), "a fresh shardgate changed what the resynced one left")
	})
})

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

func countSince(us []rdsUpdate, t time.Time) int {
	n := 0
	for _, u := range us {
		if !u.at.Before(t) {
			n++
		}
	}
	return n
}
