package server

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/types/known/anypb"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// gatewayIR loads an IR case of the translator's goldens: a Gateway that
// routes to one cluster.
func gatewayIR(t *testing.T, file string) *ir.Gateway {
	t.Helper()
	data, err := os.ReadFile("../translate/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var gw ir.Gateway
	if err := yaml.Unmarshal(data, &gw); err != nil {
		t.Fatal(err)
	}
	return &gw
}

// A config that fails validation is never published: the last good one
// stays, and the Gateway reports why.
func TestRefusedConfigKeepsTheLastGoodOne(t *testing.T) {
	var breakIt bool
	s := New(Options{Log: logr.Discard(), APIListeners: func(string) []*listenerv3.Listener {
		if !breakIt {
			return nil
		}
		return []*listenerv3.Listener{apiListener(t, "broken.test", "no-such-route-table")}
	}})
	gw := gatewayIR(t, "http-single-route.in.yaml")
	nn := k8stypes.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	out := &gatewayapi.Output{Gateways: []*ir.Gateway{gw}}

	s.Publish(nil, out)
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatalf("good config refused: %v", errs)
	}
	snap, err := s.Snapshot(nn)
	if err != nil {
		t.Fatal(err)
	}
	goodListeners := snap.GetVersion(resourcev3.ListenerType)

	breakIt = true
	s.Publish(nil, out)
	msg := s.PublishErrors()[nn]
	if !strings.Contains(msg, "no-such-route-table") {
		t.Fatalf("refusal not reported with the missing route table: %q", msg)
	}
	snap, _ = s.Snapshot(nn)
	if v := snap.GetVersion(resourcev3.ListenerType); v != goodListeners {
		t.Fatalf("a refused config was published: listener version %s, last good %s", v, goodListeners)
	}
	if _, ok := snap.GetResources(resourcev3.ListenerType)["broken.test"]; ok {
		t.Fatal("the broken listener reached the published snapshot")
	}

	breakIt = false
	s.Publish(nil, out)
	if errs := s.PublishErrors(); len(errs) != 0 {
		t.Fatalf("recovery not recorded: %v", errs)
	}
}

// Publishing an unchanged config keeps every type's version, so nothing is
// sent again; a removed cluster stays for RetainRemoved, then goes.
func TestVersionsAndRetention(t *testing.T) {
	old := RetainRemoved
	RetainRemoved = 200 * time.Millisecond
	defer func() { RetainRemoved = old }()
	changed := make(chan struct{}, 16)
	s := New(Options{Log: logr.Discard(), OnStatusChange: func() { changed <- struct{}{} }})
	two := gatewayIR(t, "weighted-two-backends.in.yaml")
	nn := k8stypes.NamespacedName{Namespace: two.Namespace, Name: two.Name}
	s.Publish(nil, &gatewayapi.Output{Gateways: []*ir.Gateway{two}})
	first, _ := s.Snapshot(nn)
	s.Publish(nil, &gatewayapi.Output{Gateways: []*ir.Gateway{two}})
	again, _ := s.Snapshot(nn)
	for _, typ := range typeOrder {
		if first.GetVersion(typ) != again.GetVersion(typ) {
			t.Fatalf("%s version changed for an unchanged config", typ)
		}
	}
	clusters := len(first.GetResources(resourcev3.ClusterType))
	if clusters < 2 {
		t.Fatalf("want two clusters in the case, got %d", clusters)
	}

	one := gatewayIR(t, "http-single-route.in.yaml")
	one.Namespace, one.Name = two.Namespace, two.Name
	s.Publish(nil, &gatewayapi.Output{Gateways: []*ir.Gateway{one}})
	kept, _ := s.Snapshot(nn)
	if got := len(kept.GetResources(resourcev3.ClusterType)); got < clusters {
		t.Fatalf("removed clusters were dropped at once: %d clusters, had %d", got, clusters)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no re-translation was asked for when retention expired")
	}
	s.Publish(nil, &gatewayapi.Output{Gateways: []*ir.Gateway{one}})
	after, _ := s.Snapshot(nn)
	want := len(translateOrDie(t, one).Clusters)
	if got := len(after.GetResources(resourcev3.ClusterType)); got != want {
		t.Fatalf("after retention: %d clusters, want %d", got, want)
	}
}

func translateOrDie(t *testing.T, gw *ir.Gateway) *translate.Resources {
	t.Helper()
	res, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A Gateway with only Envoys connected is published in one step; one with a
// proxyless gRPC client first gets the new cluster referenced from the old
// route table, and the new route table only after the client acknowledged.
func TestTwoPhaseOnlyForProxylessClients(t *testing.T) {
	for _, tc := range []struct {
		userAgent string
		twoPhase  bool
	}{{"envoy", false}, {"gRPC Go", true}} {
		t.Run(tc.userAgent, func(t *testing.T) {
			old := PhaseTwoTimeout
			PhaseTwoTimeout = 5 * time.Second
			defer func() { PhaseTwoTimeout = old }()
			s := New(Options{Log: logr.Discard()})
			one := gatewayIR(t, "http-single-route.in.yaml")
			two := gatewayIR(t, "weighted-two-backends.in.yaml")
			two.Namespace, two.Name = one.Namespace, one.Name
			nn := k8stypes.NamespacedName{Namespace: one.Namespace, Name: one.Name}
			group := NodeGroup(nn)
			s.Publish(nil, &gatewayapi.Output{Gateways: []*ir.Gateway{one}})
			before, _ := s.Snapshot(nn)
			oldRoutes := before.GetVersion(resourcev3.RouteType)
			// A stream bound to the Gateway, as its open would bind it.
			s.mu.Lock()
			s.streams[sotwStream(1)] = &streamState{identity: group, group: group}
			s.mu.Unlock()
			s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{
				Node:    &core.Node{Id: "n1", Cluster: group, UserAgentName: tc.userAgent},
				TypeUrl: resourcev3.RouteType, VersionInfo: oldRoutes,
			})

			s.Publish(nil, &gatewayapi.Output{Gateways: []*ir.Gateway{two}})
			final := translateOrDie(t, two)
			mid, _ := s.Snapshot(nn)
			if !tc.twoPhase {
				if isPending(s, group) || len(mid.GetResources(resourcev3.ClusterType)) < len(final.Clusters) {
					t.Fatal("an Envoy-only Gateway was not published in one step")
				}
				return
			}
			// Phase one: every new cluster, referenced only by routes that
			// cannot match, in the old route table.
			for _, c := range final.Clusters {
				if _, ok := mid.GetResources(resourcev3.ClusterType)[c.GetName()]; !ok {
					t.Fatalf("phase one lacks cluster %s", c.GetName())
				}
			}
			placeholders := 0
			for _, r := range mid.GetResources(resourcev3.RouteType) {
				for _, vh := range r.(*routev3.RouteConfiguration).GetVirtualHosts() {
					for _, rt := range vh.GetRoutes() {
						if strings.HasPrefix(rt.GetName(), "shardgate-retained/") {
							placeholders++
						}
					}
				}
			}
			if placeholders == 0 {
				t.Fatal("phase one does not reference the new clusters")
			}
			phaseOne := mid.GetVersion(resourcev3.RouteType)
			// Nothing but the acknowledgement may release phase two: for a
			// while without one, it stays pending. The window is the
			// assertion.
			stillPending := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 200*time.Millisecond, true,
				func(context.Context) (bool, error) { return !isPending(s, group), nil })
			if stillPending == nil {
				t.Fatal("phase two was published before the client acknowledged phase one")
			}
			s.observeRequest(sotwStream(1), &discovery.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: phaseOne})
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true,
				func(context.Context) (bool, error) { return !isPending(s, group), nil }); err != nil {
				t.Fatalf("phase two not published after the acknowledgement: %v", err)
			}
			after, _ := s.Snapshot(nn)
			if after.GetVersion(resourcev3.RouteType) == phaseOne {
				t.Fatal("the route table did not move to the new config")
			}
		})
	}
}

func isPending(s *Server, group string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[group] != nil
}

// apiListener is what a proxyless gRPC client reads for xds:///<name>.
func apiListener(t *testing.T, name, routeTable string) *listenerv3.Listener {
	t.Helper()
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		t.Fatal(err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "grpc",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: routeTable,
			ConfigSource:    &core.ConfigSource{ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}
}
