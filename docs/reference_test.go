package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
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

// metric is a Prometheus collector the code defines.
type metric struct {
	name, typ, where string
	labels           []string
}

// shardgateMetrics finds every prometheus.New<Type>[Vec](<Type>Opts{Name:
// "shardgate_..."}, []string{labels}) in the non-test Go files of the
// repository, and fails on any other "shardgate_..." metric-like string
// literal next to a prometheus call it cannot read.
func shardgateMetrics(t *testing.T, r string) map[string]metric {
	t.Helper()
	ctor := regexp.MustCompile(`^New(Counter|Gauge|Histogram|Summary)(Vec)?$`)
	out := map[string]metric{}
	fset := token.NewFileSet()
	for _, dir := range []string{"cmd", "controllers", "internal", "sharding", "xds"} {
		err := filepath.WalkDir(filepath.Join(r, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testenv" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(r, path)
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				m := ctor.FindStringSubmatch(sel.Sel.Name)
				if !ok || pkg.Name != "prometheus" || m == nil || len(call.Args) == 0 {
					return true
				}
				opts, ok := call.Args[0].(*ast.CompositeLit)
				if !ok {
					t.Errorf("%s: %s without an options literal; the docs test cannot read its name", rel, sel.Sel.Name)
					return true
				}
				var name string
				for _, el := range opts.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); ok && (k.Name == "Namespace" || k.Name == "Subsystem") {
						t.Errorf("%s: a metric built from %s; the docs test reads whole names only", rel, k.Name)
					}
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
						lit, ok := kv.Value.(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							t.Errorf("%s: a metric whose Name is not a string literal", rel)
							continue
						}
						name, _ = strconv.Unquote(lit.Value)
					}
				}
				mt := metric{name: name, typ: strings.ToLower(m[1]), where: rel}
				if m[2] == "Vec" && len(call.Args) > 1 {
					if labels, ok := call.Args[1].(*ast.CompositeLit); ok {
						for _, el := range labels.Elts {
							if lit, ok := el.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								l, _ := strconv.Unquote(lit.Value)
								mt.labels = append(mt.labels, l)
							}
						}
					}
					if len(mt.labels) == 0 {
						t.Errorf("%s: %s %s with labels the docs test cannot read", rel, sel.Sel.Name, name)
					}
				}
				out[name] = mt
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
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
			t.Errorf("%s: metric %q is not named shardgate_*", m.where, n)
			continue
		}
		cells, ok := rows[n]
		if !ok {
			t.Errorf("%s (%s, %s) has no row in docs/metrics.md", n, m.typ, m.where)
			continue
		}
		if got := strings.TrimSpace(cells[1]); got != m.typ {
			t.Errorf("docs/metrics.md gives %s the type %q, the code %q", n, got, m.typ)
		}
		labels := strings.TrimSpace(cells[2])
		if len(m.labels) == 0 && labels != "none" {
			t.Errorf("docs/metrics.md gives %s labels %q; it has none", n, labels)
		}
		for _, l := range m.labels {
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
