package shardgate_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// registeredMetrics finds every metric the product's code defines: the Name
// of each prometheus.{Counter,Gauge,Histogram,Summary}Opts literal in the
// repository's non-test Go files, with whether it is a histogram (which
// exports _bucket, _sum and _count series).
func registeredMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "hack" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
				return true
			}
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					if v, ok := kv.Value.(*ast.BasicLit); ok {
						name, _ := strconv.Unquote(v.Value)
						out[name] = sel.Sel.Name == "HistogramOpts"
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDashboardQueriesExistingMetrics parses the Grafana dashboard and
// checks that every shardgate metric its panels query is one the code
// registers (histogram series only for histograms), and that it covers what
// an operator watches.
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("dashboards", "shardgate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Errorf("dashboard title %q uid %q", dash.Title, dash.UID)
	}
	registered := registeredMetrics(t, filepath.Join("..", ".."))
	if len(registered) < 10 {
		t.Fatalf("found only %d registered metrics, the scan is broken: %v", len(registered), registered)
	}
	queried := map[string]bool{}
	series := regexp.MustCompile(`\bshardgate_[a-z0-9_]+`)
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := series.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q queries no shardgate metric: %s", p.Title, tg.Expr)
			}
			for _, s := range names {
				base, histogram := s, false
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(s, suffix); ok {
						if _, known := registered[b]; known {
							base, histogram = b, true
						}
					}
				}
				isHist, ok := registered[base]
				switch {
				case !ok:
					t.Errorf("panel %q queries %s, which no code registers", p.Title, s)
				case histogram && !isHist:
					t.Errorf("panel %q queries %s, but %s is not a histogram", p.Title, s, base)
				case !histogram && isHist:
					t.Errorf("panel %q queries histogram %s without _bucket/_sum/_count", p.Title, s)
				}
				queried[base] = true
			}
		}
	}
	// What the dashboard is for: propagation, pushes, NACKs, status writes,
	// claims and refusals, pool usage.
	for _, want := range []string{
		"shardgate_xds_push_latency_seconds", "shardgate_xds_pushes_total", "shardgate_xds_nacks_total",
		"shardgate_status_writes_total", "shardgate_hostname_claims", "shardgate_hostname_refusals_total",
		"shardgate_pool_addresses",
	} {
		if !queried[want] {
			t.Errorf("no panel queries %s", want)
		}
	}
	var missing []string
	for name := range registered {
		if !queried[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	t.Logf("registered metrics without a panel: %v", missing)
}
