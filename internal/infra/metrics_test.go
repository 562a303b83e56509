package infra

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"k8s.io/apimachinery/pkg/types"
)

var compiled = map[string]*regexp.Regexp{}

// matches applies an Envoy StringMatcher to s: exact, prefix, suffix and
// contains compare bytes (ignore_case folds ASCII), safe_regex is RE2 and
// must match the whole string.
func matches(t *testing.T, m *matcherv3.StringMatcher, s string) bool {
	t.Helper()
	fold := func(x string) string {
		if m.GetIgnoreCase() {
			return strings.ToLower(x)
		}
		return x
	}
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		return fold(s) == fold(p.Exact)
	case *matcherv3.StringMatcher_Prefix:
		return strings.HasPrefix(fold(s), fold(p.Prefix))
	case *matcherv3.StringMatcher_Suffix:
		return strings.HasSuffix(fold(s), fold(p.Suffix))
	case *matcherv3.StringMatcher_Contains:
		return strings.Contains(fold(s), fold(p.Contains))
	case *matcherv3.StringMatcher_SafeRegex:
		re, ok := compiled[p.SafeRegex.GetRegex()]
		if !ok {
			var err error
			if re, err = regexp.Compile(`^(?:` + p.SafeRegex.GetRegex() + `)$`); err != nil {
				t.Fatalf("regex %q is not RE2: %v", p.SafeRegex.GetRegex(), err)
			}
			compiled[p.SafeRegex.GetRegex()] = re
		}
		return re.MatchString(s)
	}
	t.Fatalf("unsupported matcher %v", m)
	return false
}

// kept applies the bootstrap's stats_config.stats_matcher to a stat name.
// No matcher keeps everything (Envoy's default).
func keptBy(t *testing.T) func(string) bool {
	t.Helper()
	b, err := Bootstrap(types.NamespacedName{Namespace: "infra", Name: "edge"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sm := b.GetStatsConfig().GetStatsMatcher()
	return func(name string) bool {
		if sm == nil {
			return true
		}
		if sm.GetRejectAll() {
			return false
		}
		if inc := sm.GetInclusionList(); inc != nil {
			for _, m := range inc.GetPatterns() {
				if matches(t, m, name) {
					return true
				}
			}
			return false
		}
		if exc := sm.GetExclusionList(); exc != nil {
			for _, m := range exc.GetPatterns() {
				if matches(t, m, name) {
					return false
				}
			}
		}
		return true
	}
}

func clusterStatNames(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "envoy-cluster-stats.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 250 {
		t.Fatalf("only %d cluster statistics listed", len(out))
	}
	return out
}

// MaxSeriesPerCluster and MaxSeriesAt10kLeases are the stated bounds: the
// statistics kept of each cluster (each lease's Service port is one), and
// so of 10,000 leases.
const (
	MaxSeriesPerCluster  = 10
	MaxSeriesAt10kLeases = 100_000
)

// Of every statistic Envoy keeps per cluster (testdata, from Envoy's
// cluster_stats.rst), the stats matcher keeps exactly the per-lease
// request and byte counters an operator needs; the rest is never created.
func TestStatsMatcherBoundsSeriesPerCluster(t *testing.T) {
	kept := keptBy(t)
	names := clusterStatNames(t)
	var got []string
	for _, n := range names {
		// A lease's cluster is "<namespace>/<service>/<port>".
		if kept("cluster.lease-ns/web/8080." + n) {
			got = append(got, n)
		}
	}
	sort.Strings(got)
	want := []string{
		"membership_healthy", "upstream_cx_connect_fail", "upstream_cx_rx_bytes_total", "upstream_cx_tx_bytes_total",
		"upstream_rq_2xx", "upstream_rq_3xx", "upstream_rq_4xx", "upstream_rq_5xx", "upstream_rq_timeout", "upstream_rq_total",
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("kept per cluster %v, want %v", got, want)
	}
	if len(got) != StatsPerCluster || len(got) > MaxSeriesPerCluster {
		t.Errorf("%d series per cluster of %d listed; bound %d (StatsPerCluster %d)", len(got), len(names), MaxSeriesPerCluster, StatsPerCluster)
	}
	// 10,000 leases, each its own cluster with the same statistics: the
	// count per cluster does not depend on the cluster's name (checked on
	// 200 names of every length and shape), so the total is 10,000 times
	// it.
	for i := range 200 {
		cluster := "cluster.lease-" + strings.Repeat("x", i%37) + "-ns/svc-" + strconv.Itoa(i*7919) + "/" + strconv.Itoa(1+i*311%65535) + "."
		n := 0
		for _, name := range names {
			if kept(cluster + name) {
				n++
			}
		}
		if n != len(got) {
			t.Fatalf("cluster %s keeps %d series, %q keeps %d", cluster, n, "lease-ns/web/8080", len(got))
		}
	}
	total := 10_000 * len(got)
	t.Logf("%d of %d cluster statistics kept per cluster; %d series at 10,000 leases (bound %d)", len(got), len(names), total, MaxSeriesAt10kLeases)
	if total > MaxSeriesAt10kLeases {
		t.Errorf("%d series at 10,000 leases, bound %d", total, MaxSeriesAt10kLeases)
	}
}

// The fixed statistics an operator needs are kept, the detailed ones
// dropped.
func TestStatsMatcherKeepsServerListenerAndHTTPTotals(t *testing.T) {
	kept := keptBy(t)
	for name, want := range map[string]bool{
		"server.live":                                        true,
		"server.memory_allocated":                            true,
		"cluster_manager.active_clusters":                    true,
		"control_plane.connected_state":                      true,
		"listener.0.0.0.0_80.downstream_cx_total":            true,
		"listener.0.0.0.0_443.ssl.handshake":                 true,
		"listener.0.0.0.0_80.downstream_cx_length_ms":        false,
		"listener.0.0.0.0_80.http.http-80.downstream_rq_2xx": false,
		"http.http-80.downstream_rq_total":                   true,
		"http.http-80.downstream_rq_5xx":                     true,
		"http.http-80.downstream_cx_rx_bytes_total":          true,
		"http.http-80.downstream_rq_time":                    true,
		"http.http-80.rds.http-80.update_success":            false,
		"http.http-80.downstream_rq_http1_total":             false,
		"cluster.ns/svc/80.external.upstream_rq_2xx":         false,
		"cluster.ns/svc/80.upstream_rq_503":                  false,
		"cluster.ns/svc/80.upstream_rq_time":                 false,
		"cluster.shardgate-xds.upstream_cx_connect_fail":     true,
	} {
		if got := kept(name); got != want {
			t.Errorf("%s kept = %v, want %v", name, got, want)
		}
	}
}

// The metrics listener serves GET /stats/prometheus from the admin
// interface and nothing else; the admin interface stays on loopback.
func TestMetricsListener(t *testing.T) {
	b, err := Bootstrap(types.NamespacedName{Namespace: "infra", Name: "edge"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a := b.Admin.GetAddress().GetSocketAddress(); a.GetAddress() != "127.0.0.1" || a.GetPortValue() != AdminPort {
		t.Errorf("admin on %v", a)
	}
	var found bool
	for _, l := range b.StaticResources.Listeners {
		if l.Name != MetricsListenerName {
			continue
		}
		found = true
		if a := l.Address.GetSocketAddress(); a.GetAddress() != "0.0.0.0" || a.GetPortValue() != MetricsPort {
			t.Errorf("metrics listener on %v", a)
		}
		var hcm hcmv3.HttpConnectionManager
		if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		if err := hcm.ValidateAll(); err != nil {
			t.Fatal(err)
		}
		vhs := hcm.GetRouteConfig().GetVirtualHosts()
		if len(vhs) != 1 {
			t.Fatalf("%d virtual hosts", len(vhs))
		}
		toAdmin := 0
		for _, r := range vhs[0].Routes {
			if r.GetRoute() == nil {
				if r.GetDirectResponse().GetStatus() != 404 {
					t.Errorf("route %v", r)
				}
				continue
			}
			toAdmin++
			m := r.GetMatch()
			if m.GetPath() != MetricsPath || len(m.GetHeaders()) != 1 || m.GetHeaders()[0].GetName() != ":method" ||
				m.GetHeaders()[0].GetStringMatch().GetExact() != "GET" || r.GetRoute().GetCluster() != AdminClusterName {
				t.Errorf("route to the admin interface matches more than GET %s: %v", MetricsPath, r)
			}
		}
		if toAdmin != 1 {
			t.Errorf("%d routes reach the admin interface", toAdmin)
		}
	}
	if !found {
		t.Fatal("no metrics listener")
	}
	var admin bool
	for _, c := range b.StaticResources.Clusters {
		if c.Name == AdminClusterName {
			admin = true
			ep := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			if ep.GetAddress() != AdminAddress || ep.GetPortValue() != AdminPort {
				t.Errorf("admin cluster points at %v", ep)
			}
		}
	}
	if !admin {
		t.Error("no admin cluster")
	}
}

// Envoy builds the stats matcher before its runtime layers exist, so each
// regex must fit RE2's default max_program_size of 100 (Envoy refuses a
// larger one and does not start). Go's regexp/syntax is RE2's compiler;
// its instruction count stands for RE2's program size.
func TestStatsRegexProgramSize(t *testing.T) {
	const maxProgramSize = 100
	n := 0
	for _, m := range StatsInclusions {
		r := m.GetSafeRegex().GetRegex()
		if r == "" {
			continue
		}
		n++
		re, err := syntax.Parse(r, syntax.Perl)
		if err != nil {
			t.Fatalf("%q: %v", r, err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		if len(prog.Inst) > maxProgramSize {
			t.Errorf("%q compiles to %d instructions, over RE2's default limit %d", r, len(prog.Inst), maxProgramSize)
		}
	}
	if n == 0 {
		t.Fatal("no regex checked")
	}
}
