/*
Copyright The shardgate Authors.
*/

package build

import (
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/irtest"
	"github.com/shardgate/shardgate/xds/translate"
)

// A cluster presenting a client certificate whose secret is not published
// would make Envoy wait for it forever: the Checker refuses it, as
// translate.Validate does.
func TestUpstreamClientCertificateMustExist(t *testing.T) {
	res, err := translate.Translate(irtest.TLSGateway("default/client"))
	if err != nil {
		t.Fatal(err)
	}
	want := `cluster "default/b/443": secret "default/client" not found`
	var c Checker
	if err := c.Check(res); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Checker: %v, want %q", err, want)
	}
	res, err = translate.Translate(irtest.TLSGateway("default/client", "default/client"))
	if err != nil {
		t.Fatal(err)
	}
	var ok Checker
	if err := ok.Check(res); err != nil {
		t.Fatalf("with the secret published: %v", err)
	}
}

// The memo rebuilds a cluster whose TLS changed (a policy edit keeps the
// cluster's name and protocol).
func TestMemoRebuildsClusterOnTLSChange(t *testing.T) {
	var m Memo
	gw := irtest.TLSGateway("")
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	next := irtest.TLSGateway("")
	next.Clusters[0].TLS.SNI = "other.example.com"
	second, err := m.Translate(next)
	if err != nil {
		t.Fatal(err)
	}
	if first.Clusters[0] == second.Clusters[0] {
		t.Fatal("the memo kept the cluster whose TLS changed")
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if err := second.Clusters[0].GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.GetSni() != "other.example.com" {
		t.Fatalf("SNI %q, want other.example.com", ctx.GetSni())
	}
	// An invalid policy: no transport socket (and no endpoints:
	// xds/endpoints gives it an empty load assignment).
	bad := irtest.TLSGateway("")
	bad.Clusters[0].TLS = &ir.UpstreamTLS{Invalid: true}
	third, err := m.Translate(bad)
	if err != nil {
		t.Fatal(err)
	}
	if third.Clusters[0].GetTransportSocket() != nil {
		t.Fatalf("an invalid policy's cluster must have no transport socket: %v", third.Clusters[0])
	}
}
