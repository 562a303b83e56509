/*
Copyright The shardgate Authors.
*/

package translate

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/shardgate/shardgate/internal/ir"
)

// Cluster is one Service port, its endpoints fetched by EDS over ADS.
func Cluster(c *ir.Cluster) *clusterv3.Cluster {
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
	if c.TLS != nil && !c.TLS.Invalid {
		out.TransportSocket = upstreamTLS(c)
	}
	return out
}

// SystemCABundle is where the proxy image keeps the system's trusted CAs
// (wellKnownCACertificates: System).
const SystemCABundle = "/etc/ssl/certs/ca-certificates.crt"

// upstreamTLS speaks TLS to the backend: the SNI, the trusted CAs (inline,
// or the system bundle), the names the certificate must carry (the
// subject alt names, else the SNI as a DNS name) and, when the Gateway
// has one, the client certificate by SDS.
func upstreamTLS(c *ir.Cluster) *corev3.TransportSocket {
	t := c.TLS
	vc := &tlsv3.CertificateValidationContext{}
	if t.SystemCAs {
		vc.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: SystemCABundle}}
	} else {
		vc.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: t.CACertificates}}
	}
	exact := func(typ tlsv3.SubjectAltNameMatcher_SanType, v string) *tlsv3.SubjectAltNameMatcher {
		return &tlsv3.SubjectAltNameMatcher{SanType: typ,
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}}}
	}
	if len(t.SubjectAltNames) == 0 {
		vc.MatchTypedSubjectAltNames = []*tlsv3.SubjectAltNameMatcher{exact(tlsv3.SubjectAltNameMatcher_DNS, t.SNI)}
	}
	for _, san := range t.SubjectAltNames {
		typ := tlsv3.SubjectAltNameMatcher_DNS
		if san.Type == ir.SANURI {
			typ = tlsv3.SubjectAltNameMatcher_URI
		}
		vc.MatchTypedSubjectAltNames = append(vc.MatchTypedSubjectAltNames, exact(typ, san.Value))
	}
	common := &tlsv3.CommonTlsContext{
		ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc},
	}
	if c.Protocol == ir.ClusterH2C {
		common.AlpnProtocols = []string{"h2"}
	}
	if t.ClientCertificate != "" {
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{Name: t.ClientCertificate, SdsConfig: adsConfigSource()}}
	}
	return &corev3.TransportSocket{
		Name: transportSocketTLS,
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(&tlsv3.UpstreamTlsContext{
			Sni: t.SNI, CommonTlsContext: common,
		})},
	}
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
