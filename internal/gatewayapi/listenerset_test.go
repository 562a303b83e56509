/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func listenerSet(ns, name string, gw types.NamespacedName, created int64, entries ...gatewayv1.ListenerEntry) *gatewayv1.ListenerSet {
	return &gatewayv1.ListenerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.Unix(created, 0)},
		Spec: gatewayv1.ListenerSetSpec{
			ParentRef: gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(gw.Name), Namespace: ptrTo(gatewayv1.Namespace(gw.Namespace))},
			Listeners: entries,
		},
	}
}

// httpEntry is an HTTP listener on port 80 (hostname "" = none).
func httpEntry(name, host string) gatewayv1.ListenerEntry {
	e := gatewayv1.ListenerEntry{Name: gatewayv1.SectionName(name), Port: 80, Protocol: gatewayv1.HTTPProtocolType}
	if host != "" {
		e.Hostname = ptrTo(gatewayv1.Hostname(host))
	}
	return e
}

// lsRoute is an HTTPRoute in ns attached to the ListenerSet ls of ns.
func lsRoute(ns, name, ls string, hosts ...string) *gatewayv1.HTTPRoute {
	return route(func(r *gatewayv1.HTTPRoute) {
		r.Namespace, r.Name = ns, name
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Kind: ptrTo(gatewayv1.Kind(kindListenerSet)), Name: gatewayv1.ObjectName(ls)}}
		for _, h := range hosts {
			r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
		}
	})
}

// lsCondition is "<status>/<reason>" of condition typ of the ListenerSet
// k's listener (or of the ListenerSet itself when listener is "").
func lsCondition(out *Output, k types.NamespacedName, listener, typ string) string {
	st, ok := out.ListenerSetStatus[k]
	if !ok {
		return "<no status>"
	}
	conds := st.Conditions
	if listener != "" {
		conds = nil
		for _, l := range st.Listeners {
			if string(l.Name) == listener {
				conds = l.Conditions
			}
		}
	}
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "<none>"
	}
	return string(c.Status) + "/" + c.Reason
}

// allowAll lets every namespace attach ListenerSets to the Gateway k.
func allowAll(in *Input, k types.NamespacedName) {
	for i, g := range in.Gateways {
		if g.Namespace == k.Namespace && g.Name == k.Name {
			c := g.DeepCopy()
			c.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}
			in.Gateways[i] = c
		}
	}
}

// TestListenerSetShardOwnership: on a shard, a ListenerSet listener's
// hostname is admitted only when the owner of the ListenerSet's namespace
// holds it (a wildcard: its whole domain, nothing blocked or another
// tenant's below it); otherwise the listener is Accepted=False
// HostnameNotOwned and neither it nor its routes serve anything. The shard's
// own HTTP listener has no hostname, so an admitted ListenerSet listener
// would take its names over (listener isolation): these are the ways a
// tenant could try to steal alice's shop.example.test.
func TestListenerSetShardOwnership(t *testing.T) {
	alienNS := "unmarked"
	cases := []struct {
		name     string
		ns, host string // the ListenerSet's namespace and listener hostname
		routeNS  string // the route's namespace ("" = ns)
		admitted bool
		gw       types.NamespacedName
		gwHost   string // the hostname of the shard's HTTP listener ("" = none)
	}{
		{name: "bob claims alice's name", ns: bobNS, host: "shop.example.test"},
		{name: "bob's wildcard covers alice's name", ns: bobNS, host: "*.example.test"},
		{name: "bob's wildcard covers a blocked name", ns: bobNS, host: "*.b.example.test"},
		{name: "a name bob holds but the provider blocks", ns: bobNS, host: "held.blocked.test"},
		{name: "a listener without hostname", ns: bobNS, host: "", gwHost: "*.example.test"},
		{name: "a namespace without owner", ns: alienNS, host: "bob.example.test"},
		{name: "bob's own name", ns: bobNS, host: "bob.example.test", admitted: true},
		{name: "bob's own domain as a wildcard", ns: bobNS, host: "*.bob.example.test", admitted: true},
		{name: "not a shard: no ownership rule", ns: bobNS, host: "shop.example.test", admitted: true, gw: plainGW},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gw := tc.gw
			if gw.Name == "" {
				gw = shardGW
			}
			in := ownershipInput(RoutesOwned)
			allowAll(in, gw)
			if tc.gwHost != "" {
				in.Gateways[0].Spec.Listeners = slices.Clone(in.Gateways[0].Spec.Listeners)
				in.Gateways[0].Spec.Listeners[0].Hostname = ptrTo(gatewayv1.Hostname(tc.gwHost))
			}
			in.Namespaces = append(in.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: alienNS}})
			in.Services = append(in.Services, service(alienNS, "web"))
			in.Ownership.Holders["held.blocked.test"] = "akash1bob"
			in.Ownership.Holders["bob.example.test"] = "akash1bob"
			in.HTTPRoutes = append(in.HTTPRoutes, generatedShop())
			in.ListenerSets = []*gatewayv1.ListenerSet{listenerSet(tc.ns, "steal", gw, 200, httpEntry("http", tc.host))}
			routeHost := tc.host
			if !tc.admitted && (routeHost == "" || routeHost[0] == '*') {
				routeHost = "shop.example.test"
			}
			in.HTTPRoutes = append(in.HTTPRoutes, lsRoute(tc.ns, "r", "steal", routeHost))
			out := Translate(in)
			lsKey := types.NamespacedName{Namespace: tc.ns, Name: "steal"}
			got := served(out, gw)
			entry := routeHost + " " + tc.ns + "/r"
			if tc.admitted {
				if c := lsCondition(out, lsKey, "http", "Accepted"); c != "True/Accepted" {
					t.Fatalf("listener Accepted = %s, want True/Accepted", c)
				}
				if !slices.Contains(got, entry) {
					t.Fatalf("%q is not served: %v", entry, got)
				}
				return
			}
			if c := lsCondition(out, lsKey, "http", "Accepted"); c != "False/"+shardgatev1alpha1.ReasonHostnameNotOwned {
				t.Fatalf("listener Accepted = %s, want False/%s", c, shardgatev1alpha1.ReasonHostnameNotOwned)
			}
			if c := lsCondition(out, lsKey, "", "Accepted"); c != "False/ListenersNotValid" {
				t.Fatalf("ListenerSet Accepted = %s, want False/ListenersNotValid", c)
			}
			for _, e := range got {
				if e == entry || e[len(e)-len(tc.ns)-2:] == tc.ns+"/r" {
					t.Fatalf("the refused listener's route is served: %v", got)
				}
			}
			if !slices.Contains(got, "shop.example.test tenant-a/shop") {
				t.Fatalf("alice's generated route is no longer served: %v", got)
			}
			for _, l := range out.Gateways {
				if l.Namespace == gw.Namespace && l.Name == gw.Name {
					for _, il := range l.Listeners {
						if slices.Contains(il.Sources, tc.ns+"/steal/http") {
							t.Fatalf("the refused listener is in the IR: %v", il.Sources)
						}
					}
				}
			}
		})
	}
}

// TestListenerSetNotAllowed: a ListenerSet whose parent Gateway does not
// admit its namespace (allowedListeners unset: None; Same from another
// namespace; a Selector it does not match) merges nothing, and routes
// naming it serve nothing.
func TestListenerSetNotAllowed(t *testing.T) {
	sel := &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptrTo(gatewayv1.NamespacesFromSelector),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"listeners": "yes"}}}}
	same := &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptrTo(gatewayv1.NamespacesFromSame)}}
	for name, al := range map[string]*gatewayv1.AllowedListeners{"unset": nil, "Same": same, "Selector": sel} {
		t.Run(name, func(t *testing.T) {
			in := hostileInput()
			in.Gateways[0].Spec.AllowedListeners = al
			in.Services = append(in.Services, service("other", "web"))
			gw := types.NamespacedName{Namespace: "default", Name: "gw"}
			in.ListenerSets = []*gatewayv1.ListenerSet{listenerSet("other", "ls", gw, 1, httpEntry("http", "evil.example.test"))}
			in.HTTPRoutes = []*gatewayv1.HTTPRoute{lsRoute("other", "r", "ls")}
			out := Translate(in)
			k := types.NamespacedName{Namespace: "other", Name: "ls"}
			if c := lsCondition(out, k, "", "Accepted"); c != "False/NotAllowed" {
				t.Fatalf("Accepted = %s, want False/NotAllowed", c)
			}
			if c := lsCondition(out, k, "", "Programmed"); c != "False/NotAllowed" {
				t.Fatalf("Programmed = %s, want False/NotAllowed", c)
			}
			if got := served(out, gw); len(got) != 0 {
				t.Fatalf("served %v", got)
			}
			if n := out.GatewayStatus[gw].AttachedListenerSets; n != nil && *n != 0 {
				t.Fatalf("attachedListenerSets = %d", *n)
			}
		})
	}
}

// TestListenerSetForeignSecret: a ListenerSet's certificateRef to another
// namespace's Secret needs a ReferenceGrant from ListenerSets of its
// namespace; a grant to the Gateway, or to ListenerSets of another
// namespace, does not do.
func TestListenerSetForeignSecret(t *testing.T) {
	grant := func(kind, ns string) *gatewayv1beta1.ReferenceGrant {
		return &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g"},
			Spec: gatewayv1beta1.ReferenceGrantSpec{
				From: []gatewayv1beta1.ReferenceGrantFrom{{Group: groupGateway, Kind: gatewayv1.Kind(kind), Namespace: gatewayv1.Namespace(ns)}},
				To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: kindSecret}},
			}}
	}
	for _, tc := range []struct {
		name  string
		grant *gatewayv1beta1.ReferenceGrant
		want  string
	}{
		{"no grant", nil, "False/RefNotPermitted"},
		{"a grant to Gateways", grant(kindGateway, "other"), "False/RefNotPermitted"},
		{"a grant to another namespace's ListenerSets", grant(kindListenerSet, "third"), "False/RefNotPermitted"},
		{"a grant to its ListenerSets", grant(kindListenerSet, "other"), "True/ResolvedRefs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := hostileInput()
			gw := types.NamespacedName{Namespace: "default", Name: "gw"}
			in.Gateways[0].Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, gatewayv1.Listener{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
				Hostname: ptrTo(gatewayv1.Hostname("gw.example.test")),
				TLS:      &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "victim"}}}})
			in.Secrets = []*corev1.Secret{tlsSecret(t, "default", "victim")}
			if tc.grant != nil {
				in.ReferenceGrants = []*gatewayv1beta1.ReferenceGrant{tc.grant}
			}
			e := gatewayv1.ListenerEntry{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptrTo(gatewayv1.Hostname("evil.example.test")),
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "victim", Namespace: ptrTo(gatewayv1.Namespace("default"))}}}}
			in.ListenerSets = []*gatewayv1.ListenerSet{listenerSet("other", "ls", gw, 1, e)}
			out := Translate(in)
			k := types.NamespacedName{Namespace: "other", Name: "ls"}
			if c := lsCondition(out, k, "https", "ResolvedRefs"); c != tc.want {
				t.Fatalf("ResolvedRefs = %s, want %s", c, tc.want)
			}
			var servers []string
			for _, g := range out.Gateways {
				for _, l := range g.Listeners {
					for _, s := range l.TLSServers {
						servers = append(servers, s.Name)
					}
				}
			}
			if has := slices.Contains(servers, "other/ls/https"); has != (tc.want == "True/ResolvedRefs") {
				t.Fatalf("TLS servers %v: the ListenerSet's is served = %v", servers, has)
			}
		})
	}
}

// tlsSecret is a valid TLS Secret (testdata/tls.crt and tls.key).
func tlsSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	crt, key := tlsPEM(t)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
}

// TestStoreListenerSetMarks: a ListenerSet marks the Gateway its parentRef
// names (before and after a change); a Secret, ReferenceGrant or Namespace
// marks only the Gateways of the ListenerSets that read it; a route naming
// a ListenerSet is attached through the ListenerSet's Gateway.
func TestStoreListenerSetMarks(t *testing.T) {
	in := benchInput(20)
	st := NewStore(testController)
	st.Load(in)
	st.takeDirty()
	gwA := types.NamespacedName{Namespace: "default", Name: "gw"}
	gwB := types.NamespacedName{Namespace: "default", Name: "gw-b"}
	marked := func(want ...types.NamespacedName) {
		t.Helper()
		got := slices.Collect(maps.Keys(st.dirty.Gateways))
		slices.SortFunc(got, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
		if !slices.Equal(got, want) || len(st.dirty.Routes) != 0 {
			t.Fatalf("marked Gateways %v (want %v) and routes %v", got, want, st.dirty.Routes)
		}
		st.takeDirty()
	}

	e := gatewayv1.ListenerEntry{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptrTo(gatewayv1.Hostname("t.example.test")),
		TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{
			{Name: "own"}, {Name: "shared", Namespace: ptrTo(gatewayv1.Namespace("certs"))}}}}
	ls := listenerSet("lease-3", "ls", gwA, 1, e)
	st.Upsert(ls)
	marked(gwA)

	// A status-only update marks nothing.
	upd := ls.DeepCopy()
	upd.ResourceVersion = "7"
	upd.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}}
	if st.Upsert(upd) {
		t.Fatal("a status-only ListenerSet update is relevant")
	}
	marked()

	// Its Secrets, the grants where they live and its Namespace mark its
	// Gateway; others mark nothing.
	st.Upsert(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lease-3", Name: "own"}})
	marked(gwA)
	st.Upsert(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "lease-4", Name: "own"}})
	marked()
	st.Upsert(&gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "g"}})
	marked(gwA)
	st.Upsert(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease-3", Labels: map[string]string{"listeners": "yes"}}})
	st.takeDirty() // the routes in lease-3 are marked too; only the Gateway matters here
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease-3", Labels: map[string]string{"listeners": "no"}}}
	st.Upsert(ns)
	if _, ok := st.dirty.Gateways[gwA]; !ok {
		t.Fatalf("a label change of the ListenerSet's namespace did not mark its Gateway: %v", st.dirty.Gateways)
	}
	st.takeDirty()

	// A route naming the ListenerSet is attached through its Gateway.
	rt := lsRoute("lease-3", "via-ls", "ls", "t.example.test")
	st.Upsert(rt)
	st.takeDirty()
	k := RouteKey{Kind: kindHTTPRoute, NN: types.NamespacedName{Namespace: "lease-3", Name: "via-ls"}}
	if got := st.routeGateways(k); !slices.Equal(got, []types.NamespacedName{gwA}) {
		t.Fatalf("the route is attached through %v", got)
	}

	// The ListenerSet moves to another Gateway: both are marked, and the
	// route follows it.
	moved := ls.DeepCopy()
	moved.Generation++
	moved.Spec.ParentRef.Name = gatewayv1.ObjectName(gwB.Name)
	st.Upsert(moved)
	marked(gwA, gwB)
	if got := st.routeGateways(k); !slices.Equal(got, []types.NamespacedName{gwB}) {
		t.Fatalf("after the move the route is attached through %v", got)
	}
	if st.Delete(moved); !slices.Equal(st.routeGateways(k), nil) {
		t.Fatalf("after the delete the route is attached through %v", st.routeGateways(k))
	}
	marked(gwB)
}

// TestListenerSetStatusLeaksNothingOfTheGateway: the Gateway's messages
// (a refused configuration naming another tenant's route, missing
// parameters) never appear in a ListenerSet's status.
func TestListenerSetStatusLeaksNothingOfTheGateway(t *testing.T) {
	secret := "tenant-x/private-route"
	gw := types.NamespacedName{Namespace: "default", Name: "gw"}
	for name, edit := range map[string]func(*Input){
		"refused configuration": func(in *Input) { in.Runtime[gw] = GatewayRuntime{PublishError: "validation failed for " + secret} },
		"address not usable": func(in *Input) {
			in.Runtime[gw] = GatewayRuntime{AddressReason: "AddressNotUsable", AddressMessage: secret}
		},
		"not accepted": func(in *Input) { in.ShardRefusals = map[types.NamespacedName]string{gw: secret} },
	} {
		t.Run(name, func(t *testing.T) {
			in := hostileInput()
			in.Gateways[0].Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptrTo(gatewayv1.NamespacesFromAll)}}
			in.ListenerSets = []*gatewayv1.ListenerSet{listenerSet("other", "ls", gw, 1, httpEntry("http", "t.example.test"))}
			edit(in)
			out := Translate(in)
			st, ok := out.ListenerSetStatus[types.NamespacedName{Namespace: "other", Name: "ls"}]
			if !ok {
				t.Fatal("no ListenerSet status")
			}
			if meta.IsStatusConditionTrue(st.Conditions, "Programmed") {
				t.Fatal("Programmed while the Gateway is not")
			}
			conds := slices.Clone(st.Conditions)
			for _, l := range st.Listeners {
				conds = append(conds, l.Conditions...)
			}
			for _, c := range conds {
				if strings.Contains(c.Message, secret) {
					t.Fatalf("%s condition carries the Gateway's message: %q", c.Type, c.Message)
				}
			}
		})
	}
}
