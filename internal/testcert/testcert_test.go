/*
Copyright The shardgate Authors.
*/

package testcert

import (
	"crypto/tls"
	"slices"
	"testing"
)

func TestSelfSigned(t *testing.T) {
	crt, key := Pair(t, "a.example", "*.b.example")
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pair.Leaf.DNSNames, []string{"a.example", "*.b.example"}) || pair.Leaf.Subject.CommonName != "a.example" {
		t.Fatalf("leaf: %v %q", pair.Leaf.DNSNames, pair.Leaf.Subject.CommonName)
	}
	if err := pair.Leaf.VerifyHostname("x.b.example"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SelfSigned(); err == nil {
		t.Fatal("a certificate for no name")
	}
}
