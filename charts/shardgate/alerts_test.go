package shardgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/internal/metricsource"
)

// metricLabels is every metric the product's code defines, with its label
// names (metricsource).
func metricLabels(t *testing.T, root string) map[string][]string {
	t.Helper()
	ms, err := metricsource.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for name, m := range ms {
		out[name] = m.Labels
	}
	return out
}

// runtimeMetricLabels gathers the label names of the controller-runtime
// and client-go metrics the alerts use from the registry the controller's
// /metrics serves, after giving each a series through its real collector:
// a rate-limited requeue on a work queue, and a client-go request result.
func runtimeMetricLabels(t *testing.T) map[string][]string {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "chart-alerts-test"})
	defer q.ShutDown()
	q.AddRateLimited("x")
	clientmetrics.RequestResult.Increment(context.Background(), "500", "PATCH", "apiserver")
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		var labels []string
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		out[mf.GetName()] = labels
	}
	return out
}

// targetLabels are the labels Prometheus gives every series of a
// ServiceMonitor's target.
var targetLabels = []string{"job", "namespace", "pod", "instance", "service", "endpoint", "container"}

var (
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$`)
	groupingRE = regexp.MustCompile(`\b(by|without|on|ignoring)\s*\(([^)]*)\)`)
	templRE    = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	durationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	rangeRE    = regexp.MustCompile(`\[([^\]]*)\]`)
)

// reporter is what checkExpr needs of a *testing.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// errs records what checkExpr reports, to test the checker.
type errs []string

func (*errs) Helper() {}
func (e *errs) Errorf(format string, args ...any) {
	*e = append(*e, fmt.Sprintf(format, args...))
}

type alert struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// prometheusRule renders the chart and returns its PrometheusRule's alerts by name.
func prometheusRule(t *testing.T, values map[string]any) (*unstructured.Unstructured, map[string]alert) {
	t.Helper()
	rel := mustRender(t, "edge", "edge-system", values)
	u := findUnstructured(t, rel, "PrometheusRule", "edge-shardgate")
	var spec struct {
		Groups []struct {
			Name  string  `json:"name"`
			Rules []alert `json:"rules"`
		} `json:"groups"`
	}
	raw, err := json.Marshal(u.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	out := map[string]alert{}
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			if _, dup := out[r.Alert]; dup {
				t.Errorf("alert %s twice", r.Alert)
			}
			out[r.Alert] = r
		}
	}
	return u, out
}

// checkExpr checks an alert's expression the way a PromQL parser would
// refuse it for a typo, without one (github.com/prometheus/prometheus is
// not a dependency): balanced brackets, every metric one the code (or
// controller-runtime) exports, every matcher and grouping label one of its
// metrics' or a target label, every range a duration, and every
// $labels.<name> of the annotations kept by the aggregation.
func checkExpr(t reporter, a alert, known map[string][]string) {
	t.Helper()
	e := a.Expr
	for _, pair := range [][2]string{{"(", ")"}, {"{", "}"}, {"[", "]"}} {
		if strings.Count(e, pair[0]) != strings.Count(e, pair[1]) {
			t.Errorf("%s: unbalanced %s%s in %q", a.Alert, pair[0], pair[1], e)
		}
	}
	if strings.Count(e, `"`)%2 != 0 {
		t.Errorf("%s: unbalanced quotes in %q", a.Alert, e)
	}
	allowed := slices.Clone(targetLabels)
	sels := selectorRE.FindAllStringSubmatch(e, -1)
	if len(sels) == 0 {
		t.Errorf("%s: no metric selector in %q", a.Alert, e)
	}
	for _, s := range sels {
		metric := s[1]
		labels, ok := known[metric]
		if !ok {
			t.Errorf("%s: %s is no metric the controller exports", a.Alert, metric)
			continue
		}
		allowed = append(allowed, labels...)
		for _, m := range strings.Split(s[2], ",") {
			if strings.TrimSpace(m) == "" {
				continue
			}
			mm := matcherRE.FindStringSubmatch(m)
			if mm == nil {
				t.Errorf("%s: matcher %q of %s does not parse", a.Alert, m, metric)
				continue
			}
			if !slices.Contains(labels, mm[1]) && !slices.Contains(targetLabels, mm[1]) {
				t.Errorf("%s: %s has no label %q (labels %v)", a.Alert, metric, mm[1], labels)
			}
			if strings.HasSuffix(mm[2], "~") {
				if _, err := regexp.Compile("^(?:" + mm[3] + ")$"); err != nil {
					t.Errorf("%s: regexp %q: %v", a.Alert, mm[3], err)
				}
			}
		}
	}
	var kept []string
	for _, g := range groupingRE.FindAllStringSubmatch(e, -1) {
		for _, l := range strings.Split(g[2], ",") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			if !slices.Contains(allowed, l) {
				t.Errorf("%s: %s (%s) is no label of the metrics queried", a.Alert, g[1], l)
			}
			if g[1] == "by" {
				kept = append(kept, l)
			}
		}
	}
	for _, r := range rangeRE.FindAllStringSubmatch(e, -1) {
		if !durationRE.MatchString(r[1]) {
			t.Errorf("%s: range [%s] is not a duration", a.Alert, r[1])
		}
	}
	for _, text := range a.Annotations {
		for _, l := range templRE.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(kept, l[1]) {
				t.Errorf("%s: the annotation uses $labels.%s, which the aggregation drops (kept: %v)", a.Alert, l[1], kept)
			}
		}
	}
}

// TestPrometheusRule: off by default; on, each alert the chart ships is
// documented, has a sane `for` and a severity, and queries metrics and
// labels the controller exports; metrics.prometheusRule.rules overrides,
// drops and adds alerts.
func TestPrometheusRule(t *testing.T) {
	g := NewWithT(t)
	rel := mustRender(t, "edge", "edge-system", nil)
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("PrometheusRule"))

	known := metricLabels(t, filepath.Join("..", ".."))
	if len(known) < 10 {
		t.Fatalf("found only %d metrics, the scan is broken: %v", len(known), known)
	}
	for name, labels := range runtimeMetricLabels(t) {
		if !strings.HasPrefix(name, "shardgate_") {
			known[name] = labels
		}
	}
	g.Expect(known).To(HaveKeyWithValue("workqueue_retries_total", ConsistOf("name", "controller")))
	g.Expect(known).To(HaveKeyWithValue("rest_client_requests_total", ConsistOf("code", "method", "host")))
	g.Expect(known).To(HaveKeyWithValue("shardgate_xds_ca_expiry_timestamp_seconds", BeEmpty()))
	g.Expect(known).To(HaveKeyWithValue("shardgate_xds_gateway_proxies", ConsistOf("gateway_namespace", "gateway_name")))
	// A label of the controller's own named as a target label would be
	// renamed exported_<label> by Prometheus (honor_labels is off in the
	// ServiceMonitor): the alerts would group by the controller's
	// namespace instead.
	for name, labels := range known {
		for _, l := range labels {
			g.Expect(targetLabels).NotTo(ContainElement(l), "%s has a label named as a target label", name)
		}
	}
	u, alerts := prometheusRule(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{
		"enabled": true, "additionalLabels": map[string]any{"release": "prom"},
	}}})
	g.Expect(u.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(u.GetNamespace()).To(Equal("edge-system"))
	g.Expect(u.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	g.Expect(u.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/instance", "edge"))
	g.Expect(keys(alerts)).To(ConsistOf("ShardgateNoConnectedProxies", "ShardgateXDSNACKs", "ShardgateStatusWritesFailing",
		"ShardgateAPIServerWritesFailing", "ShardgateConfigReloadFailed", "ShardgateXDSCAExpiringSoon"))
	uses := map[string]string{
		"ShardgateNoConnectedProxies":     "shardgate_xds_gateway_proxies",
		"ShardgateXDSNACKs":               "shardgate_xds_nacks_total",
		"ShardgateStatusWritesFailing":    "workqueue_retries_total",
		"ShardgateAPIServerWritesFailing": "rest_client_requests_total",
		"ShardgateConfigReloadFailed":     "shardgate_config_last_reload_successful",
		"ShardgateXDSCAExpiringSoon":      "shardgate_xds_ca_expiry_timestamp_seconds",
	}
	for name, a := range alerts {
		g.Expect(a.Expr).To(ContainSubstring(uses[name]+"{"), name)
		// The release's own series: the job of the ServiceMonitor, which
		// is the metrics Service's name.
		g.Expect(a.Expr).To(ContainSubstring(`job="edge-shardgate-metrics"`), name)
		findUnstructured(t, rel, "Service", "edge-shardgate-metrics")
		g.Expect(a.Labels).To(HaveKeyWithValue("severity", BeElementOf("critical", "warning", "info")), name)
		g.Expect(durationRE.MatchString(a.For)).To(BeTrue(), "%s: for %q", name, a.For)
		d, err := time.ParseDuration(a.For)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d).To(BeNumerically(">=", 5*time.Minute), "%s fires on a blip", name)
		g.Expect(a.Annotations).To(HaveKeyWithValue("summary", Not(BeEmpty())), name)
		g.Expect(a.Annotations).To(HaveKeyWithValue("description", Not(BeEmpty())), name)
		checkExpr(t, a, known)
	}
	g.Expect(alerts["ShardgateXDSCAExpiringSoon"].Expr).To(HaveSuffix("- time() < 14 * 24 * 3600"))
	g.Expect(alerts["ShardgateXDSNACKs"].Expr).To(ContainSubstring("rate(shardgate_xds_nacks_total{"))
	g.Expect(alerts["ShardgateXDSNACKs"].Expr).To(HaveSuffix("[5m])) > 0"))
	g.Expect(alerts["ShardgateStatusWritesFailing"].Expr).To(ContainSubstring(`name="status"`))
	// Per Gateway, over every replica (a proxy holds its stream to one).
	g.Expect(alerts["ShardgateNoConnectedProxies"].Expr).To(HavePrefix("sum by (namespace, gateway_namespace, gateway_name) (shardgate_xds_gateway_proxies{"))
	g.Expect(alerts["ShardgateNoConnectedProxies"].Expr).To(HaveSuffix("}) == 0"))
	g.Expect(alerts["ShardgateNoConnectedProxies"].For).To(Equal("15m"))
	g.Expect(alerts["ShardgateNoConnectedProxies"].Annotations["description"]).To(ContainSubstring("{{ $labels.gateway_namespace }}/{{ $labels.gateway_name }}"))

	// The checker itself refuses what a parser would.
	for _, bad := range []alert{
		{Alert: "unknown metric", Expr: `shardgate_xds_nack_total{job="x"} > 0`},
		{Alert: "unknown label", Expr: `shardgate_xds_nacks_total{type="x"} > 0`},
		{Alert: "grouping label", Expr: `sum by (gateway) (shardgate_xds_connected_proxies{job="x"}) == 0`},
		{Alert: "unbalanced", Expr: `sum(rate(shardgate_xds_nacks_total{job="x"}[5m]) > 0`},
		{Alert: "range", Expr: `rate(shardgate_xds_nacks_total{job="x"}[5 minutes]) > 0`},
		{Alert: "dropped label", Expr: `sum by (namespace) (shardgate_xds_nacks_total{job="x"}) > 0`, Annotations: map[string]string{"d": "{{ $labels.pod }}"}},
	} {
		var found errs
		checkExpr(&found, bad, known)
		g.Expect(found).NotTo(BeEmpty(), "checkExpr accepted %s: %s", bad.Alert, bad.Expr)
	}

	// Overrides by name: fields merged, null drops, a new name adds.
	_, alerts = prometheusRule(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{
		"enabled":  true,
		"selector": `namespace="edge-system", service="edge-shardgate-metrics"`,
		"rules": map[string]any{
			"ShardgateXDSNACKs":           map[string]any{"for": "30m", "labels": map[string]any{"severity": "critical", "team": "edge"}},
			"ShardgateNoConnectedProxies": nil,
			"ShardgateTooManyClaims": map[string]any{
				"expr": `sum(shardgate_hostname_claims{state="claimed"}) > 10000`, "for": "1h",
				"labels": map[string]any{"severity": "info"}, "annotations": map[string]any{"summary": "many"},
			},
		},
	}}})
	g.Expect(alerts).NotTo(HaveKey("ShardgateNoConnectedProxies"))
	g.Expect(alerts["ShardgateXDSNACKs"].For).To(Equal("30m"))
	g.Expect(alerts["ShardgateXDSNACKs"].Labels).To(Equal(map[string]string{"severity": "critical", "team": "edge"}))
	g.Expect(alerts["ShardgateXDSNACKs"].Annotations).To(HaveKey("description"), "the fields not given are kept")
	g.Expect(alerts["ShardgateXDSNACKs"].Expr).To(ContainSubstring(`{namespace="edge-system", service="edge-shardgate-metrics"}`))
	g.Expect(alerts["ShardgateTooManyClaims"].Expr).To(Equal(`sum(shardgate_hostname_claims{state="claimed"}) > 10000`))
	for _, a := range alerts {
		checkExpr(t, a, known)
	}

	// Bad overrides are refused by name.
	for _, c := range []struct {
		rules map[string]any
		want  string
	}{
		{map[string]any{"ShardgateNew": map[string]any{"for": "5m"}}, "ShardgateNew: a new alert needs an expr"},
		{map[string]any{"ShardgateXDSNACKs": map[string]any{"for": "five minutes"}}, "ShardgateXDSNACKs/for"},
		{map[string]any{"ShardgateXDSNACKs": map[string]any{"severity": "critical"}}, "additional properties 'severity'"},
	} {
		_, err := render("edge", "edge-system", map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "rules": c.rules}}})
		g.Expect(err).To(MatchError(ContainSubstring(c.want)), "%v", c.rules)
	}
}
