/*
Copyright The shardgate Authors.
*/

package translate

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/shardgate/shardgate/internal/ir"
)

// Secret is a certificate and key, inline, served by SDS under the IR name;
// or, for a CA bundle, a validation context trusting it.
func Secret(s *ir.Secret) *tlsv3.Secret {
	if len(s.CA) > 0 {
		return &tlsv3.Secret{
			Name: s.Name,
			Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
				TrustedCa: inlineBytes(s.CA),
			}},
		}
	}
	return &tlsv3.Secret{
		Name: s.Name,
		Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: inlineBytes(s.Cert),
			PrivateKey:       inlineBytes(s.Key),
		}},
	}
}

func inlineBytes(b []byte) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
}
