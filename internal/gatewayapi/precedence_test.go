/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

func entry(id, host string, path *ir.PathMatch, method string, headers, query int, created time.Time, ns, name string, rule int) *routeEntry {
	m := ir.Match{Path: path, Method: method}
	for range headers {
		m.Headers = append(m.Headers, ir.ValueMatch{Name: "h", Type: ir.MatchExact})
	}
	for range query {
		m.QueryParams = append(m.QueryParams, ir.ValueMatch{Name: "q", Type: ir.MatchExact})
	}
	return &routeEntry{
		route: &ir.Route{Name: id, Match: m}, host: host, created: metav1.NewTime(created),
		kind: kindHTTPRoute, ns: ns, name: name, rule: rule,
	}
}

func TestRouteLessOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	exact := func(v string) *ir.PathMatch { return &ir.PathMatch{Type: ir.MatchExact, Value: v} }
	prefix := func(v string) *ir.PathMatch { return &ir.PathMatch{Type: ir.MatchPathPrefix, Value: v} }
	regex := func(v string) *ir.PathMatch { return &ir.PathMatch{Type: ir.MatchRegularExpression, Value: v} }

	// want is in precedence order.
	want := []*routeEntry{
		entry("exact-host", "foo.example.com", prefix("/"), "", 0, 0, t1, "z", "z", 0),
		entry("deep-wildcard", "*.foo.example.com", prefix("/"), "", 0, 0, t1, "z", "z", 0),
		entry("wildcard-exact-path", "*.example.com", exact("/a"), "", 0, 0, t1, "z", "z", 0),
		entry("exact-long", "", exact("/foo/bar"), "", 0, 0, t1, "z", "z", 0),
		entry("exact-short", "", exact("/foo"), "", 0, 0, t1, "z", "z", 0),
		entry("regex-long", "", regex("/foo/[a-z]+/x"), "", 0, 0, t1, "z", "z", 0),
		entry("regex-short", "", regex("/f.*"), "", 0, 0, t1, "z", "z", 0),
		entry("prefix-long", "", prefix("/foo/bar"), "", 0, 0, t1, "z", "z", 0),
		entry("prefix-method-header", "", prefix("/foo"), "GET", 1, 0, t1, "z", "z", 0),
		entry("prefix-method", "", prefix("/foo"), "GET", 0, 5, t1, "z", "z", 0),
		entry("prefix-2-headers", "", prefix("/foo"), "", 2, 0, t1, "z", "z", 0),
		entry("prefix-1-header-2-query", "", prefix("/foo"), "", 1, 2, t1, "z", "z", 0),
		entry("prefix-1-header-1-query", "", prefix("/foo"), "", 1, 1, t1, "z", "z", 0),
		entry("prefix-oldest", "", prefix("/foo"), "", 0, 0, t0, "z", "z", 0),
		entry("prefix-ns-a", "", prefix("/foo"), "", 0, 0, t1, "a", "z", 0),
		entry("prefix-ns-b-name-a", "", prefix("/foo"), "", 0, 0, t1, "b", "a", 0),
		entry("prefix-ns-b-name-b-rule-0", "", prefix("/foo"), "", 0, 0, t1, "b", "b", 0),
		entry("prefix-ns-b-name-b-rule-1", "", prefix("/foo"), "", 0, 0, t1, "b", "b", 1),
		entry("root", "", prefix("/"), "", 0, 0, t0, "a", "a", 0),
	}
	names := func(es []*routeEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.route.Name)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		got := slices.Clone(want)
		rng.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		sort.Slice(got, func(i, j int) bool { return routeLess(got[i], got[j]) })
		if !reflect.DeepEqual(names(got), names(want)) {
			t.Fatalf("order:\n got  %v\n want %v", names(got), names(want))
		}
	}
	// Irreflexive and antisymmetric on the whole set.
	for _, a := range want {
		if routeLess(a, a) {
			t.Errorf("%s < itself", a.route.Name)
		}
		for _, b := range want {
			if a != b && routeLess(a, b) == routeLess(b, a) {
				t.Errorf("%s and %s are not ordered", a.route.Name, b.route.Name)
			}
		}
	}
}

func TestRouteLessGRPC(t *testing.T) {
	mk := func(id string, svc, meth, headers int) *routeEntry {
		e := entry(id, "", &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}, "", headers, 0, time.Time{}, "ns", "r", 0)
		e.grpc = &grpcKey{service: svc, method: meth}
		return e
	}
	want := []*routeEntry{mk("svc-long", 12, 0, 0), mk("svc-method", 5, 6, 0), mk("svc", 5, 0, 1), mk("svc-no-headers", 5, 0, 0), mk("method", 0, 4, 0), mk("none", 0, 0, 0)}
	got := slices.Clone(want)
	slices.Reverse(got)
	sort.Slice(got, func(i, j int) bool { return routeLess(got[i], got[j]) })
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("position %d: got %s, want %s", i, got[i].route.Name, want[i].route.Name)
		}
	}
}

func TestIntersectHostnames(t *testing.T) {
	cases := []struct {
		listener string
		route    []string
		want     []string
		ok       bool
	}{
		{"", nil, []string{""}, true},
		{"", []string{"a.example.com", "*.example.com"}, []string{"*.example.com", "a.example.com"}, true},
		{"foo.example.com", nil, []string{"foo.example.com"}, true},
		{"foo.example.com", []string{"foo.example.com"}, []string{"foo.example.com"}, true},
		{"foo.example.com", []string{"*.example.com"}, []string{"foo.example.com"}, true},
		{"foo.example.com", []string{"*.foo.example.com"}, nil, false},
		{"foo.example.com", []string{"bar.example.com"}, nil, false},
		{"*.example.com", []string{"foo.example.com", "foo.bar.example.com"}, []string{"foo.bar.example.com", "foo.example.com"}, true},
		{"*.example.com", []string{"example.com"}, nil, false},
		{"*.example.com", []string{"*.com"}, []string{"*.example.com"}, true},
		{"*.example.com", []string{"*.example.com"}, []string{"*.example.com"}, true},
		{"*.example.com", []string{"*.bar.example.com"}, []string{"*.bar.example.com"}, true},
		{"*.example.com", []string{"*.example.net", "other.org"}, nil, false},
		{"*.example.com", []string{"Foo.Example.com"}, []string{"foo.example.com"}, true},
		{"*.com", []string{"a.b.com", "*.b.com"}, []string{"*.b.com", "a.b.com"}, true},
	}
	for _, c := range cases {
		got, ok := IntersectHostnames(c.listener, c.route)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("IntersectHostnames(%q, %q) = %q, %v; want %q, %v", c.listener, c.route, got, ok, c.want, c.ok)
		}
	}
}

func TestCoveringHostnames(t *testing.T) {
	cases := map[string][]string{
		"":                nil,
		"a.b.c":           {"*.b.c", "*.c", ""},
		"*.b.c":           {"*.c", ""},
		"localhost":       {""},
		"foo.example.com": {"*.example.com", "*.com", ""},
	}
	for h, want := range cases {
		var got []string
		if h != "" {
			var buf [256]byte
			for c, rest, ok := coverNext(coverStart(h), buf[:0]); ok; c, rest, ok = coverNext(rest, buf[:0]) {
				got = append(got, string(c))
			}
			got = append(got, "")
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("covering wildcards of %q = %q, want %q", h, got, want)
		}
		for _, c := range want {
			if !hostnameCovers(c, h) {
				t.Errorf("%q should cover %q", c, h)
			}
		}
	}
}

func TestHostnameMoreSpecific(t *testing.T) {
	want := []string{"a.example.com", "b.example.com", "*.foo.example.com", "*.example.com", "*.com", ""}
	got := slices.Clone(want)
	slices.Reverse(got)
	sort.Slice(got, func(i, j int) bool { return hostnameMoreSpecific(got[i], got[j]) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
