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

	"github.com/shardgate/shardgate/internal/infra"
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
			envoy := envoySeries.FindAllString(tg.Expr, -1)
			for _, e := range envoy {
				e = strings.TrimSuffix(e, "{")
				stat, ok := envoyStats[e]
				switch {
				case !ok:
					t.Errorf("panel %q queries %s, which the test does not know as an Envoy statistic", p.Title, e)
				case !keptByEnvoy(t, stat):
					t.Errorf("panel %q queries %s, but the Envoy bootstrap's stats matcher drops %s", p.Title, e, stat)
				}
				queried[e] = true
			}
			if len(names) == 0 && len(envoy) == 0 {
				t.Errorf("panel %q queries no shardgate or Envoy metric: %s", p.Title, tg.Expr)
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
		// Envoy (metrics.podMonitor): requests and 5xx per shard, per-lease
		// requests and bytes.
		"envoy_http_downstream_rq_total", "envoy_http_downstream_rq_xx", "envoy_cluster_upstream_rq_total",
		"envoy_cluster_upstream_cx_rx_bytes_total", "envoy_cluster_upstream_cx_tx_bytes_total",
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

// envoySeries finds the Envoy metric names of a query (a selector follows
// each; the envoy_* label names inside it are not metrics).
var envoySeries = regexp.MustCompile(`\benvoy_[a-z0-9_]+(?:\{)`)

// envoyStats maps the Prometheus names of Envoy statistics (after Envoy's
// default tag extraction) the dashboard may query to one statistic name
// Envoy keeps for it: a Gateway listener's HTTP connection manager is
// http.<listener name>.*, a lease's cluster cluster.<ns>/<svc>/<port>.*.
var envoyStats = map[string]string{
	"envoy_http_downstream_rq_total":           "http.http-80.downstream_rq_total",
	"envoy_http_downstream_rq_xx":              "http.http-80.downstream_rq_5xx",
	"envoy_cluster_upstream_rq_total":          "cluster.lease/web/80.upstream_rq_total",
	"envoy_cluster_upstream_rq_xx":             "cluster.lease/web/80.upstream_rq_5xx",
	"envoy_cluster_upstream_cx_rx_bytes_total": "cluster.lease/web/80.upstream_cx_rx_bytes_total",
	"envoy_cluster_upstream_cx_tx_bytes_total": "cluster.lease/web/80.upstream_cx_tx_bytes_total",
	"envoy_server_live":                        "server.live",
}

// keptByEnvoy applies infra.StatsInclusions (prefix and RE2 full-match
// patterns) to a statistic name.
func keptByEnvoy(t *testing.T, stat string) bool {
	t.Helper()
	for _, m := range infra.StatsInclusions {
		switch {
		case m.GetPrefix() != "":
			if strings.HasPrefix(stat, m.GetPrefix()) {
				return true
			}
		case m.GetSafeRegex() != nil:
			if regexp.MustCompile(`^(?:` + m.GetSafeRegex().GetRegex() + `)$`).MatchString(stat) {
				return true
			}
		default:
			t.Fatalf("unexpected matcher %v", m)
		}
	}
	return false
}
