package e2e_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Leak tolerances for the churn test: what 50 clients reconnecting for
// 20 s may leave behind in the process that hosts the xDS server (and the
// rest of the manager, the test's clients and the apiserver client) once
// everything has settled.
const (
	churnClients        = 50
	churnFor            = 20 * time.Second
	goroutineTolerance  = 10
	heapToleranceMiB    = 8
	churnChangeInterval = 250 * time.Millisecond
	churnConnects       = 5 * churnClients
	churnMaxFor         = 2 * time.Minute
)

// hold waits d, or less if ctx ends: how long a churning client keeps a
// stream or pauses between connections.
func hold(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

var _ = Describe("xDS client churn", func() {
	It("leaks no goroutines, heap or per-client state, and every client ends with the latest config", func(ctx SpecContext) {
		ns := namespace(ctx, "churn")
		gw := gateway(ctx, ns, "gw")
		service(ctx, ns, "web")
		route := httpRoute(ctx, gw, "r", "churn", rule(prefix("/churn0"), to("web")))
		Eventually(func(g Gomega) { g.Expect(routeTableText(g, gw)).To(ContainSubstring("/churn0")) }).Should(Succeed())

		// One TLS config (and certificate) per client, made here: Gomega
		// must not fail inside the client goroutines.
		configs := make([]*tls.Config, churnClients)
		for i := range configs {
			configs[i] = clientTLS(xdsCA, gw)
		}
		node := func(i int) string { return fmt.Sprintf("churn-%d", i) }

		By("warming up: every client connects once, so one-time allocations are in the baseline")
		for _, c := range connectAll(ctx, gw, configs, node, "/churn0") {
			c.Close()
		}

		goroutines0, heap0 := settle()
		state0 := srv.State()
		GinkgoWriter.Printf("baseline: %d goroutines, heap %.1f MiB, server state %+v\n", goroutines0, mib(heap0), state0)

		By(fmt.Sprintf("churning %d clients for %s while the route changes every %s", churnClients, churnFor, churnChangeInterval))
		var (
			stop     atomic.Bool
			conns    atomic.Int64
			failures atomic.Int64
			lastErr  atomic.Value
			wg       sync.WaitGroup
		)
		for i := 0; i < churnClients; i++ {
			wg.Add(1)
			go func(i int) {
				defer GinkgoRecover()
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(i)))
				for !stop.Load() {
					c, err := dialADS(ctx, gw, node(i), adsOptions{tls: configs[i]})
					if err != nil {
						failures.Add(1)
						lastErr.Store(err.Error())
						hold(ctx, 50*time.Millisecond)
						continue
					}
					conns.Add(1)
					// Hold the stream for up to a second: some close before
					// their first response, most after a few updates.
					hold(ctx, time.Duration(rng.Intn(1000))*time.Millisecond)
					if rng.Intn(2) == 0 {
						c.Close() // the stream and the connection
					} else {
						c.CloseStream() // the stream only, then the connection
						c.Close()
					}
					hold(ctx, time.Duration(rng.Intn(100))*time.Millisecond)
				}
			}(i)
		}
		// At least churnFor, and on until the clients have made
		// churnConnects connections: a loaded machine connects more
		// slowly, and the test needs the churn, not the wall time.
		changes := 0
		start := time.Now()
		tick := time.NewTicker(churnChangeInterval)
		for time.Since(start) < churnFor || (conns.Load() < churnConnects && time.Since(start) < churnMaxFor) {
			changes++
			Expect(setPath(ctx, route, fmt.Sprintf("/churn%d", changes))).To(Succeed())
			<-tick.C
		}
		tick.Stop()
		stop.Store(true)
		wg.Wait()
		GinkgoWriter.Printf("churn: %d connections, %d route changes, %d failed connects (last: %v)\n", conns.Load(), changes, failures.Load(), lastErr.Load())
		Expect(conns.Load()).To(BeNumerically(">=", churnConnects), "the clients did churn within %s", churnMaxFor)
		Expect(failures.Load()).To(BeZero(), "every connect succeeded")

		By("every client reconnects and gets the last change, and one made after it")
		last := fmt.Sprintf("/churn%d", changes)
		clients := connectAll(ctx, gw, configs, node, last)
		final := "/churnfinal"
		Expect(setPath(ctx, route, final)).To(Succeed())
		for _, c := range clients {
			Expect(c.wait(final, 60*time.Second)).To(Succeed())
		}
		for _, c := range clients {
			c.Close()
		}

		By("letting things settle, then comparing with the baseline")
		var goroutines1 int
		var heap1 uint64
		Eventually(func(g Gomega) {
			goroutines1, heap1 = settle()
			g.Expect(goroutines1).To(BeNumerically("<=", goroutines0+goroutineTolerance), "goroutines")
			g.Expect(mib(heap1)).To(BeNumerically("<=", mib(heap0)+heapToleranceMiB), "heap MiB")
			g.Expect(srv.State()).To(Equal(state0), "per-client state in the xDS server")
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		report := map[string]any{
			"clients": churnClients, "connections": conns.Load(), "route changes": changes + 1,
			"goroutines before/after": fmt.Sprintf("%d / %d (tolerance +%d)", goroutines0, goroutines1, goroutineTolerance),
			"heap MiB before/after":   fmt.Sprintf("%.1f / %.1f (tolerance +%d)", mib(heap0), mib(heap1), heapToleranceMiB),
			"server state after":      fmt.Sprintf("%+v", srv.State()),
		}
		AddReportEntry("xDS client churn", report)
		GinkgoWriter.Printf("after: %d goroutines, heap %.1f MiB, server state %+v\n", goroutines1, mib(heap1), srv.State())
	})
})

// connectAll connects every client and waits until each has a route table
// with marker; it returns them connected.
func connectAll(ctx context.Context, gw types.NamespacedName, configs []*tls.Config, node func(int) string, marker string) []*adsClient {
	GinkgoHelper()
	clients := make([]*adsClient, len(configs))
	for i := range configs {
		c, err := dialADS(ctx, gw, node(i), adsOptions{tls: configs[i]})
		Expect(err).NotTo(HaveOccurred())
		clients[i] = c
	}
	for _, c := range clients {
		Expect(c.wait(marker, 30*time.Second)).To(Succeed())
	}
	return clients
}

// settle collects garbage and returns the goroutine count and live heap.
func settle() (int, uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m.HeapAlloc
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// setPath makes route's one rule match path prefix p.
func setPath(ctx context.Context, r *gatewayv1.HTTPRoute, p string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rules": []gatewayv1.HTTPRouteRule{rule(prefix(p), to("web"))}}})
	if err != nil {
		return err
	}
	return env.Client.Patch(ctx, r.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
}

// routeTableText is the published http-80 route table of gw, as text.
func routeTableText(g Gomega, gw types.NamespacedName) string {
	rc, ok := resources(g, gw, resourcev3.RouteType)[httpRouteTable]
	g.Expect(ok).To(BeTrue())
	return fmt.Sprint(rc)
}
