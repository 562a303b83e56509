package reliability_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// claims is what a failover must not change: every LeaseHost's decision,
// reserved names, per-shard hosts and admission, and generated route.
func claims(ctx context.Context, c client.Client, ns string) map[string]string {
	GinkgoHelper()
	var lhs shardgatev1alpha1.LeaseHostList
	Expect(c.List(ctx, &lhs, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, lh := range lhs.Items {
		var b strings.Builder
		for _, t := range []string{shardgatev1alpha1.ConditionReserved, shardgatev1alpha1.ConditionReady} {
			if cond := meta.FindStatusCondition(lh.Status.Conditions, t); cond != nil {
				fmt.Fprintf(&b, "%s=%s/%s ", t, cond.Status, cond.Reason)
			}
		}
		fmt.Fprintf(&b, "reserved=%v route=%q shards=[", lh.Status.ReservedHosts, lh.Status.Route)
		for _, s := range lh.Status.Shards {
			adm := "-"
			if cond := meta.FindStatusCondition(s.Conditions, shardgatev1alpha1.ConditionAdmitted); cond != nil {
				adm = string(cond.Status) + "/" + cond.Reason
			}
			fmt.Fprintf(&b, "%s %s %s %s;", s.Name, s.Gateway, s.Host, adm)
		}
		b.WriteString("]")
		out[lh.Name] = b.String()
	}
	return out
}

var _ = Describe("replicas", Ordered, func() {
	ctx := context.Background()
	var (
		env   *testenv.Env
		reps  []*replica
		w     *world
		ca    *pki.CA
		flaps *flapWatch
	)

	leader := func() (*replica, []*replica) {
		GinkgoHelper()
		var l *replica
		var others []*replica
		for _, r := range reps {
			if done, _ := r.proc.Exited(); done {
				continue
			}
			is, err := r.isLeader()
			Expect(err).NotTo(HaveOccurred())
			if is {
				Expect(l).To(BeNil(), "two replicas say they lead")
				l = r
			} else {
				others = append(others, r)
			}
		}
		Expect(l).NotTo(BeNil(), "no leader")
		return l, others
	}

	BeforeAll(func() {
		start := time.Now()
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })

		// The first replica wins the election and creates the xDS CA (a
		// write it makes before it is elected, counted as such); the
		// others start once both exist, so they have nothing to create.
		reps = append(reps, startReplica(env, "shardgate-0", true))
		Eventually(reps[0].isLeader).Should(BeTrue())
		ca = xdsCA(ctx, env.Client)
		reps = append(reps, startReplica(env, "shardgate-1", true), startReplica(env, "shardgate-2", true))
		for _, r := range reps {
			Eventually(r.readyz).Should(Equal(200), "%s ready", r.name)
		}
		w = setupWorld(ctx, env.Client)
		Eventually(w.settled(ctx, env.Client)).Should(Succeed())
		flaps = watchFlaps(env.Config, w.ns)
		GinkgoWriter.Printf("3 replicas up and the world settled in %s\n", time.Since(start).Round(time.Millisecond))
	})

	It("reports a follower ready: readiness is synced caches and a serving xDS server, not leadership", func() {
		_, followers := leader()
		Expect(followers).To(HaveLen(2))
		for _, r := range followers {
			code, err := r.readyz()
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(200), "%s /readyz", r.name)
			is, err := r.isLeader()
			Expect(err).NotTo(HaveOccurred())
			Expect(is).To(BeFalse(), "%s must still be a follower", r.name)
		}
	})

	It("writes only from the leader", func() {
		l, followers := leader()
		// Give the followers every chance to write: the world has settled,
		// and the churn route changes once more.
		Expect(w.setChurnHost(ctx, env.Client, host("churn-x"))).To(Succeed())
		Eventually(func(g Gomega) {
			var r gatewayv1.HTTPRoute
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.churn}, &r)).To(Succeed())
			g.Expect(routeAccepted(&r)).To(BeTrue())
		}).Should(Succeed())
		// Give the followers every chance to write: for two seconds after
		// the change took effect, no follower's write counter moves. The
		// window is the assertion.
		Consistently(func(g Gomega) {
			for _, r := range followers {
				fw, err := r.writes()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(fw.asFollower).To(BeZero(), "follower %s wrote: %v", r.name, fw.followerSeries)
				g.Expect(fw.asLeader).To(BeZero(), "follower %s counted writes as leader", r.name)
			}
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		lw, err := l.writes()
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("leader %s: %v writes as leader, %v before its election %v\n", l.name, lw.asLeader, lw.asFollower, lw.followerSeries)
		Expect(lw.asLeader).To(BeNumerically(">", 0), "the leader made no writes")
		for _, r := range followers {
			fw, err := r.writes()
			Expect(err).NotTo(HaveOccurred())
			GinkgoWriter.Printf("follower %s: %v writes as follower %v, %v as leader\n", r.name, fw.asFollower, fw.followerSeries, fw.asLeader)
			Expect(fw.asFollower).To(BeZero(), "follower %s wrote: %v", r.name, fw.followerSeries)
			Expect(fw.asLeader).To(BeZero(), "follower %s counted writes as leader", r.name)
		}
	})

	It("serves the Gateway's routes over xDS from every replica", func() {
		for _, r := range reps {
			a := connectADS(ca, w.gw, r.xds)
			Eventually(a.serves(append(w.xdsHosts, host("churn-x"))...)).Should(Succeed(), "replica %s", r.name)
			as := connectADS(ca, w.shard, r.xds)
			Eventually(as.serves(w.shardHosts...)).Should(Succeed(), "shard, replica %s", r.name)
		}
	})

	It("fails over within 15s when the leader is killed mid-churn, without flaps, claim changes or dropped xDS streams", func() {
		old, survivors := leader()
		oldHolder := leaseHolder(ctx, env.Client)
		Expect(oldHolder).NotTo(BeEmpty())
		before := claims(ctx, env.Client, w.ns)
		clients := map[string]*adsClient{}
		shardClients := map[string]*adsClient{}
		for _, r := range survivors {
			clients[r.name] = connectADS(ca, w.gw, r.xds)
			Eventually(clients[r.name].serves(w.xdsHosts...)).Should(Succeed())
			shardClients[r.name] = connectADS(ca, w.shard, r.xds)
			Eventually(shardClients[r.name].serves(w.shardHosts...)).Should(Succeed())
			fw, err := r.writes()
			Expect(err).NotTo(HaveOccurred())
			Expect(fw.asFollower + fw.asLeader).To(BeZero())
		}
		oldWrites, err := old.writes()
		Expect(err).NotTo(HaveOccurred())

		churn := startChurn(ctx, env.Client, w, "churn", 200*time.Millisecond)
		// The old leader is writing the churn's status when it dies.
		Eventually(func() float64 {
			ow, err := old.writes()
			if err != nil {
				return 0
			}
			return ow.asLeader
		}).WithTimeout(10 * time.Second).Should(BeNumerically(">", oldWrites.asLeader))

		killed := time.Now()
		Expect(old.proc.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(old.proc.Done()).Should(BeClosed())
		GinkgoWriter.Printf("killed leader %s (lease holder %s)\n", old.name, oldHolder)

		var newLeader *replica
		var takeover, holderChanged time.Duration
		Eventually(func(g Gomega) {
			if holderChanged == 0 {
				if h := leaseHolder(ctx, env.Client); h != "" && h != oldHolder {
					holderChanged = time.Since(killed)
				}
			}
			for _, r := range survivors {
				rw, err := r.writes()
				g.Expect(err).NotTo(HaveOccurred())
				if rw.asLeader > 0 {
					newLeader = r
				}
			}
			g.Expect(newLeader).NotTo(BeNil())
			takeover = time.Since(killed)
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("FAILOVER: lease holder changed %s after the kill; %s made its first write as leader %s after the kill\n",
			holderChanged.Round(time.Millisecond), newLeader.name, takeover.Round(time.Millisecond))
		Expect(takeover).To(BeNumerically("<=", 15*time.Second), "the new leader's first write came too late")
		Expect(leaseHolder(ctx, env.Client)).NotTo(Equal(oldHolder))

		// Churn on under the new leader for a while (ten more changes), then
		// check where everything ended up.
		underNew := churn.written()
		Eventually(churn.written).Should(BeNumerically(">=", underNew+10), "hostname changes under the new leader")
		last, ok, failed := churn.stop()
		GinkgoWriter.Printf("churn: %d hostname changes written, %d failed; last %s\n", ok, failed, last)
		Expect(failed).To(BeZero())
		Eventually(func(g Gomega) {
			var r gatewayv1.HTTPRoute
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.churn}, &r)).To(Succeed())
			g.Expect(r.Spec.Hostnames).To(ConsistOf(gatewayv1.Hostname(last)))
			g.Expect(routeAccepted(&r)).To(BeTrue(), "the new leader wrote the churned route's status")
		}).Should(Succeed())

		for _, r := range survivors {
			a := clients[r.name]
			Eventually(a.serves(append(w.xdsHosts, last)...)).Should(Succeed(), "xDS from %s after the failover", r.name)
			Eventually(shardClients[r.name].serves(w.shardHosts...)).Should(Succeed(), "shard xDS from %s after the failover", r.name)
			_, err := shardClients[r.name].state()
			Expect(err).NotTo(HaveOccurred(), "the shard's ADS stream to surviving %s ended", r.name)
			us, err := a.state()
			Expect(err).NotTo(HaveOccurred(), "the ADS stream to surviving %s ended", r.name)
			after := 0
			for _, u := range us {
				if u.at.After(killed) {
					after++
				}
			}
			GinkgoWriter.Printf("xDS client of %s: %d RouteConfiguration updates, %d after the kill, stream up\n", r.name, len(us), after)
			Expect(after).To(BeNumerically(">", 0))
		}

		// Only the new leader wrote, and only once elected.
		for _, r := range survivors {
			rw, err := r.writes()
			Expect(err).NotTo(HaveOccurred())
			Expect(rw.asFollower).To(BeZero(), "%s wrote as a follower: %v", r.name, rw.followerSeries)
			if r != newLeader {
				Expect(rw.asLeader).To(BeZero(), "%s is not the leader but wrote", r.name)
			}
		}

		Eventually(w.settled(ctx, env.Client)).Should(Succeed())
		after := claims(ctx, env.Client, w.ns)
		Expect(after).To(Equal(before), "a LeaseHost's claim or status changed across the failover")
		flapped, seen := flaps.result()
		GinkgoWriter.Printf("status watch: %d object states observed, %d flaps\n", seen, len(flapped))
		sort.Strings(flapped)
		Expect(flapped).To(BeEmpty(), "conditions went from True to False")
		Expect(seen).To(BeNumerically(">", len(w.lhs)+len(w.routes)), "the status watch saw nothing")
	})
})
