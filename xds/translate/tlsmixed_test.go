/*
Copyright The shardgate Authors.
*/

package translate

import (
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/shardgate/shardgate/internal/irtest"
)

// On a TLSMixed port, the chains of routes with certificates terminate TLS
// with exactly those certificates, and the others have no transport socket
// (the TLS stream is passed through); every chain matches its SNI.
func TestTLSMixedChains(t *testing.T) {
	gw := irtest.LoadGateway(t, "testdata/tls-mixed.in.yaml")
	res, err := Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Listeners) != 1 {
		t.Fatalf("%d listeners, want 1", len(res.Listeners))
	}
	l := res.Listeners[0]
	if len(l.FilterChains) != len(gw.Listeners[0].TLSRoutes) {
		t.Fatalf("%d chains for %d routes", len(l.FilterChains), len(gw.Listeners[0].TLSRoutes))
	}
	terminated := 0
	for i, tr := range gw.Listeners[0].TLSRoutes {
		fc := l.FilterChains[i]
		if fc.Name != tr.Name || len(fc.FilterChainMatch.GetServerNames()) != 1 || fc.FilterChainMatch.ServerNames[0] != tr.SNI {
			t.Errorf("chain %d = %s %v, want %s for %s", i, fc.Name, fc.FilterChainMatch.GetServerNames(), tr.Name, tr.SNI)
		}
		if len(tr.Certificates) == 0 {
			if fc.TransportSocket != nil {
				t.Errorf("%s passes through but terminates TLS", tr.Name)
			}
			continue
		}
		terminated++
		var ctx tlsv3.DownstreamTlsContext
		if err := fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(&ctx); err != nil {
			t.Fatalf("%s: %v", tr.Name, err)
		}
		sds := ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()
		if len(sds) != 1 || sds[0].Name != tr.Certificates[0].Name {
			t.Errorf("%s terminates with %v, want %s", tr.Name, sds, tr.Certificates[0].Name)
		}
	}
	if terminated != 1 {
		t.Errorf("%d terminating chains, want 1", terminated)
	}
}
