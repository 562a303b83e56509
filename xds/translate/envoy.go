/*
Copyright The shardgate Authors.
*/

package translate

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Extension names as Envoy registers them.
const (
	filterHTTPConnectionManager = "envoy.filters.network.http_connection_manager"
	filterTCPProxy              = "envoy.filters.network.tcp_proxy"
	filterTLSInspector          = "envoy.filters.listener.tls_inspector"
	filterProxyProtocol         = "envoy.filters.listener.proxy_protocol"
	accessLoggerFile            = "envoy.access_loggers.file"
	filterRouter                = "envoy.filters.http.router"
	filterCORS                  = "envoy.filters.http.cors"
	filterBuffer                = "envoy.filters.http.buffer"
	transportSocketTLS          = "envoy.transport_sockets.tls"
	upstreamHTTPProtocolOptions = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

// InvalidBackendCluster is the cluster that unresolved backends are sent to.
// It is never published: Envoy answers HTTP requests routed to it with 500
// (cluster_not_found_response_code) and closes TCP connections. The colon
// keeps it from colliding with "<namespace>/<service>/<port>" names.
const InvalidBackendCluster = "shardgate:invalid-backend"

// connectTimeout bounds upstream connection establishment.
const connectTimeout = 5 * time.Second

// adsConfigSource says "this resource comes over the same ADS stream".
func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

// mustAny packs m. Packing a well-formed generated message cannot fail short
// of running out of memory, so a failure is a programming error.
//
// The bytes are deterministic (map entries sorted, as in a JSON access
// log format), so that the same message always packs the same way and an
// unchanged resource never looks changed to a proxy.
func mustAny(m proto.Message) *anypb.Any {
	a := &anypb.Any{}
	err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true})
	if err != nil {
		panic("translate: pack " + string(m.ProtoReflect().Descriptor().FullName()) + ": " + err.Error())
	}
	return a
}

func duration(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func u32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

func boolean(v bool) *wrapperspb.BoolValue { return wrapperspb.Bool(v) }

// socketAddress is ip:port over TCP.
func socketAddress(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Protocol:      corev3.SocketAddress_TCP,
		Address:       ip,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}
