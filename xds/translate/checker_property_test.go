/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/ir"
)

// TestCheckerAgreesWithValidate drives a Memo and a Checker through random
// edits of one Gateway's IR, made the way the Gateway API layer makes them
// (new arrays for what changed, the rest shared): after every step the
// incremental check refuses exactly what a full Validate of a fresh
// translation refuses, and what it passes is published as that
// translation, byte for byte once read back.
func TestCheckerAgreesWithValidate(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
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
				want, err := Translate(gw)
				if err != nil {
					t.Fatal(err)
				}
				wantErr := Validate(want)
				gotErr := c.Check(res)
				if (gotErr == nil) != (wantErr == nil) {
					t.Fatalf("step %d: incremental check says %v, full validation says %v", step, gotErr, wantErr)
				}
				if gotErr != nil {
					refused++
					continue
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
					if !proto.Equal(got, want.Routes[i]) {
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
		})
	}
}

func propertyBase(n int) *ir.Gateway {
	gw := &ir.Gateway{Namespace: "default", Name: "gw"}
	l := ir.Listener{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP}
	for i := range n {
		cluster := fmt.Sprintf("default/svc-%02d/80", i)
		gw.Clusters = append(gw.Clusters, &ir.Cluster{Name: cluster, Protocol: ir.ClusterHTTP1,
			Endpoints: []ir.Endpoint{{IP: fmt.Sprintf("10.0.0.%d", i+1), Port: 8080, Ready: true}}})
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
		c := &ir.Cluster{Name: fmt.Sprintf("default/svc-%02d/80", rng.IntN(16)), Protocol: ir.ClusterHTTP1,
			Endpoints: []ir.Endpoint{{IP: "10.0.1.1", Port: 8080, Ready: true}}}
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
	case op == 8 && len(gw.Clusters) > 0: // one cluster's endpoints changed
		next.Clusters = slices.Clone(gw.Clusters)
		i := rng.IntN(len(next.Clusters))
		c := *next.Clusters[i] // the previous IR's cluster stays as it was
		c.Endpoints = []ir.Endpoint{{IP: fmt.Sprintf("10.0.2.%d", rng.IntN(200)+1), Port: 8080, Ready: true}}
		next.Clusters[i] = &c
	default: // back to a valid config
		return propertyBase(10 + rng.IntN(4))
	}
	next.Listeners[0].VirtualHosts = vhs
	return &next
}
