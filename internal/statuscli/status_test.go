package statuscli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/statuscli"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/testwait"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const (
	alice = "akash1alice0000000000000000000000000000000"
	bob   = "akash1bob00000000000000000000000000000000000"
	carol = "akash1carol000000000000000000000000000000"
)

// seeded is how the controller would have written status for a small
// provider: two shards, three tenants, a per-shard conflict, a block, a
// cross-tenant conflict, a LeaseHost not yet seen and one no shard selects.
type seeded struct {
	ns, name string
	lease    shardgatev1alpha1.LeaseRef
	hostname string
	sub      string
	status   *shardgatev1alpha1.LeaseHostStatus
}

var (
	shardA = shard{"shard-a", "shard-a.apps.example.test"}
	shardB = shard{"shard-b", "shard-b.apps.example.test"}
)

type shard struct{ name, domain string }

func (s shard) entry(host string, status metav1.ConditionStatus, reason, msg string) shardgatev1alpha1.ShardStatus {
	return shardgatev1alpha1.ShardStatus{
		Name:              s.name,
		Gateway:           "infra/" + s.name,
		Host:              host,
		CanonicalHostname: "router-" + s.name + "." + s.domain,
		Conditions:        []metav1.Condition{condition(shardgatev1alpha1.ConditionAdmitted, status, reason, msg)},
	}
}

// withCert adds a CertificateReady condition to a shard entry, as the
// certificate controller writes it on a shard with automatic HTTPS.
func withCert(e shardgatev1alpha1.ShardStatus, status metav1.ConditionStatus, reason, msg string) shardgatev1alpha1.ShardStatus {
	e.Conditions = append(e.Conditions, condition(shardgatev1alpha1.ConditionCertificateReady, status, reason, msg))
	return e
}

func (s shard) sub(sub string) string { return sub + "." + s.domain }

func condition(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
}

func reserved(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
	return []metav1.Condition{condition(shardgatev1alpha1.ConditionReserved, status, reason, msg)}
}

func fixtures() []seeded {
	held := reserved(metav1.ConditionTrue, shardgatev1alpha1.ReasonReserved, "the name is held by this lease")
	admitted := func(s shard, host string) shardgatev1alpha1.ShardStatus {
		return s.entry(host, metav1.ConditionTrue, shardgatev1alpha1.ReasonAdmitted, "accepted by Gateway infra/"+s.name)
	}
	return []seeded{
		{"default", "demo", shardgatev1alpha1.LeaseRef{Owner: carol, DSeq: 7, GSeq: 1, OSeq: 1}, "demo.example.test", "",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: held, Route: "demo",
				Shards: []shardgatev1alpha1.ShardStatus{withCert(admitted(shardA, "demo.example.test"), metav1.ConditionTrue,
					shardgatev1alpha1.ReasonCertificateIssued, "served on port 443 with the certificate in Secret shardgate-tls.demo.example.test")}}},
		{"tenant-a", "web", shardgatev1alpha1.LeaseRef{Owner: alice, DSeq: 100, GSeq: 1, OSeq: 1}, "", "web",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: held, Route: "web",
				Shards: []shardgatev1alpha1.ShardStatus{admitted(shardB, shardB.sub("web")), withCert(admitted(shardA, shardA.sub("web")),
					metav1.ConditionTrue, shardgatev1alpha1.ReasonShardCertificate, "served with the shard's own certificate")}}},
		{"tenant-a", "shop", shardgatev1alpha1.LeaseRef{Owner: alice, DSeq: 101, GSeq: 1, OSeq: 2}, "", "shop",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: held, Route: "shop",
				Shards: []shardgatev1alpha1.ShardStatus{
					admitted(shardA, shardA.sub("shop")),
					shardB.entry(shardB.sub("shop"), metav1.ConditionFalse, shardgatev1alpha1.ReasonHostnameInUse,
						"shop.shard-b.apps.example.test is held by another owner"),
				}}},
		{"tenant-a", "api", shardgatev1alpha1.LeaseRef{Owner: alice, DSeq: 102, GSeq: 3, OSeq: 1}, "api.example.test", "",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: held, Route: "api",
				Shards: []shardgatev1alpha1.ShardStatus{
					withCert(admitted(shardA, "api.example.test"), metav1.ConditionFalse, shardgatev1alpha1.ReasonCertificateBackoff,
						"issuance failed: the HTTP-01 challenge got 404; next attempt at 2026-01-02T03:14:05Z"),
					shardB.entry("api.example.test", metav1.ConditionUnknown, shardgatev1alpha1.ReasonPending, "waiting for Gateway infra/shard-b"),
				}}},
		{"tenant-a", "evil", shardgatev1alpha1.LeaseRef{Owner: alice, DSeq: 103}, "evil.blocked.test", "",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: reserved(metav1.ConditionFalse, shardgatev1alpha1.ReasonBlocked,
				`evil.blocked.test matches the block list entry ".blocked.test"`)}},
		{"tenant-b", "shop", shardgatev1alpha1.LeaseRef{Owner: bob, DSeq: 200, GSeq: 1, OSeq: 1}, "", "shop",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: held, Route: "shop",
				Shards: []shardgatev1alpha1.ShardStatus{admitted(shardB, shardB.sub("shop"))}}},
		// Refused, with a shard entry the controller has not cleaned yet:
		// REASON must show the refusal, not the entry's NotAdmitted.
		{"tenant-b", "taken", shardgatev1alpha1.LeaseRef{Owner: bob, DSeq: 201, GSeq: 1, OSeq: 1}, "api.example.test", "",
			&shardgatev1alpha1.LeaseHostStatus{
				Conditions: reserved(metav1.ConditionFalse, shardgatev1alpha1.ReasonHostnameInUse, "api.example.test is held by another owner"),
				Shards: []shardgatev1alpha1.ShardStatus{shardA.entry("api.example.test", metav1.ConditionFalse,
					shardgatev1alpha1.ReasonNotAdmitted, "no route")}}},
		{"tenant-b", "pending", shardgatev1alpha1.LeaseRef{Owner: bob, DSeq: 202}, "", "new", nil},
		// The blue of a blue-green cutover: retired, not unadmitted, so
		// --fail-on-unadmitted in "default" still exits 0.
		{"default", "demo-blue", shardgatev1alpha1.LeaseRef{Owner: carol, DSeq: 6, GSeq: 1, OSeq: 1}, "demo.example.test", "",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: reserved(metav1.ConditionFalse, shardgatev1alpha1.ReasonTransferredAway,
				"demo.example.test moved to another deployment of this owner by a takeover")}},
		// An explicit hostname is claimed even when no shard selects it.
		{"tenant-b", "lonely", shardgatev1alpha1.LeaseRef{Owner: bob, DSeq: 203}, "lonely.example.test", "",
			&shardgatev1alpha1.LeaseHostStatus{Conditions: append(held[:1:1], condition(shardgatev1alpha1.ConditionReady,
				metav1.ConditionFalse, shardgatev1alpha1.ReasonNoShards, "no shard selects this LeaseHost; the route is attached to no Gateway"))}},
	}
}

// seed creates the namespaces and LeaseHosts and writes their status as the
// controller would, through the status subresource.
func seed(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	for _, ns := range []string{"tenant-a", "tenant-b", "empty"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fixtures() {
		lh := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.name},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease: f.lease, Hostname: f.hostname, Subdomain: f.sub,
				Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			},
		}
		if err := c.Create(ctx, lh); err != nil {
			t.Fatalf("create %s/%s: %v", f.ns, f.name, err)
		}
		if f.status == nil {
			continue
		}
		lh.Status = *f.status
		lh.Status.ObservedGeneration = lh.Generation
		if err := c.Status().Update(ctx, lh); err != nil {
			t.Fatalf("status of %s/%s: %v", f.ns, f.name, err)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestStatus starts one real apiserver for every case: Run, Execute and the
// built binary all read the same seeded LeaseHosts.
func TestStatus(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	seed(ctx, t, env.Client)

	// The CLI's own client, built from the kubeconfig as the binary does.
	c, ns, _, err := statuscli.NewClient(env.Kubeconfig, "", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ns != "default" {
		t.Errorf("namespace from a kubeconfig without one = %q, want default", ns)
	}

	t.Run("Run", func(t *testing.T) {
		cases := []struct {
			golden         string
			opts           statuscli.Options
			wantUnadmitted int
		}{
			{"all_table", statuscli.Options{}, 6},
			{"all_wide", statuscli.Options{Format: statuscli.FormatWide}, 6},
			{"all_json", statuscli.Options{Format: statuscli.FormatJSON}, 6},
			{"all_yaml", statuscli.Options{Format: statuscli.FormatYAML}, 6},
			{"namespace_tenant_b", statuscli.Options{Namespace: "tenant-b"}, 3},
			{"owner_alice", statuscli.Options{Filter: statuscli.Filter{Owner: alice}}, 3},
			{"shard_b", statuscli.Options{Filter: statuscli.Filter{Shard: "shard-b"}}, 2},
			{"owner_alice_gateway_shard_a_json", statuscli.Options{Filter: statuscli.Filter{Owner: alice, Shard: "infra/shard-a"}, Format: statuscli.FormatJSON}, 0},
			{"empty_namespace_json", statuscli.Options{Namespace: "empty", Format: statuscli.FormatJSON}, 0},
		}
		for _, tc := range cases {
			t.Run(tc.golden, func(t *testing.T) {
				var out bytes.Buffer
				// A page size of 2 makes the listing page through the results.
				tc.opts.PageSize = 2
				n, err := statuscli.Run(ctx, c, tc.opts, &out)
				if err != nil {
					t.Fatal(err)
				}
				if n != tc.wantUnadmitted {
					t.Errorf("unadmitted = %d, want %d", n, tc.wantUnadmitted)
				}
				golden(t, tc.golden, out.Bytes())
				if tc.opts.Format == "" {
					// The default table fits a terminal; -o wide has the rest.
					// 100 columns for the first six, and CERT's "False"
					// adds 8.
					for _, line := range strings.Split(out.String(), "\n") {
						if len(line) > 108 {
							t.Errorf("a default table line is %d columns wide, want at most 108:\n%s", len(line), line)
						}
					}
				}
			})
		}
	})

	t.Run("unknown filters", func(t *testing.T) {
		cases := []struct {
			name    string
			cfg     statuscli.Config
			wantErr string // "" when the filters are known
			stderr  string
		}{
			{"an unknown shard", statuscli.Config{AllNamespaces: true, Filter: statuscli.Filter{Shard: "nope"}},
				"no shard named nope serves a LeaseHost in any namespace; shards: shard-a, shard-b", ""},
			{"a shard unknown in the namespace", statuscli.Config{Namespace: "tenant-b", Filter: statuscli.Filter{Shard: "infra/shard-c"}},
				"no shard named infra/shard-c serves a LeaseHost in namespace tenant-b; shards: shard-a, shard-b", ""},
			{"an unknown owner", statuscli.Config{AllNamespaces: true, Filter: statuscli.Filter{Owner: "akash1nobody"}, Output: "json"},
				"no LeaseHosts of owner akash1nobody in any namespace", ""},
			{"an owner of another namespace", statuscli.Config{Namespace: "tenant-b", Filter: statuscli.Filter{Owner: alice}},
				"no LeaseHosts of owner " + alice + " in namespace tenant-b", ""},
			{"a known owner on a known shard that does not serve it", statuscli.Config{AllNamespaces: true, Filter: statuscli.Filter{Owner: carol, Shard: "shard-b"}},
				"", "No LeaseHosts in any namespace match --owner " + carol + " --shard shard-b.\n"},
			{"a known shard by its Gateway", statuscli.Config{Namespace: "tenant-b", Filter: statuscli.Filter{Shard: "infra/shard-b"}}, "", ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tc.cfg.Kubeconfig = env.Kubeconfig
				var stdout, stderr bytes.Buffer
				err := statuscli.Execute(ctx, tc.cfg, &stdout, &stderr)
				if tc.wantErr == "" {
					if err != nil {
						t.Fatalf("Execute: %v", err)
					}
					if rows := strings.Count(stdout.String(), "\n"); (tc.stderr == "") != (rows > 1) {
						t.Errorf("stdout has %d lines:\n%s", rows, stdout.String())
					}
				} else {
					var ee *statuscli.ExitError
					var unknown *statuscli.UnknownFilterError
					if !errors.As(err, &ee) || ee.Code != statuscli.ExitFailed || !errors.As(err, &unknown) {
						t.Fatalf("Execute = %v, want an unknown filter with exit status %d", err, statuscli.ExitFailed)
					}
					if err.Error() != tc.wantErr {
						t.Errorf("error %q, want %q", err, tc.wantErr)
					}
					if stdout.Len() > 0 {
						t.Errorf("stdout for an unknown filter: %q", stdout.String())
					}
				}
				if stderr.String() != tc.stderr {
					t.Errorf("stderr = %q, want %q", stderr.String(), tc.stderr)
				}
			})
		}
	})

	t.Run("Execute", func(t *testing.T) {
		cases := []struct {
			name       string
			cfg        statuscli.Config
			golden     string
			wantCode   int
			wantStderr string
		}{
			{"the context's namespace by default", statuscli.Config{}, "default_namespace", 0, ""},
			{"-A --fail-on-unadmitted exits 1", statuscli.Config{AllNamespaces: true, FailOnUnadmitted: true}, "all_table", 1, ""},
			{"-A wins over -n", statuscli.Config{Namespace: "tenant-a", AllNamespaces: true}, "all_table", 0, ""},
			{"--fail-on-unadmitted with everything admitted exits 0", statuscli.Config{FailOnUnadmitted: true}, "default_namespace", 0, ""},
			{"--fail-on-unadmitted counts only listed rows", statuscli.Config{AllNamespaces: true, Filter: statuscli.Filter{Owner: alice, Shard: "shard-a"}, FailOnUnadmitted: true}, "owner_alice_shard_a", 0, ""},
			{"-n and --shard", statuscli.Config{Namespace: "tenant-a", Filter: statuscli.Filter{Shard: "shard-b"}, Output: "wide", FailOnUnadmitted: true}, "tenant_a_shard_b_wide", 1, ""},
			{"an empty namespace", statuscli.Config{Namespace: "empty"}, "empty_namespace_table", 0, "No LeaseHosts found in namespace empty.\n"},
			{"a bad format exits 2", statuscli.Config{Output: "xml"}, "", 2, ""},
			{"-o custom-columns", statuscli.Config{AllNamespaces: true, Output: "custom-columns=LEASEHOST:.leaseHost,SHARD:.shard,ADMITTED:.admitted,REASON:.reason"}, "all_custom_columns", 0, ""},
			{"-o jsonpath", statuscli.Config{AllNamespaces: true, Output: `jsonpath={range .items[*]}{.namespace}/{.leaseHost} {.host}{"\n"}{end}`}, "all_jsonpath", 0, ""},
			{"--watch with --fail-on-unadmitted exits 2", statuscli.Config{Watch: true, FailOnUnadmitted: true}, "", 2, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tc.cfg.Kubeconfig = env.Kubeconfig
				var stdout, stderr bytes.Buffer
				err := statuscli.Execute(ctx, tc.cfg, &stdout, &stderr)
				code := 0
				var ee *statuscli.ExitError
				if errors.As(err, &ee) {
					code = ee.Code
				} else if err != nil {
					t.Fatalf("error without an exit status: %v", err)
				}
				if code != tc.wantCode {
					t.Errorf("exit status %d (%v), want %d", code, err, tc.wantCode)
				}
				if tc.golden != "" {
					golden(t, tc.golden, stdout.Bytes())
				}
				if stderr.String() != tc.wantStderr {
					t.Errorf("stderr = %q, want %q", stderr.String(), tc.wantStderr)
				}
			})
		}
	})

	t.Run("watch", func(t *testing.T) {
		wctx, cancel := context.WithCancel(ctx)
		var out syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- statuscli.Execute(wctx, statuscli.Config{Kubeconfig: env.Kubeconfig, Namespace: "tenant-b", Watch: true}, &out, io.Discard)
		}()
		testwait.For(t, "the initial listing", func() bool { return strings.Contains(out.String(), "lonely.example.test") })

		lh := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "later"},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease: shardgatev1alpha1.LeaseRef{Owner: bob, DSeq: 204}, Hostname: "later.example.test",
				Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			},
		}
		if err := env.Client.Create(ctx, lh); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, lh) })
		testwait.For(t, "the new LeaseHost's row", func() bool { return strings.Contains(out.String(), "later.example.test") })
		lh.Status = shardgatev1alpha1.LeaseHostStatus{ObservedGeneration: lh.Generation, Conditions: reserved(metav1.ConditionFalse,
			shardgatev1alpha1.ReasonHostnameInUse, "later.example.test is held by another owner")}
		if err := env.Client.Status().Update(ctx, lh); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, "the status change's row", func() bool { return strings.Contains(out.String(), "HostnameInUse") })
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("watch ended with %v", err)
		}
		got := out.String()
		if n := strings.Count(got, "NAMESPACE"); n != 1 {
			t.Errorf("%d headers, want 1 (rows of changes go under the first):\n%s", n, got)
		}
		// The seeded LeaseHosts did not change: each is printed once.
		if n := strings.Count(got, "lonely.example.test"); n != 1 {
			t.Errorf("an unchanged LeaseHost printed %d times:\n%s", n, got)
		}
		// The rows of changes are in the header's columns.
		checkAligned(t, got)
	})

	t.Run("binary", func(t *testing.T) {
		bin, err := testenv.BuildShardgate()
		if err != nil {
			t.Fatal(err)
		}
		// A second context, not current, whose namespace is tenant-b.
		kc, err := clientcmd.LoadFromFile(env.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		other := kc.Contexts[kc.CurrentContext].DeepCopy()
		other.Namespace = "tenant-b"
		kc.Contexts["tenant-b"] = other
		multi := filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*kc, multi); err != nil {
			t.Fatal(err)
		}
		unreachable := unreachableKubeconfig(t)
		// kubectl's connection flags: a ServiceAccount that may read what
		// status reads, one that may not, and the apiserver's CA.
		server, ca, reader, nobody := connectionFlagsFixture(ctx, t, env)

		cases := []struct {
			name       string
			args       []string
			env        []string
			golden     string
			wantCode   int
			wantStderr string
		}{
			{"-A", []string{"status", "--kubeconfig", env.Kubeconfig, "-A"}, nil, "all_table", 0, ""},
			{"-A --fail-on-unadmitted", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "--fail-on-unadmitted"}, nil,
				"all_table", 1, "shardgate status: 6 listed entries are not admitted\n"},
			{"default namespace --fail-on-unadmitted", []string{"status", "--kubeconfig", env.Kubeconfig, "--fail-on-unadmitted"}, nil,
				"default_namespace", 0, ""},
			{"$KUBECONFIG and -o json", []string{"status", "-A", "-o", "json"}, []string{"KUBECONFIG=" + env.Kubeconfig}, "all_json", 0, ""},
			{"--owner -o yaml", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "--owner", alice, "-o", "yaml"}, nil, "owner_alice_yaml", 0, ""},
			{"--context picks the context's namespace", []string{"status", "--kubeconfig", multi, "--context", "tenant-b"}, nil, "namespace_tenant_b", 0, ""},
			{"--context and --shard", []string{"status", "--kubeconfig", multi, "--context", "tenant-b", "--shard", "shard-b"}, nil, "tenant_b_shard_b", 0, ""},
			{"unreachable apiserver exits 2", []string{"status", "--kubeconfig", unreachable, "-A", "--fail-on-unadmitted"}, nil, "", 2, "cannot reach the apiserver"},
			{"unknown flag exits 2, not 1", []string{"status", "--kubeconfig", env.Kubeconfig, "--nope"}, nil, "", 2, "unknown flag: --nope"},
			{"stray argument exits 2", []string{"status", "--kubeconfig", env.Kubeconfig, "web"}, nil, "", 2, "unexpected arguments"},
			{"bad format exits 2", []string{"status", "--kubeconfig", env.Kubeconfig, "-o", "xml"}, nil, "", 2, `unknown output format "xml"`},
			{"-o custom-columns", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "-o", "custom-columns=LEASEHOST:.leaseHost,SHARD:.shard,ADMITTED:.admitted,REASON:.reason"}, nil, "all_custom_columns", 0, ""},
			{"bad jsonpath exits 2", []string{"status", "--kubeconfig", env.Kubeconfig, "-o", "jsonpath={.items["}, nil, "", 2, "parse jsonpath template"},
			{"an unknown --shard exits 2", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "--shard", "nope"}, nil, "", 2,
				"shardgate status: no shard named nope serves a LeaseHost in any namespace; shards: shard-a, shard-b\n"},
			{"an unknown --owner exits 2", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "--owner", "akash1nobody", "-o", "json"}, nil, "", 2,
				"shardgate status: no LeaseHosts of owner akash1nobody in any namespace\n"},
			{"--as an unprivileged user is Forbidden, exit 2", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "--as", "nobody"}, nil, "", 2,
				`not allowed to list LeaseHosts at ` + server + `: leasehosts.shardgate.io is forbidden: User "nobody" cannot list`},
			{"--as with --as-group", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "--as", "somebody", "--as-group", "system:masters"}, nil, "all_table", 0, ""},
			{"--server and --token without a kubeconfig", []string{"status", "--server", server, "--certificate-authority", ca, "--token", reader, "-A"}, nil, "all_table", 0, ""},
			{"--token of a user without rights exits 2", []string{"status", "-s", server, "--insecure-skip-tls-verify", "--token", nobody, "-A"}, nil, "", 2,
				"not allowed to list LeaseHosts"},
			{"--request-timeout takes a duration", []string{"status", "--kubeconfig", env.Kubeconfig, "-A", "--request-timeout", "1m"}, nil, "all_table", 0, ""},
			{"no kubeconfig at all exits 2", []string{"status", "-A"}, nil, "", 2, "no kubeconfig found"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				cmdCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(cmdCtx, bin, tc.args...)
				cmd.Env = append(append(os.Environ(), "KUBECONFIG=", "HOME="+t.TempDir()), tc.env...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				code := 0
				var exitErr *exec.ExitError
				if errors.As(err, &exitErr) {
					code = exitErr.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != tc.wantCode {
					t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
				}
				if tc.golden != "" {
					golden(t, tc.golden, stdout.Bytes())
				} else if stdout.Len() > 0 {
					t.Errorf("stdout on failure: %q", stdout.String())
				}
				if tc.wantStderr == "" && stderr.Len() > 0 {
					t.Errorf("unexpected stderr: %q", stderr.String())
				}
				if !strings.Contains(stderr.String(), tc.wantStderr) {
					t.Errorf("stderr %q does not contain %q", stderr.String(), tc.wantStderr)
				}
			})
		}
	})
}

// connectionFlagsFixture returns the apiserver's URL, a file with its CA,
// the token of a ServiceAccount that may list what status lists, and that
// of one bound to nothing.
func connectionFlagsFixture(ctx context.Context, t *testing.T, env *testenv.Env) (server, ca, reader, nobody string) {
	t.Helper()
	c := env.Client
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "status-reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{shardgatev1alpha1.GroupVersion.Group}, Resources: []string{"leasehosts", "leasedips"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"akash.network"}, Resources: []string{"providerhosts"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"list", "watch"}},
		},
	}))
	for _, sa := range []string{"status-reader", "status-nobody"} {
		must(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: sa}}))
	}
	must(c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "status-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "status-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "status-reader"}},
	}))
	cs, err := kubernetes.NewForConfig(env.Config)
	must(err)
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		must(err)
		return tr.Status.Token
	}
	ca = filepath.Join(t.TempDir(), "ca.crt")
	must(os.WriteFile(ca, env.Config.CAData, 0o600))
	server = strings.TrimSuffix(env.Config.Host, "/")
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	return server, ca, token("status-reader"), token("status-nobody")
}

// checkAligned fails unless every line of table has a cell starting at each
// column of its header (the first line), and nowhere else.
func checkAligned(t *testing.T, table string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	starts := func(line string) []int {
		var at []int
		for i := range line {
			if line[i] != ' ' && (i == 0 || (i >= 2 && line[i-1] == ' ' && line[i-2] == ' ')) {
				at = append(at, i)
			}
		}
		return at
	}
	header := starts(lines[0])
	for _, line := range lines[1:] {
		if got := starts(line); fmt.Sprint(got) != fmt.Sprint(header) {
			t.Errorf("a row's columns start at %v, the header's at %v:\n%s\n%s", got, header, lines[0], line)
		}
	}
}

// unreachableKubeconfig points at a loopback port nothing listens on.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "unreachable")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, port)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// syncBuffer is a bytes.Buffer one goroutine writes while another reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
