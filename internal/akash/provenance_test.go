package akash

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// Hostile tenants label objects in their own namespaces with a victim's
// lease: the API must not report them under the victim's lease.
const attacker = "akash1attackerattackerattackerattacker0000"

func TestGeneratedRoutes(t *testing.T) {
	victim := providerHost("web.example.com", "web", 80)
	p, d := planned(t, victim)
	real := RouteFor(victim, p, d, DefaultRouteOptions())
	victimNS := HostLease(victim).Namespace()
	attackerLease := Lease{Owner: attacker, DSeq: 7, GSeq: 1, OSeq: 1, Provider: provider}

	forge := func(name, ns string, l Lease, host string) gatewayv1.HTTPRoute {
		r := real.DeepCopy()
		r.Name, r.Namespace = name, ns
		r.Labels = l.Labels()
		r.Labels[LabelManaged] = "true"
		r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
		r.Spec.Rules[0].BackendRefs[0].Name = "evil"
		return *r
	}
	deleted := victim.DeepCopy()
	deleted.Spec.Hostname = "gone.example.com"
	deleted.DeletionTimestamp = &metav1.Time{}
	invalid := victim.DeepCopy()
	invalid.Spec.Hostname = "bad.example.com"
	invalid.Spec.ServiceName = ""
	hosts := []akashv1.ProviderHost{*victim, *deleted, *invalid}

	cases := []struct {
		name  string
		route gatewayv1.HTTPRoute
		want  bool
	}{
		{"the route shardgate generated", *real, true},
		{"the victim's lease labels in the attacker's namespace, a name nobody asked for", forge("forged.example.com", attackerLease.Namespace(), HostLease(victim), "forged.example.com"), false},
		{"the victim's lease labels and hostname, in the attacker's namespace", forge("web.example.com", attackerLease.Namespace(), HostLease(victim), "web.example.com"), false},
		{"another name for the victim's hostname, in the attacker's namespace", forge("shadow", attackerLease.Namespace(), HostLease(victim), "web.example.com"), false},
		{"the attacker's own lease, a name it has no ProviderHost for", forge("free.example.com", attackerLease.Namespace(), attackerLease, "free.example.com"), false},
		{"in the victim's namespace, a name the victim has no ProviderHost for", forge("other.example.com", victimNS, HostLease(victim), "other.example.com"), false},
		{"for a ProviderHost being deleted", forge("gone.example.com", victimNS, HostLease(victim), "gone.example.com"), false},
		{"for an invalid ProviderHost", forge("bad.example.com", victimNS, HostLease(victim), "bad.example.com"), false},
		{"no lease labels", func() gatewayv1.HTTPRoute {
			r := *real.DeepCopy()
			r.Labels = map[string]string{LabelManaged: "true"}
			return r
		}(), false},
	}
	var routes []gatewayv1.HTTPRoute
	for _, c := range cases {
		r := *c.route.DeepCopy()
		r.Annotations = map[string]string{"case": c.name}
		routes = append(routes, r)
	}
	got := GeneratedRoutes(routes, hosts)
	for _, c := range cases {
		kept := slices.ContainsFunc(got, func(r gatewayv1.HTTPRoute) bool { return r.Annotations["case"] == c.name })
		if kept != c.want {
			t.Errorf("%s (%s/%s): kept %v, want %v", c.name, c.route.Namespace, c.route.Name, kept, c.want)
		}
	}
	// What the API renders: the victim's real entry only.
	m := ManagedHostnames(got)
	if len(m) != 1 || m["web.example.com"].ServiceName != "web" || m["web.example.com"].Namespace != victimNS {
		t.Fatalf("managed hostnames %+v: want only web.example.com → web in %s", m, victimNS)
	}
}

func TestGeneratedIPServices(t *testing.T) {
	lip := leasedIP("web", 8080, 80, "TCP", owner+"-ip-myip")
	l, proto, err := IPLease(lip)
	if err != nil {
		t.Fatal(err)
	}
	real := IPServiceFor(lip, l, proto, "default")
	attackerNS := Lease{Owner: attacker, DSeq: 7, GSeq: 1, OSeq: 1, Provider: provider}.Namespace()
	forge := func(name, ns string) corev1.Service {
		s := *real.DeepCopy()
		s.Name, s.Namespace = name, ns
		return s
	}
	gone := leasedIP("db", 5432, 5432, "TCP", owner+"-ip-myip")
	gone.DeletionTimestamp = &metav1.Time{}
	cases := []struct {
		name string
		svc  corev1.Service
		want bool
	}{
		{"the Service shardgate wrote", *real, true},
		{"the victim's lease labels in the attacker's namespace", forge(real.Name, attackerNS), false},
		{"in the victim's namespace, a Service no ProviderLeasedIP asks for", forge("web-ip-81-tcp", real.Namespace), false},
		{"for a ProviderLeasedIP being deleted", forge("db-ip-5432-tcp", real.Namespace), false},
	}
	var svcs []corev1.Service
	for _, c := range cases {
		svcs = append(svcs, c.svc)
	}
	got := GeneratedIPServices(svcs, []akashv1.ProviderLeasedIP{*lip, *gone})
	for _, c := range cases {
		kept := slices.ContainsFunc(got, func(s corev1.Service) bool { return s.Namespace == c.svc.Namespace && s.Name == c.svc.Name })
		if kept != c.want {
			t.Errorf("%s (%s/%s): kept %v, want %v", c.name, c.svc.Namespace, c.svc.Name, kept, c.want)
		}
	}
}
