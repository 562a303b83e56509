package statuscli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	"github.com/shardgate/shardgate/internal/statuscli"
	"github.com/shardgate/shardgate/internal/testenv"
)

// seedIPs writes what the LeasedIP controller and MetalLB would have: three
// pools (one full) and LeasedIPs in every state, in two lease namespaces.
func seedIPs(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	for _, ns := range []string{"lease-a", "lease-b", "no-ips", testenv.MetalLBNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	pools := []struct {
		name   string
		cidr   string
		status metallbv1beta1.IPAddressPoolStatus
	}{
		{"leased", "127.240.0.16/28", metallbv1beta1.IPAddressPoolStatus{AssignedIPv4: 3, AvailableIPv4: 13}},
		{"tiny", "127.240.1.10-127.240.1.11", metallbv1beta1.IPAddressPoolStatus{AssignedIPv4: 2, AvailableIPv4: 0}},
		{"empty", "127.240.2.16/30", metallbv1beta1.IPAddressPoolStatus{AvailableIPv4: 4}},
	}
	for _, p := range pools {
		pool := &metallbv1beta1.IPAddressPool{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: testenv.MetalLBNamespace},
			Spec:       metallbv1beta1.IPAddressPoolSpec{Addresses: []string{p.cidr}},
		}
		if err := c.Create(ctx, pool); err != nil {
			t.Fatalf("pool %s: %v", p.name, err)
		}
		pool.Status = p.status
		if err := c.Status().Update(ctx, pool); err != nil {
			t.Fatalf("pool %s status: %v", p.name, err)
		}
	}
	cond := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: shardgatev1alpha1.ConditionAllocated, Status: status, Reason: reason, Message: msg,
			LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}
	}
	lease := func(owner string, dseq uint64) shardgatev1alpha1.LeaseRef {
		return shardgatev1alpha1.LeaseRef{Owner: owner, DSeq: dseq, GSeq: 1, OSeq: 1}
	}
	type seeded struct {
		ns, name string
		spec     shardgatev1alpha1.LeasedIPSpec
		status   *shardgatev1alpha1.LeasedIPStatus
	}
	allocatedAt := func(ip, svc, key string) *shardgatev1alpha1.LeasedIPStatus {
		return &shardgatev1alpha1.LeasedIPStatus{IP: ip, Service: svc, SharingKey: key,
			Conditions: cond(metav1.ConditionTrue, shardgatev1alpha1.ReasonAllocated, "MetalLB assigned "+ip)}
	}
	aliceKey := addresses.SharingKey(alice, "myip")
	for _, s := range []seeded{
		{"lease-a", "myip-80", shardgatev1alpha1.LeasedIPSpec{Lease: lease(alice, 100), Endpoint: "myip", Service: "web", Port: 8080, ExternalPort: 80, Protocol: "TCP"},
			allocatedAt("127.240.0.16", "web-ip-80-tcp", aliceKey)},
		{"lease-a", "myip-443", shardgatev1alpha1.LeasedIPSpec{Lease: lease(alice, 100), Endpoint: "myip", Service: "web", Port: 8443, ExternalPort: 443, Protocol: "TCP"},
			allocatedAt("127.240.0.16", "web-ip-443-tcp", aliceKey)},
		{"lease-a", "dns-udp", shardgatev1alpha1.LeasedIPSpec{Lease: lease(alice, 100), Endpoint: "dns", Service: "dns", Port: 53, ExternalPort: 53, Protocol: "UDP"},
			allocatedAt("127.240.0.17", "dns-ip-53-udp", addresses.SharingKey(alice, "dns"))},
		{"lease-a", "ghost", shardgatev1alpha1.LeasedIPSpec{Lease: lease(alice, 100), Endpoint: "ghost", Service: "ghost", Port: 80, ExternalPort: 8080},
			&shardgatev1alpha1.LeasedIPStatus{SharingKey: addresses.SharingKey(alice, "ghost"),
				Conditions: cond(metav1.ConditionFalse, shardgatev1alpha1.ReasonSelectorNotFound, "Service ghost (spec.service) not found in namespace lease-a")}},
		{"lease-b", "e1", shardgatev1alpha1.LeasedIPSpec{Lease: lease(bob, 200), Endpoint: "e1", Service: "web", Port: 80, ExternalPort: 81, Protocol: "TCP", Pool: "tiny"},
			allocatedAt("127.240.1.10", "web-ip-81-tcp", addresses.SharingKey(bob, "e1"))},
		{"lease-b", "e2", shardgatev1alpha1.LeasedIPSpec{Lease: lease(bob, 200), Endpoint: "e2", Service: "web", Port: 80, ExternalPort: 82, Protocol: "TCP", Pool: "tiny"},
			allocatedAt("127.240.1.11", "web-ip-82-tcp", addresses.SharingKey(bob, "e2"))},
		{"lease-b", "e3", shardgatev1alpha1.LeasedIPSpec{Lease: lease(bob, 200), Endpoint: "My IP!", Service: "web", Port: 80, ExternalPort: 83, Protocol: "TCP", Pool: "tiny"},
			&shardgatev1alpha1.LeasedIPStatus{Service: "web-ip-83-tcp", SharingKey: addresses.SharingKey(bob, "My IP!"),
				Conditions: cond(metav1.ConditionFalse, shardgatev1alpha1.ReasonPoolExhausted, "IPAddressPool tiny has no available addresses")}},
		// Not seen by the controller yet.
		{"lease-b", "new", shardgatev1alpha1.LeasedIPSpec{Lease: lease(bob, 201), Endpoint: "new", Service: "web", Port: 80, ExternalPort: 84, Protocol: "TCP"}, nil},
	} {
		l := &shardgatev1alpha1.LeasedIP{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name}, Spec: s.spec}
		if err := c.Create(ctx, l); err != nil {
			t.Fatalf("create %s/%s: %v", s.ns, s.name, err)
		}
		if s.status == nil {
			continue
		}
		l.Status = *s.status
		l.Status.ObservedGeneration = l.Generation
		if err := c.Status().Update(ctx, l); err != nil {
			t.Fatalf("status of %s/%s: %v", s.ns, s.name, err)
		}
	}
}

// TestStatusIPs runs `status ips` against a real apiserver, through Run,
// Execute and the built binary.
func TestStatusIPs(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	seedIPs(ctx, t, env.Client)
	c, _, _, err := statuscli.NewClient(env.Kubeconfig, "", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Run", func(t *testing.T) {
		cases := []struct {
			golden string
			opts   statuscli.IPsOptions
			listed int
		}{
			{"ips_all_table", statuscli.IPsOptions{}, 8},
			{"ips_all_wide", statuscli.IPsOptions{Format: statuscli.FormatWide}, 8},
			{"ips_all_json", statuscli.IPsOptions{Format: statuscli.FormatJSON}, 8},
			{"ips_all_yaml", statuscli.IPsOptions{Format: statuscli.FormatYAML}, 8},
			{"ips_lease_b", statuscli.IPsOptions{Namespace: "lease-b"}, 4},
			{"ips_no_ips_json", statuscli.IPsOptions{Namespace: "no-ips", Format: statuscli.FormatJSON}, 0},
		}
		for _, tc := range cases {
			t.Run(tc.golden, func(t *testing.T) {
				var out bytes.Buffer
				tc.opts.PageSize = 3
				n, notice, err := statuscli.RunIPs(ctx, c, tc.opts, &out)
				if err != nil || notice != nil {
					t.Fatal(err, notice)
				}
				if n != tc.listed {
					t.Errorf("listed %d, want %d", n, tc.listed)
				}
				golden(t, tc.golden, out.Bytes())
			})
		}
	})

	t.Run("Execute", func(t *testing.T) {
		cases := []struct {
			name       string
			cfg        statuscli.IPsConfig
			golden     string
			wantCode   int
			wantStderr string
		}{
			{"-A", statuscli.IPsConfig{AllNamespaces: true}, "ips_all_table", 0, ""},
			{"-A wins over -n", statuscli.IPsConfig{Namespace: "lease-b", AllNamespaces: true, Output: "json"}, "ips_all_json", 0, ""},
			{"-n", statuscli.IPsConfig{Namespace: "lease-b"}, "ips_lease_b", 0, ""},
			{"the context's namespace by default", statuscli.IPsConfig{}, "ips_default_namespace", 0, "No LeasedIPs found in namespace default.\n"},
			{"a bad format exits 2", statuscli.IPsConfig{Output: "xml"}, "", 2, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tc.cfg.Kubeconfig = env.Kubeconfig
				var stdout, stderr bytes.Buffer
				err := statuscli.ExecuteIPs(ctx, tc.cfg, &stdout, &stderr)
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

	t.Run("binary", func(t *testing.T) {
		bin, err := testenv.BuildShardgate()
		if err != nil {
			t.Fatal(err)
		}
		unreachable := unreachableKubeconfig(t)
		cases := []struct {
			name       string
			args       []string
			env        []string
			golden     string
			wantCode   int
			wantStderr string
		}{
			{"-A", []string{"status", "ips", "--kubeconfig", env.Kubeconfig, "-A"}, nil, "ips_all_table", 0, ""},
			{"$KUBECONFIG -o json", []string{"status", "ips", "-A", "-o", "json"}, []string{"KUBECONFIG=" + env.Kubeconfig}, "ips_all_json", 0, ""},
			{"-n -o wide", []string{"status", "ips", "--kubeconfig", env.Kubeconfig, "-n", "lease-a", "-o", "wide"}, nil, "ips_lease_a_wide", 0, ""},
			{"unreachable apiserver exits 2", []string{"status", "ips", "--kubeconfig", unreachable, "-A"}, nil, "", 2, "cannot reach the apiserver"},
			{"stray argument exits 2", []string{"status", "ips", "--kubeconfig", env.Kubeconfig, "x"}, nil, "", 2, "unexpected arguments"},
			{"unknown flag exits 2", []string{"status", "ips", "--kubeconfig", env.Kubeconfig, "--owner", "x"}, nil, "", 2, "unknown flag: --owner"},
			{"--as an unprivileged user exits 2", []string{"status", "ips", "--kubeconfig", env.Kubeconfig, "-A", "--as", "nobody"}, nil, "", 2,
				`leasedips.shardgate.io is forbidden: User "nobody" cannot list`},
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

// TestIPsHelpNamesEveryField keeps the documented JSON contract complete.
func TestIPsHelpNamesEveryField(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[statuscli.IPRow](), reflect.TypeFor[addresses.PoolUsage](), reflect.TypeFor[statuscli.IPsDocument]()} {
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(statuscli.IPsHelp, name) {
				t.Errorf("IPsHelp does not document %s.%s (%q)", typ.Name(), typ.Field(i).Name, name)
			}
		}
	}
}

// TestRenderIPsEmpty: an empty document still has both lists and headers.
func TestRenderIPsEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := statuscli.RenderIPs(statuscli.IPsDocument{}, statuscli.FormatJSON, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "{\n  \"pools\": [],\n  \"leasedIPs\": []\n}\n" {
		t.Errorf("json = %q", got)
	}
	out.Reset()
	if err := statuscli.RenderIPs(statuscli.IPsDocument{}, statuscli.FormatTable, &out); err != nil {
		t.Fatal(err)
	}
	// As kubectl: empty tables print nothing (ExecuteIPs says so on stderr).
	if got := out.String(); got != "" {
		t.Errorf("table = %q", got)
	}
}

func TestRenderIPsTemplates(t *testing.T) {
	doc := statuscli.IPsDocument{LeasedIPs: []statuscli.IPRow{
		{Namespace: "t", LeasedIP: "db", IP: "192.0.2.7", Ports: "5432/TCP"},
		{Namespace: "t", LeasedIP: "dns", Ports: "53/UDP"},
	}}
	for format, want := range map[statuscli.Format]string{
		statuscli.JSONPathPrefix + `{range .leasedIPs[*]}{.leasedIP}={.ip}{" "}{end}`: "db=192.0.2.7 dns= ",
		statuscli.CustomColumnsPrefix + "NAME:.leasedIP,IP:.ip":                       "NAME   IP\ndb     192.0.2.7\ndns    -\n",
	} {
		var out bytes.Buffer
		if err := statuscli.RenderIPs(doc, format, &out); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if out.String() != want {
			t.Errorf("%s:\ngot  %q\nwant %q", format, out.String(), want)
		}
	}
}
