package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The disruption test proves the two-phase publish and cluster retention of
// xds/server (twophase.go): without them grpc-go failed about half of these
// RPCs, then 3.5% with retention alone, then 0.03% (a cluster's first
// introduction) with retention and never-matching references.
var _ = Describe("Disruption", func() {
	It("loses no RPC while a route's backend flips every 200 ms, 100 times", func(ctx SpecContext) {
		// A fixed amount of work, paced by a ticker: on a loaded machine
		// the flips take longer, never fewer. Flipping goes on past the
		// hundredth flip until the senders have made minRPCs calls, so the
		// RPC count does not depend on the machine's speed either; maxFor
		// only bounds a broken run.
		const (
			flipEvery = 200 * time.Millisecond
			minFlips  = 100
			minRPCs   = 1000
			maxFor    = 3 * time.Minute
			senders   = 4
		)
		ns := namespace(ctx, "flip")
		gw := gateway(ctx, ns, "gw")
		backendService(ctx, ns, "blue", startBackend("blue"))
		backendService(ctx, ns, "green", startBackend("green"))
		r := httpRoute(ctx, gw, "r", "flip", rule(prefix("/"), to("blue")))
		c, _ := xdsClient(gw, "flip")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("blue"))

		var (
			rpcs, failed atomic.Int64
			switches     atomic.Int64
			mu           sync.Mutex
			firstErrs    []string
			seen         = map[string]int64{}
		)
		sendCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range senders {
			wg.Go(func() {
				last := ""
				local := map[string]int64{}
				for sendCtx.Err() == nil {
					who, err := call(ctx, c, methodEmpty) // not sendCtx: stopping must not fail an RPC
					rpcs.Add(1)
					if err != nil {
						failed.Add(1)
						mu.Lock()
						if len(firstErrs) < 10 {
							firstErrs = append(firstErrs, fmt.Sprintf("sender %d: %v", i, err))
						}
						mu.Unlock()
						continue
					}
					local[who]++
					if last != "" && who != last {
						switches.Add(1)
					}
					last = who
				}
				mu.Lock()
				for k, v := range local {
					seen[k] += v
				}
				mu.Unlock()
			})
		}

		flips, flipErrs := 0, 0
		next := "green"
		tick := time.NewTicker(flipEvery)
		began := time.Now()
		deadline := time.After(maxFor)
	loop:
		for flips < minFlips || rpcs.Load() < minRPCs {
			select {
			case <-deadline:
				break loop
			case <-tick.C:
				if err := setBackend(ctx, r, next); err != nil {
					flipErrs++
					GinkgoWriter.Printf("flip to %s: %v\n", next, err)
					continue
				}
				flips++
				if next == "green" {
					next = "blue"
				} else {
					next = "green"
				}
			}
		}
		tick.Stop()
		stop()
		wg.Wait()

		took := time.Since(began)
		summary := fmt.Sprintf("%d route updates in %s; %d RPCs from %d goroutines, %d failed; %d backend switches observed; answers %v",
			flips, took.Round(time.Millisecond), rpcs.Load(), senders, failed.Load(), switches.Load(), seen)
		AddReportEntry("disruption", summary)
		GinkgoWriter.Println(summary)
		Expect(firstErrs).To(BeEmpty())
		Expect(failed.Load()).To(BeZero())
		Expect(flipErrs).To(BeZero())
		Expect(flips).To(BeNumerically(">=", minFlips), "flips within %s", maxFor)
		Expect(rpcs.Load()).To(BeNumerically(">=", minRPCs), "RPCs within %s", maxFor)
		Expect(seen).To(HaveKey("blue"))
		Expect(seen).To(HaveKey("green"))
		Expect(switches.Load()).To(BeNumerically(">=", 10), "the flips reached the client")
	})
})
