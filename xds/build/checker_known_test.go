/*
Copyright The shardgate Authors.
*/

package build

import (
	"slices"
	"testing"
)

// TestCheckerKnowsAClusterByItsWireFormAlone: a checked cluster's digest
// is kept once, under its wire form, not under the message as well; the
// message is still recognised (not serialized again) until the memo
// adopts the wire form, after which the checker holds no message for it.
func TestCheckerKnowsAClusterByItsWireFormAlone(t *testing.T) {
	gw := propertyBase(20)
	var m Memo
	var c Checker
	res, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	clusters := slices.Clone(res.Clusters)
	if err := c.Check(res); err != nil {
		t.Fatal(err)
	}
	others := len(res.Listeners) + len(res.Secrets)
	if len(c.known) > len(clusters)+others {
		t.Fatalf("the checker knows %d digests for %d clusters and %d other resources", len(c.known), len(clusters), others)
	}
	for i, cl := range clusters {
		d, ok := c.Digest(cl)
		if !ok {
			t.Fatalf("cluster %s: the message's digest is not known", cl.GetName())
		}
		if w, ok := c.Digest(res.Clusters[i]); !ok || w != d {
			t.Fatalf("cluster %s: the message and its wire form have other digests", cl.GetName())
		}
		want, err := DigestOf(cl)
		if err != nil || want != d {
			t.Fatalf("cluster %s: digest %x, want %x (%v)", cl.GetName(), d, want, err)
		}
		// Seen again before adoption: known, not serialized again.
		e := &checkRun{c: &c}
		encoded := c.Encoded
		if got, err := e.digest(cl); err != nil || got != d || c.Encoded != encoded {
			t.Fatalf("cluster %s: seen again, serialized again (%v)", cl.GetName(), err)
		}
	}
	m.adopt(&c)
	if len(c.wire) != 0 {
		t.Fatalf("after adoption the checker holds %d messages' wire forms", len(c.wire))
	}
	for _, cl := range clusters {
		if _, ok := c.Digest(cl); ok {
			t.Fatalf("after adoption the checker still knows the message of cluster %s", cl.GetName())
		}
	}
}
