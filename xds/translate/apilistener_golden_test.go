/*
Copyright The shardgate Authors.
*/

package translate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/irtest"
)

// apiGoldenDir holds the API listeners (what proxyless gRPC clients read)
// of every golden case that has any: testdata/apilisteners/<case>.yaml.
const apiGoldenDir = "testdata/apilisteners"

// TestGoldenAPIListeners computes the API listeners of every
// testdata/<case>.in.yaml and compares them with their golden file. They
// must pass Validate with the case's translation: each names a route
// configuration the translation has, and carries the very
// HttpConnectionManager of the Gateway listener whose table it names.
// "go test -update" rewrites the goldens.
func TestGoldenAPIListeners(t *testing.T) {
	ins, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(apiGoldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	withListeners := 0
	cases := map[string]bool{}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		cases[name] = true
		t.Run(name, func(t *testing.T) {
			gw := irtest.LoadGateway(t, in)
			res, err := Translate(gw)
			if err != nil {
				t.Fatal(err)
			}
			api := APIListeners(gw)
			if !slices.IsSortedFunc(api, func(a, b *listenerv3Listener) int { return strings.Compare(a.GetName(), b.GetName()) }) {
				t.Error("API listeners not sorted by name")
			}
			checked := *res
			checked.Listeners = append(slices.Clone(res.Listeners), api...)
			if err := Validate(&checked); err != nil {
				t.Fatalf("Validate with the API listeners:\n%v", err)
			}
			envoyHCM := map[string][]byte{} // route table → the HCM bytes of Envoy's chain
			for _, l := range res.Listeners {
				for _, fc := range l.GetFilterChains() {
					for _, f := range fc.GetFilters() {
						var hcm hcmv3.HttpConnectionManager
						if f.GetTypedConfig().UnmarshalTo(&hcm) == nil {
							envoyHCM[hcm.GetRds().GetRouteConfigName()] = f.GetTypedConfig().GetValue()
						}
					}
				}
			}
			for _, l := range api {
				var hcm hcmv3.HttpConnectionManager
				if err := l.GetApiListener().GetApiListener().UnmarshalTo(&hcm); err != nil {
					t.Fatal(err)
				}
				want, ok := envoyHCM[hcm.GetRds().GetRouteConfigName()]
				if !ok || !proto.Equal(l.GetApiListener().GetApiListener(), anyOf(t, "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager", want)) {
					t.Errorf("API listener %s: its HttpConnectionManager is not that of Envoy's chain for %s", l.GetName(), hcm.GetRds().GetRouteConfigName())
				}
			}
			var got []byte
			if len(api) > 0 {
				withListeners++
				if got, err = (&Resources{Listeners: api}).YAML(); err != nil {
					t.Fatal(err)
				}
			}
			compareGolden(t, filepath.Join(apiGoldenDir, name+".yaml"), got)
		})
	}
	if withListeners < 10 {
		t.Errorf("only %d golden cases have API listeners, want at least 10", withListeners)
	}
	outs, err := filepath.Glob(filepath.Join(apiGoldenDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range outs {
		if name := strings.TrimSuffix(filepath.Base(out), ".yaml"); !cases[name] {
			if *update {
				if err := os.Remove(out); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s belongs to no case; run with -update to remove it", out)
		}
	}
}

// The names: "H" for the lowest plaintext port serving H (else the first
// TLS server serving it), "H:P" for every port; wildcard hosts and the
// catch-all get none.
func TestAPIListenerNames(t *testing.T) {
	vh := func(names ...string) []*ir.VirtualHost {
		var out []*ir.VirtualHost
		for _, n := range names {
			out = append(out, &ir.VirtualHost{Name: n})
		}
		return out
	}
	gw := &ir.Gateway{Namespace: "ns", Name: "gw", Listeners: []ir.Listener{
		{Name: "http-8080", Port: 8080, Protocol: ir.ProtocolHTTP, VirtualHosts: vh("a.test", "c.test")},
		{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: vh("*", "*.wild.test", "a.test")},
		{Name: "https-443", Port: 443, Protocol: ir.ProtocolHTTPS, TLSServers: []ir.TLSServer{
			{Name: "exact", SNI: []string{"b.test"}, VirtualHosts: vh("a.test", "b.test")},
			{Name: "any", VirtualHosts: vh("*", "b.test")},
		}},
	}}
	got := map[string]string{}
	for _, r := range APIListenerRoutes(gw) {
		for _, n := range r.Names {
			if prev, dup := got[n]; dup {
				t.Errorf("%s named twice (%s, %s)", n, prev, r.RouteConfig)
			}
			got[n] = r.RouteConfig
		}
	}
	want := map[string]string{
		"a.test": "http-80", "a.test:80": "http-80", "a.test:8080": "http-8080", "a.test:443": "https-443/exact",
		"c.test": "http-8080", "c.test:8080": "http-8080",
		"b.test": "https-443/exact", "b.test:443": "https-443/exact",
	}
	if len(got) != len(want) {
		t.Errorf("names %v, want %v", got, want)
	}
	for n, rc := range want {
		if got[n] != rc {
			t.Errorf("%s → %q, want %q", n, got[n], rc)
		}
	}
}

// A listener whose route table is missing, or that is not an API listener,
// is refused by ValidateAPIListener.
func TestValidateAPIListenerOne(t *testing.T) {
	gw := &ir.Gateway{Namespace: "ns", Name: "gw", Listeners: []ir.Listener{
		{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: []*ir.VirtualHost{{Name: "a.test"}}},
	}}
	api := APIListeners(gw)
	if len(api) != 2 {
		t.Fatalf("API listeners %v, want a.test and a.test:80", api)
	}
	if err := ValidateAPIListener(api[0], map[string]bool{"http-80": true}); err != nil {
		t.Fatalf("valid API listener refused: %v", err)
	}
	err := ValidateAPIListener(api[0], map[string]bool{"http-8080": true})
	if err == nil || !strings.Contains(err.Error(), `route configuration "http-80" not found`) {
		t.Fatalf("missing route table: err = %v", err)
	}
	if err := ValidateAPIListener(&listenerv3Listener{Name: "x"}, nil); err == nil {
		t.Fatal("a listener without api_listener passed")
	}
}

type listenerv3Listener = listenerv3.Listener

func anyOf(t *testing.T, typeURL string, value []byte) *anypb.Any {
	t.Helper()
	return &anypb.Any{TypeUrl: typeURL, Value: value}
}

// Two IRs with the same APIListenerDigest have the same API listeners
// (over every pair of golden cases), and a change to what the listeners
// are made of changes the digest.
func TestAPIListenerDigest(t *testing.T) {
	ins, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type made struct {
		name   string
		digest Digest
		yaml   []byte
	}
	var all []made
	for _, in := range ins {
		gw := irtest.LoadGateway(t, in)
		y, err := (&Resources{Listeners: APIListeners(gw)}).YAML()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, made{filepath.Base(in), APIListenerDigest(gw), y})
		if APIListenerDigest(irtest.LoadGateway(t, in)) != APIListenerDigest(gw) {
			t.Fatalf("%s: the digest is not deterministic", in)
		}
	}
	for i := range all {
		for j := range i {
			if all[i].digest == all[j].digest && !bytes.Equal(all[i].yaml, all[j].yaml) {
				t.Errorf("%s and %s: same digest, different API listeners", all[i].name, all[j].name)
			}
		}
	}
	base := func() *ir.Gateway {
		return &ir.Gateway{Namespace: "ns", Name: "gw", Listeners: []ir.Listener{
			{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP, VirtualHosts: []*ir.VirtualHost{{Name: "a.test"}, {Name: "b.test"}}},
			{Name: "https-443", Port: 443, Protocol: ir.ProtocolHTTPS, TLSServers: []ir.TLSServer{{Name: "web", VirtualHosts: []*ir.VirtualHost{{Name: "c.test"}}}}},
		}}
	}
	d := APIListenerDigest(base())
	for what, change := range map[string]func(*ir.Gateway){
		"a host renamed": func(g *ir.Gateway) { g.Listeners[0].VirtualHosts[1] = &ir.VirtualHost{Name: "bb.test"} },
		"a host added": func(g *ir.Gateway) {
			g.Listeners[0].VirtualHosts = append(g.Listeners[0].VirtualHosts, &ir.VirtualHost{Name: "d.test"})
		},
		"hosts moved":          func(g *ir.Gateway) { g.Listeners[0].VirtualHosts = g.Listeners[0].VirtualHosts[1:] },
		"a port changed":       func(g *ir.Gateway) { g.Listeners[0].Port = 8080 },
		"a TLS server renamed": func(g *ir.Gateway) { g.Listeners[1].TLSServers[0].Name = "api" },
		"an HTTPS host":        func(g *ir.Gateway) { g.Listeners[1].TLSServers[0].VirtualHosts[0] = &ir.VirtualHost{Name: "e.test"} },
		"the traffic settings": func(g *ir.Gateway) { tr := ir.DefaultTraffic(); tr.TrustedHops = 3; g.Traffic = tr },
	} {
		g := base()
		change(g)
		if APIListenerDigest(g) == d {
			t.Errorf("%s: the digest did not change", what)
		}
	}
}
