package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// table is a route table named name with n virtual hosts, each with a
// hostname, the same with a port, and a route.
func table(name string, n int) *routev3.RouteConfiguration {
	rc := &routev3.RouteConfiguration{Name: name}
	for i := range n {
		h := hostName(i)
		rc.VirtualHosts = append(rc.VirtualHosts, &routev3.VirtualHost{
			Name: "bench/" + h, Domains: []string{h, h + ":*"},
			Routes: []*routev3.Route{{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: fmt.Sprintf("bench/%s/80", serviceName(i))}}},
			}},
		})
	}
	return rc
}

// decodedDomains are rc's domains as a decoding client reads them: any
// port cut off.
func decodedDomains(t *testing.T, buf []byte) []string {
	t.Helper()
	var rc routev3.RouteConfiguration
	if err := proto.Unmarshal(buf, &rc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			d, _, _ = strings.Cut(d, ":")
			out = append(out, d)
		}
	}
	return out
}

func readDomains(t *testing.T, buf []byte) ([]string, int, bool) {
	t.Helper()
	var out []string
	n, isTable, err := tableDomains(buf, func(d []byte) { out = append(out, string(d)) })
	if err != nil {
		t.Fatal(err)
	}
	return out, n, isTable
}

// TestTableDomains checks that the client's reading of a serialized route
// table finds what decoding it finds: the same domains, in order, whether
// the virtual hosts were serialized with the table or appended to it as
// raw field-2 bytes (as shardgate's wire tables are).
func TestTableDomains(t *testing.T) {
	rc := table(routeTable, 50)
	buf, err := proto.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	got, n, isTable := readDomains(t, buf)
	if !isTable || n != 50 {
		t.Fatalf("tableDomains: table %v, %d virtual hosts; want true, 50", isTable, n)
	}
	if want := decodedDomains(t, buf); !slices.Equal(got, want) || len(want) != 100 {
		t.Fatalf("tableDomains read %d domains %v\ndecoding read %d: %v", len(got), got, len(want), want)
	}

	// The virtual hosts after the name, as raw bytes of field 2, and the
	// name last: field order does not matter.
	var raw []byte
	for _, vh := range rc.GetVirtualHosts() {
		b, err := proto.Marshal(vh)
		if err != nil {
			t.Fatal(err)
		}
		raw = protowire.AppendTag(raw, routeConfigVHosts, protowire.BytesType)
		raw = protowire.AppendBytes(raw, b)
	}
	raw = protowire.AppendTag(raw, routeConfigName, protowire.BytesType)
	raw = protowire.AppendString(raw, routeTable)
	got2, n2, _ := readDomains(t, raw)
	if !slices.Equal(got2, got) || n2 != 50 {
		t.Fatalf("appended virtual hosts: read %d domains, %d virtual hosts; want %d, 50", len(got2), n2, len(got))
	}
	if !hasDomain(raw, hostName(49)) || hasDomain(raw, hostName(50)) || hasDomain(raw, hostName(4)+":*") {
		t.Fatal("hasDomain: want r-49 present, r-50 and a host with a port absent")
	}

	// Another table is not the watched one.
	other, err := proto.Marshal(table("https-443", 3))
	if err != nil {
		t.Fatal(err)
	}
	if d, _, isTable := readDomains(t, other); isTable || len(d) != 0 {
		t.Fatalf("table https-443: read as the watched table (%v, %d domains)", isTable, len(d))
	}

	// A serialization cut short is an error, as it is to decoding.
	for _, cut := range []int{len(buf) - 1, len(buf) / 2, 3} {
		if _, _, err := tableDomains(buf[:cut], func([]byte) {}); err == nil {
			if proto.Unmarshal(buf[:cut], &routev3.RouteConfiguration{}) != nil {
				t.Errorf("cut to %d bytes: tableDomains read it, decoding refuses it", cut)
			}
		}
	}
	if _, _, err := tableDomains(buf[:len(buf)-1], func([]byte) {}); err == nil {
		t.Error("the table without its last byte: no error")
	}
}

// BenchmarkTableDomains is what the client spends on each response at
// 3000 routes, read from the serialization and decoded.
func BenchmarkTableDomains(b *testing.B) {
	buf, err := proto.Marshal(table(routeTable, 3000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := tableDomains(buf, func([]byte) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var rc routev3.RouteConfiguration
			if err := proto.Unmarshal(buf, &rc); err != nil {
				b.Fatal(err)
			}
			domains := map[string]bool{}
			for _, vh := range rc.GetVirtualHosts() {
				for _, d := range vh.GetDomains() {
					d, _, _ = strings.Cut(d, ":")
					domains[d] = true
				}
			}
		}
	})
}

// fakeStream is an ADS stream fed by the test: Recv returns the responses
// sent on in, and Send records the client's requests.
type fakeStream struct {
	discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	in   chan *discovery.DiscoveryResponse
	sent chan *discovery.DiscoveryRequest
}

func (f *fakeStream) Recv() (*discovery.DiscoveryResponse, error) {
	r, ok := <-f.in
	if !ok {
		return nil, io.EOF
	}
	return r, nil
}

func (f *fakeStream) Send(r *discovery.DiscoveryRequest) error {
	f.sent <- r
	return nil
}

// TestRDSWatch checks what the client makes of each response: a host is
// awaited until a response holds it and awaited to leave until one lacks
// it; a response it cannot read is NACKed and changes nothing, not even
// for the hosts it holds before the fault.
func TestRDSWatch(t *testing.T) {
	f := &fakeStream{in: make(chan *discovery.DiscoveryResponse), sent: make(chan *discovery.DiscoveryRequest, 10)}
	w := &rdsWatch{stream: f, node: &core.Node{Id: "bench"}, waiting: map[string]chan time.Time{}, leaving: map[string]chan time.Time{}, done: make(chan struct{})}
	go w.receive()
	defer func() {
		close(f.in)
		<-w.done
	}()
	respond := func(version string, values ...[]byte) *discovery.DiscoveryRequest {
		t.Helper()
		resp := &discovery.DiscoveryResponse{VersionInfo: version, Nonce: "n-" + version, TypeUrl: routeTypeURL}
		for _, v := range values {
			resp.Resources = append(resp.Resources, &anypb.Any{TypeUrl: routeTypeURL, Value: v})
		}
		f.in <- resp
		select {
		case req := <-f.sent:
			return req
		case <-time.After(10 * time.Second):
			t.Fatal("no ACK or NACK")
			return nil
		}
	}
	marshal := func(rc *routev3.RouteConfiguration) []byte {
		b, err := proto.Marshal(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fired := func(ch <-chan time.Time) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	// Before any response nothing is there, and nothing is gone.
	two := w.expect(hostName(1))
	gone0 := w.expectGone(hostName(0))
	if fired(two) || fired(gone0) {
		t.Fatal("a host awaited before any response: fired")
	}
	if req := respond("1", marshal(table(routeTable, 2))); req.GetVersionInfo() != "1" || req.GetErrorDetail() != nil {
		t.Fatalf("response 1: want an ACK of version 1, got %v", req)
	}
	if !fired(two) {
		t.Fatal("r-1 is in response 1: its expect did not fire")
	}
	if fired(gone0) {
		t.Fatal("r-0 is in response 1: its expectGone fired")
	}
	if !fired(w.expect(hostName(0))) {
		t.Fatal("r-0 is in the last table: a new expect did not fire at once")
	}
	if w.vhosts.Load() != 2 {
		t.Fatalf("virtual hosts: %d, want 2", w.vhosts.Load())
	}

	// A table holding r-2 whose last virtual host, r-2's, ends in a field
	// cut short, after its domains: NACKed, and r-2 is not there.
	third := w.expect(hostName(2))
	bad := table(routeTable, 2)
	bad.VirtualHosts = nil
	raw := marshal(bad)
	for i, vh := range table(routeTable, 3).GetVirtualHosts() {
		b := marshal(&routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{vh}})
		if i == 2 {
			_, _, n := protowire.ConsumeTag(b)
			inner, _ := protowire.ConsumeBytes(b[n:])
			inner = protowire.AppendTag(slices.Clone(inner), 99, protowire.BytesType)
			inner = append(inner, 5, 'x') // five bytes promised, one given
			b = protowire.AppendBytes(protowire.AppendTag(nil, routeConfigVHosts, protowire.BytesType), inner)
		}
		raw = append(raw, b...)
	}
	if _, _, err := tableDomains(raw, func([]byte) {}); err == nil {
		t.Fatal("the faulty table: tableDomains read it")
	}
	req := respond("2", raw)
	if req.GetVersionInfo() != "" || req.GetErrorDetail() == nil || req.GetResponseNonce() != "n-2" {
		t.Fatalf("an unreadable response: want a NACK of nonce n-2, got %v", req)
	}
	if fired(third) || fired(gone0) {
		t.Fatal("an unreadable response changed what the client saw")
	}

	// A table without r-0 and with r-2; another table beside it is not
	// read as the watched one.
	rc := table(routeTable, 3)
	rc.VirtualHosts = rc.VirtualHosts[1:]
	if req := respond("3", marshal(table("https-443", 1)), marshal(rc)); req.GetErrorDetail() != nil {
		t.Fatalf("response 3: NACKed: %v", req.GetErrorDetail())
	}
	if !fired(third) || !fired(gone0) {
		t.Fatal("response 3 has r-2 and lacks r-0: expect or expectGone did not fire")
	}
	if !fired(w.expectGone(hostName(0))) || fired(w.expectGone(hostName(1))) {
		t.Fatal("expectGone against the last table: want r-0 gone at once and r-1 not")
	}
}
