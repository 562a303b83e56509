/*
Copyright The shardgate Authors.
*/

package build

import (
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/xds/translate"
)

// TestAutoTLSRouteChangeLooksAtItsTablesAlone: on a shard with automatic
// HTTPS (a route table and a secret per name), a route change (a patch)
// has the memo build, and the checker look at, the route tables of the
// changed host alone (its per-name table, and the HTTP listener's), not
// one per name; the other tables are the very messages published before,
// the secret list is the very list, and the config equals a translation
// from scratch.
func TestAutoTLSRouteChangeLooksAtItsTablesAlone(t *testing.T) {
	const n = 40
	st, tr, facts, secrets, routes := autoTLSShard(t, n)
	b := NewBuilder(Options{})
	defer b.Stop()
	build := func(prev *Config) *Config {
		t.Helper()
		gw := tr.Translate(facts).Gateways[0]
		c, err := b.Build(gw, prev)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := translate.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		sameTablesAndSecrets(t, c, fresh)
		return c
	}
	c1 := build(nil)
	if len(c1.Resources.Routes) != n+1 {
		t.Fatalf("%d route tables, want %d", len(c1.Resources.Routes), n+1)
	}
	for i := range 3 {
		r := routes[3+i].DeepCopy()
		r.Generation++
		path, prefix := "/v2", gatewayv1.PathMatchPathPrefix
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
		st.Upsert(r)
		c2 := build(c1)
		if got := b.memo.visited; got > 2 {
			t.Errorf("change %d: the memo looked at %d route tables, want the changed host's (at most 2)", i, got)
		}
		if got := b.checker.looked; got > 2 {
			t.Errorf("change %d: the checker looked at %d route tables, want the changed host's (at most 2)", i, got)
		}
		if !slices.Equal(c2.Resources.Secrets, c1.Resources.Secrets) || &c2.Resources.Secrets[0] != &c1.Resources.Secrets[0] {
			t.Errorf("change %d: the secret list is not the one published before", i)
		}
		changed := 0
		for j, rc := range c2.Resources.Routes {
			if rc != c1.Resources.Routes[j] {
				changed++
				if name := rc.GetName(); name != "http" && !strings.HasSuffix(name, string(routes[3+i].Spec.Hostnames[0])) && !strings.HasPrefix(name, "http-") {
					t.Errorf("change %d: route table %s was published anew", i, name)
				}
			}
		}
		if changed == 0 || changed > 2 {
			t.Errorf("change %d: %d route tables published anew", i, changed)
		}
		// The route tables' version moves, with the changed tables'
		// alone; the secrets' stays.
		if c2.Versions[resourcev3.RouteType] == c1.Versions[resourcev3.RouteType] {
			t.Errorf("change %d: the route tables' version did not move", i)
		}
		if c2.Versions[resourcev3.SecretType] != c1.Versions[resourcev3.SecretType] {
			t.Errorf("change %d: the secrets' version moved", i)
		}
		v1, v2 := c1.Snapshot.VersionMap[resourcev3.RouteType], c2.Snapshot.VersionMap[resourcev3.RouteType]
		moved := 0
		for name, v := range v2 {
			if v1[name] != v {
				moved++
			}
		}
		if len(v2) != len(v1) || moved != changed {
			t.Errorf("change %d: %d of %d route table versions moved, want the %d published anew", i, moved, len(v2), changed)
		}
		if tr.Stats.Patched == 0 {
			t.Fatalf("the route change was not a patch: %+v", tr.Stats)
		}
		c1 = c2
	}
	// A name's certificate goes, then comes back (a full translation):
	// no other host is built again, and every other table is the one
	// published before.
	for _, sec := range []func(){func() { st.Delete(secrets[9]) }, func() { st.Upsert(secrets[9]) }} {
		sec()
		c2 := build(c1)
		if got := b.memo.rebuilt; got > 3 {
			t.Errorf("a certificate coming or going built %d virtual hosts again, want at most the name's own (its table's two, its plain-HTTP host)", got)
		}
		prev := map[string]*routev3.RouteConfiguration{}
		for _, rc := range c1.Resources.Routes {
			prev[rc.GetName()] = rc
		}
		for _, rc := range c2.Resources.Routes {
			if old := prev[rc.GetName()]; old != nil && old != rc && !strings.HasSuffix(rc.GetName(), "name-9.example.org") {
				t.Errorf("route table %s was published anew", rc.GetName())
			}
		}
		c1 = c2
	}
}

// TestCheckerRefusesAChangedTableAmongKeptOnes: after a check that
// passed, a check looks at the route tables that are not that check's
// messages alone, and still refuses a changed table with two virtual
// hosts of one name, one sending to a cluster that does not exist, and
// two tables of one name; a table that is a new message with the same
// content passes, looked at alone.
func TestCheckerRefusesAChangedTableAmongKeptOnes(t *testing.T) {
	_, tr, facts, _, _ := autoTLSShard(t, 30)
	res, err := translate.Translate(tr.Translate(facts).Gateways[0])
	if err != nil {
		t.Fatal(err)
	}
	with := func(edit func(routes []*routev3.RouteConfiguration) []*routev3.RouteConfiguration) *translate.Resources {
		out := *res
		out.Listeners, out.Clusters, out.Secrets = slices.Clone(res.Listeners), slices.Clone(res.Clusters), slices.Clone(res.Secrets)
		out.Routes = edit(slices.Clone(res.Routes))
		return &out
	}
	same := func(routes []*routev3.RouteConfiguration) []*routev3.RouteConfiguration { return routes }
	c := &Checker{}
	if err := c.Check(with(same)); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(with(same)); err != nil || c.looked != 0 {
		t.Fatalf("the same tables again: %v, %d looked at", err, c.looked)
	}
	const k = 7
	if err := c.Check(with(func(routes []*routev3.RouteConfiguration) []*routev3.RouteConfiguration {
		routes[k] = proto.Clone(routes[k]).(*routev3.RouteConfiguration)
		return routes
	})); err != nil || c.looked != 1 {
		t.Fatalf("one table a new message: %v, %d looked at, want 1", err, c.looked)
	}
	if err := c.Check(with(same)); err != nil {
		t.Fatal(err)
	}
	dup := with(func(routes []*routev3.RouteConfiguration) []*routev3.RouteConfiguration {
		rc := proto.Clone(routes[k]).(*routev3.RouteConfiguration)
		rc.VirtualHosts = append(rc.VirtualHosts, proto.Clone(rc.VirtualHosts[0]).(*routev3.VirtualHost))
		routes[k] = rc
		return routes
	})
	if err := c.Check(dup); err == nil || !strings.Contains(err.Error(), "duplicate virtual host") {
		t.Fatalf("a changed table with two hosts of one name passed: %v", err)
	}
	if err := c.Check(with(same)); err != nil {
		t.Fatal(err)
	}
	missing := with(func(routes []*routev3.RouteConfiguration) []*routev3.RouteConfiguration {
		rc := proto.Clone(routes[k]).(*routev3.RouteConfiguration)
		edited := false
		for _, v := range rc.VirtualHosts {
			for _, r := range v.Routes {
				if a := r.GetRoute(); a != nil && !edited {
					a.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: "nowhere/none/80"}
					edited = true
				}
			}
		}
		if !edited {
			t.Fatalf("table %s has no route to a cluster", rc.GetName())
		}
		routes[k] = rc
		return routes
	})
	if err := c.Check(missing); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a changed table sending to a missing cluster passed: %v", err)
	}
	if err := c.Check(with(same)); err != nil {
		t.Fatal(err)
	}
	twice := with(func(routes []*routev3.RouteConfiguration) []*routev3.RouteConfiguration {
		return slices.Insert(routes, k, proto.Clone(routes[k]).(*routev3.RouteConfiguration))
	})
	if err := c.Check(twice); err == nil || !strings.Contains(err.Error(), "duplicate name") {
		t.Fatalf("two route tables of one name passed: %v", err)
	}
}
