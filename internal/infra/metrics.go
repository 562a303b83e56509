package infra

import (
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// Metrics: Envoy's Prometheus statistics, served on all addresses without
// the rest of the admin interface.
const (
	// MetricsListenerName and MetricsPort: a static listener on
	// 0.0.0.0:19002 (the container port named "metrics") that forwards
	// GET MetricsPath, and nothing else, to the admin interface through
	// the static cluster AdminClusterName. Any other path or method gets
	// 404. The port is reserved like 19000 and 19001.
	MetricsListenerName = "shardgate-metrics"
	MetricsPort         = 19002
	MetricsPath         = "/stats/prometheus"
	// AdminClusterName is the static cluster to the admin interface
	// (127.0.0.1:19000), used by the metrics listener only.
	AdminClusterName = "shardgate-admin"
)

// StatsInclusions are the statistics Envoy keeps (stats_config.
// stats_matcher.inclusion_list); every other one is never created, which
// is what bounds the series a scrape returns. Each tenant lease's Service
// port is a cluster ("<namespace>/<service>/<port>", no dots), so the
// per-cluster list is what grows with the leases: requests by code class,
// bytes each way, connection failures, timeouts and healthy members — 10
// series per cluster (StatsPerCluster). Kept too: every server.*,
// cluster_manager.*, listener_manager.*, control_plane.*, runtime.* and
// overload.* statistic (a fixed few dozen), each listener's connection
// counters, and each HTTP connection manager's request totals by code
// class, connection and byte counters and request time.
var StatsInclusions = statsInclusions()

// Envoy compiles the stats matcher before its runtime exists, so RE2's
// default program size limit (100) applies to each regex: one small regex
// per statistic rather than one alternation per tree
// (TestStatsRegexProgramSize).
func statsInclusions() []*matcherv3.StringMatcher {
	out := []*matcherv3.StringMatcher{
		prefix("server."),
		prefix("cluster_manager."),
		prefix("listener_manager."),
		prefix("control_plane."),
		prefix("runtime."),
		prefix("overload."),
	}
	for _, s := range listenerStats {
		out = append(out, regex(`^listener\..+\.`+s+`$`))
	}
	for _, s := range httpStats {
		out = append(out, regex(`^http\.[^.]+\.`+s+`$`))
	}
	for _, s := range clusterStats {
		out = append(out, regex(`^cluster\.[^.]+\.`+s+`$`))
	}
	return out
}

// The statistics kept of each listener (listener.<address>.*), HTTP
// connection manager (http.<listener name>.*) and cluster
// (cluster.<name>.*), as regex fragments.
var (
	listenerStats = []string{`downstream_cx_total`, `downstream_cx_active`, `downstream_cx_destroy`, `downstream_cx_overflow`,
		`downstream_pre_cx_timeout`, `no_filter_chain_match`, `ssl\.handshake`, `ssl\.connection_error`}
	httpStats = []string{`downstream_rq_total`, `downstream_rq_[1-5]xx`, `downstream_rq_active`, `downstream_rq_timeout`,
		`downstream_rq_time`, `downstream_cx_total`, `downstream_cx_active`, `downstream_cx_rx_bytes_total`,
		`downstream_cx_tx_bytes_total`, `downstream_cx_ssl_total`, `downstream_cx_upgrades_total`}
	clusterStats = []string{`upstream_rq_total`, `upstream_rq_[2-5]xx`, `upstream_cx_rx_bytes_total`, `upstream_cx_tx_bytes_total`,
		`upstream_cx_connect_fail`, `upstream_rq_timeout`, `membership_healthy`}
)

// StatsPerCluster is the number of statistics StatsInclusions keeps of each
// cluster: clusterStats, upstream_rq_[2-5]xx counting four.
const StatsPerCluster = 10

func prefix(p string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: p}}
}

func regex(r string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: r}}}
}
