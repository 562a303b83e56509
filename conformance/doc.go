// Package conformance runs the upstream Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance) against shardgate: on any cluster
// in $KUBECONFIG (`make conformance`), or on this machine against the test
// harness's cluster mode (`make conformance-local`, also part of `make
// test`). See README.md.
//
// The non-test code here is the scan that lists the upstream tests which
// send traffic (traffic_tests.go is generated from it).
package conformance

//go:generate go run ./gentraffic -o traffic_tests.go

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// UpstreamVersion is the version of the conformance module this binary was
// built with: from the build info when it lists dependencies (go run), else
// from the nearest go.mod (test binaries carry no dependency list).
func UpstreamVersion() (string, error) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == UpstreamModule {
				if m.Replace != nil {
					return m.Replace.Version, nil
				}
				return m.Version, nil
			}
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if v, ok := requiredVersion(filepath.Join(dir, "go.mod")); ok {
			return v, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s is neither in the build info nor in a go.mod", UpstreamModule)
		}
		dir = parent
	}
}

func requiredVersion(gomod string) (string, bool) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(s.Text()), "require "))
		if len(fields) >= 2 && fields[0] == UpstreamModule {
			return fields[1], true
		}
	}
	return "", false
}
