package docs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestIngressNginxPageInstall: the install and cut-over part of
// migrating-from-ingress-nginx.md uses what exists. Every object it applies
// decodes strictly (no unknown field) into the shardgate or Gateway API
// type of its kind and passes the API's own rules for host ports; every
// `--set` it gives charts/shardgate is a key of the chart's values; every
// condition reason it names is one the controller sets; and it sends Akash
// providers to akash.md's migration.
func TestIngressNginxPageInstall(t *testing.T) {
	r := root(t)
	b, err := os.ReadFile(filepath.Join(r, "docs", "migrating-from-ingress-nginx.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, h := range []string{"## Installing beside ingress-nginx", "## Cutting over", "## Rolling back"} {
		if !strings.Contains(doc, "\n"+h+"\n") {
			t.Errorf("the page has no section %q", h)
		}
	}
	if !strings.Contains(doc, "(akash.md#migrating-a-provider)") {
		t.Error("the page does not link Akash providers to akash.md#migrating-a-provider")
	}

	// The objects: heredocs (<<'YAML' ... YAML) and ```yaml blocks.
	var objects []string
	heredoc := regexp.MustCompile(`(?s)<<'YAML'\n(.*?)\n *YAML\n`)
	for _, m := range heredoc.FindAllStringSubmatch(doc, -1) {
		objects = append(objects, strings.Split(dedent(m[1]), "\n---\n")...)
	}
	block := regexp.MustCompile("(?s)\n( *)```yaml\n(.*?)\n *```")
	for _, m := range block.FindAllStringSubmatch(doc, -1) {
		objects = append(objects, strings.Split(dedent(m[2]), "\n---\n")...)
	}
	kinds := map[string]int{}
	for _, o := range objects {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(o), &meta); err != nil {
			t.Errorf("YAML on the page does not parse: %v\n%s", err, o)
			continue
		}
		kinds[meta.Kind]++
		switch meta.Kind {
		case "GatewayParameters":
			var gp v1alpha1.GatewayParameters
			if err := yaml.UnmarshalStrict([]byte(o), &gp); err != nil {
				t.Errorf("GatewayParameters on the page: %v\n%s", err, o)
				continue
			}
			if e := gp.Spec.Envoy; e != nil && (e.HostPorts || e.HostNetwork) && e.Kind != v1alpha1.EnvoyKindDaemonSet {
				t.Errorf("GatewayParameters %s: host ports need kind DaemonSet", gp.Name)
			}
			if gp.Spec.Shard != nil && gp.Spec.Shard.Domain != "" {
				kinds["shard"]++
			}
			if gp.Spec.Envoy != nil && gp.Spec.Envoy.HostPorts {
				kinds["hostPorts"]++
			}
		case "Gateway":
			var gw gatewayv1.Gateway
			if err := yaml.UnmarshalStrict([]byte(o), &gw); err != nil {
				t.Errorf("Gateway on the page: %v\n%s", err, o)
				continue
			}
			if gw.Spec.GatewayClassName != "shardgate" {
				t.Errorf("Gateway %s has class %q, not the chart's shardgate", gw.Name, gw.Spec.GatewayClassName)
			}
		default:
			t.Errorf("the page applies a %s; this test knows GatewayParameters and Gateway", meta.Kind)
		}
	}
	if kinds["shard"] < 2 || kinds["hostPorts"] < 1 || kinds["Gateway"] < 1 {
		t.Errorf("the page applies %v; want a shard's GatewayParameters (on MetalLB, and with host ports) and its Gateway", kinds)
	}

	// The chart's --set keys.
	values := map[string]any{}
	vb, err := os.ReadFile(filepath.Join(r, "charts", "shardgate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(vb, &values); err != nil {
		t.Fatal(err)
	}
	install := regexp.MustCompile(`(?s)helm (?:install|upgrade) shardgate charts/shardgate(.*?)[^\\]\n`)
	set := regexp.MustCompile(`--set(?:-string)? '?([A-Za-z0-9_.]+)=`)
	sets := 0
	for _, m := range install.FindAllStringSubmatch(doc, -1) {
		for _, s := range set.FindAllStringSubmatch(m[1], -1) {
			sets++
			if !hasKey(values, strings.Split(s[1], ".")) {
				t.Errorf("the page sets %s, which charts/shardgate/values.yaml does not have", s[1])
			}
		}
	}
	if sets < 2 {
		t.Errorf("found %d --set of charts/shardgate on the page, want the install's", sets)
	}

	// The reasons it names.
	known := gatewayAPIReasons(t, r)
	for _, dir := range []string{"api/v1alpha1", "sharding", "internal/hostnames"} {
		for _, v := range reasonConstants(t, filepath.Join(r, dir)) {
			known = append(known, v)
		}
	}
	named := regexp.MustCompile("reason `([A-Za-z]+)`|\\(`([A-Z][A-Za-z]+)` until then\\)")
	reasons := 0
	for _, m := range named.FindAllStringSubmatch(doc, -1) {
		v := m[1] + m[2]
		reasons++
		if !slices.Contains(known, v) {
			t.Errorf("the page names the reason %s, which the controller never sets", v)
		}
	}
	if reasons < 3 {
		t.Errorf("found %d reasons named on the page, want NoResources, AddressNotAssigned and AddressNotUsable", reasons)
	}
}

// dedent removes the indentation of the first line from every line.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	indent := len(lines[0]) - len(strings.TrimLeft(lines[0], " "))
	var buf bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			buf.WriteByte('\n')
		}
		if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
			l = l[indent:]
		}
		buf.WriteString(l)
	}
	return buf.String()
}

func hasKey(m map[string]any, path []string) bool {
	v, ok := m[path[0]]
	if !ok {
		return false
	}
	if len(path) == 1 {
		return true
	}
	sub, ok := v.(map[string]any)
	return ok && hasKey(sub, path[1:])
}
