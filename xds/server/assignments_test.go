package server

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/proto"
)

// The load assignment cache answers exactly as go-control-plane's
// LinearCache, which it replaces: the same updates and the same client
// requests (state of the world and delta; named, wildcard, changing
// subscriptions, ACKs and NACKs, clients reconnecting with known versions)
// get the same responses from both, the same resources, removals, versions
// and returned versions, at the same moments.
func TestAssignmentsAnswerAsLinearCache(t *testing.T) {
	var sotwSent, deltaSent, deltaRemoved, wildcards int
	defer func() {
		// The edits reach every kind of answer.
		if sotwSent == 0 || deltaSent == 0 || deltaRemoved == 0 || wildcards == 0 {
			t.Errorf("state of the world responses with resources %d, delta %d, delta removals %d, wildcard clients %d",
				sotwSent, deltaSent, deltaRemoved, wildcards)
		}
	}()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			const prefix = "eds-test-"
			ours := newAssignments(prefix)
			lc := cachev3.NewLinearCache(resourcev3.EndpointType, cachev3.WithVersionPrefix(prefix))
			pool := make([]string, 10)
			for i := range pool {
				pool[i] = fmt.Sprintf("ns/svc-%02d/80", i)
			}
			names := func() []string {
				var out []string
				for _, n := range pool {
					if rng.IntN(2) == 0 {
						out = append(out, n)
					}
				}
				return out
			}
			var applied []*endpointv3.ClusterLoadAssignment
			update := func() {
				// Some names kept as they were, some with new
				// endpoints, some gone, some new.
				byName := map[string]*endpointv3.ClusterLoadAssignment{}
				for _, e := range applied {
					byName[e.GetClusterName()] = e
				}
				var next []*endpointv3.ClusterLoadAssignment
				for _, n := range names() {
					e := byName[n]
					if e == nil || rng.IntN(3) == 0 {
						e = &endpointv3.ClusterLoadAssignment{ClusterName: n, Endpoints: []*endpointv3.LocalityLbEndpoints{{
							LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
								Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
									Address: fmt.Sprintf("10.0.0.%d", rng.IntN(4)+1), PortSpecifier: &core.SocketAddress_PortValue{PortValue: 8080}}}}}}}}}}}
					}
					next = append(next, e)
				}
				// What changed, as xds/endpoints hands it over: the
				// load assignments that are not the very ones applied,
				// then the names gone.
				add := map[string]types.Resource{}
				var addList []*endpointv3.ClusterLoadAssignment
				var gone []string
				for _, e := range next {
					if byName[e.GetClusterName()] != e {
						add[e.GetClusterName()] = e
						addList = append(addList, e)
					}
					delete(byName, e.GetClusterName())
				}
				for name := range byName {
					gone = append(gone, name)
				}
				slices.Sort(gone)
				applied = next
				ours.put(addList)
				if len(add) > 0 {
					if err := lc.UpdateResources(add, nil); err != nil {
						t.Fatal(err)
					}
				}
				ours.remove(gone)
				if len(gone) > 0 {
					if err := lc.UpdateResources(nil, gone); err != nil {
						t.Fatal(err)
					}
				}
				served, _ := ours.versionAt()
				// The version served (the server matches NACKs with
				// it) is the one responses carry.
				probe := make(chan cachev3.Response, 1)
				if _, err := lc.CreateWatch(&cachev3.Request{TypeUrl: resourcev3.EndpointType}, stream.NewSotwSubscription(nil, false), probe); err != nil {
					t.Fatal(err)
				}
				if got := (<-probe).GetResponseVersion(); got != served {
					t.Fatalf("the version served is %s; responses carry %s", served, got)
				}
			}

			node := &core.Node{Id: "p", Cluster: "ns/gw"}
			type client struct {
				delta      bool
				subOurs    stream.Subscription
				subLC      stream.Subscription
				version    string // state of the world: the last version accepted
				nonce      string
				outOurs    chan cachev3.Response
				outLC      chan cachev3.Response
				dOurs      chan cachev3.DeltaResponse
				dLC        chan cachev3.DeltaResponse
				cancelOurs func()
				cancelLC   func()
			}
			var clients []*client
			// cancel closes c's open watch, as the server does before it
			// applies a new request to the subscription.
			cancel := func(c *client) {
				if c.cancelOurs != nil {
					c.cancelOurs()
					c.cancelLC()
				}
				c.cancelOurs, c.cancelLC = nil, nil
			}
			request := func(c *client) {
				cancel(c)
				if c.delta {
					c.dOurs, c.dLC = make(chan cachev3.DeltaResponse, 1), make(chan cachev3.DeltaResponse, 1)
					req := &cachev3.DeltaRequest{Node: node, TypeUrl: resourcev3.EndpointType, ResponseNonce: c.nonce}
					c.cancelOurs = ours.createDeltaWatch(req, &c.subOurs, c.dOurs)
					cancel, err := lc.CreateDeltaWatch(req, &c.subLC, c.dLC)
					if err != nil {
						t.Fatal(err)
					}
					c.cancelLC = func() {
						if cancel != nil {
							cancel()
						}
					}
					return
				}
				c.outOurs, c.outLC = make(chan cachev3.Response, 1), make(chan cachev3.Response, 1)
				req := &cachev3.Request{Node: node, TypeUrl: resourcev3.EndpointType, VersionInfo: c.version, ResponseNonce: c.nonce,
					ResourceNames: slices.Sorted(maps.Keys(c.subOurs.SubscribedResources()))}
				c.cancelOurs = ours.createWatch(req, &c.subOurs, c.outOurs)
				cancel, err := lc.CreateWatch(req, &c.subLC, c.outLC)
				if err != nil {
					t.Fatal(err)
				}
				c.cancelLC = cancel
			}
			// compare takes the responses both caches sent c, if any,
			// and checks they are the same.
			var compare func(step int, c *client)
			compare = func(step int, c *client) {
				t.Helper()
				if c.delta {
					a, b := poll(c.dOurs), poll(c.dLC)
					if (a == nil) != (b == nil) {
						t.Fatalf("step %d, delta: ours responded %v, LinearCache %v", step, a != nil, b != nil)
					}
					if a == nil {
						return
					}
					ra, err := a.GetDeltaDiscoveryResponse()
					if err != nil {
						t.Fatal(err)
					}
					rb, err := b.GetDeltaDiscoveryResponse()
					if err != nil {
						t.Fatal(err)
					}
					sortDelta(ra)
					sortDelta(rb)
					deltaSent += min(len(ra.GetResources()), 1)
					deltaRemoved += min(len(ra.GetRemovedResources()), 1)
					if !proto.Equal(ra, rb) || !maps.Equal(a.GetReturnedResources(), b.GetReturnedResources()) {
						t.Fatalf("step %d, delta:\nours %v\n  known %v\nLinearCache %v\n  known %v", step, ra, a.GetReturnedResources(), rb, b.GetReturnedResources())
					}
					c.subOurs.SetReturnedResources(a.GetReturnedResources())
					c.subLC.SetReturnedResources(b.GetReturnedResources())
					c.nonce = fmt.Sprint(step)
					c.cancelOurs, c.cancelLC = nil, nil
					return
				}
				a, b := poll(c.outOurs), poll(c.outLC)
				if (a == nil) != (b == nil) {
					t.Fatalf("step %d, state of the world: ours responded %v, LinearCache %v", step, a != nil, b != nil)
				}
				if a == nil {
					return
				}
				ra, err := a.GetDiscoveryResponse()
				if err != nil {
					t.Fatal(err)
				}
				rb, err := b.GetDiscoveryResponse()
				if err != nil {
					t.Fatal(err)
				}
				na, nb := sotwNames(t, ra), sotwNames(t, rb)
				sotwSent += min(len(na), 1)
				if !slices.Equal(na, nb) || ra.GetVersionInfo() != rb.GetVersionInfo() || !maps.Equal(a.GetReturnedResources(), b.GetReturnedResources()) {
					t.Fatalf("step %d, state of the world:\nours %v at %s, known %v\nLinearCache %v at %s, known %v",
						step, na, ra.GetVersionInfo(), a.GetReturnedResources(), nb, rb.GetVersionInfo(), b.GetReturnedResources())
				}
				c.subOurs.SetReturnedResources(a.GetReturnedResources())
				c.subLC.SetReturnedResources(b.GetReturnedResources())
				c.nonce = fmt.Sprint(step)
				c.cancelOurs, c.cancelLC = nil, nil
				// The client accepts it (or, one time in four, rejects
				// it and keeps its version), and asks again.
				if rng.IntN(4) != 0 {
					c.version = ra.GetVersionInfo()
				}
				request(c)
				compare(step, c)
			}
			for step := range 120 {
				switch op := rng.IntN(10); {
				case op < 4 || len(clients) == 0 && op < 6:
					update()
				case op < 6 || len(clients) == 0:
					// A client connects (or reconnects, knowing
					// what it held: the protocol's initial versions
					// for delta, a version for state of the world).
					c := &client{delta: rng.IntN(2) == 0}
					subscribed := names()
					if rng.IntN(5) == 0 {
						subscribed = nil // wildcard
						wildcards++
					}
					var initial map[string]string
					if len(clients) > 0 && rng.IntN(2) == 0 {
						old := clients[rng.IntN(len(clients))]
						if old.delta == c.delta {
							initial = maps.Clone(old.subOurs.ReturnedResources())
							c.version = old.version
						}
					}
					if c.delta {
						c.subOurs = stream.NewDeltaSubscription(subscribed, nil, maps.Clone(initial), false)
						c.subLC = stream.NewDeltaSubscription(subscribed, nil, maps.Clone(initial), false)
					} else {
						c.subOurs = stream.NewSotwSubscription(subscribed, false)
						c.subLC = stream.NewSotwSubscription(subscribed, false)
					}
					clients = append(clients, c)
					request(c)
				case op < 8:
					// A client changes what it asks for.
					c := clients[rng.IntN(len(clients))]
					cancel(c)
					if c.delta {
						add, drop := names(), names()
						c.subOurs.UpdateResourceSubscriptions(add, drop)
						c.subLC.UpdateResourceSubscriptions(add, drop)
					} else {
						n := names()
						c.subOurs.SetResourceSubscription(n)
						c.subLC.SetResourceSubscription(n)
					}
					request(c)
				default:
					// A client leaves.
					i := rng.IntN(len(clients))
					cancel(clients[i])
					clients = slices.Delete(clients, i, i+1)
				}
				for _, c := range clients {
					compare(step, c)
				}
				if got, want := ours.watches(), lc.NumCacheWatches(); got != want {
					t.Fatalf("step %d: %d open watches, LinearCache %d", step, got, want)
				}
			}
		})
	}
}

func sotwNames(t *testing.T, r *discovery.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range r.GetResources() {
		e := &endpointv3.ClusterLoadAssignment{}
		if err := a.UnmarshalTo(e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e.GetClusterName())
	}
	slices.Sort(out)
	return out
}

func sortDelta(r *discovery.DeltaDiscoveryResponse) {
	slices.SortFunc(r.Resources, func(a, b *discovery.Resource) int {
		switch {
		case a.GetName() < b.GetName():
			return -1
		case a.GetName() > b.GetName():
			return 1
		}
		return 0
	})
	slices.Sort(r.RemovedResources)
}

// poll takes what ch holds, or the zero value when it holds nothing.
func poll[T any](ch chan T) T {
	var v T
	select {
	case v = <-ch:
	default:
	}
	return v
}
