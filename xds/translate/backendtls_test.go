/*
Copyright The shardgate Authors.
*/

package translate

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/ir"
)

func tlsGateway(client string, secrets ...string) *ir.Gateway {
	gw := &ir.Gateway{Namespace: "default", Name: "gw", Clusters: []*ir.Cluster{{
		Name: "default/b/443", Protocol: ir.ClusterHTTP1,
		Service: ir.ServicePort{Namespace: "default", Name: "b", Port: "https"},
		TLS:     &ir.UpstreamTLS{SNI: "b.example.com", CACertificates: "-----BEGIN CERTIFICATE-----\n", ClientCertificate: client},
	}}}
	for _, s := range secrets {
		gw.Secrets = append(gw.Secrets, ir.Secret{Name: s, Cert: []byte("c"), Key: []byte("k")})
	}
	return gw
}

// A cluster presenting a client certificate whose secret is not published
// would make Envoy wait for it forever: Validate refuses it (and the
// Checker of xds/build, tested there).
func TestUpstreamClientCertificateMustExist(t *testing.T) {
	res, err := Translate(tlsGateway("default/client"))
	if err != nil {
		t.Fatal(err)
	}
	want := `cluster "default/b/443": secret "default/client" not found`
	if err := Validate(res); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Validate: %v, want %q", err, want)
	}
	res, err = Translate(tlsGateway("default/client", "default/client"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(res); err != nil {
		t.Fatalf("with the secret published: %v", err)
	}
}
