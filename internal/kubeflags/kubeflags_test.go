package kubeflags_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardgate/shardgate/internal/kubeflags"
)

// kubeconfig writes a kubeconfig with two clusters, users and contexts
// (the current one, "a", sets no namespace; "b" sets namespace "ns-b").
func kubeconfig(t *testing.T, dir, server string) string {
	t.Helper()
	path := filepath.Join(dir, "config")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: a
clusters:
- name: a
  cluster: {server: %[1]s/a, insecure-skip-tls-verify: true}
- name: b
  cluster: {server: %[1]s/b, tls-server-name: b.example}
users:
- name: a
  user: {token: token-a}
- name: b
  user: {username: user-b, password: password-b}
contexts:
- name: a
  context: {cluster: a, user: a}
- name: b
  context: {cluster: b, user: b, namespace: ns-b}
`, server)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectl is what the status commands bound before: cli-runtime's
// ConfigFlags(false) without --cache-dir.
func kubectl(timeout string) *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.CacheDir = nil
	f.Timeout = &timeout
	return f
}

// kubectlContextOnly is what `config dump` bound before.
func kubectlContextOnly() *genericclioptions.ConfigFlags {
	empty := func() *string { s := ""; return &s }
	return &genericclioptions.ConfigFlags{KubeConfig: empty(), Context: empty(), ClusterName: empty(), AuthInfoName: empty(), Namespace: empty()}
}

type loader interface {
	ToRawKubeConfigLoader() clientcmd.ClientConfig
}

type result struct {
	Config    string
	Namespace string
	Explicit  bool
	Err       string
	NSErr     string
}

// load parses args into fs and reports what the loader yields.
func load(t *testing.T, l loader, fs *pflag.FlagSet, args []string) result {
	t.Helper()
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	var r result
	cc := l.ToRawKubeConfigLoader()
	rc, err := cc.ClientConfig()
	if err != nil {
		r.Err = err.Error()
	} else {
		r.Config = fmt.Sprintf("%#v", *rc)
	}
	r.Namespace, r.Explicit, err = cc.Namespace()
	if err != nil {
		r.NSErr = err.Error()
	}
	return r
}

// TestSameConfigAsKubectl parses the same command lines into kubectl's
// ConfigFlags and into Flags, in the same environments, and wants the same
// REST config (host, credentials, impersonation, TLS, timeout, ...), the
// same namespace and the same errors.
func TestSameConfigAsKubectl(t *testing.T) {
	dir := t.TempDir()
	path := kubeconfig(t, dir, "https://kubeconfig.example")
	other := kubeconfig(t, t.TempDir(), "https://other.example")
	empty := t.TempDir() // $HOME; clientcmd reads ~/.kube/config from the HOME of its start, which the statuscli tests vary
	for _, name := range []string{"c.pem", "k.pem", "ca.pem"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	every := []string{
		"--kubeconfig", path, "--context", "b", "--cluster", "a", "--user", "a", "-n", "ns-flag",
		"-s", "https://flag.example", "--token", "flag-token", "--as", "alice", "--as-group", "g1", "--as-group", "g2",
		"--as-uid", "uid-1", "--as-user-extra", "scope=x", "--as-user-extra", "scope=y", "--as-user-extra", "ignored",
		"--client-certificate", filepath.Join(dir, "c.pem"), "--client-key", filepath.Join(dir, "k.pem"),
		"--certificate-authority", filepath.Join(dir, "ca.pem"),
		"--tls-server-name", "sni.example", "--proxy-url", "http://proxy.example:3128", "--disable-compression",
		"--request-timeout", "7s",
	}
	cases := []struct {
		name     string
		kubeHome string // $HOME
		env      string // $KUBECONFIG
		args     []string
		want     string // a substring of the REST config, or of the error
	}{
		{"--kubeconfig, current context", empty, "", []string{"--kubeconfig", path}, "https://kubeconfig.example/a"},
		{"--context picks its namespace", empty, "", []string{"--kubeconfig", path, "--context", "b"}, "ns-b"},
		{"--cluster and --user", empty, "", []string{"--kubeconfig", path, "--cluster", "b", "--user", "b"}, "user-b"},
		{"every flag", empty, "", every, "flag-token"},
		{"--insecure-skip-tls-verify", empty, "", []string{"--kubeconfig", path, "--context", "b", "--insecure-skip-tls-verify"}, "Insecure:true"},
		{"$KUBECONFIG", empty, path, nil, "https://kubeconfig.example/a"},
		{"--kubeconfig wins over $KUBECONFIG", empty, other, []string{"--kubeconfig", path}, "https://kubeconfig.example/a"},
		{"$KUBECONFIG with -n", empty, other, []string{"-n", "x"}, "https://other.example/a"},
		{"no kubeconfig", empty, "", nil, "localhost:8080"},
		{"no kubeconfig but --server", empty, "", []string{"-s", "https://only.example", "--token", "t"}, "https://only.example"},
		{"a missing --kubeconfig", empty, "", []string{"--kubeconfig", filepath.Join(empty, "nope")}, "no such file"},
		{"an unknown --context", empty, "", []string{"--kubeconfig", path, "--context", "nope"}, "nope"},
		{"a bad --request-timeout", empty, "", []string{"--kubeconfig", path, "--request-timeout", "soon"}, "Invalid timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", tc.kubeHome)
			t.Setenv("KUBECONFIG", tc.env)
			t.Setenv("KUBERNETES_MASTER", "")
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			t.Setenv("KUBERNETES_SERVICE_PORT", "")

			old := kubectl("30s")
			oldFS := pflag.NewFlagSet("old", pflag.ContinueOnError)
			old.AddFlags(oldFS)
			want := load(t, old, oldFS, tc.args)

			f := kubeflags.New("30s")
			fs := pflag.NewFlagSet("new", pflag.ContinueOnError)
			f.AddFlags(fs)
			got := load(t, f, fs, tc.args)

			if !reflect.DeepEqual(got, want) {
				t.Errorf("Flags load\n%+v\nkubectl's ConfigFlags load\n%+v", got, want)
			}
			if s := fmt.Sprintf("%+v", got); !strings.Contains(s, tc.want) {
				t.Errorf("want %q in %s", tc.want, s)
			}

			// The context-only flags of `config dump`, with the flags they have.
			var args []string
			for i := 0; i < len(tc.args); i += 2 {
				switch tc.args[i] {
				case "--kubeconfig", "--context", "--cluster", "--user", "-n":
					args = append(args, tc.args[i], tc.args[i+1])
				}
			}
			oldCO := kubectlContextOnly()
			oldCOFS := pflag.NewFlagSet("old", pflag.ContinueOnError)
			oldCO.AddFlags(oldCOFS)
			wantCO := load(t, oldCO, oldCOFS, args)
			co := kubeflags.NewContextOnly()
			coFS := pflag.NewFlagSet("new", pflag.ContinueOnError)
			co.AddFlags(coFS)
			if gotCO := load(t, co, coFS, args); !reflect.DeepEqual(gotCO, wantCO) {
				t.Errorf("context-only Flags load\n%+v\nkubectl's ConfigFlags load\n%+v", gotCO, wantCO)
			}
		})
	}
}

// TestSameFlagsAsKubectl wants the flags kubectl's ConfigFlags binds, each
// with its name, shorthand, type, default and usage, and no other.
func TestSameFlagsAsKubectl(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  *genericclioptions.ConfigFlags
		new  *kubeflags.Flags
	}{
		{"New", kubectl("30s"), kubeflags.New("30s")},
		{"New with kubectl's timeout", kubectl("0"), kubeflags.New("0")},
		{"NewContextOnly", kubectlContextOnly(), kubeflags.NewContextOnly()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := pflag.NewFlagSet("old", pflag.ContinueOnError)
			tc.old.AddFlags(want)
			got := pflag.NewFlagSet("new", pflag.ContinueOnError)
			tc.new.AddFlags(got)
			if diff := DiffFlags(got, want); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// DiffFlags describes how got's flags differ from want's (name, shorthand,
// type, default, usage, no-option default, deprecation, hiding); "" when
// they do not.
func DiffFlags(got, want *pflag.FlagSet) string {
	var diffs []string
	describe := func(f *pflag.Flag) string {
		return fmt.Sprintf("-%s --%s %s default %q noopt %q deprecated %q hidden %v usage %q",
			f.Shorthand, f.Name, f.Value.Type(), f.DefValue, f.NoOptDefVal, f.Deprecated, f.Hidden, f.Usage)
	}
	want.VisitAll(func(w *pflag.Flag) {
		g := got.Lookup(w.Name)
		if g == nil {
			diffs = append(diffs, "missing: "+describe(w))
			return
		}
		if describe(g) != describe(w) {
			diffs = append(diffs, fmt.Sprintf("differs:\n  got  %s\n  want %s", describe(g), describe(w)))
		}
	})
	got.VisitAll(func(g *pflag.Flag) {
		if want.Lookup(g.Name) == nil {
			diffs = append(diffs, "extra: "+describe(g))
		}
	})
	return strings.Join(diffs, "\n")
}
