package shardgate_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestRenderTenantRole: the tenant ClusterRole has its exact name, grants
// LeaseHosts and LeasedIPs without /status, and routes only when asked for.
func TestRenderTenantRole(t *testing.T) {
	g := NewWithT(t)
	rel := mustRender(t, "shardgate", "shardgate-system", nil)
	role := find[rbacv1.ClusterRole](t, rel, "ClusterRole", "shardgate-tenant")
	g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{
		APIGroups: []string{"shardgate.io"},
		Resources: []string{"leasehosts", "leasedips"},
		Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}))

	rel = mustRender(t, "shardgate", "shardgate-system", map[string]any{"tenantRole": map[string]any{"ownedRoutes": true}})
	role = find[rbacv1.ClusterRole](t, rel, "ClusterRole", "shardgate-tenant")
	g.Expect(role.Rules).To(HaveLen(2))
	g.Expect(role.Rules[1]).To(Equal(rbacv1.PolicyRule{
		APIGroups: []string{"gateway.networking.k8s.io"},
		Resources: []string{"httproutes", "grpcroutes", "tlsroutes", "listenersets"},
		Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}))
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			g.Expect(res).NotTo(ContainSubstring("/"), "no subresource for tenants")
			g.Expect(res).NotTo(ContainSubstring("*"))
		}
		g.Expect(r.Verbs).NotTo(ContainElement("*"))
	}

	rel = mustRender(t, "shardgate", "shardgate-system", map[string]any{"tenantRole": map[string]any{"create": false}})
	// The controller's, metrics-reader and config-reader: no tenant role.
	g.Expect(kinds(rel.objects)).To(HaveKeyWithValue("ClusterRole", 3))
	for _, u := range rel.objects {
		g.Expect(u.GetName()).NotTo(Equal("shardgate-tenant"))
	}
}

// The shardgate-tenant role bound to a tenant user in its namespace, on the
// real apiserver: what the tenant may do, and every write it must not make.
var _ = Describe("the shardgate-tenant role on the harness apiserver", Ordered, func() {
	const (
		tenantNS = "tenant-b"
		otherNS  = "tenant-a"
		user     = "mallory"
	)
	var (
		ctx    = context.Background()
		env    *testenv.Env
		tenant client.Client
	)

	bind := func(role string) client.Client {
		GinkgoHelper()
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
		}
		Expect(env.Client.Create(ctx, rb)).To(Succeed())
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		// RBAC is served from an informer: wait until the binding counts.
		Eventually(func() error { return c.List(ctx, &shardgatev1alpha1.LeaseHostList{}, client.InNamespace(tenantNS)) }).Should(Succeed())
		return c
	}
	forbidden := func(what string, err error) {
		GinkgoHelper()
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
	}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		for _, n := range []string{tenantNS, otherNS} {
			Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		}
		rel, err := render("shardgate", "shardgate-system", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shardgate-system"}}))).To(Succeed())
		applyAll(ctx, env.Client, rel.crds)
		applyAll(ctx, env.Client, rel.objects)
		owned, err := render("owned", "shardgate-system", map[string]any{
			"tenantRole": map[string]any{"name": "shardgate-tenant-owned", "ownedRoutes": true},
			// one GatewayClass per release
			"gatewayClass": map[string]any{"create": false},
		})
		Expect(err).NotTo(HaveOccurred())
		applyAll(ctx, env.Client, []*unstructured.Unstructured{findUnstructured(GinkgoT(), owned, "ClusterRole", "shardgate-tenant-owned")})
		tenant = bind("shardgate-tenant")
	})

	It("lets the tenant manage its own LeaseHosts and LeasedIPs", func() {
		lh := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "web"},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1mallory", DSeq: 1, GSeq: 1, OSeq: 1},
				Hostname: "shop.example.test",
				Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			},
		}
		Expect(tenant.Create(ctx, lh)).To(Succeed())
		lh.Spec.Takeover = true
		Expect(tenant.Update(ctx, lh)).To(Succeed())
		ip := &shardgatev1alpha1.LeasedIP{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "ip"},
			Spec: shardgatev1alpha1.LeasedIPSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1mallory", DSeq: 1, GSeq: 1, OSeq: 1},
				Endpoint: "ep", Service: "web", Port: 8080, ExternalPort: 80, Protocol: "TCP",
			},
		}
		Expect(tenant.Create(ctx, ip)).To(Succeed())
		Expect(tenant.List(ctx, &shardgatev1alpha1.LeasedIPList{}, client.InNamespace(tenantNS))).To(Succeed())
		Expect(tenant.Delete(ctx, ip)).To(Succeed())
	})

	It("refuses status writes, so a tenant cannot forge the controller's record", func() {
		var lh shardgatev1alpha1.LeaseHost
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tenantNS, Name: "web"}, &lh)).To(Succeed())
		forged := lh.DeepCopy()
		forged.Status.ReservedHosts = []string{"shop.example.test"}
		forbidden("LeaseHost status update", tenant.Status().Update(ctx, forged))
		forbidden("LeaseHost status patch", tenant.Status().Patch(ctx, forged, client.MergeFrom(&lh)))
		ip := &shardgatev1alpha1.LeasedIP{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "ip2"},
			Spec: shardgatev1alpha1.LeasedIPSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1mallory", DSeq: 1, GSeq: 1, OSeq: 1},
				Endpoint: "ep", Service: "web", Port: 8080, ExternalPort: 81, Protocol: "TCP",
			},
		}
		Expect(tenant.Create(ctx, ip)).To(Succeed())
		ipForged := ip.DeepCopy()
		ipForged.Status.IP = "127.240.0.1"
		forbidden("LeasedIP status patch", tenant.Status().Patch(ctx, ipForged, client.MergeFrom(ip)))
	})

	It("refuses Gateways, GatewayParameters, routes, Secrets, Namespaces and other namespaces", func() {
		gw := &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "gw"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
			}}},
		}
		forbidden("Gateway create", tenant.Create(ctx, gw))
		params := &shardgatev1alpha1.GatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "p"},
			Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: "evil.test"}},
		}
		forbidden("GatewayParameters create", tenant.Create(ctx, params))
		forbidden("HTTPRoute create", tenant.Create(ctx, route(tenantNS)))
		forbidden("Secret list", tenant.List(ctx, &corev1.SecretList{}, client.InNamespace(tenantNS)))
		forbidden("Secret list in another namespace", tenant.List(ctx, &corev1.SecretList{}, client.InNamespace(otherNS)))
		var ns corev1.Namespace
		Expect(env.Client.Get(ctx, types.NamespacedName{Name: tenantNS}, &ns)).To(Succeed())
		marked := ns.DeepCopy()
		marked.Annotations = map[string]string{"shardgate.io/owner": "akash1alice"}
		forbidden("Namespace patch (its owner marking)", tenant.Patch(ctx, marked, client.MergeFrom(&ns)))
		other := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: "steal"},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1mallory", DSeq: 1, GSeq: 1, OSeq: 1},
				Hostname: "steal.example.test",
				Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			},
		}
		forbidden("LeaseHost create in another namespace", tenant.Create(ctx, other))
		forbidden("LeaseHost list in another namespace", tenant.List(ctx, &shardgatev1alpha1.LeaseHostList{}, client.InNamespace(otherNS)))
	})

	It("refuses Services, EndpointSlices and Endpoints, which could point the tenant's names at any address", func() {
		// The Envoy of a shard sends a route's traffic to the addresses
		// its Service's EndpointSlices list: a tenant that wrote them
		// could send its own name to another tenant's Pods.
		forbidden("Service create", tenant.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "web"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}))
		port, name := int32(8080), "http"
		forbidden("EndpointSlice create", tenant.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: tenantNS, Name: "web-x", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.9.9"}}},
		}))
		// The deprecated Endpoints kind is still served, and mirrored into
		// EndpointSlices by the control plane.
		forbidden("Endpoints create", tenant.Create(ctx, &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "web"},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.244.9.9"}}, Ports: []corev1.EndpointPort{{Port: 8080}},
			}},
		}))
	})

	It("grants routes and ListenerSets only through the Owned-shard variant (tenantRole.ownedRoutes)", func() {
		owned := bind("shardgate-tenant-owned")
		Expect(owned.Create(ctx, route(tenantNS))).To(Succeed())
		forbidden("HTTPRoute status", owned.Status().Update(ctx, route(tenantNS)))
		ls := &gatewayv1.ListenerSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "own-listeners"},
			Spec: gatewayv1.ListenerSetSpec{
				ParentRef: gatewayv1.ParentGatewayReference{Name: "shared", Namespace: new(gatewayv1.Namespace("infra"))},
				Listeners: []gatewayv1.ListenerEntry{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
					Hostname: new(gatewayv1.Hostname("shop.example.test"))}},
			},
		}
		Expect(owned.Create(ctx, ls)).To(Succeed())
		forbidden("ListenerSet status", owned.Status().Update(ctx, ls))
		other := ls.DeepCopy()
		other.Namespace, other.ResourceVersion = otherNS, ""
		forbidden("ListenerSet create in another namespace", owned.Create(ctx, other))
		forbidden("Gateway create with routes granted", owned.Create(ctx, &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "gw2"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
			}}},
		}))
	})
})

func route(ns string) *gatewayv1.HTTPRoute {
	port := gatewayv1.PortNumber(80)
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-route", ns)},
		Spec: gatewayv1.HTTPRouteSpec{
			Hostnames: []gatewayv1.Hostname{"shop.example.test"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: &port},
			}}}}},
		},
	}
}
