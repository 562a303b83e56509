/*
Copyright The shardgate Authors.
*/

package translate

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckerPassesGoldens(t *testing.T) {
	ins, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c Checker
	for _, in := range ins {
		res, err := Translate(loadGateway(t, in))
		if err != nil {
			t.Fatal(err)
		}
		digests, err := c.Check(res)
		if err != nil {
			t.Fatalf("%s: Check: %v", in, err)
		}
		for _, rc := range res.Routes {
			want, err := DigestOf(rc)
			if err != nil {
				t.Fatal(err)
			}
			if digests[rc] != want {
				t.Errorf("%s: route configuration %s: Check's digest differs from DigestOf", in, rc.GetName())
			}
		}
	}
}

// TestCheckerValidatesOnlyChanges: a check of the same config validates
// nothing; a one-route change validates one virtual host; and a resource
// broken after it once passed is still refused.
func TestCheckerValidatesOnlyChanges(t *testing.T) {
	gw := largeGateway(2000)
	res, err := Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	var c Checker
	first, err := c.Check(res)
	if err != nil {
		t.Fatal(err)
	}
	total := c.Validated
	vhosts := 0
	for _, rc := range res.Routes {
		vhosts += len(rc.VirtualHosts)
	}
	if total < vhosts {
		t.Fatalf("first check validated %d messages, fewer than the %d virtual hosts", total, vhosts)
	}

	again, err := Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Check(again)
	if err != nil {
		t.Fatal(err)
	}
	if c.Validated != 0 {
		t.Errorf("unchanged config: validated %d messages, want 0", c.Validated)
	}
	if first[res.Routes[0]] != second[again.Routes[0]] {
		t.Error("unchanged route configuration got a different digest")
	}

	gw.Listeners[0].VirtualHosts[3].Routes[0].Match.Path.Value = "/changed"
	changed, err := Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	third, err := c.Check(changed)
	if err != nil {
		t.Fatal(err)
	}
	if c.Validated != 1 {
		t.Errorf("one route changed: validated %d messages, want 1", c.Validated)
	}
	if third[changed.Routes[0]] == second[again.Routes[0]] {
		t.Error("changed route configuration kept its digest")
	}

	// Break a virtual host that passed before: still refused, and the
	// refusal names it.
	broken, err := Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	broken.Routes[0].VirtualHosts[5].Domains = nil
	if _, err := c.Check(broken); err == nil || !strings.Contains(err.Error(), "virtual host "+broken.Routes[0].VirtualHosts[5].GetName()) {
		t.Fatalf("a virtual host without domains passed, or the error does not name it: %v", err)
	}
	broken.Routes[0].VirtualHosts[5].Domains = []string{"x.example.com"}
	broken.Clusters[7].Name = "default/gone/80"
	if _, err := c.Check(broken); err == nil || !strings.Contains(err.Error(), `not found`) {
		t.Fatalf("a route to a renamed cluster passed: %v", err)
	}
}

func BenchmarkCheckOneRouteChange(b *testing.B) {
	gw := largeGateway(10_000)
	var c Checker
	res, err := Translate(gw)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Check(res); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		gw.Listeners[0].VirtualHosts[i%len(gw.Listeners[0].VirtualHosts)].Routes[0].Match.Path.Value = "/v" + strings.Repeat("x", i%7)
		res, err := Translate(gw)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := c.Check(res); err != nil {
			b.Fatal(err)
		}
	}
}
