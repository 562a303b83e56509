/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestSecretName(t *testing.T) {
	if got, want := SecretName("App.Example.COM"), "shardgate-tls.app.example.com"; got != want {
		t.Fatalf("SecretName = %q, want %q", got, want)
	}
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	got := SecretName(long)
	if len(got) > 253 || !IsSecretName(got) || got == SecretName(long[:len(long)-1]+"e") {
		t.Fatalf("SecretName(long) = %q", got)
	}
	for _, h := range []string{"x.example", long} {
		if errs := validation.IsDNS1123Subdomain(SecretName(h)); len(errs) > 0 {
			t.Fatalf("SecretName(%q) is not an object name: %v", h, errs)
		}
	}
}
