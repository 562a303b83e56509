// Command gentraffic writes conformance/traffic_tests.go: the upstream
// conformance tests that send traffic, found by parsing their Go source.
// Run it with `go generate ./conformance`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/shardgate/shardgate/conformance"
)

func main() {
	out := flag.String("o", "traffic_tests.go", "output file")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gentraffic:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	scan, err := conformance.ScanUpstream()
	if err != nil {
		return err
	}
	version, err := conformance.UpstreamVersion()
	if err != nil {
		return err
	}
	src, err := conformance.GenerateTrafficFile(scan, version)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	fmt.Printf("gentraffic: %d traffic tests, %d status-only tests -> %s\n", len(scan.Traffic), len(scan.StatusOnly), out)
	return nil
}
