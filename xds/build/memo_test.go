/*
Copyright The shardgate Authors.
*/

package build

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/irtest"
	"github.com/shardgate/shardgate/xds/translate"
)

// TestMemoMatchesTranslate: a Memo's translation equals a fresh one, for
// every golden input and after edits, and reuses the messages of what did
// not change.
func TestMemoMatchesTranslate(t *testing.T) {
	ins, err := filepath.Glob(goldenInputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		var m Memo
		gw := irtest.LoadGateway(t, in)
		for range 2 {
			got, err := m.Translate(gw)
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			want, err := translate.Translate(gw)
			if err != nil {
				t.Fatal(err)
			}
			assertEqualResources(t, want, got)
		}
	}
}

func TestMemoRebuildsOnlyChanges(t *testing.T) {
	gw := irtest.LargeGateway(500)
	gw.Change = &ir.Change{Generation: 1}
	var m Memo
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	// Change one virtual host and one cluster the way the Gateway API
	// translator does: new values for them, the others kept, and a Change
	// naming them.
	vhs := slices.Clone(gw.Listeners[0].VirtualHosts)
	vh2 := *vhs[2] // the translated IR's host stays as it was
	vh2.Routes = slices.Clone(vh2.Routes)
	vh2.Routes[0].Match.Path = &ir.PathMatch{Type: vh2.Routes[0].Match.Path.Type, Value: "/changed"}
	vhs[2] = &vh2
	gw.Listeners[0].VirtualHosts = vhs
	gw.Clusters = slices.Clone(gw.Clusters)
	c1 := *gw.Clusters[1] // the translated IR's cluster stays as it was
	c1.Protocol = map[ir.ClusterProtocol]ir.ClusterProtocol{ir.ClusterH2C: ir.ClusterHTTP1}[c1.Protocol]
	if c1.Protocol == "" {
		c1.Protocol = ir.ClusterH2C
	}
	gw.Clusters[1] = &c1
	gw.Change = &ir.Change{Generation: 2, Since: 1, VirtualHosts: []ir.VirtualHostRef{{Listener: "http-80", Name: vh2.Name}},
		Clusters: []string{c1.Name}}

	second, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	assertEqualResources(t, want, second)
	a, b := first.Routes[0].VirtualHosts, second.Routes[0].VirtualHosts
	for i := range a {
		if same := a[i] == b[i]; same != (i != 2) {
			t.Errorf("virtual host %d: reused=%v", i, same)
		}
	}
	for i := range first.Clusters {
		if same := first.Clusters[i] == second.Clusters[i]; same != (i != 1) {
			t.Errorf("cluster %d: reused=%v", i, same)
		}
	}

	// A cluster turning WebSocket rebuilds the virtual hosts (route
	// actions upgrade to WebSocket for it).
	gw.Clusters = slices.Clone(gw.Clusters)
	c0 := *gw.Clusters[0]
	c0.WebSocket = true
	gw.Clusters[0] = &c0
	gw.Change = &ir.Change{Generation: 3, Since: 2, Clusters: []string{c0.Name}}
	third, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	if want, err = translate.Translate(gw); err != nil {
		t.Fatal(err)
	}
	assertEqualResources(t, want, third)
}

// A retained cluster (it left the Gateway, and stays published for a while)
// is referenced, through a route that never matches, only from the virtual
// hosts that sent to it before: every other host is the very same message.
// When it is no longer retained, those hosts drop the route. A host that
// now sends to a cluster its previous version did not is reported by
// Introducing.
func TestMemoRetainedOnlyWhereUsed(t *testing.T) {
	gw := propertyBase(10)
	gw.Change = &ir.Change{Generation: 1}
	var m Memo
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	// Host 3 moves from svc-03 (now unused) to svc-09; svc-03 is retained.
	next := *gw
	next.Listeners = slices.Clone(gw.Listeners)
	vhs := slices.Clone(gw.Listeners[0].VirtualHosts)
	vhs[3] = propertyVhost(vhs[3].Name, "default/svc-09/80", "/")
	next.Listeners[0].VirtualHosts = vhs
	next.Clusters = slices.Delete(slices.Clone(gw.Clusters), 3, 4)
	next.Change = &ir.Change{Generation: 2, Since: 1, VirtualHosts: []ir.VirtualHostRef{{Listener: "http-80", Name: vhs[3].Name}},
		Clusters: []string{"default/svc-03/80"}}
	second, err := m.Translate(&next, "default/svc-03/80")
	if err != nil {
		t.Fatal(err)
	}
	retainedIn := func(res *translate.Resources) []string {
		var out []string
		for _, vh := range res.Routes[0].GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				if r.GetName() == translate.RetainedRoutePrefix+"default/svc-03/80" {
					out = append(out, vh.GetName())
				}
			}
		}
		return out
	}
	if got := retainedIn(second); !slices.Equal(got, []string{vhs[3].Name}) {
		t.Fatalf("the retained cluster is referenced from %v, want only %s", got, vhs[3].Name)
	}
	for i, vh := range second.Routes[0].GetVirtualHosts() {
		if same := vh == first.Routes[0].GetVirtualHosts()[i]; same != (i != 3) {
			t.Errorf("virtual host %d: reused=%v", i, same)
		}
	}
	intro := m.Introducing([]string{"default/svc-09/80"})
	if got := intro[second.Routes[0].GetName()][vhs[3].Name]; !slices.Equal(got, []string{"default/svc-09/80"}) {
		t.Errorf("Introducing = %v, want host %s switching to svc-09", intro, vhs[3].Name)
	}

	// Still retained: nothing changes. Retention over: host 3 drops it.
	third, err := m.Translate(&next, "default/svc-03/80")
	if err != nil {
		t.Fatal(err)
	}
	if got := retainedIn(third); !slices.Equal(got, []string{vhs[3].Name}) {
		t.Fatalf("still retained: referenced from %v", got)
	}
	if len(m.Introducing([]string{"default/svc-09/80"})) != 0 {
		t.Error("an unchanged host is reported as introducing a cluster")
	}
	fourth, err := m.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	if got := retainedIn(fourth); len(got) != 0 {
		t.Fatalf("no longer retained, still referenced from %v", got)
	}
	for i, vh := range fourth.Routes[0].GetVirtualHosts() {
		if same := vh == third.Routes[0].GetVirtualHosts()[i]; same != (i != 3) {
			t.Errorf("after retention, virtual host %d: reused=%v", i, same)
		}
	}
	want, err := translate.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	assertEqualResources(t, want, fourth)
}

// TestMemoKeepsHTTPListenersAndFollowsTraffic: a route change keeps the
// HTTP listener's message (nothing of it depends on routes), and a change
// of the Gateway's traffic settings rebuilds the listener and every route
// action, equal to a fresh translation each time.
func TestMemoKeepsHTTPListenersAndFollowsTraffic(t *testing.T) {
	gw := irtest.LargeGateway(50)
	var m Memo
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	next := *gw
	next.Listeners = slices.Clone(gw.Listeners)
	vhs := slices.Clone(next.Listeners[0].VirtualHosts)
	vh := *vhs[3]
	vh.Routes = slices.Clone(vh.Routes)
	vh.Routes[0].Match.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/changed"}
	vhs[3] = &vh
	next.Listeners[0].VirtualHosts = vhs
	second, err := m.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	if second.Listeners[0] != first.Listeners[0] {
		t.Fatal("a route change rebuilt the HTTP listener")
	}

	for _, traffic := range []*ir.Traffic{
		{IdleTimeout: metav1.Duration{Duration: 5 * time.Minute}, WebSocketsAll: true, AccessLog: &ir.AccessLog{JSON: ir.DefaultAccessLogFields()}},
		{IdleTimeout: metav1.Duration{Duration: 5 * time.Minute}, TrustedHops: 2, ProxyProtocol: true},
		{IdleTimeout: metav1.Duration{Duration: 5 * time.Minute}, TrustedHops: 2, ProxyProtocol: true, AccessLog: &ir.AccessLog{Text: "%START_TIME%"}},
	} {
		withTraffic := next
		withTraffic.Traffic = traffic
		got, err := m.Translate(&withTraffic)
		if err != nil {
			t.Fatal(err)
		}
		want, err := translate.Translate(&withTraffic)
		if err != nil {
			t.Fatal(err)
		}
		assertEqualResources(t, want, got)
		if got.Listeners[0] == second.Listeners[0] {
			t.Fatalf("traffic %+v kept the listener built without it", traffic)
		}
		second = got
	}
}

// The memo rebuilds the virtual hosts the IR's change names and no other,
// whatever the IR's lists share: a host the change names is built again
// even with the very same routes, one it does not name is the remembered
// message even in a new list. A change relative to an IR the memo did not
// translate last, or no change at all, rebuilds every host. Clusters follow
// the change too: a list of new values the change does not name keeps
// every message, a named cluster whose IR changed is built again.
func TestMemoFollowsTheChangeNotIdentity(t *testing.T) {
	gw := propertyBase(6)
	gw.Change = &ir.Change{Generation: 10}
	var m Memo
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	hosts := func(r *translate.Resources) []*routev3.VirtualHost { return r.Routes[0].GetVirtualHosts() }
	reused := func(a, b *translate.Resources) (out []bool) {
		for i := range hosts(a) {
			out = append(out, hosts(a)[i] == hosts(b)[i])
		}
		return out
	}
	// Every list copied, every host a new value with the same content;
	// the change names host 1 alone.
	next := *gw
	next.Listeners = slices.Clone(gw.Listeners)
	vhs := make([]*ir.VirtualHost, len(gw.Listeners[0].VirtualHosts))
	for i, vh := range gw.Listeners[0].VirtualHosts {
		c := *vh
		c.Routes = slices.Clone(vh.Routes)
		vhs[i] = &c
	}
	next.Listeners[0].VirtualHosts = vhs
	next.Change = &ir.Change{Generation: 11, Since: 10, VirtualHosts: []ir.VirtualHostRef{{Listener: "http-80", Name: vhs[1].Name}}}
	second, err := m.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reused(first, second), []bool{true, false, true, true, true, true}; !slices.Equal(got, want) {
		t.Fatalf("reused %v, want %v", got, want)
	}
	// Every cluster a new value; the change names cluster 2, changed,
	// and cluster 4, not changed.
	clusters := make([]*ir.Cluster, len(gw.Clusters))
	for i, c := range gw.Clusters {
		v := *c
		clusters[i] = &v
	}
	clusters[2].Protocol = ir.ClusterH2C
	withClusters := next
	withClusters.Clusters = clusters
	withClusters.Change = &ir.Change{Generation: 12, Since: 11, Clusters: []string{clusters[2].Name, clusters[4].Name}}
	third, err := m.Translate(&withClusters)
	if err != nil {
		t.Fatal(err)
	}
	for i := range third.Clusters {
		if same := third.Clusters[i] == second.Clusters[i]; same != (i != 2) {
			t.Errorf("cluster %d: reused=%v", i, same)
		}
	}
	if got := reused(second, third); slices.Contains(got, false) {
		t.Fatalf("a cluster change rebuilt hosts: reused %v", got)
	}
	want, err := translate.Translate(&withClusters)
	if err != nil {
		t.Fatal(err)
	}
	assertEqualResources(t, want, third)
	next, second = withClusters, third

	// The same IR again changes nothing.
	again, err := m.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	if got := reused(second, again); slices.Contains(got, false) {
		t.Fatalf("the same IR again rebuilt hosts: reused %v", got)
	}
	// A change relative to another IR than the last translated, and no
	// change at all, compare every host with the one last translated:
	// each host equal to it (a new value, not the same pointer) is the
	// message built before, an edited one is built again.
	for i, c := range []*ir.Change{{Generation: 14, Since: 13}, nil} {
		other := next
		other.Listeners = slices.Clone(next.Listeners)
		vhs := make([]*ir.VirtualHost, len(next.Listeners[0].VirtualHosts))
		for j, vh := range next.Listeners[0].VirtualHosts {
			c := *vh
			c.Routes = slices.Clone(vh.Routes)
			vhs[j] = &c
		}
		edited := 2 + i
		vhs[edited].Routes[0].Name += "-edited"
		other.Listeners[0].VirtualHosts = vhs
		other.Change = c
		third, err := m.Translate(&other)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Repeat([]bool{true}, len(vhs))
		want[edited] = false
		if got := reused(again, third); !slices.Equal(got, want) {
			t.Fatalf("change %+v: reused %v, want %v (the edited host built again)", c, got, want)
		}
		fresh, err := translate.Translate(&other)
		if err != nil {
			t.Fatal(err)
		}
		assertEqualResources(t, fresh, third)
		again, next = third, other
	}
}

// On an HTTPS listener, a virtual host is named by its TLS server too: a
// change naming host h of server "a" rebuilds that host alone, not the
// host of the same name in server "b" (another route table).
func TestMemoChangeNamesTheTLSServer(t *testing.T) {
	servers := func(path string) []ir.TLSServer {
		var out []ir.TLSServer
		for _, name := range []string{"a", "b"} {
			out = append(out, ir.TLSServer{Name: name, SNI: []string{name + ".example.com"}, Certificates: []ir.SecretRef{{Name: "default/cert"}},
				VirtualHosts: []*ir.VirtualHost{propertyVhost("h.example.com", "default/svc-00/80", "/"), propertyVhost("i.example.com", "default/svc-00/80", "/")}})
		}
		out[0].VirtualHosts[0] = propertyVhost("h.example.com", "default/svc-00/80", path)
		return out
	}
	gw := &ir.Gateway{Namespace: "default", Name: "gw",
		Listeners: []ir.Listener{{Name: "https-443", Port: 443, Protocol: ir.ProtocolHTTPS, TLSServers: servers("/")}},
		Clusters:  []*ir.Cluster{{Name: "default/svc-00/80", Protocol: ir.ClusterHTTP1}},
		Secrets:   []ir.Secret{{Name: "default/cert", Cert: []byte("c"), Key: []byte("k")}},
		Change:    &ir.Change{Generation: 1}}
	var m Memo
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	next := *gw
	next.Listeners = []ir.Listener{gw.Listeners[0]}
	next.Listeners[0].TLSServers = servers("/v2")
	next.Change = &ir.Change{Generation: 2, Since: 1, VirtualHosts: []ir.VirtualHostRef{{Listener: "https-443", Server: "a", Name: "h.example.com"}}}
	second, err := m.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	want, err := translate.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	assertEqualResources(t, want, second)
	for i, rc := range second.Routes {
		for j, vh := range rc.GetVirtualHosts() {
			rebuilt := rc.GetName() == "https-443/a" && vh.GetName() == "h.example.com"
			if same := vh == first.Routes[i].GetVirtualHosts()[j]; same == rebuilt {
				t.Errorf("%s host %s: reused=%v", rc.GetName(), vh.GetName(), same)
			}
		}
	}
}

// TestMemoHoldsTheIRClustersNotCopies: the memo remembers the IR cluster
// each message was built from by reference (the IR is never modified once
// built), not as a copy; an equal IR cluster of a later IR keeps the
// message and takes the earlier one's place, so that only the current IR
// is held.
func TestMemoHoldsTheIRClustersNotCopies(t *testing.T) {
	gw := propertyBase(8)
	var m Memo
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range m.clusters {
		if e.ir != gw.Clusters[i] {
			t.Fatalf("cluster %s: the memo holds a copy of the IR cluster", e.ir.Name)
		}
	}
	// An IR of equal clusters, new values, no change said: compared by
	// content, the same messages.
	next := *gw
	next.Clusters = nil
	for _, c := range gw.Clusters {
		cc := *c
		next.Clusters = append(next.Clusters, &cc)
	}
	second, err := m.Translate(&next)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range m.clusters {
		if second.Clusters[i] != first.Clusters[i] {
			t.Fatalf("cluster %s: an equal IR cluster built a new message", e.ir.Name)
		}
		if e.ir != next.Clusters[i] {
			t.Fatalf("cluster %s: the memo keeps the earlier IR's cluster", e.ir.Name)
		}
	}
	// A changed one is built again.
	changed := next
	changed.Clusters = slices.Clone(next.Clusters)
	c := *changed.Clusters[3]
	c.Protocol = ir.ClusterH2C
	changed.Clusters[3] = &c
	third, err := m.Translate(&changed)
	if err != nil {
		t.Fatal(err)
	}
	if third.Clusters[3] == second.Clusters[3] || m.clusters[3].ir != &c {
		t.Fatal("a changed IR cluster kept its message")
	}
	if third.Clusters[2] != second.Clusters[2] {
		t.Fatal("an unchanged IR cluster got a new message")
	}
}
