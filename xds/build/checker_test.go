/*
Copyright The shardgate Authors.
*/

package build

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shardgate/shardgate/xds/translate"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/irtest"
)

func TestCheckerPassesGoldens(t *testing.T) {
	ins, err := filepath.Glob(goldenInputs)
	if err != nil {
		t.Fatal(err)
	}
	var c Checker
	for _, in := range ins {
		res, err := translate.Translate(irtest.LoadGateway(t, in))
		if err != nil {
			t.Fatal(err)
		}
		translated := slices.Clone(res.Routes)
		clusters := slices.Clone(res.Clusters)
		if err := c.Check(res); err != nil {
			t.Fatalf("%s: Check: %v", in, err)
		}
		for i, rc := range res.Routes {
			if _, ok := c.Digest(rc); !ok {
				t.Errorf("%s: route configuration %s: no digest", in, rc.GetName())
			}
			assertWireEqual(t, translated[i], rc)
		}
		for i, cl := range res.Clusters {
			assertSameBytes(t, &c, clusters[i], cl)
		}
	}
}

// assertSameBytes: a checked cluster is published as its wire form, whose serialization is the translated message's, byte for
// byte, and whose digest is known; Decode gives the message back.
func assertSameBytes(t *testing.T, c *Checker, want, wire proto.Message) {
	t.Helper()
	opts := proto.MarshalOptions{Deterministic: true}
	a, err := opts.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := opts.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("%T: the wire form serializes to other bytes than the message", want)
	}
	fields := 0
	want.ProtoReflect().Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { fields++; return true })
	if len(wire.ProtoReflect().GetUnknown()) == 0 && fields > 1 { // a name alone has nothing to copy
		t.Fatalf("%T: published as a message, not as its wire form", want)
	}
	if d, ok := c.Digest(wire); !ok || d != sha256.Sum256(a) {
		t.Fatalf("%T: the wire form's digest is unknown or not the message's", want)
	}
	decoded, err := translate.Decode(wire)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(decoded, want) {
		t.Fatalf("%T: Decode gives\n%v\nwant\n%v", want, decoded, want)
	}
}

// assertWireEqual: the wire form of a route configuration, serialized and
// read back, is the translated message.
func assertWireEqual(t *testing.T, want, wire *routev3.RouteConfiguration) {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	got := &routev3.RouteConfiguration{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	if !translate.SameRouteTable(want, got) {
		t.Fatalf("route configuration %s: the wire form reads back as\n%v\nwant\n%v", want.GetName(), got, want)
	}
	if len(want.GetVirtualHosts()) > 0 && len(wire.GetVirtualHosts()) != 0 {
		t.Fatalf("route configuration %s: the wire form carries its virtual hosts as messages too", want.GetName())
	}
}

// TestCheckerValidatesOnlyChanges: a check of the same config validates
// nothing; a one-route change validates one virtual host; and a resource
// broken after it once passed is still refused.
func TestCheckerValidatesOnlyChanges(t *testing.T) {
	gw := irtest.LargeGateway(2000)
	res, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	var c Checker
	if err := c.Check(res); err != nil {
		t.Fatal(err)
	}
	first, _ := c.Digest(res.Routes[0])
	total := c.Validated
	vhosts := 0
	for _, rc := range res.Routes {
		vhosts += len(rc.VirtualHosts)
	}
	if total < vhosts {
		t.Fatalf("first check validated %d messages, fewer than the %d virtual hosts", total, vhosts)
	}

	again, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(again); err != nil {
		t.Fatal(err)
	}
	second, _ := c.Digest(again.Routes[0])
	if c.Validated != 0 {
		t.Errorf("unchanged config: validated %d messages, want 0", c.Validated)
	}
	if first != second {
		t.Error("unchanged route configuration got a different digest")
	}

	gw.Listeners[0].VirtualHosts[3].Routes[0].Match.Path.Value = "/changed"
	changed, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(changed); err != nil {
		t.Fatal(err)
	}
	third, _ := c.Digest(changed.Routes[0])
	if c.Validated != 1 {
		t.Errorf("one route changed: validated %d messages, want 1", c.Validated)
	}
	if third == second {
		t.Error("changed route configuration kept its digest")
	}

	// Break a virtual host that passed before: still refused, and the
	// refusal names it.
	broken, err := translate.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	broken.Routes[0].VirtualHosts[5].Domains = nil
	if err := c.Check(broken); err == nil || !strings.Contains(err.Error(), "virtual host "+broken.Routes[0].VirtualHosts[5].GetName()) {
		t.Fatalf("a virtual host without domains passed, or the error does not name it: %v", err)
	}
	broken.Routes[0].VirtualHosts[5].Domains = []string{"x.example.com"}
	broken.Clusters[7].Name = "default/gone/80"
	if err := c.Check(broken); err == nil || !strings.Contains(err.Error(), `not found`) {
		t.Fatalf("a route to a renamed cluster passed: %v", err)
	}
}

func BenchmarkCheckOneRouteChange(b *testing.B) {
	gw := irtest.LargeGateway(10_000)
	var c Checker
	res, err := translate.Translate(gw)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Check(res); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		gw.Listeners[0].VirtualHosts[i%len(gw.Listeners[0].VirtualHosts)].Routes[0].Match.Path.Value = "/v" + strings.Repeat("x", i%7)
		res, err := translate.Translate(gw)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := c.Check(res); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckerKeepsOnlyCurrentTables: a route table changed again and again
// leaves the checker holding its current wire form only, not the earlier
// ones (each holds a whole serialized table).
func TestCheckerKeepsOnlyCurrentTables(t *testing.T) {
	gw := propertyBase(12)
	var m Memo
	var c Checker
	for step := range 40 {
		next := *gw
		next.Listeners = slices.Clone(gw.Listeners)
		vhs := slices.Clone(next.Listeners[0].VirtualHosts)
		vhs[step%len(vhs)] = propertyVhost(vhs[step%len(vhs)].Name, gw.Clusters[0].Name, fmt.Sprintf("/step-%d", step))
		next.Listeners[0].VirtualHosts = vhs
		gw = &next
		res, err := m.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Check(res); err != nil {
			t.Fatal(err)
		}
		m.adopt(&c)
		if len(c.wires) != len(res.Routes) {
			t.Fatalf("step %d: the checker holds %d wire route tables for %d tables", step, len(c.wires), len(res.Routes))
		}
		if _, ok := c.Digest(res.Routes[0]); !ok {
			t.Fatalf("step %d: the current table has no digest", step)
		}
	}
}

// TestCheckerAppendsAddedVirtualHosts: a table that only gained virtual
// hosts is published with the last wire form's bytes shared, not copied,
// and the new hosts after them; every wire form published keeps its bytes;
// a table that lost or changed a virtual host is laid out afresh, in name
// order.
func TestCheckerAppendsAddedVirtualHosts(t *testing.T) {
	gw := irtest.LargeGateway(300)
	var c Checker
	check := func(what string) (*routev3.RouteConfiguration, *routev3.RouteConfiguration) {
		t.Helper()
		res, err := translate.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		translated := res.Routes[0]
		if err := c.Check(res); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		assertWireEqual(t, translated, res.Routes[0])
		return translated, res.Routes[0]
	}
	serialize := func(rc *routev3.RouteConfiguration) []byte {
		t.Helper()
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	unknown := func(rc *routev3.RouteConfiguration) []byte { return rc.ProtoReflect().GetUnknown() }
	add := func(name string) {
		vhs := gw.Listeners[0].VirtualHosts
		vh := &ir.VirtualHost{Name: name, Domains: []string{name}, Routes: []ir.Route{{
			Name:     "HTTPRoute/default/" + name + "/rule/0/match/0",
			Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			Backends: []ir.Backend{{Cluster: gw.Clusters[0].Name, Weight: 1}},
		}}}
		i, _ := slices.BinarySearchFunc(vhs, name, func(v *ir.VirtualHost, n string) int { return strings.Compare(v.Name, n) })
		gw.Listeners[0].VirtualHosts = slices.Insert(slices.Clone(vhs), i, vh)
	}
	lastHost := func(rc *routev3.RouteConfiguration) string {
		t.Helper()
		dec, err := translate.Decode(rc)
		if err != nil {
			t.Fatal(err)
		}
		vhs := dec.(*routev3.RouteConfiguration).GetVirtualHosts()
		return vhs[len(vhs)-1].GetName()
	}

	_, first := check("first")
	firstBytes := serialize(first)

	// One host added between two others by name: appended, sharing the
	// first form's bytes.
	add("host-050a.example.com")
	_, second := check("one host added")
	u1, u2 := unknown(first), unknown(second)
	if len(u2) <= len(u1) || !bytes.Equal(u2[:len(u1)], u1) || &u2[0] != &u1[0] {
		t.Fatalf("one host added: the new wire form does not extend the last one's bytes in place (%d bytes, then %d)", len(u1), len(u2))
	}
	if got := lastHost(second); got != "host-050a.example.com" {
		t.Fatalf("one host added: the last virtual host is %s, want the added one", got)
	}
	secondBytes := serialize(second)

	// Two more: appended after the first addition.
	add("host-000a.example.com")
	add("host-099a.example.com")
	_, third := check("two hosts added")
	if u3 := unknown(third); !bytes.Equal(u3[:len(u2)], u2) {
		t.Fatal("two hosts added: the new wire form does not start with the last one's bytes")
	}

	// A host removed: laid out again, in name order.
	gw.Listeners[0].VirtualHosts = slices.Delete(slices.Clone(gw.Listeners[0].VirtualHosts), 10, 11)
	translated, fourth := check("one host removed")
	got := &routev3.RouteConfiguration{}
	if err := proto.Unmarshal(serialize(fourth), got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, translated) {
		t.Fatal("one host removed: the table is not laid out in the translation's order")
	}
	// Then added to again: appended to the new layout.
	add("host-077a.example.com")
	_, fifth := check("one host added after a removal")
	if u4, u5 := unknown(fourth), unknown(fifth); !bytes.Equal(u5[:len(u4)], u4) || &u5[0] != &u4[0] {
		t.Fatal("one host added after a removal: the new wire form does not extend the last one's bytes in place")
	}

	// A host changed: laid out again.
	vhs := slices.Clone(gw.Listeners[0].VirtualHosts)
	changed := *vhs[3]
	changed.Domains = []string{"changed.example.com"}
	vhs[3] = &changed
	gw.Listeners[0].VirtualHosts = vhs
	_, sixth := check("one host changed")
	if u5, u6 := unknown(fifth), unknown(sixth); &u6[0] == &u5[0] {
		t.Fatal("one host changed: the new wire form writes over the last one's buffer")
	}

	// The forms published before serialize as they did.
	if !bytes.Equal(serialize(first), firstBytes) || !bytes.Equal(serialize(second), secondBytes) {
		t.Fatal("a wire form published earlier changed its bytes")
	}
}
