/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// mix keeps each object of prev with probability keep and adds each of next
// with probability add, an object of next replacing the one of prev with
// its namespace/name. Kept objects are the same pointers, as in an informer
// cache.
func mix[T any, PT interface {
	*T
	client.Object
}](r *rand.Rand, prev, next []PT, keep, add float64) []PT {
	var out []PT
	at := map[string]int{}
	for _, o := range prev {
		if o != nil && r.Float64() < keep {
			at[o.GetNamespace()+"/"+o.GetName()] = len(out)
			out = append(out, o)
		}
	}
	for _, o := range next {
		if o == nil || r.Float64() >= add {
			continue
		}
		k := o.GetNamespace() + "/" + o.GetName()
		if i, ok := at[k]; ok {
			out[i] = o
			continue
		}
		at[k] = len(out)
		out = append(out, o)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// statusOnly replaces some objects by copies with a new resourceVersion
// and the same spec, as a status write does.
func statusOnly[T any, PT interface {
	*T
	client.Object
}](r *rand.Rand, objs []PT, rv *int) []PT {
	out := slices.Clone(objs)
	for i, o := range out {
		if r.IntN(3) == 0 {
			c := PT(new(T))
			*c = *o
			*rv++
			c.SetResourceVersion(fmt.Sprint(*rv))
			out[i] = c
		}
	}
	return out
}

// stamp gives every object of in a resourceVersion of its own, as the
// apiserver does: a changed object always has a new one.
func stamp(in *Input, rv *int) {
	set := func(o client.Object) {
		*rv++
		o.SetResourceVersion(fmt.Sprint(*rv))
		o.SetUID(types.UID(fmt.Sprint("uid-", *rv))) // a new object
	}
	for _, o := range in.GatewayClasses {
		set(o)
	}
	for _, o := range in.Gateways {
		set(o)
	}
	for _, o := range in.HTTPRoutes {
		set(o)
	}
	for _, o := range in.GRPCRoutes {
		set(o)
	}
	for _, o := range in.TLSRoutes {
		set(o)
	}
	for _, o := range in.Services {
		set(o)
	}
	for _, o := range in.ReferenceGrants {
		set(o)
	}
	for _, o := range in.EndpointSlices {
		set(o)
	}
	for _, o := range in.Secrets {
		set(o)
	}
	for _, o := range in.Namespaces {
		set(o)
	}
	for _, o := range in.GatewayParameters {
		set(o)
	}
}

var plainHosts = []string{"foo.example.com", "bar.example.com", "a.b.example.com", "x.example.com", "FOO.example.com"}

// TestTranslatorMatchesTranslate edits snapshots at random (objects kept,
// replaced, added and removed, as an informer cache changes) and checks
// that the Translator's output after every edit is exactly a fresh
// Translate's.
func TestTranslatorMatchesTranslate(t *testing.T) {
	cert, err := os.ReadFile("testdata/tls.crt")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("testdata/tls.key")
	if err != nil {
		t.Fatal(err)
	}
	seeds, steps := 200, 25
	if testing.Short() {
		seeds = 10
	}
	rv := 0
	var stats TranslatorStats
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		data := func() []byte {
			b := make([]byte, 200+r.IntN(400))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return b
		}
		tr := NewTranslator()
		// Half the seeds have only HTTPRoutes with plain hostnames: the
		// Gateways a patch applies to.
		httpOnly := seed%2 == 0
		gen := func() *Input {
			in := fuzzInput(data(), cert, key)
			if httpOnly {
				in.GRPCRoutes, in.TLSRoutes = nil, nil
				for _, rt := range in.HTTPRoutes {
					if r.IntN(5) > 0 {
						rt.Spec.Hostnames = nil
						for n := 1 + r.IntN(2); n > 0; n-- {
							rt.Spec.Hostnames = append(rt.Spec.Hostnames, gatewayv1.Hostname(plainHosts[r.IntN(len(plainHosts))]))
						}
					}
				}
			}
			// An informer cache holds one object per name.
			in.GatewayClasses = mix(r, nil, in.GatewayClasses, 0, 1)
			in.Gateways = mix(r, nil, in.Gateways, 0, 1)
			in.HTTPRoutes = mix(r, nil, in.HTTPRoutes, 0, 1)
			in.GRPCRoutes = mix(r, nil, in.GRPCRoutes, 0, 1)
			in.TLSRoutes = mix(r, nil, in.TLSRoutes, 0, 1)
			in.ReferenceGrants = mix(r, nil, in.ReferenceGrants, 0, 1)
			in.Services = mix(r, nil, in.Services, 0, 1)
			in.EndpointSlices = mix(r, nil, in.EndpointSlices, 0, 1)
			in.Secrets = mix(r, nil, in.Secrets, 0, 1)
			in.Namespaces = mix(r, nil, in.Namespaces, 0, 1)
			in.GatewayParameters = mix(r, nil, in.GatewayParameters, 0, 1)
			// A third of the seeds have shards, whose routes must be owned.
			if seed%3 == 1 {
				in.Ownership = randomOwnership(r)
			}
			stamp(in, &rv)
			return in
		}
		in := gen()
		for step := range steps {
			got, want := tr.Translate(in), Translate(in)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: the Translator's output differs from Translate's (stats %+v):\n%s", seed, step, tr.Stats, cmp.Diff(want, got))
			}
			// A second translation of the same snapshot, all from memory.
			if again := tr.Translate(in); !reflect.DeepEqual(again, want) {
				t.Fatalf("seed %d step %d: a repeated translation differs", seed, step)
			}
			fresh := gen()
			keep, add := 0.9, 0.15
			if step%5 == 4 {
				keep, add = 0.5, 0.5
			}
			next := &Input{ControllerName: in.ControllerName, Runtime: in.Runtime}
			if step%4 == 2 {
				// Only EndpointSlices change (endpoint churn).
				*next = *in
				next.EndpointSlices = mix(r, in.EndpointSlices, fresh.EndpointSlices, 0.8, 0.3)
				in = next
				continue
			}
			if step%2 == 1 {
				// Only HTTPRoutes change, as in the steady state, and
				// other objects get status-only updates: new objects,
				// same spec, which must not matter.
				*next = *in
				next.HTTPRoutes = mix(r, in.HTTPRoutes, fresh.HTTPRoutes, 0.9, 0.2)
				next.Gateways = statusOnly(r, in.Gateways, &rv)
				next.Services = statusOnly(r, in.Services, &rv)
				next.GatewayParameters = statusOnly(r, in.GatewayParameters, &rv)
				in = next
				continue
			}
			next.GatewayClasses = mix(r, in.GatewayClasses, fresh.GatewayClasses, 0.97, 0.05)
			next.Gateways = mix(r, in.Gateways, fresh.Gateways, keep, add/2)
			next.HTTPRoutes = mix(r, in.HTTPRoutes, fresh.HTTPRoutes, keep, add)
			next.GRPCRoutes = mix(r, in.GRPCRoutes, fresh.GRPCRoutes, keep, add)
			next.TLSRoutes = mix(r, in.TLSRoutes, fresh.TLSRoutes, keep, add)
			next.ReferenceGrants = mix(r, in.ReferenceGrants, fresh.ReferenceGrants, keep, add/2)
			next.Services = mix(r, in.Services, fresh.Services, keep, add/2)
			next.EndpointSlices = mix(r, in.EndpointSlices, fresh.EndpointSlices, keep, add)
			next.Secrets = mix(r, in.Secrets, fresh.Secrets, keep, add/2)
			next.Namespaces = mix(r, in.Namespaces, fresh.Namespaces, 0.97, 0.1)
			next.GatewayParameters = mix(r, in.GatewayParameters, fresh.GatewayParameters, keep, add/2)
			if step%7 == 6 {
				next.Runtime = fresh.Runtime
			}
			next.Ownership = in.Ownership
			if step%6 == 5 {
				next.Ownership = fresh.Ownership
			}
			in = next
		}
		stats.Full += tr.Stats.Full
		stats.Patched += tr.Stats.Patched
		stats.Reused += tr.Stats.Reused
	}
	t.Logf("Gateway translations: %+v", stats)
	if stats.Patched == 0 || stats.Reused == 0 {
		t.Errorf("the edits never exercised a patch or a reuse: %+v", stats)
	}
}

// randomOwnership makes some of the fuzz Gateways shards, in either routes
// mode, marks namespaces with owners and has them hold some of the plain
// hostnames (and a domain for wildcards).
func randomOwnership(r *rand.Rand) *Ownership {
	o := &Ownership{
		Shards:          map[types.NamespacedName]ShardRoutes{},
		Generated:       map[types.NamespacedName]GeneratedRoute{},
		NamespaceOwners: map[string]string{},
		Holders:         map[string]string{},
	}
	owners := []string{"akash1alice", "akash1bob"}
	for _, ns := range fzNamespaces {
		for _, gw := range fzGateways {
			if r.IntN(2) == 0 {
				o.Shards[types.NamespacedName{Namespace: ns, Name: gw}] = []ShardRoutes{RoutesGenerated, RoutesOwned}[r.IntN(2)]
			}
		}
		if r.IntN(3) > 0 {
			o.NamespaceOwners[ns] = owners[r.IntN(2)]
		}
	}
	for _, h := range plainHosts {
		if r.IntN(2) == 0 {
			o.Holders[h] = owners[r.IntN(2)]
		}
	}
	return o
}

// BenchmarkTranslatorOneRouteChange: 10k routes, one of them replaced per
// translation (a new object, as an update stores).
func BenchmarkTranslatorOneRouteChange(b *testing.B) {
	in := benchInput(10000)
	tr := NewTranslator()
	tr.Translate(in)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		r := in.HTTPRoutes[i%len(in.HTTPRoutes)].DeepCopy()
		r.Generation++
		in.HTTPRoutes[i%len(in.HTTPRoutes)] = r
		out := tr.Translate(in)
		if len(out.HTTPRouteStatus) != 10000 {
			b.Fatal("routes missing")
		}
	}
}

// TestTranslatorPatchesLargeGateway: one Gateway with 300 routes, edited a
// few routes at a time (hostnames shared between routes, backends moved
// between Services, routes deleted and created): every translation after
// the first is a patch, and equals a fresh translation.
func TestTranslatorPatchesLargeGateway(t *testing.T) {
	in := benchInput(300)
	// A second listener with its own hostname, and an HTTPS one, so that
	// hosts are owned by different listeners.
	gw := in.Gateways[0].DeepCopy()
	host := gatewayv1.Hostname("app-7.example.com")
	gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{Name: "own", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: &host})
	in.Gateways[0] = gw
	r := rand.New(rand.NewPCG(1, 2))
	tr := NewTranslator()
	rv := 0
	stamp(in, &rv)
	for step := range 150 {
		got, want := tr.Translate(in), Translate(in)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d (stats %+v):\n%s", step, tr.Stats, cmp.Diff(want, got))
		}
		next := *in
		next.HTTPRoutes = slices.Clone(in.HTTPRoutes)
		if step%3 == 2 {
			// Endpoint churn: a Service's EndpointSlice gets a new
			// address, and nothing else changes.
			next.EndpointSlices = slices.Clone(in.EndpointSlices)
			i := r.IntN(len(next.EndpointSlices))
			es := next.EndpointSlices[i].DeepCopy()
			rv++
			es.ResourceVersion = fmt.Sprint(rv)
			es.Endpoints[0].Addresses = []string{fmt.Sprintf("10.9.%d.%d", step, r.IntN(250))}
			next.EndpointSlices[i] = es
			in = &next
			continue
		}
		for n := 1 + r.IntN(3); n > 0; n-- {
			i := r.IntN(len(next.HTTPRoutes))
			rt := next.HTTPRoutes[i].DeepCopy()
			rv++
			rt.ResourceVersion = fmt.Sprint(rv)
			rt.Generation++
			switch r.IntN(5) {
			case 0: // share another route's hostname
				rt.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("app-%d.example.com", r.IntN(20)))}
			case 1: // another backend
				rt.Spec.Rules[0].BackendRefs[0].Name = gatewayv1.ObjectName(fmt.Sprintf("app-%d", r.IntN(300)))
			case 2: // delete
				next.HTTPRoutes = slices.Delete(next.HTTPRoutes, i, i+1)
				continue
			case 3: // a new route
				rt.Name = fmt.Sprintf("new-%d", step)
				rt.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("new-%d.example.com", r.IntN(10)))}
				next.HTTPRoutes = append(next.HTTPRoutes, rt)
				continue
			default: // another path
				p := fmt.Sprintf("/p%d", r.IntN(4))
				rt.Spec.Rules[0].Matches[0].Path.Value = &p
			}
			next.HTTPRoutes[i] = rt
		}
		in = &next
	}
	// Every change after the first is a patch, or a reuse when an
	// endpoint change hit a Service no route uses.
	if tr.Stats.Full != 1 || tr.Stats.Patched+tr.Stats.Reused != 149 || tr.Stats.Patched < 120 {
		t.Errorf("want 1 full translation and the rest patches, got %+v", tr.Stats)
	}
}

// BenchmarkTranslatorOneEndpointChange: 10k routes, each with its own
// Service; one EndpointSlice replaced per translation (endpoint churn).
func BenchmarkTranslatorOneEndpointChange(b *testing.B) {
	in := benchInput(10000)
	for i, s := range in.EndpointSlices {
		s.ResourceVersion = fmt.Sprint(i + 1)
	}
	tr := NewTranslator()
	tr.Translate(in)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		k := i % len(in.EndpointSlices)
		s := in.EndpointSlices[k].DeepCopy()
		s.ResourceVersion = fmt.Sprint(100000 + i)
		s.Endpoints[0].Addresses = []string{fmt.Sprintf("10.9.%d.%d", i/250%250, i%250)}
		in.EndpointSlices[k] = s
		tr.Translate(in)
	}
	b.StopTimer()
	if tr.Stats.Patched < b.N {
		b.Fatalf("%d patches for %d endpoint changes (%+v)", tr.Stats.Patched, b.N, tr.Stats)
	}
}
