/*
Copyright The shardgate Authors.
*/

package build

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// TestCheckerAgreesWithValidate drives a Memo and a Checker through random
// edits of one Gateway's IR, made the way the Gateway API layer makes them
// (new arrays for what changed, the rest shared): after every step the
// incremental check refuses exactly what a full Validate of a fresh
// translation refuses, and what it passes is published as that
// translation, byte for byte once read back.
//
// Run twice: as a bare Memo and Checker, and as the xDS server drives them,
// with the memo adopting the checked wire forms of its virtual hosts,
// clusters and load assignments after each check that passed (Memo.adopt).
func TestCheckerAgreesWithValidate(t *testing.T) {
	bareAndAdopting(t, 8, checkerAgreesWithValidate)
}

// bareAndAdopting runs property for seeds 0 to seeds-1, without and with
// the memo adopting after each check that passed.
func bareAndAdopting(t *testing.T, seeds uint64, property func(t *testing.T, seed uint64, adopt bool)) {
	for _, adopt := range []bool{false, true} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("adopt=%v/%d", adopt, seed), func(t *testing.T) { property(t, seed, adopt) })
		}
	}
}

func checkerAgreesWithValidate(t *testing.T, seed uint64, adopt bool) {
	rng := rand.New(rand.NewPCG(seed, 1))
	gw := propertyBase(12)
	var m Memo
	var c Checker
	refused := 0
	for step := range 150 {
		gw = propertyEdit(rng, gw)
		res, err := m.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		want, err := translate.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		wantErr := translate.Validate(want)
		gotErr := c.Check(res)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("step %d: incremental check says %v, full validation says %v", step, gotErr, wantErr)
		}
		if gotErr != nil {
			refused++
			continue
		}
		if adopt {
			m.adopt(&c)
			for i, e := range m.clusters {
				if len(e.cluster.ProtoReflect().GetUnknown()) == 0 {
					t.Fatalf("step %d: the memo still holds cluster %d (%s) as a message after adopt", step, i, e.cluster.GetName())
				}
			}
			for table, hosts := range m.tables {
				for _, e := range hosts {
					if len(e.vh.ProtoReflect().GetUnknown()) == 0 {
						t.Fatalf("step %d: the memo still holds virtual host %s of %s as a message after adopt", step, e.name, table)
					}
				}
			}
		}
		for i, rc := range res.Routes {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rc)
			if err != nil {
				t.Fatal(err)
			}
			got := want.Routes[i].ProtoReflect().New().Interface()
			if err := proto.Unmarshal(b, got); err != nil {
				t.Fatal(err)
			}
			if !translate.SameRouteTable(got.(*routev3.RouteConfiguration), want.Routes[i]) {
				t.Fatalf("step %d: route table %s as published differs from a fresh translation", step, rc.GetName())
			}
		}
		// The clusters as published (wire forms, kept across
		// checks by place or by name) serialize as the fresh
		// translation's, and the digests kept with them, in
		// order, are theirs.
		digests, ok := c.ClusterDigests(res.Clusters)
		if !ok || len(res.Clusters) != len(want.Clusters) {
			t.Fatalf("step %d: %d clusters published for %d translated; digests kept: %v", step, len(res.Clusters), len(want.Clusters), ok)
		}
		for i, cl := range res.Clusters {
			got, err := DigestOf(cl)
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := DigestOf(want.Clusters[i])
			if err != nil {
				t.Fatal(err)
			}
			if got != fresh || digests[i] != fresh {
				t.Fatalf("step %d: cluster %d (%s): published %x, kept digest %x, fresh translation %x", step, i, cl.GetName(), got[:4], digests[i][:4], fresh[:4])
			}
		}
	}
	if refused == 0 || refused == 150 {
		t.Fatalf("%d of 150 steps refused: the edits do not exercise both outcomes", refused)
	}
}

func propertyBase(n int) *ir.Gateway {
	gw := &ir.Gateway{Namespace: "default", Name: "gw"}
	l := ir.Listener{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP}
	for i := range n {
		cluster := fmt.Sprintf("default/svc-%02d/80", i)
		gw.Clusters = append(gw.Clusters, &ir.Cluster{Name: cluster, Protocol: ir.ClusterHTTP1})
		l.VirtualHosts = append(l.VirtualHosts, propertyVhost(fmt.Sprintf("h%02d.example.com", i), cluster, "/"))
	}
	gw.Listeners = []ir.Listener{l}
	return gw
}

func propertyVhost(host, cluster, path string) *ir.VirtualHost {
	return &ir.VirtualHost{Name: host, Domains: []string{host}, Routes: []ir.Route{{
		Name:     "HTTPRoute/default/" + host + "/rule/0/match/0",
		Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: path}},
		Backends: []ir.Backend{{Cluster: cluster, Weight: 1}},
	}}}
}

// propertyEdit returns gw with one random edit; gw itself is not modified.
func propertyEdit(rng *rand.Rand, gw *ir.Gateway) *ir.Gateway {
	next := *gw
	next.Listeners = slices.Clone(gw.Listeners)
	vhs := slices.Clone(next.Listeners[0].VirtualHosts)
	clusterName := func() string {
		if len(gw.Clusters) == 0 || rng.IntN(8) == 0 {
			return "default/missing/80"
		}
		return gw.Clusters[rng.IntN(len(gw.Clusters))].Name
	}
	k := 0
	if len(vhs) > 0 {
		k = rng.IntN(len(vhs))
	}
	switch op := rng.IntN(10); {
	case op <= 2 && len(vhs) > 0: // a route edit: a new routes array for one host
		vhs[k] = propertyVhost(vhs[k].Name, clusterName(), fmt.Sprintf("/p%d", rng.IntN(100)))
	case op == 3 && len(vhs) > 1: // a host removed
		vhs = slices.Delete(vhs, k, k+1)
	case op == 4: // a host added, in name order
		v := propertyVhost(fmt.Sprintf("h%02d.example.com", rng.IntN(40)), clusterName(), "/")
		i, found := slices.BinarySearchFunc(vhs, v.Name, func(a *ir.VirtualHost, n string) int {
			switch {
			case a.Name < n:
				return -1
			case a.Name > n:
				return 1
			}
			return 0
		})
		if found {
			vhs[i] = v
		} else {
			vhs = slices.Insert(vhs, i, v)
		}
	case op == 5 && len(gw.Clusters) > 1: // a cluster removed (its routes may still use it)
		next.Clusters = slices.Delete(slices.Clone(gw.Clusters), 0, 1)
		if rng.IntN(2) == 0 {
			i := rng.IntN(len(gw.Clusters) - 1)
			next.Clusters = slices.Delete(slices.Clone(gw.Clusters), i, i+1)
		}
	case op == 6: // a cluster added back, in name order
		c := &ir.Cluster{Name: fmt.Sprintf("default/svc-%02d/80", rng.IntN(16)), Protocol: ir.ClusterHTTP1}
		i, found := slices.BinarySearchFunc(gw.Clusters, c.Name, func(a *ir.Cluster, n string) int {
			switch {
			case a.Name < n:
				return -1
			case a.Name > n:
				return 1
			}
			return 0
		})
		if !found {
			next.Clusters = slices.Insert(slices.Clone(gw.Clusters), i, c)
		}
	case op == 7 && len(vhs) > 1: // two hosts serving one domain
		v := *vhs[k] // the previous IR's host stays as it was
		v.Domains = []string{vhs[(k+1)%len(vhs)].Domains[0]}
		vhs[k] = &v
	case op == 8 && len(gw.Clusters) > 0: // one cluster changed (its protocol)
		next.Clusters = slices.Clone(gw.Clusters)
		i := rng.IntN(len(next.Clusters))
		c := *next.Clusters[i] // the previous IR's cluster stays as it was
		c.Protocol = []ir.ClusterProtocol{ir.ClusterHTTP1, ir.ClusterH2C}[rng.IntN(2)]
		next.Clusters[i] = &c
	default: // back to a valid config
		return propertyBase(10 + rng.IntN(4))
	}
	next.Listeners[0].VirtualHosts = vhs
	return &next
}

// TestCheckerAgreesWithValidateOnBrokenLists: the incremental check of the
// cluster and load-assignment lists (clusterIndex) against Validate, on
// lists no translation makes: out of order, a message twice, two messages
// of one name, an empty name, an EDS cluster without its assignment, a
// cluster gone that routes still use. Each step translates the next IR and
// may break the lists (copies: no message is modified) before the check, so
// the check after a broken step starts from broken lists too. The checker
// must refuse exactly what Validate refuses, and pass the rest.
//
// Run twice: bare, and with the memo adopting what passed (Memo.adopt).
func TestCheckerAgreesWithValidateOnBrokenLists(t *testing.T) {
	bareAndAdopting(t, 40, checkerAgreesOnBrokenLists)
}

func checkerAgreesOnBrokenLists(t *testing.T, seed uint64, adopt bool) {
	rng := rand.New(rand.NewPCG(seed, 2))
	gw := propertyBase(12)
	var m Memo
	var c Checker
	var last []*clusterv3.Cluster // the clusters of the step before
	outcomes := map[bool]int{}
	for step := range 150 {
		gw = propertyEdit(rng, gw)
		res, err := m.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		what := breakLists(rng, res, last)
		last = res.Clusters // as checked (Check puts wire forms in res)
		wantErr := translate.Validate(res)
		gotErr := c.Check(res)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("step %d (%s): incremental check says %v, full validation says %v", step, what, gotErr, wantErr)
		}
		outcomes[gotErr == nil]++
		if gotErr == nil && adopt {
			m.adopt(&c)
		}
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Fatalf("outcomes %v: the steps do not exercise both", outcomes)
	}
}

// breakLists may replace r's cluster list with a broken copy, and says what
// it did. last are the clusters of the step before.
func breakLists(rng *rand.Rand, r *translate.Resources, last []*clusterv3.Cluster) string {
	cl := slices.Clone(r.Clusters)
	what := "nothing"
	switch op := rng.IntN(13); {
	case op == 0 && len(cl) > 1: // two clusters out of order
		i := rng.IntN(len(cl) - 1)
		cl[i], cl[i+1] = cl[i+1], cl[i]
		what = "clusters out of order"
	case op == 2 && len(cl) > 0: // one cluster twice, in its place
		i := rng.IntN(len(cl))
		cl = slices.Insert(cl, i, cl[i])
		what = "a cluster twice"
	case op == 3 && len(cl) > 0: // two messages of one name
		i := rng.IntN(len(cl))
		dup := proto.Clone(cl[i]).(*clusterv3.Cluster)
		dup.ConnectTimeout = nil
		cl = slices.Insert(cl, i+1, dup)
		what = "two clusters of one name"
	case op == 4 && len(cl) > 0: // a cluster with no name, often one more, first
		i := rng.IntN(len(cl))
		if rng.IntN(2) == 0 {
			cl = slices.Insert(cl, 0, cl[i])
			i = 0
		}
		unnamed := proto.Clone(cl[i]).(*clusterv3.Cluster)
		unnamed.Name = ""
		what = "an EDS cluster with no name"
		if rng.IntN(2) == 0 {
			unnamed.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
			unnamed.EdsClusterConfig = nil
			what = "a static cluster with no name"
		}
		cl[i] = unnamed
	case op == 6 && len(cl) > 0: // a cluster gone (routes may use it)
		i := rng.IntN(len(cl))
		cl = slices.Delete(cl, i, i+1)
		what = "a cluster gone"
	case op == 9: // a cluster that is not the last step's, twice
		for i := len(cl) - 1; i >= 0; i-- {
			if !slices.Contains(last, cl[i]) {
				cl = slices.Insert(cl, i, proto.Clone(cl[i]).(*clusterv3.Cluster))
				what = "a new cluster twice"
				break
			}
		}
	case op == 8 && len(cl) > 0: // a cluster moved to the front
		i := rng.IntN(len(cl))
		moved := cl[i]
		cl = slices.Insert(slices.Delete(cl, i, i+1), 0, moved)
		what = "a cluster moved to the front"
	}
	r.Clusters = cl
	return what
}
