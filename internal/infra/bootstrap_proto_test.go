package infra

// The bootstrap as go-control-plane protos: its one definition. Production
// renders bootstrap.yaml.tmpl, which TestBootstrapTemplate generates from
// Bootstrap and BootstrapYAML here (bootstrap.go renderBootstrap).

import (
	"fmt"
	"math"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// Bootstrap builds a Gateway's Envoy bootstrap:
//   - node: cluster and id both "<namespace>/<name>"; the Deployment passes
//     --service-node $(POD_NAME), which Envoy applies over node.id, so each
//     replica is a distinct node of the same group;
//   - dynamic resources: LDS and CDS over delta ADS (incremental xDS, v3
//     transport) to the static cluster XDSClusterName, so a change sends
//     only the resources it changed (one load assignment for an endpoint
//     change, not every one); the rest (RDS, EDS, SDS) is named by those
//     resources;
//   - XDSClusterName: STRICT_DNS to opts.XDSHost:opts.XDSPort, HTTP/2 with
//     keepalives, mutual TLS with the files of the client certificate
//     Secret (ClientCertDir), SNI opts.XDSHost, and the server certificate
//     checked against the CA and the DNS SAN opts.XDSHost;
//   - admin on 127.0.0.1:19000;
//   - the readiness listener ReadyListenerName on 0.0.0.0:19001;
//   - the metrics listener MetricsListenerName on 0.0.0.0:19002, which
//     forwards GET /stats/prometheus only to the admin interface through
//     the static cluster AdminClusterName;
//   - stats_config.stats_matcher: only StatsInclusions are kept.
func Bootstrap(gw types.NamespacedName, opts Options) (*bootstrapv3.Bootstrap, error) {
	opts = opts.withDefaults()
	ads := &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
	xds, err := xdsCluster(opts)
	if err != nil {
		return nil, err
	}
	ready, err := readyListener()
	if err != nil {
		return nil, err
	}
	metrics, err := metricsListener()
	if err != nil {
		return nil, err
	}
	b := &bootstrapv3.Bootstrap{
		Node: &corev3.Node{Id: NodeCluster(gw), Cluster: NodeCluster(gw)},
		DynamicResources: &bootstrapv3.Bootstrap_DynamicResources{
			AdsConfig: &corev3.ApiConfigSource{
				ApiType:             corev3.ApiConfigSource_DELTA_GRPC,
				TransportApiVersion: corev3.ApiVersion_V3,
				GrpcServices: []*corev3.GrpcService{{
					TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: XDSClusterName}},
				}},
				SetNodeOnFirstMessageOnly: true,
			},
			LdsConfig: ads,
			CdsConfig: proto.Clone(ads).(*corev3.ConfigSource),
		},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Listeners: []*listenerv3.Listener{ready, metrics},
			Clusters:  []*clusterv3.Cluster{xds, adminCluster()},
		},
		StatsConfig: statsConfig(),
		Admin:       &bootstrapv3.Admin{Address: socketAddress(AdminAddress, AdminPort)},
		LayeredRuntime: &bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{{
			// RE2's program size limit defaults to 100 in Envoy, which
			// refuses (NACKs) ordinary route regexes such as
			// "/users/[a-f0-9]{24}/items/[a-f0-9]{24}" and with them the
			// whole route configuration. The translator bounds regex size
			// itself (internal/gatewayapi maxRegexCost), so Envoy's check is
			// lifted; UINT32_MAX because Envoy truncates the value.
			Name: "static",
			LayerSpecifier: &bootstrapv3.RuntimeLayer_StaticLayer{StaticLayer: &structpb.Struct{Fields: map[string]*structpb.Value{
				"re2.max_program_size.error_level": structpb.NewNumberValue(math.MaxUint32),
				"re2.max_program_size.warn_level":  structpb.NewNumberValue(1000),
			}}},
		}, {
			Name:           "admin",
			LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}},
		}}},
	}
	return b, nil
}

func xdsCluster(opts Options) (*clusterv3.Cluster, error) {
	protocol, err := anypb.New(&httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{
				ConnectionKeepalive: &corev3.KeepaliveSettings{
					Interval: durationpb.New(30 * time.Second),
					Timeout:  durationpb.New(5 * time.Second),
				},
			}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: xDS protocol options: %w", err)
	}
	tlsCtx, err := anypb.New(&tlsv3.UpstreamTlsContext{
		Sni: opts.XDSHost,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			AlpnProtocols: []string{"h2"},
			TlsCertificates: []*tlsv3.TlsCertificate{{
				CertificateChain: fileSource(ClientCertDir + "/tls.crt"),
				PrivateKey:       fileSource(ClientCertDir + "/tls.key"),
			}},
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
				TrustedCa: fileSource(ClientCertDir + "/ca.crt"),
				MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
					SanType: tlsv3.SubjectAltNameMatcher_DNS,
					Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: opts.XDSHost}},
				}},
			}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: xDS TLS context: %w", err)
	}
	return &clusterv3.Cluster{
		Name:                 XDSClusterName,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
		DnsLookupFamily:      clusterv3.Cluster_V4_PREFERRED,
		ConnectTimeout:       durationpb.New(5 * time.Second),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: XDSClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: socketAddress(opts.XDSHost, opts.XDSPort),
				}},
			}}}},
		},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": protocol,
		},
		TransportSocket: &corev3.TransportSocket{
			Name:       "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tlsCtx},
		},
	}, nil
}

func readyListener() (*listenerv3.Listener, error) {
	health, err := anypb.New(&healthcheckv3.HealthCheck{
		PassThroughMode: wrapperspb.Bool(false),
		Headers: []*routev3.HeaderMatcher{{
			Name: ":path",
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_Exact{Exact: ReadyPath},
			}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: health check filter: %w", err)
	}
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: router filter: %w", err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: ReadyListenerName,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: ReadyListenerName,
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    ReadyListenerName,
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 404}},
				}},
			}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: "envoy.filters.http.health_check", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: health}},
			{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: readiness connection manager: %w", err)
	}
	return hcmListener(ReadyListenerName, ReadyPort, hcm), nil
}

// hcmListener is a static listener on all addresses at port whose one
// filter is the HTTP connection manager hcm.
func hcmListener(name string, port uint32, hcm *anypb.Any) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:    name,
		Address: socketAddress("0.0.0.0", port),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}}}},
	}
}

// BootstrapYAML renders the bootstrap as YAML (protojson, then YAML with
// sorted keys: the output is deterministic).
func BootstrapYAML(b *bootstrapv3.Bootstrap) (string, error) {
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(b)
	if err != nil {
		return "", fmt.Errorf("bootstrap: marshal: %w", err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return "", fmt.Errorf("bootstrap: YAML: %w", err)
	}
	return string(y), nil
}

func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Protocol:      corev3.SocketAddress_TCP,
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func fileSource(path string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path}}
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
	return hcmListener(MetricsListenerName, MetricsPort, hcm), nil
}

// protoBootstrapYAML is the bootstrap rendered in full from the protos,
// checked by the protos' validation, as Build rendered it before the
// template: what renderBootstrap must give byte for byte.
func protoBootstrapYAML(gw types.NamespacedName, opts Options) (string, error) {
	b, err := Bootstrap(gw, opts)
	if err != nil {
		return "", err
	}
	if err := b.ValidateAll(); err != nil {
		return "", fmt.Errorf("bootstrap of Gateway %s is invalid: %w", gw, err)
	}
	return BootstrapYAML(b)
}

// templateSentinels are two sets of values found nowhere else in the
// bootstrap. The template is the bootstrap rendered with the first set,
// each value's scalar replaced by its placeholder; the second set must give
// the same template, so a placeholder never stands for fixed text that
// happened to look like a sentinel.
var templateSentinels = []struct {
	gw   types.NamespacedName
	opts Options
}{
	{types.NamespacedName{Namespace: "template-sentinel-a", Name: "gateway-a"}, Options{XDSHost: "xds-sentinel-a.invalid", XDSPort: 54321}},
	{types.NamespacedName{Namespace: "template-sentinel-b", Name: "gateway-b"}, Options{XDSHost: "xds-sentinel-b.invalid", XDSPort: 43210}},
}

// bootstrapTemplateFromProto generates bootstrap.yaml.tmpl from Bootstrap.
func bootstrapTemplateFromProto() (string, error) {
	var tmpl string
	for i, in := range templateSentinels {
		y, err := protoBootstrapYAML(in.gw, in.opts)
		if err != nil {
			return "", err
		}
		if strings.Contains(y, "${") {
			return "", fmt.Errorf("the bootstrap holds \"${\", which the template's placeholders start with")
		}
		var pairs []string
		for _, v := range []struct {
			value       any
			placeholder string
		}{
			{NodeCluster(in.gw), templateNode},
			{in.opts.XDSHost, templateXDSHost},
			{in.opts.XDSPort, templateXDSPort},
		} {
			scalar, err := yamlScalar(v.value)
			if err != nil {
				return "", err
			}
			if !strings.Contains(y, scalar) {
				return "", fmt.Errorf("the bootstrap does not hold %s (for %s)", scalar, v.placeholder)
			}
			pairs = append(pairs, scalar, v.placeholder)
		}
		t := strings.NewReplacer(pairs...).Replace(y)
		if i > 0 && t != tmpl {
			return "", fmt.Errorf("sentinel sets 0 and %d give different templates: a placeholder replaced fixed text", i)
		}
		tmpl = t
	}
	return tmpl, nil
}
