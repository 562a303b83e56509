package infra

import (
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
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

func statsConfig() *metricsv3.StatsConfig {
	return &metricsv3.StatsConfig{
		StatsMatcher: &metricsv3.StatsMatcher{StatsMatcher: &metricsv3.StatsMatcher_InclusionList{
			InclusionList: &matcherv3.ListStringMatcher{Patterns: StatsInclusions},
		}},
	}
}

func adminCluster() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 AdminClusterName,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(time.Second),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: AdminClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: socketAddress(AdminAddress, AdminPort),
				}},
			}}}},
		},
	}
}

// metricsListener routes GET MetricsPath (exactly: the path without its
// query) to AdminClusterName and answers everything else 404, so the
// admin interface's other endpoints (which can drain, stop or reconfigure
// Envoy) stay out of reach.
func metricsListener() (*listenerv3.Listener, error) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: router filter: %w", err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: MetricsListenerName,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: MetricsListenerName,
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    MetricsListenerName,
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match: &routev3.RouteMatch{
						PathSpecifier: &routev3.RouteMatch_Path{Path: MetricsPath},
						Headers: []*routev3.HeaderMatcher{{
							Name: ":method",
							HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
								MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "GET"},
							}},
						}},
					},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{
						ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: AdminClusterName},
					}},
				}, {
					Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 404}},
				}},
			}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: metrics connection manager: %w", err)
	}
	return &listenerv3.Listener{
		Name:    MetricsListenerName,
		Address: socketAddress("0.0.0.0", MetricsPort),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}}}},
	}, nil
}
