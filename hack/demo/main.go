// Command demo boots the embedded control plane in cluster mode (apiserver,
// etcd, controller-manager, scheduler, a KWOK node and MetalLB), starts the
// shardgate binary against it, applies examples/, prints what happened, and
// stays up until Ctrl-C so that a user can kubectl against it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

func main() {
	binary := flag.String("binary", "bin/shardgate", "the shardgate binary to run")
	examples := flag.String("examples", "examples", "directory of YAML to apply")
	exitAfter := flag.Duration("exit-after", 0, "exit after this long instead of waiting for Ctrl-C (0: wait)")
	flag.Parse()
	restore := foreground()
	err := run(*binary, *examples, *exitAfter)
	restore()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}

// run runs the demo until Ctrl-C (or SIGTERM) or exitAfter. An interrupt
// is the way to end it, also while it is starting: that is a clean stop,
// not an error.
func run(binary, examples string, exitAfter time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := demo(ctx, binary, examples, exitAfter)
	if err != nil && ctx.Err() != nil {
		fmt.Printf("\n    interrupted (%v)\n", err)
		return nil
	}
	return err
}

func demo(ctx context.Context, binary, examples string, exitAfter time.Duration) error {

	step("booting the embedded control plane (cluster mode)")
	start := time.Now()
	root, err := testenv.Root()
	if err != nil {
		return err
	}
	// The Akash CRDs, for the Akash act (Akash drop-in mode).
	env, err := testenv.Start(ctx, testenv.Options{Mode: testenv.Cluster, DefaultPool: true,
		ExtraCRDPaths: []string{filepath.Join(root, "crds", "akash")}})
	if err != nil {
		return err
	}
	defer func() {
		step("stopping everything")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Printf("    up in %s: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, KWOK node %q, MetalLB pool %s\n",
		time.Since(start).Round(100*time.Millisecond), testenv.NodeName, testenv.DefaultPoolRange)

	step("starting %s controller", binary)
	bin, err := filepath.Abs(binary)
	if err != nil {
		return err
	}
	metricsPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", metricsPort)
	akashPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	akashAPI := fmt.Sprintf("127.0.0.1:%d", akashPort)
	cfgPath := filepath.Join(env.Dir, "shardgate-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("akash:\n  enabled: true\n  namespace: lease\n  apiAddress: %q\n", akashAPI)), 0o644); err != nil {
		return err
	}
	proc, err := env.StartProcess("shardgate", bin, []string{
		"controller", "--kubeconfig=" + env.Kubeconfig, "--config=" + cfgPath,
		// Plain HTTP: the demo reads /debug/xds with no token.
		"--metrics-address=" + metrics, "--metrics-secure=false", "--health-address=127.0.0.1:0", "--xds-address=127.0.0.1:0",
		"--enable-debug-xds",
		"--log-format=text",
	}, nil)
	if err != nil {
		return err
	}
	fmt.Printf("    pid %d, log %s\n", proc.PID(), proc.LogPath)

	step("applying %s/, one file at a time", examples)
	if err := applyDir(ctx, env.Client, examples); err != nil {
		return err
	}
	if err := waitAddresses(ctx, env.Client); err != nil {
		return err
	}
	if err := report(ctx, env.Client); err != nil {
		return err
	}
	if err := akashAct(ctx, env.Client, filepath.Join(examples, "akash"), akashAPI); err != nil {
		return err
	}
	if err := printXDS(metrics); err != nil {
		return err
	}
	for _, args := range [][]string{{"status", "-A"}, {"status", "ips", "-A"}} {
		step("shardgate %s", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig="+env.Kubeconfig)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			// Exit status 1 only says some entry is not admitted, which
			// the demo shows on purpose.
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				return fmt.Errorf("shardgate %s: %w", strings.Join(args, " "), err)
			}
		}
	}

	step("the control plane stays up; try:")
	fmt.Printf("    export KUBECONFIG=%s\n    %s get leasehosts,gateways,httproutes -A\n", env.Kubeconfig, kubectl())
	if exitAfter > 0 {
		fmt.Printf("    (exiting after %s)\n", exitAfter)
		select {
		case <-time.After(exitAfter):
		case <-ctx.Done():
		}
		return nil
	}
	fmt.Println("    Ctrl-C to stop.")
	select {
	case <-ctx.Done():
	case <-proc.Done():
		_, werr := proc.Exited()
		return fmt.Errorf("shardgate exited (%v):\n%s", werr, proc.Tail(30))
	}
	return nil
}

// kubectl is the kubectl built with the test assets (bin/k8s/kubectl, at
// the control plane's version), or plain "kubectl" when it is missing.
func kubectl() string {
	root, err := testenv.Root()
	if err != nil {
		return "kubectl"
	}
	path := filepath.Join(root, "bin", "k8s", "kubectl")
	if _, err := os.Stat(path); err != nil {
		return "kubectl"
	}
	return path
}

func applyDir(ctx context.Context, c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := c.Patch(ctx, &u, client.Apply, client.FieldOwner("shardgate-demo"), client.ForceOwnership); err != nil {
				return fmt.Errorf("apply %s %s/%s from %s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), f, err)
			}
			fmt.Printf("    applied %s %s\n", u.GetKind(), objName(&u))
		}
		// Ownership ties fall to creation time (one-second granularity):
		// let the controller settle and a second pass before the next file,
		// so the story reads the same every run.
		if err := settle(ctx, c); err != nil {
			return err
		}
		time.Sleep(1100 * time.Millisecond)
	}
	return nil
}

// printXDS shows what each shard's Envoys are served, from the
// controller's /debug/xds endpoint.
func printXDS(metrics string) error {
	step("xDS resources served to each shard (GET /debug/xds)")
	resp, err := http.Get("http://" + metrics + "/debug/xds")
	if err != nil {
		return fmt.Errorf("debug/xds: %w", err)
	}
	defer resp.Body.Close()
	var groups map[string]struct {
		Refused string `json:"refused"`
		Types   map[string]struct {
			Names []string `json:"names"`
		} `json:"types"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&groups); err != nil {
		return fmt.Errorf("debug/xds: %w", err)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "    NODE GROUP (GATEWAY)\tTYPE\tCOUNT\tNAMES")
	for _, k := range keys {
		types := make([]string, 0, len(groups[k].Types))
		for t := range groups[k].Types {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			names := groups[k].Types[t].Names
			shown := strings.Join(names, ", ")
			if len(shown) > 90 {
				shown = shown[:87] + "..."
			}
			fmt.Fprintf(w, "    %s\t%s\t%d\t%s\n", k, t, len(names), shown)
		}
		if groups[k].Refused != "" {
			fmt.Fprintf(w, "    %s\trefused\t-\t%s\n", k, groups[k].Refused)
		}
	}
	return w.Flush()
}

// waitAddresses waits until MetalLB has given every LeasedIP and every
// Gateway an address (about a second each), so the tables show them.
func waitAddresses(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var ips shardgatev1alpha1.LeasedIPList
		var gws gatewayv1.GatewayList
		if err := c.List(ctx, &ips); err != nil {
			return err
		}
		if err := c.List(ctx, &gws); err != nil {
			return err
		}
		waiting := 0
		for _, ip := range ips.Items {
			if ip.Status.IP == "" {
				waiting++
			}
		}
		for _, g := range gws.Items {
			if len(g.Status.Addresses) == 0 {
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Printf("    (%d LeasedIPs or Gateways still without an address after 60s)\n", waiting)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// settle waits until every LeaseHost has a status for its generation.
func settle(ctx context.Context, c client.Client) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var hosts shardgatev1alpha1.LeaseHostList
		if err := c.List(ctx, &hosts); err != nil {
			return err
		}
		pending := 0
		for _, h := range hosts.Items {
			if h.Status.ObservedGeneration != h.Generation {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d LeaseHosts have no status after 60s: is the controller running?", pending)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func objName(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func report(ctx context.Context, c client.Client) error {
	step("what happened")
	var hosts shardgatev1alpha1.LeaseHostList
	if err := c.List(ctx, &hosts); err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "    LEASEHOST\tOWNER\tHOST/SUBDOMAIN\tRESERVED\tREASON\tSHARDS")
	for _, h := range hosts.Items {
		status, reason := "-", "(no status yet)"
		for _, cond := range h.Status.Conditions {
			if cond.Type == shardgatev1alpha1.ConditionReserved {
				status, reason = string(cond.Status), cond.Reason
			}
		}
		host := h.Spec.Hostname
		if host == "" {
			host = h.Spec.Subdomain + " (subdomain)"
		}
		fmt.Fprintf(w, "    %s\t%s\t%s\t%s\t%s\t%d\n", objName(&h), h.Spec.Lease.Owner, host, status, reason, len(h.Status.Shards))
	}
	_ = w.Flush()

	var gws gatewayv1.GatewayList
	if err := c.List(ctx, &gws); err != nil {
		return err
	}
	w = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\n    GATEWAY\tCLASS\tACCEPTED\tPROGRAMMED\tADDRESSES")
	for _, g := range gws.Items {
		accepted, programmed := "-", "-"
		for _, cond := range g.Status.Conditions {
			switch cond.Type {
			case string(gatewayv1.GatewayConditionAccepted):
				accepted = string(cond.Status)
			case string(gatewayv1.GatewayConditionProgrammed):
				programmed = string(cond.Status)
			}
		}
		var addrs []string
		for _, a := range g.Status.Addresses {
			addrs = append(addrs, a.Value)
		}
		fmt.Fprintf(w, "    %s\t%s\t%s\t%s\t%s\n", objName(&g), g.Spec.GatewayClassName, accepted, programmed, strings.Join(addrs, ","))
	}
	return w.Flush()
}
