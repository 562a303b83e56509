/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/ir"
)

// loaded is a Translator over a Store that is made to hold each snapshot
// in turn (Store.Load issues the events an informer would).
type loaded struct {
	st *Store
	tr *Translator
}

func newLoaded() *loaded {
	st := NewStore(testController)
	return &loaded{st: st, tr: NewTranslator(st)}
}

func (l *loaded) translate(in *Input) *Output {
	l.st.Load(in)
	return l.tr.Translate(FactsOf(in))
}

// sameOutput compares two Outputs, leaving out what only says how they
// were made (Seq and the changed set).
func sameOutput(a, b *Output) bool {
	return reflect.DeepEqual(bare(a), bare(b))
}

// plainOutput is an Output with its route statuses as Go maps, so that
// it compares by value.
type plainOutput struct {
	Gateways        []*ir.Gateway
	GatewayClasses  map[string]gatewayv1.GatewayClassStatus
	GatewayStatus   map[types.NamespacedName]gatewayv1.GatewayStatus
	HTTPRouteStatus map[types.NamespacedName][]gatewayv1.RouteParentStatus
	GRPCRouteStatus map[types.NamespacedName][]gatewayv1.RouteParentStatus
	TLSRouteStatus  map[types.NamespacedName][]gatewayv1.RouteParentStatus
	TCPRouteStatus  map[types.NamespacedName][]gatewayv1.RouteParentStatus
	ListenerSets    map[types.NamespacedName]gatewayv1.ListenerSetStatus
	PolicyStatus    PolicyStatuses
}

func bare(o *Output) plainOutput {
	return plainOutput{
		Gateways: withoutChange(o.Gateways), GatewayClasses: o.GatewayClasses, GatewayStatus: o.GatewayStatus,
		HTTPRouteStatus: plainStatuses(o.HTTPRouteStatus),
		GRPCRouteStatus: plainStatuses(o.GRPCRouteStatus),
		TLSRouteStatus:  plainStatuses(o.TLSRouteStatus),
		TCPRouteStatus:  plainStatuses(o.TCPRouteStatus),
		ListenerSets:    nonEmpty(o.ListenerSetStatus),
		PolicyStatus:    o.BackendTLSPolicyStatus,
	}
}

// withoutChange is gws without their Change: what they serve. Two IRs of
// the same input differ in their history alone.
func withoutChange(gws []*ir.Gateway) []*ir.Gateway {
	if gws == nil {
		return nil
	}
	out := make([]*ir.Gateway, len(gws))
	for i, gw := range gws {
		if gw != nil {
			c := *gw
			c.Change = nil
			gw = &c
		}
		out[i] = gw
	}
	return out
}

func nonEmpty[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

func plainStatuses(r RouteStatuses) map[types.NamespacedName][]gatewayv1.RouteParentStatus {
	if r.Len() == 0 {
		return nil
	}
	return maps.Collect(r.All())
}

// events lists the Store events that turn prev into next (objects added,
// replaced or removed), to be applied in any order.
func events(st *Store, prev, next *Input) []func() {
	var out []func()
	kind := func(prevObjs, nextObjs []client.Object) {
		had := map[string]client.Object{}
		for _, o := range prevObjs {
			had[o.GetNamespace()+"/"+o.GetName()] = o
		}
		for _, o := range nextObjs {
			k := o.GetNamespace() + "/" + o.GetName()
			if had[k] != o {
				out = append(out, func() { st.Upsert(o) })
			}
			delete(had, k)
		}
		for _, o := range had {
			out = append(out, func() { st.Delete(o) })
		}
	}
	kind(objs(prev.GatewayClasses), objs(next.GatewayClasses))
	kind(objs(prev.Gateways), objs(next.Gateways))
	kind(objs(prev.ListenerSets), objs(next.ListenerSets))
	kind(objs(prev.HTTPRoutes), objs(next.HTTPRoutes))
	kind(objs(prev.GRPCRoutes), objs(next.GRPCRoutes))
	kind(objs(prev.TLSRoutes), objs(next.TLSRoutes))
	kind(objs(prev.TCPRoutes), objs(next.TCPRoutes))
	kind(objs(prev.ReferenceGrants), objs(next.ReferenceGrants))
	kind(objs(prev.Services), objs(next.Services))
	kind(objs(prev.Secrets), objs(next.Secrets))
	kind(objs(prev.ConfigMaps), objs(next.ConfigMaps))
	kind(objs(prev.Namespaces), objs(next.Namespaces))
	kind(objs(prev.GatewayParameters), objs(next.GatewayParameters))
	kind(objs(prev.BackendTLSPolicies), objs(next.BackendTLSPolicies))
	kind(objs(prev.ConfigMaps), objs(next.ConfigMaps))
	return out
}

func objs[T any, PT interface {
	*T
	client.Object
}](list []PT) []client.Object {
	out := make([]client.Object, 0, len(list))
	for _, o := range list {
		if o != nil {
			out = append(out, o)
		}
	}
	return out
}

// applyShuffled applies the events from prev to next in a random order.
func applyShuffled(r *rand.Rand, st *Store, prev, next *Input) {
	evs := events(st, prev, next)
	r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	for _, e := range evs {
		e()
	}
}

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
	for _, o := range in.ListenerSets {
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
	for _, o := range in.TCPRoutes {
		set(o)
	}
	for _, o := range in.Services {
		set(o)
	}
	for _, o := range in.ReferenceGrants {
		set(o)
	}
	for _, o := range in.Secrets {
		set(o)
	}
	for _, o := range in.ConfigMaps {
		set(o)
	}
	for _, o := range in.Namespaces {
		set(o)
	}
	for _, o := range in.GatewayParameters {
		set(o)
	}
	for _, o := range in.BackendTLSPolicies {
		set(o)
	}
	for _, o := range in.ConfigMaps {
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
	lsAccepted := 0 // accepted ListenerSets seen, to show they are exercised
	var stats TranslatorStats
	tlsClusters, policyAncestors := 0, 0
	overLimit, overLimitPatched := 0, 0 // routes refused TenantLimitExceeded; patches while some were
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		data := func() []byte {
			b := make([]byte, 200+r.IntN(400))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return b
		}
		st := NewStore(testController)
		tr := NewTranslator(st)
		// Half the seeds have only HTTPRoutes with plain hostnames: the
		// Gateways a patch applies to.
		httpOnly := seed%2 == 0
		gen := func() *Input {
			in := fuzzInput(data(), cert, key)
			if httpOnly {
				in.GRPCRoutes, in.TLSRoutes, in.TCPRoutes = nil, nil, nil
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
			in.ListenerSets = mix(r, nil, in.ListenerSets, 0, 1)
			in.HTTPRoutes = mix(r, nil, in.HTTPRoutes, 0, 1)
			in.GRPCRoutes = mix(r, nil, in.GRPCRoutes, 0, 1)
			in.TLSRoutes = mix(r, nil, in.TLSRoutes, 0, 1)
			in.TCPRoutes = mix(r, nil, in.TCPRoutes, 0, 1)
			in.ReferenceGrants = mix(r, nil, in.ReferenceGrants, 0, 1)
			in.Services = mix(r, nil, in.Services, 0, 1)
			in.Secrets = mix(r, nil, in.Secrets, 0, 1)
			in.ConfigMaps = mix(r, nil, in.ConfigMaps, 0, 1)
			in.Namespaces = mix(r, nil, in.Namespaces, 0, 1)
			in.GatewayParameters = mix(r, nil, in.GatewayParameters, 0, 1)
			in.BackendTLSPolicies = mix(r, nil, in.BackendTLSPolicies, 0, 1)
			// A third of the seeds have shards, whose routes must be owned.
			if seed%3 == 1 {
				in.Ownership = randomOwnership(r)
				// Most of them bound each tenant tightly, so that
				// tenants go over their limits and an edit of one
				// route changes the admission of others.
				if r.IntN(4) > 0 {
					in.TenantLimits = randomTenantLimits(r)
				}
			}
			stamp(in, &rv)
			return in
		}
		in := gen()
		prev := &Input{}
		lastIR := map[types.NamespacedName]*ir.Gateway{} // each Gateway's IR last handed over
		var recreate []client.Object                     // deleted last step, to create again
		var deleteFirst []client.Object                  // deleted and created again in one batch
		for step := range steps {
			for _, o := range deleteFirst {
				st.Delete(o)
			}
			deleteFirst = nil
			applyShuffled(r, st, prev, in)
			before := tr.Stats
			got, want := tr.Translate(FactsOf(in)), Translate(in)
			if !sameOutput(got, want) {
				t.Fatalf("seed %d step %d: the Translator's output differs from Translate's (stats %+v):\n%s", seed, step, tr.Stats, cmp.Diff(bare(want), bare(got)))
			}
			// Each IR says what changed since the Gateway's IR before it.
			for _, g := range got.Gateways {
				key := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
				assertChange(t, lastIR[key], g)
				lastIR[key] = g
			}
			if n := limitRefusals(want); n > 0 {
				overLimit += n
				if tr.Stats.Patched > before.Patched {
					overLimitPatched++
				}
			}
			for _, g := range want.Gateways {
				for _, c := range g.Clusters {
					if c.TLS != nil {
						tlsClusters++
					}
				}
			}
			policyAncestors += len(want.BackendTLSPolicyStatus)
			for _, ls := range want.ListenerSetStatus {
				if meta.IsStatusConditionTrue(ls.Conditions, "Accepted") {
					lsAccepted++
				}
			}
			// A second translation with nothing changed, all from memory.
			if again := tr.Translate(FactsOf(in)); !sameOutput(again, want) || len(again.StatusChanged) != 0 {
				t.Fatalf("seed %d step %d: a repeated translation differs (%d changed)", seed, step, len(again.StatusChanged))
			}
			prev = in
			fresh := gen()
			keep, add := 0.9, 0.15
			if step%5 == 4 {
				keep, add = 0.5, 0.5
			}
			next := &Input{}
			*next = *in
			for _, o := range recreate {
				switch o := o.(type) {
				case *gatewayv1.HTTPRoute:
					next.HTTPRoutes = append(slices.Clone(next.HTTPRoutes), o)
				case *corev1.Service:
					next.Services = append(slices.Clone(next.Services), o)
				}
			}
			recreate = nil
			switch step % 8 {
			case 1, 5:
				// Only HTTPRoutes change, as in the steady state, and
				// other objects get status-only updates: new objects,
				// same spec, which must not matter.
				next.HTTPRoutes = mix(r, in.HTTPRoutes, fresh.HTTPRoutes, 0.9, 0.2)
				next.Gateways = statusOnly(r, in.Gateways, &rv)
				next.Services = statusOnly(r, in.Services, &rv)
				next.GatewayParameters = statusOnly(r, in.GatewayParameters, &rv)
				in = next
				continue
			case 2:
				// Only Services change (ports, appProtocols, new and
				// gone Services).
				next.Services = mix(r, in.Services, fresh.Services, 0.8, 0.3)
				in = next
				continue
			case 3:
				// The tenant flow: a new Service and a route naming it,
				// all in one step.
				tenantFlow(r, next, step, &rv)
				in = next
				continue
			case 4:
				// ReferenceGrant churn, and Namespace labels changing.
				next.ReferenceGrants = mix(r, in.ReferenceGrants, fresh.ReferenceGrants, 0.5, 0.5)
				next.Namespaces = relabel(r, in.Namespaces, &rv)
				// ListenerSet churn, and status-only ListenerSet writes.
				next.ListenerSets = statusOnly(r, mix(r, in.ListenerSets, fresh.ListenerSets, 0.7, 0.5), &rv)
				in = next
				continue
			case 6:
				// Delete and re-create: some routes and Services are
				// deleted now and created again (new UIDs) next step;
				// others are deleted and created again in one batch.
				next.HTTPRoutes, recreate = deleteSome(r, next.HTTPRoutes, recreate, &rv)
				next.Services, recreate = deleteSome(r, next.Services, recreate, &rv)
				var again []client.Object
				next.HTTPRoutes, again = deleteSome(r, next.HTTPRoutes, nil, &rv)
				for _, o := range again {
					deleteFirst = append(deleteFirst, o)
					next.HTTPRoutes = append(next.HTTPRoutes, o.(*gatewayv1.HTTPRoute))
				}
				in = next
				continue
			case 7:
				// BackendTLSPolicy churn: policies and CA ConfigMaps
				// added, replaced and removed, some status-only.
				next.BackendTLSPolicies = mix(r, in.BackendTLSPolicies, fresh.BackendTLSPolicies, 0.6, 0.4)
				next.ConfigMaps = mix(r, in.ConfigMaps, fresh.ConfigMaps, 0.6, 0.4)
				next.BackendTLSPolicies = statusOnly(r, next.BackendTLSPolicies, &rv)
				in = next
				continue
			}
			next.GatewayClasses = mix(r, in.GatewayClasses, fresh.GatewayClasses, 0.97, 0.05)
			next.Gateways = mix(r, in.Gateways, fresh.Gateways, keep, add/2)
			next.ListenerSets = mix(r, in.ListenerSets, fresh.ListenerSets, keep, add)
			next.HTTPRoutes = mix(r, in.HTTPRoutes, fresh.HTTPRoutes, keep, add)
			next.GRPCRoutes = mix(r, in.GRPCRoutes, fresh.GRPCRoutes, keep, add)
			next.TLSRoutes = mix(r, in.TLSRoutes, fresh.TLSRoutes, keep, add)
			next.TCPRoutes = mix(r, in.TCPRoutes, fresh.TCPRoutes, keep, add)
			next.ReferenceGrants = mix(r, in.ReferenceGrants, fresh.ReferenceGrants, keep, add/2)
			next.Services = mix(r, in.Services, fresh.Services, keep, add/2)
			next.Secrets = mix(r, in.Secrets, fresh.Secrets, keep, add/2)
			next.ConfigMaps = mix(r, in.ConfigMaps, fresh.ConfigMaps, keep, add/2)
			next.Namespaces = mix(r, in.Namespaces, fresh.Namespaces, 0.97, 0.1)
			next.GatewayParameters = mix(r, in.GatewayParameters, fresh.GatewayParameters, keep, add/2)
			next.BackendTLSPolicies = mix(r, in.BackendTLSPolicies, fresh.BackendTLSPolicies, keep, add/2)
			next.ConfigMaps = mix(r, in.ConfigMaps, fresh.ConfigMaps, keep, add/2)
			if step%7 == 6 {
				next.Runtime = fresh.Runtime
			}
			if step%6 == 5 {
				next.Ownership, next.TenantLimits = fresh.Ownership, fresh.TenantLimits
			}
			in = next
		}
		stats.Full += tr.Stats.Full
		stats.Patched += tr.Stats.Patched
		stats.Reused += tr.Stats.Reused
	}
	t.Logf("Gateway translations: %+v; TLS clusters %d, policies with ancestors %d, accepted ListenerSets seen: %d", stats, tlsClusters, policyAncestors, lsAccepted)
	if tlsClusters == 0 || policyAncestors == 0 {
		t.Errorf("the edits never produced a TLS cluster (%d) or a policy status (%d)", tlsClusters, policyAncestors)
	}
	if lsAccepted == 0 {
		t.Errorf("the edits never produced an accepted ListenerSet")
	}
	// Limits are rarely reached here (few fuzz routes are admitted on a
	// shard); TestTranslatorTenantLimitsMatchTranslate reaches them.
	t.Logf("parent entries over a tenant limit: %d; patched translations with some: %d", overLimit, overLimitPatched)
	if stats.Patched == 0 || stats.Reused == 0 {
		t.Errorf("the edits never exercised a patch or a reuse: %+v", stats)
	}
}

// tenantFlow adds to in a new Service and an HTTPRoute naming it, on one
// of the fuzz Gateways, as a new lease does.
func tenantFlow(r *rand.Rand, in *Input, step int, rv *int) {
	ns := fzNamespaces[r.IntN(len(fzNamespaces))]
	name := fmt.Sprintf("tenant-%d-%d", step, r.IntN(1000))
	one := benchInput(1)
	svc, rt := one.Services[0], one.HTTPRoutes[0]
	svc.Name, svc.Namespace = name, ns
	rt.Name, rt.Namespace = name, ns
	rt.Spec.ParentRefs[0].Name = gatewayv1.ObjectName(fzGateways[r.IntN(len(fzGateways))])
	rt.Spec.ParentRefs[0].Namespace = ptrTo(gatewayv1.Namespace(fzNamespaces[r.IntN(len(fzNamespaces))]))
	rt.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(plainHosts[r.IntN(len(plainHosts))])}
	rt.Spec.Rules[0].BackendRefs[0].Name = gatewayv1.ObjectName(name)
	objs := []client.Object{svc, rt}
	// Half the leases speak TLS to their backend: random inputs rarely
	// line up a policy with a Service a route sends to.
	var policy *gatewayv1.BackendTLSPolicy
	if r.IntN(2) == 0 {
		policy = &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
			Spec: gatewayv1.BackendTLSPolicySpec{
				TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{
					Kind: "Service", Name: gatewayv1.ObjectName(name)}}},
				Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "backend.example.com",
					WellKnownCACertificates: ptrTo(gatewayv1.WellKnownCACertificatesSystem)},
			}}
		objs = append(objs, policy)
	}
	for _, o := range objs {
		*rv++
		o.SetResourceVersion(fmt.Sprint(*rv))
		o.SetUID(types.UID(fmt.Sprint("uid-", *rv)))
	}
	in.Services = append(slices.Clone(in.Services), svc)
	in.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), rt)
	if policy != nil {
		in.BackendTLSPolicies = append(slices.Clone(in.BackendTLSPolicies), policy)
	}
}

// relabel replaces some Namespaces by copies with other labels.
func relabel(r *rand.Rand, nss []*corev1.Namespace, rv *int) []*corev1.Namespace {
	out := slices.Clone(nss)
	for i, ns := range out {
		if r.IntN(2) == 0 {
			c := ns.DeepCopy()
			if _, ok := c.Labels["team"]; ok {
				delete(c.Labels, "team")
			} else {
				c.Labels["team"] = "a"
			}
			*rv++
			c.ResourceVersion = fmt.Sprint(*rv)
			out[i] = c
		}
	}
	return out
}

// deleteSome removes about a third of objs and returns copies of them, with
// new UIDs, to be created again.
func deleteSome[T any, PT interface {
	*T
	client.Object
}](r *rand.Rand, objs []PT, recreate []client.Object, rv *int) ([]PT, []client.Object) {
	var kept []PT
	for _, o := range objs {
		if r.IntN(3) > 0 {
			kept = append(kept, o)
			continue
		}
		c := PT(new(T))
		*c = *o
		*rv++
		c.SetResourceVersion(fmt.Sprint(*rv))
		c.SetUID(types.UID(fmt.Sprint("uid-", *rv)))
		recreate = append(recreate, c)
	}
	return kept, recreate
}

// randomTenantLimits are limits small enough for the fuzz inputs' tenants
// to go over them; some fields are left unlimited.
func randomTenantLimits(r *rand.Rand) TenantLimits {
	return TenantLimits{Routes: r.IntN(4), Rules: r.IntN(6), Matches: r.IntN(8), RegularExpressions: r.IntN(3)}
}

// limitRefusals counts the route parent entries refused for a tenant
// limit.
func limitRefusals(out *Output) int {
	n := 0
	for _, m := range []RouteStatuses{out.HTTPRouteStatus, out.GRPCRouteStatus, out.TLSRouteStatus} {
		for _, ps := range m.All() {
			for _, p := range ps {
				if c := meta.FindStatusCondition(p.Conditions, "Accepted"); c != nil && c.Reason == shardgatev1alpha1.ReasonTenantLimitExceeded {
					n++
				}
			}
		}
	}
	return n
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

// TestTranslatorPatchesLargeGateway: one Gateway with 300 routes, edited a
// few routes at a time (hostnames shared between routes, backends moved
// between Services, routes deleted and created): every translation after
// the first is a patch, equals a fresh translation, and names in its
// Change what it changed.
func TestTranslatorPatchesLargeGateway(t *testing.T) {
	in := benchInput(300)
	// A second listener with its own hostname, and an HTTPS one, so that
	// hosts are owned by different listeners.
	gw := in.Gateways[0].DeepCopy()
	host := gatewayv1.Hostname("app-7.example.com")
	gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{Name: "own", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: &host})
	in.Gateways[0] = gw
	r := rand.New(rand.NewPCG(1, 2))
	l := newLoaded()
	tr := l.tr
	rv := 0
	stamp(in, &rv)
	var last *ir.Gateway
	for step := range 150 {
		got, want := l.translate(in), Translate(in)
		if !sameOutput(got, want) {
			t.Fatalf("step %d (stats %+v):\n%s", step, tr.Stats, cmp.Diff(bare(want), bare(got)))
		}
		// Each IR says what changed since the one before it.
		assertChange(t, last, got.Gateways[0])
		last = got.Gateways[0]
		next := *in
		next.HTTPRoutes = slices.Clone(in.HTTPRoutes)
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

// TestOwnershipChangesMarksWhatTheTranslatorReads: a difference in any
// field of Ownership but Retiring and Deleted (the status writer's) marks
// what it affects; a difference in those two marks nothing. A field added
// to Ownership fails this test until it is placed. Each change marks no
// more than it must: a route's Generated entry marks that route only, the
// holders, namespace owners and block list mark the Owned shard only.
func TestOwnershipChangesMarksWhatTheTranslatorReads(t *testing.T) {
	gw := types.NamespacedName{Namespace: "infra", Name: "shard"}
	owned := types.NamespacedName{Namespace: "infra", Name: "owned"}
	route := types.NamespacedName{Namespace: "t", Name: "r"}
	other := types.NamespacedName{Namespace: "t", Name: "other"}
	base := func() *Ownership {
		return &Ownership{
			Shards: map[types.NamespacedName]ShardRoutes{gw: RoutesGenerated, owned: RoutesOwned},
			Generated: map[types.NamespacedName]GeneratedRoute{
				route: {LeaseHost: "uid", Hosts: map[types.NamespacedName][]string{gw: {"a.example.test"}}},
				other: {LeaseHost: "uid-2", Hosts: map[types.NamespacedName][]string{gw: {"b.example.test"}}},
			},
			NamespaceOwners: map[string]string{"t": "owner"},
			Holders:         map[string]string{"a.example.test": "owner"},
			Blocked:         hostnames.MustBlockList(".blocked.test"),
			Retiring:        map[types.NamespacedName]types.UID{{Namespace: "t", Name: "old"}: "uid-old"},
			Deleted:         map[types.UID]bool{"uid-gone": true},
		}
	}
	type marks struct {
		all      bool
		routes   []types.NamespacedName
		gateways []types.NamespacedName
	}
	ownedOnly := marks{gateways: []types.NamespacedName{owned}}
	changes := map[string]struct {
		change func(o *Ownership)
		want   marks
	}{
		"Shards":          {func(o *Ownership) { o.Shards[gw] = RoutesOwned }, marks{all: true}},
		"Generated":       {func(o *Ownership) { o.Generated[route] = GeneratedRoute{LeaseHost: "uid"} }, marks{routes: []types.NamespacedName{route}}},
		"NamespaceOwners": {func(o *Ownership) { o.NamespaceOwners["t"] = "other" }, ownedOnly},
		"Holders":         {func(o *Ownership) { o.Holders["b.example.test"] = "owner" }, ownedOnly},
		"Blocked":         {func(o *Ownership) { o.Blocked = hostnames.MustBlockList(".other.test") }, ownedOnly},
		"Retiring":        {func(o *Ownership) { o.Retiring = nil }, marks{}},
		"Deleted":         {func(o *Ownership) { o.Deleted["uid-new"] = true }, marks{}},
		// Without a delta from the other's generation, the facts are
		// compared: a generation alone changes nothing.
		"Gen": {func(o *Ownership) { o.Gen = 7 }, marks{}},
		"Delta": {func(o *Ownership) {
			o.Delta = &OwnershipDelta{Since: 3, Routes: []types.NamespacedName{route}, Owners: true}
		}, marks{}},
	}
	tr := NewTranslator(NewStore(testController))
	marked := func(a, b *Ownership) marks {
		d := newDirty()
		var m marks
		m.all = tr.ownershipChanges(a, b, &d)
		for k := range d.Routes {
			m.routes = append(m.routes, k.NN)
		}
		m.gateways = slices.Collect(maps.Keys(d.Gateways))
		return m
	}
	for i := range reflect.TypeFor[Ownership]().NumField() {
		name := reflect.TypeFor[Ownership]().Field(i).Name
		c, ok := changes[name]
		if !ok {
			t.Errorf("Ownership.%s: not covered; say whether the translator reads it (ownershipChanges)", name)
			continue
		}
		o := base()
		c.change(o)
		for _, pair := range [][2]*Ownership{{base(), o}, {o, base()}} {
			if got := marked(pair[0], pair[1]); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Ownership.%s changed: marked %+v, want %+v", name, got, c.want)
			}
		}
	}
	if got := marked(base(), base()); !reflect.DeepEqual(got, marks{}) {
		t.Errorf("equal Ownerships marked %+v", got)
	}
	if !marked(nil, base()).all || !marked(base(), nil).all || !reflect.DeepEqual(marked(nil, nil), marks{}) {
		t.Error("nil Ownerships")
	}
	// A delta from the last facts' generation is taken as it is: only what
	// it names is marked, nothing is compared.
	a, b := base(), base()
	a.Gen, b.Gen = 5, 6
	b.Generated[route] = GeneratedRoute{LeaseHost: "uid"}
	b.Delta = &OwnershipDelta{Since: 5, Routes: []types.NamespacedName{other}}
	if got := marked(a, b); !reflect.DeepEqual(got, marks{routes: []types.NamespacedName{other}}) {
		t.Errorf("a delta from the last generation: marked %+v, want its routes only", got)
	}
	b.Delta.Owners = true
	if got := marked(a, b); !reflect.DeepEqual(got, marks{routes: []types.NamespacedName{other}, gateways: []types.NamespacedName{owned}}) {
		t.Errorf("a delta with owners: marked %+v, want its routes and the Owned shard", got)
	}
	// From another generation: compared.
	b.Delta.Since = 4
	if got := marked(a, b); !reflect.DeepEqual(got, marks{routes: []types.NamespacedName{route}}) {
		t.Errorf("a delta from another generation: marked %+v, want what differs", got)
	}
	// Without an Owned shard (nor ListenerSets), the holders are read by
	// nobody.
	a, b = base(), base()
	delete(a.Shards, owned)
	delete(b.Shards, owned)
	b.Holders["c.example.test"] = "owner"
	if got := marked(a, b); !reflect.DeepEqual(got, marks{}) {
		t.Errorf("holders changed with Generated shards only: marked %+v", got)
	}
}
