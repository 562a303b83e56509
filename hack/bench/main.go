// Command bench measures shardgate against the harness's real apiserver
// (internal/testenv), with the shardgate binary in a separate process so that
// its RSS can be read from /proc. It prints a table of figures with their
// targets (BENCHMARKS.md) and PASS or MISS, and always exits 0 unless the
// measurement itself could not be made.
//
//	go run ./hack/bench          # full sizes
//	go run ./hack/bench -smoke   # small sizes, for make test
//	go run ./hack/bench -peer contour   # and Contour on the same workload (make contour)
//
// Nothing here sends traffic anywhere but 127.0.0.1: the xDS client dials
// the shardgate process on loopback, and EndpointSlice addresses
// (10.244.0.0/16) are never dialled.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	// The bench's own controller-runtime clients log nothing worth
	// showing; without a logger, the first one prints a warning stack.
	ctrllog.SetLogger(logr.Discard())
	cfg := fullConfig()
	smoke := flag.Bool("smoke", false, "small sizes (N=50, P=100, M=250, 20 samples, 5 s churn, one flood round)")
	n := flag.Int("flood-routes", 0, "N: HTTPRoutes created at once for the flood figures; memory and tenant flow are measured there too (default 1000; smoke 50)")
	rounds := flag.Int("flood-rounds", 0, "flood rounds, each timed with shardgate stopped and running (default 2; smoke 1)")
	p := flag.Int("propagation-routes", 0, "P: HTTPRoutes present during propagation and the second tenant flow (default 3000; smoke 100)")
	m := flag.Int("memory-routes", -1, "M: HTTPRoutes, each with its own Service and EndpointSlice, for the last memory figure; 0 skips it (default 10000; smoke 250)")
	s := flag.Int("samples", 0, "samples per propagation and tenant-flow phase, and of the LeaseHost flow (default 100; smoke 20)")
	churn := flag.Duration("churn", 0, "minimum length of the churn phase (default 20s; smoke 5s)")
	phases := flag.String("phases", "", "comma-separated phases to run: flood, memory, tenant, propagation, revoke (default all; sizes grow whichever run)")
	heap := flag.String("heap-profile", "", "save shardgate's heap profile after the largest memory figure to this file")
	cpu := flag.String("cpu-profile", "", "save shardgate's CPU profile over the route-only propagation samples to this file")
	allocs := flag.String("alloc-profile", "", "save shardgate's allocation profile after the route-only propagation samples to this file, and the one before them to this file + \".base\" (each after a collection; read the samples' with go tool pprof -base)")
	floodCPU := flag.String("flood-cpu-profile", "", "save shardgate's CPU profile over the last flood round (its Creates and the statuses after them, 4 s) to this file")
	peer := flag.String("peer", "", `measure a peer controller on the same workload after shardgate, against a fresh harness: "contour" (installed by make contour)`)
	peerDir := flag.String("peer-dir", "", "directory holding the peer's binary and CRDs (default bin/contour)")
	flag.Parse()
	if *smoke {
		cfg = smokeConfig()
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{*n, &cfg.FloodRoutes}, {*rounds, &cfg.FloodRounds}, {*p, &cfg.PropagationRoutes}, {*s, &cfg.Samples}} {
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	if *m >= 0 {
		cfg.MemoryRoutes = *m
	}
	if *churn > 0 {
		cfg.ChurnDuration = *churn
	}
	if *phases != "" {
		cfg.Phases = strings.Split(*phases, ",")
	}
	cfg.HeapProfile = *heap
	cfg.CPUProfile = *cpu
	cfg.AllocProfile = *allocs
	cfg.FloodCPUProfile = *floodCPU
	switch *peer {
	case "", peerContour:
		cfg.Peer, cfg.PeerDir = *peer, *peerDir
	default:
		fmt.Fprintf(os.Stderr, "bench: unknown -peer %q (the only peer is %q)\n", *peer, peerContour)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	res, err := run(ctx, cfg, os.Stdout)
	if err == nil && res != nil && cfg.Peer != "" {
		if perr := runPeer(ctx, cfg, os.Stdout, res); perr != nil {
			res.Errors = append(res.Errors, "peer "+cfg.Peer+": "+perr.Error())
			fmt.Fprintf(os.Stdout, "peer %s: %v\n", cfg.Peer, perr)
		}
	}
	if res != nil {
		fmt.Println()
		printTable(os.Stdout, cfg, res)
	}
	fmt.Printf("\nbench: finished in %s\n", time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
