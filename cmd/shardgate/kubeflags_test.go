package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestKubeFlagsAsKubectlBindsThem wants each command's kubectl connection
// flags to be exactly those kubectl's ConfigFlags binds (as these commands
// configured it): the same names, shorthands, types, defaults and usage
// texts (but those the command rewords), and no others beside the
// command's own flags.
func TestKubeFlagsAsKubectlBindsThem(t *testing.T) {
	// ConfigFlags(false) without --cache-dir and with a 30s timeout, as
	// the status commands had it.
	status := func() *genericclioptions.ConfigFlags {
		f := genericclioptions.NewConfigFlags(false)
		f.CacheDir = nil
		timeout := "30s"
		f.Timeout = &timeout
		return f
	}
	// The subset `config dump` had.
	dump := func() *genericclioptions.ConfigFlags {
		empty := func() *string { s := ""; return &s }
		return &genericclioptions.ConfigFlags{KubeConfig: empty(), Context: empty(), ClusterName: empty(), AuthInfoName: empty(), Namespace: empty()}
	}
	for _, tc := range []struct {
		name     string
		cmd      *cobra.Command
		kubectl  *genericclioptions.ConfigFlags
		reworded []string
		own      []string
	}{
		{"status", statusCommand(), status(), []string{"namespace", "kubeconfig", "context", "request-timeout"},
			[]string{"all-namespaces", "owner", "shard", "output", "fail-on-unadmitted", "watch"}},
		{"status ips", statusIPsCommand(), status(), []string{"namespace", "kubeconfig", "context", "request-timeout"},
			[]string{"all-namespaces", "output"}},
		{"config dump", configDumpCommand(), dump(), []string{"namespace", "kubeconfig", "context", "user"},
			[]string{"url", "token", "ca-file", "insecure-skip-tls-verify", "output", "request-timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cmd.Flags()
			want := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
			tc.kubectl.AddFlags(want)
			for _, name := range tc.reworded {
				w, g := want.Lookup(name), got.Lookup(name)
				if w == nil || g == nil {
					t.Fatalf("--%s: kubectl's %v, the command's %v", name, w, g)
				}
				if g.Usage == w.Usage {
					t.Errorf("--%s keeps kubectl's usage %q; the command rewords it", name, w.Usage)
				}
				w.Usage = g.Usage
			}
			own := map[string]bool{}
			for _, name := range tc.own {
				own[name] = true
			}
			describe := func(f *pflag.Flag) string {
				return fmt.Sprintf("-%s --%s %s default %q noopt %q deprecated %q hidden %v usage %q",
					f.Shorthand, f.Name, f.Value.Type(), f.DefValue, f.NoOptDefVal, f.Deprecated, f.Hidden, f.Usage)
			}
			n := 0
			want.VisitAll(func(w *pflag.Flag) {
				n++
				g := got.Lookup(w.Name)
				if g == nil {
					t.Errorf("missing: %s", describe(w))
					return
				}
				if describe(g) != describe(w) {
					t.Errorf("differs:\n  got  %s\n  want %s", describe(g), describe(w))
				}
			})
			got.VisitAll(func(g *pflag.Flag) {
				if want.Lookup(g.Name) == nil && !own[g.Name] {
					t.Errorf("a flag kubectl's ConfigFlags did not bind: %s", describe(g))
				}
			})
			if n < 5 {
				t.Fatalf("kubectl's ConfigFlags bound only %d flags", n)
			}
		})
	}
}

// TestBinaryLinksNoKustomize keeps kubectl's resource builder (cli-runtime's
// resource package, and with it kustomize and OpenAPI) out of the binary:
// nothing uses it, and its package initialisers would run at every start.
// Only cli-runtime's printers belong in it.
func TestBinaryLinksNoKustomize(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	printers := false
	for _, pkg := range deps {
		switch {
		case strings.HasPrefix(pkg, "sigs.k8s.io/kustomize/"),
			pkg == "k8s.io/cli-runtime/pkg/resource",
			pkg == "k8s.io/cli-runtime/pkg/genericclioptions":
			t.Errorf("the binary links %s", pkg)
		case pkg == "k8s.io/cli-runtime/pkg/printers":
			printers = true
		}
	}
	if !printers {
		t.Errorf("go list -deps lists %d packages, without k8s.io/cli-runtime/pkg/printers: not the binary's", len(deps))
	}
}
