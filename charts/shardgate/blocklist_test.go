package shardgate_test

import (
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/shardgate/shardgate/internal/config"
)

// blockListTable: block-list entries at the edges of what internal/config
// accepts.
var blockListTable = []string{
	"example.com", ".example.com", "Example.COM", "example.com.", ".example.com.",
	"  example.com\t", "\u00a0example.com\u3000", "\u0085.example.com\u2028",
	"a", "0", "a-b.c-d", "xn--bcher-kva.example", "1.2.3.4",
	strings.Repeat("a", 63) + ".com", strings.Repeat("a", 64) + ".com",
	longName(253), longName(254), "." + longName(253), "." + longName(254),
	longName(253) + ".", longName(254) + ".", "." + longName(252) + ".",
	"\u212aelvin.example", "\u0130stanbul.example", "bücher.example", "ÄBC.example",
	"*.example.com", "*", "*.", ".", "..", "..example.com", "example..com", "example.com..",
	"-example.com", "example-.com", "example.-com", "exa_mple.com", "example.com/x",
	"example .com", "", " ", "\u200bexample.com", "example.com:443",
}

// longName is a hostname of n characters (labels of 63).
func longName(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		l := min(63, n-b.Len())
		b.WriteString(strings.Repeat("a", l))
	}
	return b.String()[:n]
}

// controllerAccepts is the controller's own verdict on one entry.
func controllerAccepts(entry string) bool {
	_, errs := config.NormalizeBlockedHostnames([]string{entry})
	return len(errs) == 0
}

// schemaRefuses validates config.blockedHostnames=entries against
// values.schema.json as helm install and helm template do, in one pass, and
// returns the indexes of the entries it refuses (the error names each as
// /config/blockedHostnames/<i>).
func schemaRefuses(t *testing.T, chrt *chart.Chart, entries []string) map[int]bool {
	t.Helper()
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = e
	}
	vals, err := chartutil.CoalesceValues(chrt, map[string]any{"config": map[string]any{"blockedHostnames": list}})
	if err != nil {
		t.Fatal(err)
	}
	refused := map[int]bool{}
	err = chartutil.ValidateAgainstSchema(chrt, vals)
	if err == nil {
		return refused
	}
	for _, m := range schemaPathRe.FindAllStringSubmatch(err.Error(), -1) {
		i, _ := strconv.Atoi(m[1])
		refused[i] = true
	}
	if len(refused) == 0 {
		t.Fatalf("the schema refuses the values, naming no entry: %v", err)
	}
	return refused
}

var schemaPathRe = regexp.MustCompile(`at '/config/blockedHostnames/([0-9]+)'`)

// TestBlockedHostnamesSchema: values.schema.json accepts exactly the
// block-list entries the controller accepts at start, so an entry it would
// refuse (and crash-loop on) fails the install instead. A table of edge
// cases and a few thousand random strings over a hostname-ish alphabet go
// to both; the accepted table entries also render into a config the
// controller parses.
func TestBlockedHostnamesSchema(t *testing.T) {
	chrt, err := loader.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	entries := append([]string(nil), blockListTable...)
	alphabet := []rune("aZ09-.. *_\t\u00a0\u212a\u0130ü")
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		r := make([]rune, 1+rnd.IntN(12))
		for i := range r {
			r[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		entries = append(entries, string(r))
	}
	var accepted, refused int
	schemaRefused := schemaRefuses(t, chrt, entries)
	for i, e := range entries {
		want, got := controllerAccepts(e), !schemaRefused[i]
		if want != got {
			t.Errorf("%q: controller accepts %v, schema accepts %v", e, want, got)
		}
		if want {
			accepted++
		} else {
			refused++
		}
	}
	t.Logf("%d entries: %d accepted, %d refused by both", len(entries), accepted, refused)
	if accepted < 100 || refused < 100 {
		t.Fatalf("the random entries do not cover both verdicts: %d accepted, %d refused", accepted, refused)
	}

	// End to end: an entry the schema lets through is parsed by the
	// controller from the rendered config file.
	for _, e := range blockListTable {
		if !controllerAccepts(e) {
			continue
		}
		rel := mustRender(t, "shardgate", "shardgate-system", map[string]any{"config": map[string]any{"blockedHostnames": []any{e}}})
		if cfg, _ := controllerConfig(t, rel); len(cfg.BlockedHostnames) != 1 {
			t.Errorf("%q: rendered block list %q", e, cfg.BlockedHostnames)
		}
	}
}

// TestBlockedHostnamesHelm: the real helm refuses the entries the
// controller refuses, naming the key, and renders the ones it accepts.
func TestBlockedHostnamesHelm(t *testing.T) {
	helm := tool(t, "helm")
	for _, e := range []string{"*.x.com", ".example.com", "Example.COM.", "example..com", longName(254), " .example.com "} {
		list, err := json.Marshal([]string{e})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(helm, "template", "shardgate", ".", "--namespace", "shardgate-system", "--kube-version", kubeVersion,
			"--set-json", "config.blockedHostnames="+string(list))
		out, err := cmd.CombinedOutput()
		want := controllerAccepts(e)
		switch {
		case want && err != nil:
			t.Errorf("%q: the controller accepts it, helm template refuses it: %v\n%s", e, err, out)
		case !want && err == nil:
			t.Errorf("%q: the controller refuses it, helm template renders it", e)
		case !want && !strings.Contains(string(out), "blockedHostnames"):
			t.Errorf("%q: helm's error does not name config.blockedHostnames:\n%s", e, out)
		}
	}
}
