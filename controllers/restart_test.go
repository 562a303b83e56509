package controllers_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

// snapshot is everything a restart must not change.
type snapshot struct {
	reserved  map[string]string // leasehost → Reserved status/reason
	lhRV      map[string]string // leasehost → resourceVersion
	routeRV   map[string]string // route → resourceVersion
	routeHost map[string]string // route → hostnames
}

func takeSnapshot(ctx context.Context, c client.Client, namespaces ...string) snapshot {
	s := snapshot{map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}}
	for _, ns := range namespaces {
		var lhs shardgatev1alpha1.LeaseHostList
		Expect(c.List(ctx, &lhs, client.InNamespace(ns))).To(Succeed())
		for _, lh := range lhs.Items {
			cond := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved)
			Expect(cond).NotTo(BeNil(), lh.Name)
			s.reserved[lh.Name] = string(cond.Status) + "/" + cond.Reason
			s.lhRV[lh.Name] = lh.ResourceVersion
		}
		var routes gatewayv1.HTTPRouteList
		Expect(c.List(ctx, &routes, client.InNamespace(ns))).To(Succeed())
		for _, r := range routes.Items {
			s.routeRV[r.Name] = r.ResourceVersion
			s.routeHost[r.Name] = fmt.Sprint(r.Spec.Hostnames)
		}
	}
	return s
}

// metric reads one sample from a Prometheus text endpoint.
func metric(addr, name, label string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name) && strings.Contains(line, label) {
			f := strings.Fields(line)
			return strconv.ParseFloat(f[len(f)-1], 64)
		}
	}
	return 0, fmt.Errorf("%s{%s} not found", name, label)
}

// metricSum adds up every series of one metric from a Prometheus text
// endpoint.
func metricSum(addr, name string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("%s not found", name)
	}
	return sum, sc.Err()
}

// settled: the named controller has reconciled at least n times, and the
// whole process is quiet: no reconcile is running, and for one second no
// reconcile of any controller completes and no work queue's depth moves.
// The window is the assertion "nothing more is coming": an event still on
// its way (a status write behind a hold-off, a watch event not yet queued)
// shows up within it as a queued item or a new reconcile, and Eventually
// then tries again. An item queued while every worker is idle is taken
// within the window, so a depth that holds still is no pending work: it
// is what managers an earlier spec stopped left in the process-wide
// metrics registry (a queue shut down with an item in it keeps its gauge,
// and the next queue of the same name counts on from there).
func settled(addr, controller string, n float64) func(Gomega) {
	return func(g Gomega) {
		own, err := metric(addr, "controller_runtime_reconcile_total", `controller="`+controller+`",result="success"`)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(own).To(BeNumerically(">=", n), "%s reconciles", controller)
		quiet := func(g Gomega) [2]float64 {
			active, err := metricSum(addr, "controller_runtime_active_workers")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(active).To(BeZero(), "running reconciles")
			depth, err := metricSum(addr, "workqueue_depth")
			g.Expect(err).NotTo(HaveOccurred())
			total, err := metricSum(addr, "controller_runtime_reconcile_total")
			g.Expect(err).NotTo(HaveOccurred())
			return [2]float64{depth, total}
		}
		now := quiet(g)
		g.Consistently(quiet).WithTimeout(time.Second).WithPolling(100 * time.Millisecond).Should(Equal(now))
	}
}

var _ = Describe("restart", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	})

	It("comes back with exactly the same holders and rewrites nothing", func() {
		f := newFixture(ctx, env.Client, "restart")
		f.service(ctx, "web")
		cfg := configPath()
		writeConfig(cfg, ".blocked.test")
		shard(ctx, env.Client, "default", "shard-r", "shard-r.apps.test")

		// 50 names, 4 claimants each, created concurrently in an order
		// the goroutines decide: other owners, same-owner other
		// deployments, oseq variants, takeovers and blocked names.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := 0; i < 50; i++ {
			host := fmt.Sprintf("app%d.example.test", i)
			if i%10 == 9 {
				host = fmt.Sprintf("app%d.blocked.test", i)
			}
			variants := []lhOpt{
				owner(fmt.Sprintf("akash1owner%d", i%7), uint64(i)),
				owner(fmt.Sprintf("akash1other%d", i%5), uint64(i)),
				owner(fmt.Sprintf("akash1owner%d", i%7), uint64(i+1000)),
				func(lh *shardgatev1alpha1.LeaseHost) {
					lh.Spec.Lease = shardgatev1alpha1.LeaseRef{Owner: fmt.Sprintf("akash1owner%d", i%7), DSeq: uint64(i), GSeq: 1, OSeq: 2}
				},
			}
			if i%3 == 0 { // the second deployment takes the name over
				variants[2] = func(lh *shardgatev1alpha1.LeaseHost) {
					owner(fmt.Sprintf("akash1owner%d", i%7), uint64(i+1000))(lh)
					lh.Spec.Takeover = true
				}
			}
			for j, v := range variants {
				wg.Add(1)
				go func(name string, v lhOpt) {
					defer GinkgoRecover()
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					f.leaseHost(ctx, name, host, v)
				}(fmt.Sprintf("lh-%d-%d", i, j), v)
			}
		}
		wg.Wait()

		start := func(name string) (*testenv.Process, string) {
			port, err := testenv.FreePort()
			Expect(err).NotTo(HaveOccurred())
			metrics := fmt.Sprintf("127.0.0.1:%d", port)
			p, err := env.StartShardgate(name, "--config="+cfg, "--metrics-address="+metrics, "--metrics-secure=false",
				"--health-address=0", "--xds-address=127.0.0.1:0", "--log-format=text")
			Expect(err).NotTo(HaveOccurred())
			return p, metrics
		}
		first, metrics := start("shardgate-1")
		Eventually(settled(metrics, "leasehost", 200)).WithTimeout(90 * time.Second).Should(Succeed())
		before := takeSnapshot(ctx, env.Client, f.namespaces()...)
		Expect(before.reserved).To(HaveLen(200))
		counts := map[string]int{}
		for _, r := range before.reserved {
			counts[r]++
		}
		GinkgoWriter.Printf("decisions before restart: %v\n", counts)
		// Every kind of decision is represented.
		for _, want := range []string{"True/Reserved", "False/HostnameInUse", "False/Withheld", "False/TransferredAway", "False/Blocked"} {
			Expect(counts).To(HaveKey(want))
		}

		Expect(first.Signal(syscall.SIGTERM)).To(Succeed())
		Eventually(first.Done()).WithTimeout(30 * time.Second).Should(BeClosed())

		second, metrics2 := start("shardgate-2")
		Eventually(settled(metrics2, "leasehost", 200)).WithTimeout(90 * time.Second).Should(Succeed())
		after := takeSnapshot(ctx, env.Client, f.namespaces()...)
		Expect(after.reserved).To(Equal(before.reserved), "holders changed across the restart")
		Expect(after.routeHost).To(Equal(before.routeHost))
		Expect(after.routeRV).To(Equal(before.routeRV), "a route was rewritten")
		Expect(after.lhRV).To(Equal(before.lhRV), "a LeaseHost status was rewritten")
		Expect(second.Tail(400)).To(ContainSubstring("rebuilt hostname claims"))

		By("exporting the claims by state")
		var reservedHolders float64
		for _, r := range after.reserved {
			if r == "True/Reserved" {
				reservedHolders++
			}
		}
		got, err := metric(metrics2, "shardgate_hostname_claims", `state="reserved"`)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(reservedHolders))
		refused, err := metric(metrics2, "shardgate_hostname_claims", `state="refused"`)
		Expect(err).NotTo(HaveOccurred())
		Expect(refused).To(BeNumerically(">", 0))
	})
})
