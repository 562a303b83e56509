package controllers_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Hostile-tenant specs for Gateways: tenant B (the attacker) writes a
// Gateway of shardgate's class, and GatewayParameters, in its own
// namespace, and tries to get provider resources from them: an address
// from a pool MetalLB never assigns by itself, tenant A's leased IP, an
// image and a replica count of its choosing, an xDS client certificate.
var _ = Describe("Tenant isolation: Gateways in tenant namespaces on the real MetalLB controller", Ordered, ContinueOnFailure, func() {
	const (
		tinyPool  = "tiny" // autoAssign false: MetalLB hands it out only on request
		tinyRange = "127.240.1.0/28"
		attackIP  = "127.240.1.11"
		controlIP = "127.240.1.12"
		image     = "registry.attacker.example/miner:latest"
	)
	ctx := context.Background()
	var c client.Client

	BeforeAll(func() {
		_, c = infraStart(ctx, testenv.Options{MetalLB: true, Pools: []testenv.Pool{{Name: leasedPool, Addresses: []string{leasedPoolRange}}}})
		createPool(ctx, c, tinyPool, tinyRange)
	})

	accepted := func(gw *gatewayv1.Gateway) func(Gomega) string {
		return func(g Gomega) string {
			var got gatewayv1.Gateway
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gw), &got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, "Accepted")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.ObservedGeneration).To(Equal(got.Generation))
			return string(cond.Status) + "/" + cond.Reason
		}
	}
	// provisioned lists the objects provisioned for gw that exist.
	provisioned := func(gw *gatewayv1.Gateway) []string {
		var out []string
		for _, obj := range infraObjects(gw.Namespace, gw.Name) {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if err == nil {
				out = append(out, fmt.Sprintf("%T %s", obj, obj.GetName()))
			} else if !apierrors.IsNotFound(err) {
				out = append(out, err.Error())
			}
		}
		return out
	}
	// lbIPs lists every LoadBalancer address, and every MetalLB
	// annotation, of the Services in ns.
	lbIPs := func(ns string) []string {
		var svcs corev1.ServiceList
		Expect(c.List(ctx, &svcs, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, s := range svcs.Items {
			for _, in := range s.Status.LoadBalancer.Ingress {
				out = append(out, s.Name+"="+in.IP)
			}
			for k, v := range s.Annotations {
				if strings.HasPrefix(k, "metallb.") {
					out = append(out, s.Name+" "+k+"="+v)
				}
			}
		}
		return out
	}
	// refusedAndBare waits for the refusal and then checks for 3 s that
	// nothing is provisioned for gw and no Service of its namespace has
	// an address or a MetalLB annotation.
	refusedAndBare := func(gw *gatewayv1.Gateway) {
		GinkgoHelper()
		Eventually(accepted(gw)).Should(Equal("False/" + shardgatev1alpha1.ReasonGatewayInTenantNamespace))
		Consistently(func(g Gomega) {
			g.Expect(provisioned(gw)).To(BeEmpty())
			g.Expect(lbIPs(gw.Namespace)).To(BeEmpty())
		}, "3s", "100ms").Should(Succeed())
	}

	It("gives a tenant's Gateway no address from a pool that is not auto-assigned, no Service and no xDS client certificate", func() {
		b := ownedFixture(ctx, c, "tgw-bob", "akash1bob")
		infraGatewayParams(ctx, c, b.ns, "mine", shardgatev1alpha1.GatewayParametersSpec{
			Addresses: &shardgatev1alpha1.AddressesSpec{Pool: tinyPool}})
		gw := infraGateway(ctx, c, b.ns, "mine", infraParams("mine"), infraAddresses(attackIP))
		refusedAndBare(gw)
		var got gatewayv1.Gateway
		Expect(c.Get(ctx, client.ObjectKeyFromObject(gw), &got)).To(Succeed())
		Expect(got.Status.Addresses).To(BeEmpty())
		msg := meta.FindStatusCondition(got.Status.Conditions, "Accepted").Message
		Expect(msg).To(ContainSubstring("owner marking"))
		Expect(msg).NotTo(ContainSubstring("akash1bob"), "the message names no owner")
		var secrets corev1.SecretList
		Expect(c.List(ctx, &secrets, client.InNamespace(b.ns))).To(Succeed())
		Expect(secrets.Items).To(BeEmpty(), "no xDS client certificate in the tenant's namespace")

		By("control: the provider's Gateway with the same pool and a fixed IP of it gets exactly that IP")
		p := ownedFixture(ctx, c, "tgw-provider", "")
		infraGatewayParams(ctx, c, p.ns, "edge", shardgatev1alpha1.GatewayParametersSpec{
			Addresses: &shardgatev1alpha1.AddressesSpec{Pool: tinyPool}})
		pgw := infraGateway(ctx, c, p.ns, "edge", infraParams("edge"), infraAddresses(controlIP))
		infraProvisioned(ctx, c, pgw)
		Eventually(func(g Gomega) []gatewayv1.GatewayStatusAddress {
			return infraGatewayStatus(ctx, c, pgw)(g).Addresses
		}).Should(Equal([]gatewayv1.GatewayStatusAddress{{Type: new(gatewayv1.IPAddressType), Value: controlIP}}))
		Expect(lbIPs(b.ns)).To(BeEmpty())
	})

	It("never gives a tenant's Gateway another tenant's leased IP, not even once it is released", func() {
		a := ownedFixture(ctx, c, "tgw-alice", "akash1alice")
		a.service(ctx, "web")
		a.leasedIP(ctx, "db", "db", "web", 80, lipLease("akash1alice", 1))
		ipA := a.allocatedIP(ctx, "db")

		b := ownedFixture(ctx, c, "tgw-bob2", "akash1bob")
		gw := infraGateway(ctx, c, b.ns, "pin", infraAddresses(ipA))
		refusedAndBare(gw)

		By("A's lease ends: its Service and address go")
		Expect(c.Delete(ctx, a.getLeasedIP(ctx, "db"))).To(Succeed())
		Eventually(func() bool {
			err := c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: "web-ip-80-tcp"}, &corev1.Service{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
		Consistently(func(g Gomega) {
			g.Expect(provisioned(gw)).To(BeEmpty())
			g.Expect(lbIPs(b.ns)).To(BeEmpty(), "B's namespace never gets %s", ipA)
		}, "3s", "100ms").Should(Succeed())
	})

	It("lets tenant GatewayParameters choose neither the image nor the replica count of a Deployment", func() {
		b := ownedFixture(ctx, c, "tgw-bob3", "akash1bob")
		infraGatewayParams(ctx, c, b.ns, "miner", shardgatev1alpha1.GatewayParametersSpec{
			Envoy: &shardgatev1alpha1.EnvoySpec{Image: image, Replicas: new(int32(40))}})
		gw := infraGateway(ctx, c, b.ns, "miner", infraParams("miner"))
		refusedAndBare(gw)
		var ds appsv1.DeploymentList
		Expect(c.List(ctx, &ds, client.InNamespace(b.ns))).To(Succeed())
		Expect(ds.Items).To(BeEmpty())
	})

	It("takes every provisioned object, the address and the client certificate away when the Gateway's namespace is marked as a tenant's later", func() {
		n := ownedFixture(ctx, c, "tgw-late", "")
		infraGatewayParams(ctx, c, n.ns, "late", shardgatev1alpha1.GatewayParametersSpec{
			Addresses: &shardgatev1alpha1.AddressesSpec{Pool: tinyPool}})
		gw := infraGateway(ctx, c, n.ns, "late", infraParams("late"))
		infraProvisioned(ctx, c, gw)
		Eventually(accepted(gw)).Should(Equal("True/Accepted"))
		Eventually(func() []string { return lbIPs(n.ns) }).Should(ContainElement(HavePrefix(infra.Name("late") + "=127.240.1.")))

		By("the provider marks the namespace as akash1bob's")
		var ns corev1.Namespace
		Expect(c.Get(ctx, client.ObjectKey{Name: n.ns}, &ns)).To(Succeed())
		update(ctx, c, &ns, func(x *corev1.Namespace) {
			if x.Labels == nil {
				x.Labels = map[string]string{}
			}
			x.Labels[tenancy.OwnerKey] = "akash1bob"
		})
		Eventually(accepted(gw)).Should(Equal("False/" + shardgatev1alpha1.ReasonGatewayInTenantNamespace))
		Eventually(func() []string { return provisioned(gw) }).Should(BeEmpty())
		Eventually(func() []string { return lbIPs(n.ns) }).Should(BeEmpty())
		Consistently(func() []string { return provisioned(gw) }, "2s", "100ms").Should(BeEmpty(), "nothing is provisioned again")
	})

	It("refuses a GatewayClass whose parametersRef points into a tenant's namespace, and provisions none of its Gateways", func() {
		b := ownedFixture(ctx, c, "tgw-bob4", "akash1bob")
		infraGatewayParams(ctx, c, b.ns, "class-default", shardgatev1alpha1.GatewayParametersSpec{
			Envoy:     &shardgatev1alpha1.EnvoySpec{Image: image, Replicas: new(int32(40))},
			Addresses: &shardgatev1alpha1.AddressesSpec{Pool: tinyPool}})
		class := &gatewayv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "shardgate-tenant-params"},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName,
				ParametersRef: &gatewayv1.ParametersReference{Group: "shardgate.io", Kind: "GatewayParameters",
					Name: "class-default", Namespace: new(gatewayv1.Namespace(b.ns))}},
		}
		Expect(c.Create(ctx, class)).To(Succeed())
		p := ownedFixture(ctx, c, "tgw-provider2", "")
		gw := infraGateway(ctx, c, p.ns, "edge", infraClass(class.Name), infraAddresses(attackIP))
		Eventually(func(g Gomega) string {
			var got gatewayv1.GatewayClass
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(class), &got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, "Accepted")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Message).To(ContainSubstring("owner marking"))
			return string(cond.Status) + "/" + cond.Reason
		}).Should(Equal("False/InvalidParameters"))
		Eventually(accepted(gw)).Should(Equal("False/InvalidParameters"))
		Consistently(func(g Gomega) {
			g.Expect(provisioned(gw)).To(BeEmpty())
			g.Expect(lbIPs(p.ns)).To(BeEmpty())
		}, "3s", "100ms").Should(Succeed())
	})
})

// A config reload that adds an owner key makes a provider namespace that
// carries it a tenant's: its Gateway loses what was provisioned for it.
var _ = Describe("Tenant isolation: Gateways after a config reload", Ordered, func() {
	ctx := context.Background()
	var c client.Client
	var cfgFile string

	BeforeAll(func() {
		env, err := testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		Expect(client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.DefaultLeaderElectionNamespace}}))).To(Succeed())
		cfgFile = configPath()
		Expect(os.WriteFile(cfgFile, []byte("blockedHostnames: []\n"), 0o644)).To(Succeed())
		env.RunManager(manager.Options{ConfigPath: cfgFile, MetricsAddress: "0", HealthAddress: "0", XDSAddress: "127.0.0.1:0", Log: GinkgoLogr})
		Expect(c.Create(ctx, &gatewayv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
			Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
		})).To(Succeed())
	})

	It("takes a Gateway's objects away when a reloaded namespaceOwnerAnnotation marks its namespace as a tenant's", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tgw-reload-",
			Annotations: map[string]string{"example.com/owner": "akash1bob"}}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		dumps.Add(c, ns.Name)
		gw := infraGateway(ctx, c, ns.Name, "edge")
		infraProvisioned(ctx, c, gw)

		By("the provider reloads the config with example.com/owner as an owner key")
		tmp := cfgFile + ".tmp"
		Expect(os.WriteFile(tmp, []byte("blockedHostnames: []\nnamespaceOwnerAnnotation: example.com/owner\n"), 0o644)).To(Succeed())
		Expect(os.Rename(tmp, cfgFile)).To(Succeed())
		Eventually(func(g Gomega) string {
			var got gatewayv1.Gateway
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gw), &got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, "Accepted")
			g.Expect(cond).NotTo(BeNil())
			return string(cond.Status) + "/" + cond.Reason
		}).Should(Equal("False/" + shardgatev1alpha1.ReasonGatewayInTenantNamespace))
		Eventually(func() []string {
			var out []string
			for _, obj := range infraObjects(gw.Namespace, gw.Name) {
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
					out = append(out, fmt.Sprintf("%T %s: %v", obj, obj.GetName(), err))
				}
			}
			return out
		}).Should(BeEmpty())
	})
})
