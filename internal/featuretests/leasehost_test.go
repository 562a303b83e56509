package featuretests

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/leasehosts"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/sharding"
)

// A shard: a Gateway whose parameters give it a domain.
type shardWorld struct {
	class   *gatewayv1.GatewayClass
	params  *shardgatev1alpha1.GatewayParameters
	gateway *gatewayv1.Gateway
	infra   *corev1.Namespace
}

func newShard(gw types.NamespacedName, domain string) shardWorld {
	g := gateway(gw, "shardgate")
	g.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
		Group: gatewayv1.Group(shardgatev1alpha1.GroupVersion.Group), Kind: "GatewayParameters", Name: gw.Name,
	}}
	g.Spec.Listeners[0].Hostname = new(gatewayv1.Hostname("*." + domain))
	return shardWorld{
		class: gatewayClass("shardgate"),
		params: &shardgatev1alpha1.GatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: gw.Name},
			Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: domain}},
		},
		gateway: g,
		infra:   namespace(gw.Namespace, nil),
	}
}

// generatedRoute is the HTTPRoute the LeaseHost controller writes for lh
// once the ownership engine gave it every name it asks for: the shards
// are discovered, the plan made and the route built by the same functions
// the controller calls, with the default tenancy policy.
func generatedRoute(t *testing.T, s shardWorld, lh *shardgatev1alpha1.LeaseHost, ns *corev1.Namespace) *gatewayv1.HTTPRoute {
	t.Helper()
	var policy *controllers.Tenancy // the defaults
	shards, problems := sharding.Discover(controllerName, []*gatewayv1.GatewayClass{s.class}, []*gatewayv1.Gateway{s.gateway},
		[]*shardgatev1alpha1.GatewayParameters{s.params}, policy.Placement([]*corev1.Namespace{s.infra, ns}))
	if len(problems) > 0 || len(shards) != 1 {
		t.Fatalf("shards %v, problems %v", shards, problems)
	}
	plan := leasehosts.PlanIn(lh, shards, ns, policy.Policy())
	decisions := map[string]hostnames.Decision{}
	for _, h := range plan.Hosts {
		decisions[h] = hostnames.Decision{Host: h, Reserved: true}
	}
	rt := leasehosts.RouteFor(lh, plan, decisions)
	if rt == nil {
		t.Fatalf("no route for %s (plan %+v)", lh.Name, plan)
	}
	return rt
}

// A shard serves the route generated for a LeaseHost while the LeaseHost
// holds its name, and serves no route for a name no LeaseHost holds: the
// Gateway API controller decides both from the LeaseHosts in its store.
func TestShardServesTheLeaseHostsGeneratedRoute(t *testing.T) {
	ft := setup(t)
	shardGW := types.NamespacedName{Namespace: "infra", Name: "shard-a"}
	s := newShard(shardGW, "shard-a.example.test")
	leases := namespace("lease-a", nil)
	leases.Annotations = map[string]string{tenancy.OwnerKey: "akash1alice"}
	ft.Apply(s.infra, leases, s.class, s.params, s.gateway,
		service("lease-a", "web", 80, 8080), endpointSlice("lease-a", "web-1", "web", 8080, "10.244.5.5"),
		service("lease-a", "other", 80, 8080))
	p := ft.delta(shardGW)

	lh := &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lease-a", Name: "app", UID: "3b0e9a4e-0000-4000-8000-000000000001"},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:     shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 1, GSeq: 1, OSeq: 1},
			Subdomain: "app",
			Service:   shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			Path:      "/",
		},
	}
	route := generatedRoute(t, s, lh, leases)
	ft.Apply(lh, route)
	waitFor(t, p, goesTo(p, "app.shard-a.example.test", "/", "lease-a/web/80"))
	waitFor(t, p, hasEndpoints(p, "lease-a/web/80", "10.244.5.5:8080"))

	// A route the tenant writes itself, attached to the shard, for a name
	// under the shard's domain that no LeaseHost holds: not served. Once a
	// second LeaseHost's route, applied after it, is served, the
	// translation that served it had the tenant's route too.
	ft.Apply(httpRoute("lease-a", "squat", shardGW, "squat.shard-a.example.test", "/", "other", 80))
	lh2 := lh.DeepCopy()
	lh2.Name, lh2.UID, lh2.Spec.Subdomain, lh2.Spec.Lease.DSeq = "app2", "3b0e9a4e-0000-4000-8000-000000000002", "app2", 2
	ft.Apply(lh2, generatedRoute(t, s, lh2, leases))
	waitFor(t, p, goesTo(p, "app2.shard-a.example.test", "/", "lease-a/web/80"))
	if c, err := visit(p, httpTable, "squat.shard-a.example.test", "/"); err == nil {
		t.Fatalf("the shard routes a name no LeaseHost holds to %s", c)
	}
	if err := goesTo(p, "app.shard-a.example.test", "/", "lease-a/web/80")(); err != nil {
		t.Fatal(err)
	}

	// The LeaseHost deleted: its route, still there until the garbage
	// collector deletes it, is no longer served.
	ft.Delete(lh)
	waitFor(t, p, func() error {
		if c, err := visit(p, httpTable, "app.shard-a.example.test", "/"); err == nil {
			return fmt.Errorf("app.shard-a.example.test still goes to %s after its LeaseHost was deleted", c)
		}
		return nil
	})
}
