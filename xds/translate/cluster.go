/*
Copyright The shardgate Authors.
*/

package translate

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/shardgate/shardgate/internal/ir"
)

// cluster is one Service port, its endpoints fetched by EDS over ADS.
func cluster(c *ir.Cluster) *clusterv3.Cluster {
	out := &clusterv3.Cluster{
		Name:                 c.Name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsConfigSource()},
		ConnectTimeout:       duration(connectTimeout),
		LbPolicy:             clusterv3.Cluster_ROUND_ROBIN,
	}
	if c.Protocol == ir.ClusterH2C {
		out.TypedExtensionProtocolOptions = map[string]*anypb.Any{
			upstreamHTTPProtocolOptions: mustAny(http2Options(c.WebSocket)),
		}
	}
	return out
}

// http2Options speaks h2c to the backend. A WebSocket backend behind h2
// needs extended CONNECT (RFC 8441), which Envoy sends only with
// allow_connect.
func http2Options(websocket bool) *upstreamhttpv3.HttpProtocolOptions {
	h2 := &corev3.Http2ProtocolOptions{}
	if websocket {
		h2.AllowConnect = true
	}
	return &upstreamhttpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_{
			ExplicitHttpConfig: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{
					Http2ProtocolOptions: h2,
				},
			},
		},
	}
}
