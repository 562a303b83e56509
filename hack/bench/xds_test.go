package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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
