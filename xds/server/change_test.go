package server

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/xds/translate"
)

// The Gateway API layer's incremental Translator feeds the server IR after
// IR, each naming what it changed (ir.Change), through route edits, routes
// removed and attached again, and new leases; after every publish, what the
// server serves (as go-control-plane marshals it) is what a fresh
// translation of that IR gives. Most steps are patches, so the server's
// builder rebuilds only what each change names.
func TestIncrementalPublishesWhatAFreshTranslationGives(t *testing.T) {
	in, eslices := pipelineInput(60)
	st := gatewayapi.NewStore(in.ControllerName)
	st.Load(in)
	tr := gatewayapi.NewTranslator(st)
	facts := gatewayapi.FactsOf(in)
	// A removed cluster goes at once: what is served is the translation.
	s := New(Options{Log: logr.Discard(), RetainRemoved: -1})
	for _, es := range eslices {
		s.UpdateEndpointSlice(nil, es)
	}
	nn := types.NamespacedName{Namespace: "default", Name: "gw"}
	rv := 1_000_000
	meta := func(ns, name string) metav1.ObjectMeta {
		rv++
		return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(rv), UID: types.UID(fmt.Sprint(rv)), Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(rv) * time.Second))}
	}
	r := rand.New(rand.NewPCG(7, 9))
	routes := in.HTTPRoutes
	detached := map[int]*gatewayv1.HTTPRoute{}
	lease := len(routes)
	for step := range 80 {
		k := r.IntN(len(routes))
		switch op := r.IntN(4); {
		case op == 0: // another path
			rt := routes[k].DeepCopy()
			rt.Generation++
			rv++
			rt.ResourceVersion = fmt.Sprint(rv)
			path, prefix := fmt.Sprintf("/s%d", step), gatewayv1.PathMatchPathPrefix
			rt.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
			routes[k] = rt
			st.Upsert(rt)
		case op == 1 && detached[k] == nil: // the route goes (its Service stays)
			detached[k] = routes[k]
			st.Delete(routes[k])
		case op == 1: // and comes back
			st.Upsert(detached[k])
			delete(detached, k)
		default: // a new lease: its Service, slice and route
			svc, es, rt := pipelineLease(lease, meta)
			lease++
			st.Upsert(svc)
			s.UpdateEndpointSlice(nil, es)
			st.Upsert(rt)
			routes = append(routes, rt)
		}
		gws := tr.Translate(facts).Gateways
		s.Publish(gws)
		if errs := s.PublishErrors(); len(errs) != 0 {
			t.Fatalf("step %d: %v", step, errs)
		}
		snap, err := s.Snapshot(nn)
		if err != nil {
			t.Fatal(err)
		}
		fresh := translateOrDie(t, gws[0])
		served := func(typ string, want []proto.Message) {
			t.Helper()
			got := snap.GetResources(typ)
			if len(got) != len(want) {
				t.Fatalf("step %d: %d %s served, a fresh translation has %d", step, len(got), typ, len(want))
			}
			for _, m := range want {
				r, ok := got[cachev3.GetResourceName(m)]
				if !ok {
					t.Fatalf("step %d: %s %s not served", step, typ, cachev3.GetResourceName(m))
				}
				enc, err := cachev3.MarshalResource(r)
				if err != nil {
					t.Fatal(err)
				}
				dec := m.ProtoReflect().New().Interface()
				if err := proto.Unmarshal(enc, dec); err != nil {
					t.Fatal(err)
				}
				same := proto.Equal(dec, m)
				if rc, ok := m.(*routev3.RouteConfiguration); ok {
					same = translate.SameRouteTable(dec.(*routev3.RouteConfiguration), rc)
				}
				if !same {
					t.Fatalf("step %d: %s %s served differs from a fresh translation", step, typ, cachev3.GetResourceName(m))
				}
			}
		}
		served(resourcev3.ListenerType, messagesOf(fresh.Listeners))
		served(resourcev3.RouteType, messagesOf(fresh.Routes))
		served(resourcev3.ClusterType, messagesOf(fresh.Clusters))
	}
	if tr.Stats.Patched < 40 {
		t.Fatalf("want most steps patched, got %+v", tr.Stats)
	}
}

func messagesOf[M proto.Message](ms []M) []proto.Message {
	out := make([]proto.Message, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
