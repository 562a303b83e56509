/*
Copyright The shardgate Authors.
*/

package translate

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/irtest"
)

// A filter chain whose client validation names a secret that is not
// published is refused before Envoy sees it.
func TestClientValidationSecretMustExist(t *testing.T) {
	for _, in := range []string{"testdata/https-client-validation.in.yaml", "testdata/https-client-validation-insecure-fallback.in.yaml"} {
		gw := irtest.LoadGateway(t, in)
		res, err := Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(res); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		for i, s := range res.Secrets {
			if s.GetName() == "client-ca:443" {
				res.Secrets = append(res.Secrets[:i:i], res.Secrets[i+1:]...)
				break
			}
		}
		err = Validate(res)
		if err == nil || !strings.Contains(err.Error(), `validation secret "client-ca:443" not found`) {
			t.Fatalf("%s: Validate without the CA secret = %v", in, err)
		}
	}
}
