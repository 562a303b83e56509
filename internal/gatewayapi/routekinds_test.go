/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

func kindsMeta(name string) metav1.ObjectMeta {
	yes := true
	return metav1.ObjectMeta{
		Namespace: "tenant", Name: name, UID: types.UID("uid-" + name), Generation: 7,
		CreationTimestamp: metav1.Unix(1700000000, 0),
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "not-the-controller"},
			{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: "lh", UID: "controller-" + types.UID(name), Controller: &yes},
		},
	}
}

// Every route kind records the same facts of its object: the controller
// UID (a generated route's LeaseHost) included.
func TestCompileRouteFactsEveryKind(t *testing.T) {
	parents := []gatewayv1.ParentReference{{Name: "gw"}}
	objs := []Object{
		&gatewayv1.HTTPRoute{ObjectMeta: kindsMeta("h"), Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents}}},
		&gatewayv1.GRPCRoute{ObjectMeta: kindsMeta("g"), Spec: gatewayv1.GRPCRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents}}},
		&gatewayv1.TLSRoute{ObjectMeta: kindsMeta("t"), Spec: gatewayv1.TLSRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents}}},
		&gatewayv1.TCPRoute{ObjectMeta: kindsMeta("c"), Spec: gatewayv1.TCPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents}}},
	}
	if len(objs) != len(routeKinds) {
		t.Fatalf("%d objects for %d route kinds: add the new kind here", len(objs), len(routeKinds))
	}
	idx := NewIndex(&Input{})
	for i, o := range objs {
		cr := compileRoute(idx, o)
		if cr == nil {
			t.Fatalf("%T: not compiled", o)
		}
		m := o.(metav1.Object)
		want := RouteKey{Kind: routeKinds[i].name, NN: nn(m.GetNamespace(), m.GetName())}
		if cr.key != want || cr.gen != 7 || !cr.created.Equal(&metav1.Time{Time: m.GetCreationTimestamp().Time}) || cr.uid != m.GetUID() {
			t.Errorf("%T: key %v gen %d created %v uid %q, want %v 7 %v %q", o, cr.key, cr.gen, cr.created, cr.uid, want, m.GetCreationTimestamp(), m.GetUID())
		}
		if wantC := "controller-" + types.UID(m.GetName()); cr.controller != wantC {
			t.Errorf("%T: controller UID %q, want %q", o, cr.controller, wantC)
		}
		if len(cr.refs) != 1 || cr.refs[0].Name != "gw" {
			t.Errorf("%T: parentRefs %v", o, cr.refs)
		}
		if routeKindOf(o) != routeKinds[i] || routeKindNamed(want.Kind) != routeKinds[i] {
			t.Errorf("%T: descriptor lookup does not find entry %d", o, i)
		}
	}
	if compileRoute(idx, &gatewayv1.Gateway{}) != nil {
		t.Error("a Gateway compiled as a route")
	}
}

// An ExtensionRef filter cannot resolve on either request kind: the same
// reason and message, and the rule answers 500.
func TestExtensionRefSameOnEveryRequestKind(t *testing.T) {
	ext := &gatewayv1.LocalObjectReference{Group: "example.com", Kind: "Filter", Name: "f"}
	h := &gatewayv1.HTTPRoute{ObjectMeta: kindsMeta("h"), Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{
		Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterExtensionRef, ExtensionRef: ext}},
	}}}}
	g := &gatewayv1.GRPCRoute{ObjectMeta: kindsMeta("g"), Spec: gatewayv1.GRPCRouteSpec{Rules: []gatewayv1.GRPCRouteRule{{
		Filters: []gatewayv1.GRPCRouteFilter{{Type: gatewayv1.GRPCRouteFilterExtensionRef, ExtensionRef: ext}},
	}}}}
	idx := NewIndex(&Input{})
	const want = "extensionRef filter example.com/Filter f is not supported"
	for _, o := range []Object{h, g} {
		cr := compileRoute(idx, o)
		if cr.refsReason != string(gatewayv1.RouteReasonInvalidKind) || cr.refsMsg != want {
			t.Errorf("%T: ResolvedRefs %s %q, want InvalidKind %q", o, cr.refsReason, cr.refsMsg, want)
		}
		if len(cr.rules) != 1 || len(cr.rules[0].routes) != 1 {
			t.Fatalf("%T: rules %+v", o, cr.rules)
		}
		if dr := cr.rules[0].routes[0].DirectResponse; dr == nil || dr.Status != 500 {
			t.Errorf("%T: direct response %+v, want 500", o, dr)
		}
	}
}

// A filter HTTPRoute has but GRPCRoute does not is refused on a GRPCRoute
// as unknown, not read as HTTPRoute's.
func TestGRPCRouteRefusesHTTPOnlyFilters(t *testing.T) {
	g := &gatewayv1.GRPCRoute{ObjectMeta: kindsMeta("g"), Spec: gatewayv1.GRPCRouteSpec{Rules: []gatewayv1.GRPCRouteRule{
		{Filters: []gatewayv1.GRPCRouteFilter{{Type: gatewayv1.GRPCRouteFilterType(gatewayv1.HTTPRouteFilterRequestRedirect)}}},
		{},
	}}}
	cr := compileRoute(NewIndex(&Input{}), g)
	if len(cr.rules) != 1 || cr.rules[0].index != 1 {
		t.Fatalf("rules %+v, want rule 1 only", cr.rules)
	}
	if want := `rule 0: filter type "RequestRedirect" is not supported`; len(cr.dropMsgs) != 1 || cr.dropMsgs[0] != want {
		t.Errorf("dropped %q, want %q", cr.dropMsgs, want)
	}
	if !cr.rules[0].routes[0].GRPC {
		t.Error("a GRPCRoute's IR route is not marked GRPC")
	}
}

// Each listener protocol takes the kinds of the descriptors naming it.
func TestKindsForProtocol(t *testing.T) {
	for p, want := range map[ir.Protocol][]string{
		ir.ProtocolHTTP:           {kindHTTPRoute, kindGRPCRoute},
		ir.ProtocolHTTPS:          {kindHTTPRoute, kindGRPCRoute},
		ir.ProtocolTLSPassthrough: {kindTLSRoute},
		ir.ProtocolTLSTerminate:   {kindTLSRoute},
		ir.ProtocolTCP:            {kindTCPRoute},
	} {
		got := kindsForProtocol(p)
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", p, got, want)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", p, got, want)
			}
		}
	}
}

// The exported view of the table: every kind makes an empty route whose
// status.parents RouteParents reaches, and an Input's routes are walked
// kind by kind.
func TestRouteKindsExported(t *testing.T) {
	kinds := RouteKinds()
	if len(kinds) != len(routeKinds) {
		t.Fatalf("RouteKinds %v", kinds)
	}
	for _, kind := range kinds {
		obj := NewRoute(kind)
		got, parents, ok := RouteParents(obj)
		if !ok || got != kind {
			t.Fatalf("%s: RouteParents of NewRoute: %q %v", kind, got, ok)
		}
		*parents = []gatewayv1.RouteParentStatus{{ControllerName: "x"}}
		if _, again, _ := RouteParents(obj); len(*again) != 1 || (*again)[0].ControllerName != "x" {
			t.Errorf("%s: parents is not the object's own", kind)
		}
	}
	if NewRoute("Gateway") != nil {
		t.Error("NewRoute of a Gateway")
	}
	if _, _, ok := RouteParents((*gatewayv1.HTTPRoute)(nil)); ok {
		t.Error("a nil HTTPRoute has parents")
	}
	if _, _, ok := RouteParents(&gatewayv1.Gateway{}); ok {
		t.Error("a Gateway has route parents")
	}
	in := &Input{
		HTTPRoutes: []*gatewayv1.HTTPRoute{{ObjectMeta: kindsMeta("h")}, nil},
		GRPCRoutes: []*gatewayv1.GRPCRoute{{ObjectMeta: kindsMeta("g")}},
		TLSRoutes:  []*gatewayv1.TLSRoute{{ObjectMeta: kindsMeta("t")}},
		TCPRoutes:  []*gatewayv1.TCPRoute{{ObjectMeta: kindsMeta("c")}},
	}
	var seen []string
	in.EachRoute(func(kind string, o Object) { seen = append(seen, kind+"/"+o.GetName()) })
	if want := []string{"HTTPRoute/h", "GRPCRoute/g", "TLSRoute/t", "TCPRoute/c"}; len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] || seen[3] != want[3] {
		t.Errorf("EachRoute %v, want %v", seen, want)
	}
	if n := in.NumRoutes(); n != 5 {
		t.Errorf("NumRoutes %d, want 5 (nil entries counted)", n)
	}
	var at []string
	for i := 0; i < in.NumRoutes(); i++ {
		kind, o := in.RouteAt(i)
		if o == nil {
			at = append(at, kind+"/nil")
			continue
		}
		at = append(at, kind+"/"+o.GetName())
	}
	if want := "HTTPRoute/h HTTPRoute/nil GRPCRoute/g TLSRoute/t TCPRoute/c"; strings.Join(at, " ") != want {
		t.Errorf("RouteAt: %v, want %s", at, want)
	}
}
