/*
Copyright The shardgate Authors.
*/

package translate

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/irtest"
)

// A cluster presenting a client certificate whose secret is not published
// would make Envoy wait for it forever: Validate refuses it (and the
// Checker of xds/build, tested there).
func TestUpstreamClientCertificateMustExist(t *testing.T) {
	res, err := Translate(irtest.TLSGateway("default/client"))
	if err != nil {
		t.Fatal(err)
	}
	want := `cluster "default/b/443": secret "default/client" not found`
	if err := Validate(res); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Validate: %v, want %q", err, want)
	}
	res, err = Translate(irtest.TLSGateway("default/client", "default/client"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(res); err != nil {
		t.Fatalf("with the secret published: %v", err)
	}
}
