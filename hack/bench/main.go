// Command bench measures shardgate against the harness's real apiserver
// (internal/testenv), with the shardgate binary in a separate process so that
// its RSS can be read from /proc. It prints a table of figures with their
// targets (BENCHMARKS.md) and PASS or MISS, and always exits 0 unless the
// measurement itself could not be made.
//
//	go run ./hack/bench          # full sizes
//	go run ./hack/bench -smoke   # small sizes, for make test
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
)

func main() {
	cfg := fullConfig()
	smoke := flag.Bool("smoke", false, "small sizes (N=50, M=100, P=100, 20 samples, 5 s churn)")
	n := flag.Int("attach-routes", 0, "N: HTTPRoutes applied at once for the attach figure (default 1000; smoke 50)")
	m := flag.Int("memory-objects", 0, "M: HTTPRoutes and Services loaded for the memory figure (default 10000; smoke 100)")
	p := flag.Int("propagation-routes", 0, "P: HTTPRoutes present during propagation (default 3000; smoke 100)")
	s := flag.Int("samples", 0, "propagation samples per phase (default 100; smoke 20)")
	churn := flag.Duration("churn", 0, "minimum length of the churn phase (default 20s; smoke 5s)")
	phases := flag.String("phases", "", "comma-separated phases to run: attach, propagation, memory (default all)")
	heap := flag.String("heap-profile", "", "save shardgate's heap profile after the memory phase to this file")
	flag.Parse()
	if *smoke {
		cfg = smokeConfig()
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{*n, &cfg.AttachRoutes}, {*m, &cfg.MemoryObjects}, {*p, &cfg.PropagationRoutes}, {*s, &cfg.Samples}} {
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	if *churn > 0 {
		cfg.ChurnDuration = *churn
	}
	if *phases != "" {
		cfg.Phases = strings.Split(*phases, ",")
	}
	cfg.HeapProfile = *heap
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	res, err := run(ctx, cfg, os.Stdout)
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
