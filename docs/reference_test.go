package docs_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/metricsource"
)

// configKeys returns the dotted key paths of the config file's leaves (the
// JSON/YAML keys of config.Config, nested structs walked).
func configKeys(prefix string, t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := prefix + name
		ft := f.Type
		if ft.Kind() == reflect.Struct {
			out = append(out, configKeys(key+".", ft)...)
			continue
		}
		out = append(out, key)
	}
	return out
}

// documentedKeys returns the keys the config-file table of
// docs/configuration.md documents. A row's first cell names keys in
// backticks; a name without a dot after a dotted one shares its parent
// ("`xds.tls.certFile`, `keyFile`" is xds.tls.certFile and xds.tls.keyFile).
func documentedKeys(t *testing.T, doc string) map[string]bool {
	t.Helper()
	_, text, ok := strings.Cut(doc, "\n## The config file\n")
	if !ok {
		t.Fatal(`docs/configuration.md has no "## The config file" section`)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	tick := regexp.MustCompile("`([^`]+)`")
	keys := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(line, " | ")
		parent := ""
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			k := m[1]
			if i := strings.LastIndex(k, "."); i >= 0 {
				parent = k[:i+1]
			} else {
				k = parent + k
			}
			keys[k] = true
		}
	}
	return keys
}

// TestEveryConfigKeyDocumented: every key of the config file's schema has
// a row in docs/configuration.md, and every key the table lists exists.
func TestEveryConfigKeyDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedKeys(t, string(data))
	keys := configKeys("", reflect.TypeFor[config.Config]())
	if len(keys) < 25 {
		t.Fatalf("found only %d config keys: %v", len(keys), keys)
	}
	schema := map[string]bool{}
	var missing []string
	for _, k := range keys {
		schema[k] = true
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d config keys have no row in docs/configuration.md's config-file table:\n  %s", len(missing), len(keys), strings.Join(missing, "\n  "))
	}
	var stale []string
	for k := range documented {
		if !schema[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/configuration.md documents config keys the schema does not have:\n  %s", strings.Join(stale, "\n  "))
	}
}

// shardgateMetrics is every metric the code defines (metricsource).
func shardgateMetrics(t *testing.T, r string) map[string]metricsource.Metric {
	t.Helper()
	out, err := metricsource.Scan(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryMetricDocumented: every shardgate_* metric the code defines has
// a row in docs/metrics.md giving its type and naming each of its labels,
// and every shardgate_* row there is a metric the code defines.
func TestEveryMetricDocumented(t *testing.T) {
	r := root(t)
	data, err := os.ReadFile(filepath.Join(r, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	name := regexp.MustCompile("^`(shardgate_[a-z0-9_]+)`$")
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) < 4 {
			continue
		}
		if m := name.FindStringSubmatch(strings.TrimSpace(cells[0])); m != nil {
			rows[m[1]] = cells
		}
	}
	code := shardgateMetrics(t, r)
	if len(code) < 15 {
		t.Fatalf("found only %d metrics in the code", len(code))
	}
	for n, m := range code {
		if !strings.HasPrefix(n, "shardgate_") {
			t.Errorf("%s: metric %q is not named shardgate_*", m.Where, n)
			continue
		}
		cells, ok := rows[n]
		if !ok {
			t.Errorf("%s (%s, %s) has no row in docs/metrics.md", n, m.Type, m.Where)
			continue
		}
		if got := strings.TrimSpace(cells[1]); got != m.Type {
			t.Errorf("docs/metrics.md gives %s the type %q, the code %q", n, got, m.Type)
		}
		labels := strings.TrimSpace(cells[2])
		if len(m.Labels) == 0 && labels != "none" {
			t.Errorf("docs/metrics.md gives %s labels %q; it has none", n, labels)
		}
		for _, l := range m.Labels {
			if !strings.Contains(labels, "`"+l+"`:") {
				t.Errorf("docs/metrics.md does not describe the label %s of %s (as \"`%s`: values\")", l, n, l)
			}
		}
		if strings.TrimSpace(cells[3]) == "" {
			t.Errorf("docs/metrics.md does not say what %s means", n)
		}
	}
	for n := range rows {
		if _, ok := code[n]; !ok {
			t.Errorf("docs/metrics.md documents %s, which the code does not define", n)
		}
	}
}
