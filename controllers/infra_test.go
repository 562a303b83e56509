package controllers_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

// infraStart starts a control plane with shardgate's namespace and an
// in-process manager, and creates our GatewayClass.
func infraStart(ctx context.Context, opts testenv.Options) (*testenv.Env, client.Client) {
	env, err := testenv.Start(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		if opts.MetalLB || opts.Mode == testenv.Cluster {
			metalLBQuiet(env)
		}
		Expect(env.Stop()).To(Succeed())
	})
	c := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.DefaultLeaderElectionNamespace}}
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, ns))).To(Succeed())
	env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", XDSAddress: "127.0.0.1:0", Log: GinkgoLogr})
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}
	Expect(c.Create(ctx, class)).To(Succeed())
	return env, c
}

type infraGWOpt func(*gatewayv1.Gateway)

func infraParams(name string) infraGWOpt {
	return func(gw *gatewayv1.Gateway) {
		gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
			Group: "shardgate.io", Kind: "GatewayParameters", Name: name,
		}}
	}
}

func infraAddresses(ips ...string) infraGWOpt {
	return func(gw *gatewayv1.Gateway) {
		for _, ip := range ips {
			gw.Spec.Addresses = append(gw.Spec.Addresses, gatewayv1.GatewaySpecAddress{Type: new(gatewayv1.IPAddressType), Value: ip})
		}
	}
}

func infraClass(name string) infraGWOpt {
	return func(gw *gatewayv1.Gateway) { gw.Spec.GatewayClassName = gatewayv1.ObjectName(name) }
}

// infraGateway creates a Gateway of class shardgate with an HTTP listener
// on 80 and a TLS passthrough listener on 8443.
func infraGateway(ctx context.Context, c client.Client, ns, name string, opts ...infraGWOpt) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Listeners: []gatewayv1.Listener{
				{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
				{Name: "tls", Protocol: gatewayv1.TLSProtocolType, Port: 8443, TLS: &gatewayv1.ListenerTLSConfig{Mode: new(gatewayv1.TLSModePassthrough)}},
			},
		},
	}
	for _, o := range opts {
		o(gw)
	}
	Expect(c.Create(ctx, gw)).To(Succeed())
	return gw
}

func infraGatewayParams(ctx context.Context, c client.Client, ns, name string, spec shardgatev1alpha1.GatewayParametersSpec) *shardgatev1alpha1.GatewayParameters {
	p := &shardgatev1alpha1.GatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	Expect(c.Create(ctx, p)).To(Succeed())
	return p
}

// infraObjects are the five provisioned objects of a Gateway, empty.
func infraObjects(ns, gw string) []client.Object {
	m := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: m(infra.Name(gw))},
		&corev1.Secret{ObjectMeta: m(infra.ClientCertName(gw))},
		&corev1.ConfigMap{ObjectMeta: m(infra.BootstrapName(gw))},
		&corev1.Service{ObjectMeta: m(infra.Name(gw))},
		&appsv1.Deployment{ObjectMeta: m(infra.Name(gw))},
	}
}

// infraProvisioned waits until every object exists, controlled by gw.
func infraProvisioned(ctx context.Context, c client.Client, gw *gatewayv1.Gateway) {
	for _, obj := range infraObjects(gw.Namespace, gw.Name) {
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			ref := metav1.GetControllerOf(obj)
			g.Expect(ref).NotTo(BeNil())
			g.Expect(ref.UID).To(Equal(gw.UID))
			g.Expect(ref.Kind).To(Equal("Gateway"))
		}).Should(Succeed(), "%T %s", obj, obj.GetName())
	}
}

func infraDeployment(ctx context.Context, c client.Client, ns, gw string) *appsv1.Deployment {
	var d appsv1.Deployment
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: infra.Name(gw)}, &d)).To(Succeed())
	return &d
}

func infraGatewayStatus(ctx context.Context, c client.Client, gw *gatewayv1.Gateway) func(Gomega) gatewayv1.GatewayStatus {
	return func(g Gomega) gatewayv1.GatewayStatus {
		var got gatewayv1.Gateway
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gw), &got)).To(Succeed())
		return got.Status
	}
}

var _ = Describe("Envoy provisioning on the real apiserver", Ordered, func() {
	ctx := context.Background()
	var c client.Client
	var ns string
	var gw *gatewayv1.Gateway
	var params *shardgatev1alpha1.GatewayParameters

	BeforeAll(func() {
		_, c = infraStart(ctx, testenv.Options{})
		// A provider namespace: a tenant's Gateway gets no Envoy.
		ns = ownedFixture(ctx, c, "infra", "").ns
		params = infraGatewayParams(ctx, c, ns, "edge", shardgatev1alpha1.GatewayParametersSpec{
			Envoy: &shardgatev1alpha1.EnvoySpec{Replicas: new(int32(2)), LogLevel: "debug"},
		})
		gw = infraGateway(ctx, c, ns, "edge", infraParams("edge"))
	})

	It("creates the ServiceAccount, client Secret, bootstrap ConfigMap, Service and Deployment, owned by the Gateway", func() {
		infraProvisioned(ctx, c, gw)
		for _, obj := range infraObjects(ns, gw.Name) {
			Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			Expect(obj.GetLabels()).To(Equal(map[string]string{
				"app.kubernetes.io/name": "envoy", "app.kubernetes.io/managed-by": "shardgate", "gateway.networking.k8s.io/gateway-name": "edge",
				"shardgate.io/gateway": "edge",
			}), "%T", obj)
		}

		d := infraDeployment(ctx, c, ns, "edge")
		Expect(*d.Spec.Replicas).To(BeEquivalentTo(2))
		ct := d.Spec.Template.Spec.Containers[0]
		Expect(ct.Image).To(Equal(config.DefaultEnvoyImage))
		Expect(ct.Args).To(ContainElements("--service-node", "$(POD_NAME)", "debug"))

		var svc corev1.Service
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge"}, &svc)).To(Succeed())
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		Expect(svc.Spec.ExternalTrafficPolicy).To(Equal(corev1.ServiceExternalTrafficPolicyLocal), "client addresses reach Envoy by default")
		Expect(svc.Spec.Selector).To(Equal(map[string]string{"shardgate.io/gateway": "edge"}))
		Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{"shardgate.io/gateway": "edge"}))
		Expect(ct.Ports).To(ContainElement(HaveField("Name", "metrics")))
		var ports []string
		for _, p := range svc.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%s/%d", p.Name, p.Port))
		}
		Expect(ports).To(Equal([]string{"http-80/80", "tls-8443/8443"}))

		var cm corev1.ConfigMap
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge-bootstrap"}, &cm)).To(Succeed())
		Expect(cm.Data["envoy.yaml"]).To(ContainSubstring("cluster: " + ns + "/edge"))

		By("issuing a client certificate for the Gateway from the xDS CA")
		var caSecret, secret corev1.Secret
		Expect(c.Get(ctx, client.ObjectKey{Namespace: config.DefaultLeaderElectionNamespace, Name: "shardgate-xds-ca"}, &caSecret)).To(Succeed())
		ca, err := pki.ParseCA(caSecret.Data[pki.KeyCert], caSecret.Data[pki.KeyKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge-xds-client"}, &secret)).To(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(secret.Data[pki.KeyCA]).To(Equal(ca.CertPEM()))
		block, _ := pem.Decode(secret.Data[pki.KeyCert])
		Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		_, err = cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		Expect(err).NotTo(HaveOccurred())
		named, ok := pki.GatewayFromCert(cert)
		Expect(ok).To(BeTrue())
		Expect(named).To(Equal(types.NamespacedName{Namespace: ns, Name: "edge"}))
	})

	It("updates the Deployment in place when GatewayParameters change, keeping the certificate", func() {
		var secret corev1.Secret
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge-xds-client"}, &secret)).To(Succeed())
		uid := infraDeployment(ctx, c, ns, "edge").UID
		update(ctx, c, params, func(p *shardgatev1alpha1.GatewayParameters) {
			p.Spec.Envoy.Replicas = new(int32(3))
			p.Spec.Envoy.Image = "registry.example/envoy:pinned"
		})
		Eventually(func(g Gomega) {
			d := infraDeployment(ctx, c, ns, "edge")
			g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(3))
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/envoy:pinned"))
		}).Should(Succeed())
		Expect(infraDeployment(ctx, c, ns, "edge").UID).To(Equal(uid), "updated in place, not recreated")
		var after corev1.Secret
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&secret), &after)).To(Succeed())
		Expect(after.Data).To(Equal(secret.Data), "the certificate is not reissued")
	})

	It("sets the MetalLB annotations from the pool and requested addresses", func() {
		update(ctx, c, params, func(p *shardgatev1alpha1.GatewayParameters) {
			p.Spec.Addresses = &shardgatev1alpha1.AddressesSpec{Pool: "gold"}
		})
		update(ctx, c, gw, func(g *gatewayv1.Gateway) {
			g.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Value: "127.240.0.5"}}
		})
		Eventually(func(g Gomega) map[string]string {
			var svc corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge"}, &svc)).To(Succeed())
			return svc.Annotations
		}).Should(And(HaveKeyWithValue("metallb.io/address-pool", "gold"), HaveKeyWithValue("metallb.io/loadBalancerIPs", "127.240.0.5")))

		By("removing them again when the request goes")
		update(ctx, c, gw, func(g *gatewayv1.Gateway) { g.Spec.Addresses = nil })
		Eventually(func(g Gomega) map[string]string {
			var svc corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge"}, &svc)).To(Succeed())
			return svc.Annotations
		}).ShouldNot(HaveKey("metallb.io/loadBalancerIPs"))
	})

	It("propagates spec.infrastructure labels and annotations to every object and the pods, and removes them when they go", func() {
		update(ctx, c, gw, func(g *gatewayv1.Gateway) {
			g.Spec.Infrastructure.Labels = map[gatewayv1.LabelKey]gatewayv1.LabelValue{
				"team": "edge", "app.kubernetes.io/name": "ingress-nginx",
				"shardgate.io/gateway": "forged", "shardgate.io/x": "y", "gateway.networking.k8s.io/gateway-name": "other",
			}
			g.Spec.Infrastructure.Annotations = map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{
				"owner": "platform", "metallb.io/address-pool": "not-gold",
				// Other load-balancer controllers' address annotations:
				// not on the allow-list, so never copied.
				"lbipam.cilium.io/ips": "127.240.0.99", "kube-vip.io/loadBalancerIPs": "127.240.0.99",
			}
		})
		Eventually(func(g Gomega) {
			for _, o := range infraObjects(ns, "edge") {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
				g.Expect(o.GetLabels()).To(HaveKeyWithValue("team", "edge"), "%T", o)
				g.Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "ingress-nginx"), "%T", o)
				g.Expect(o.GetLabels()).To(HaveKeyWithValue("shardgate.io/gateway", "edge"), "%T", o)
				g.Expect(o.GetLabels()).To(HaveKeyWithValue("gateway.networking.k8s.io/gateway-name", "edge"), "%T", o)
				g.Expect(o.GetLabels()).NotTo(HaveKey("shardgate.io/x"), "%T", o)
				g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("owner", "platform"), "%T", o)
				g.Expect(o.GetAnnotations()).NotTo(HaveKey("lbipam.cilium.io/ips"), "%T", o)
				g.Expect(o.GetAnnotations()).NotTo(HaveKey("kube-vip.io/loadBalancerIPs"), "%T", o)
			}
			d := infraDeployment(ctx, c, ns, "edge")
			g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("team", "edge"))
			g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", "ingress-nginx"))
			g.Expect(d.Spec.Template.Labels).NotTo(HaveKey("shardgate.io/x"))
			g.Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("owner", "platform"))
			g.Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{"shardgate.io/gateway": "edge"}))
		}).Should(Succeed())
		var svc corev1.Service
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge"}, &svc)).To(Succeed())
		Expect(labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(infraDeployment(ctx, c, ns, "edge").Spec.Template.Labels))).To(BeTrue(),
			"the Service selects the pods")
		Expect(svc.Annotations).To(HaveKeyWithValue("metallb.io/address-pool", "gold"), "the pool comes from GatewayParameters only")

		By("removing them from the Gateway")
		update(ctx, c, gw, func(g *gatewayv1.Gateway) {
			g.Spec.Infrastructure.Labels = nil
			g.Spec.Infrastructure.Annotations = nil
		})
		Eventually(func(g Gomega) {
			for _, o := range infraObjects(ns, "edge") {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
				g.Expect(o.GetLabels()).NotTo(HaveKey("team"), "%T", o)
				g.Expect(o.GetAnnotations()).NotTo(HaveKey("owner"), "%T", o)
			}
			d := infraDeployment(ctx, c, ns, "edge")
			g.Expect(d.Spec.Template.Labels).NotTo(HaveKey("team"))
			g.Expect(d.Spec.Template.Annotations).NotTo(HaveKey("owner"))
		}).Should(Succeed())
	})

	It("sets externalTrafficPolicy from spec.envoy.service", func() {
		update(ctx, c, params, func(p *shardgatev1alpha1.GatewayParameters) {
			p.Spec.Envoy.Service = &shardgatev1alpha1.EnvoyServiceSpec{ExternalTrafficPolicy: shardgatev1alpha1.EnvoyExternalTrafficPolicyCluster}
		})
		Eventually(func(g Gomega) corev1.ServiceExternalTrafficPolicy {
			var svc corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge"}, &svc)).To(Succeed())
			return svc.Spec.ExternalTrafficPolicy
		}).Should(Equal(corev1.ServiceExternalTrafficPolicyCluster))
		update(ctx, c, params, func(p *shardgatev1alpha1.GatewayParameters) { p.Spec.Envoy.Service = nil })
		Eventually(func(g Gomega) corev1.ServiceExternalTrafficPolicy {
			var svc corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge"}, &svc)).To(Succeed())
			return svc.Spec.ExternalTrafficPolicy
		}).Should(Equal(corev1.ServiceExternalTrafficPolicyLocal))
	})

	It("creates the PodDisruptionBudget with the setting and removes it without", func() {
		pdbKey := client.ObjectKey{Namespace: ns, Name: "shardgate-edge"}
		update(ctx, c, params, func(p *shardgatev1alpha1.GatewayParameters) {
			p.Spec.Envoy.PodDisruptionBudget = &shardgatev1alpha1.EnvoyPodDisruptionBudget{MinAvailable: new(intstr.FromInt32(1))}
		})
		Eventually(func(g Gomega) {
			var pdb policyv1.PodDisruptionBudget
			g.Expect(c.Get(ctx, pdbKey, &pdb)).To(Succeed())
			g.Expect(pdb.Spec.MinAvailable).To(Equal(new(intstr.FromInt32(1))))
			g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(map[string]string{"shardgate.io/gateway": "edge"}))
			g.Expect(metav1.GetControllerOf(&pdb).UID).To(Equal(gw.UID))
		}).Should(Succeed())
		update(ctx, c, params, func(p *shardgatev1alpha1.GatewayParameters) { p.Spec.Envoy.PodDisruptionBudget = nil })
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, pdbKey, &policyv1.PodDisruptionBudget{}))
		}).Should(BeTrue())
	})

	It("refuses host settings on a Deployment and two PodDisruptionBudget bounds", func() {
		for _, e := range []shardgatev1alpha1.EnvoySpec{
			{HostPorts: true},
			{Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true, HostNetwork: true},
			{PodDisruptionBudget: &shardgatev1alpha1.EnvoyPodDisruptionBudget{MinAvailable: new(intstr.FromInt32(1)), MaxUnavailable: new(intstr.FromInt32(1))}},
			{PodDisruptionBudget: &shardgatev1alpha1.EnvoyPodDisruptionBudget{}},
		} {
			p := &shardgatev1alpha1.GatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-"},
				Spec: shardgatev1alpha1.GatewayParametersSpec{Envoy: &e}}
			Expect(apierrors.IsInvalid(c.Create(ctx, p))).To(BeTrue(), "%+v", e)
		}
	})

	It("repairs drift: a deleted ConfigMap comes back, a hand-edited Deployment is reverted", func() {
		Expect(c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shardgate-edge-bootstrap"}})).To(Succeed())
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-edge-bootstrap"}, &corev1.ConfigMap{})
		}).Should(Succeed())

		d := infraDeployment(ctx, c, ns, "edge")
		update(ctx, c, d, func(d *appsv1.Deployment) {
			d.Spec.Replicas = new(int32(7))
		})
		Eventually(func() int32 { return *infraDeployment(ctx, c, ns, "edge").Spec.Replicas }).Should(BeEquivalentTo(3))
	})

	It("writes nothing when nothing changed", func() {
		rvs := map[string]string{}
		objs := infraObjects(ns, "edge")
		for _, o := range objs {
			Expect(c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			rvs[fmt.Sprintf("%T", o)] = o.GetResourceVersion()
		}
		// A label change on the Gateway makes the controller reconcile it.
		update(ctx, c, gw, func(g *gatewayv1.Gateway) {
			if g.Labels == nil {
				g.Labels = map[string]string{}
			}
			g.Labels["touched"] = "yes"
		})
		Consistently(func(g Gomega) {
			for _, o := range infraObjects(ns, "edge") {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
				g.Expect(o.GetResourceVersion()).To(Equal(rvs[fmt.Sprintf("%T", o)]), "%T", o)
			}
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("provisions nothing for a Gateway of another controller's class", func() {
		other := &gatewayv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "not-ours"},
			Spec:       gatewayv1.GatewayClassSpec{ControllerName: "example.com/other"},
		}
		Expect(c.Create(ctx, other)).To(Succeed())
		infraGateway(ctx, c, ns, "foreign", infraClass("not-ours"))
		Consistently(func() bool {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate-foreign"}, &appsv1.Deployment{})
			return apierrors.IsNotFound(err)
		}, 2*time.Second, 200*time.Millisecond).Should(BeTrue())
	})
})

var _ = Describe("Gateway addresses on the real MetalLB controller", Ordered, func() {
	const (
		autoPool   = "gw-auto"
		autoRange  = "127.240.0.0/29"
		fixedPool  = "gw-fixed" // autoAssign false: only requested IPs
		fixedRange = "127.240.0.8/29"
		inFixed    = "127.240.0.12"
		outside    = "127.240.3.77" // in no pool; never dialled
	)
	ctx := context.Background()
	var c client.Client
	var ns string

	BeforeAll(func() {
		_, c = infraStart(ctx, testenv.Options{MetalLB: true, Pools: []testenv.Pool{{Name: autoPool, Addresses: []string{autoRange}}}})
		createPool(ctx, c, fixedPool, fixedRange)
		ns = ownedFixture(ctx, c, "gwaddr", "").ns
	})

	programmed := func(st gatewayv1.GatewayStatus) string { return condition(st.Conditions, "Programmed") }

	It("gives a Gateway with addresses.pool an address from that pool", func() {
		infraGatewayParams(ctx, c, ns, "auto", shardgatev1alpha1.GatewayParametersSpec{Addresses: &shardgatev1alpha1.AddressesSpec{Pool: autoPool}})
		gw := infraGateway(ctx, c, ns, "auto", infraParams("auto"))
		var st gatewayv1.GatewayStatus
		Eventually(func(g Gomega) {
			st = infraGatewayStatus(ctx, c, gw)(g)
			g.Expect(st.Addresses).To(HaveLen(1))
			g.Expect(programmed(st)).NotTo(Equal("False/AddressNotAssigned"))
			g.Expect(programmed(st)).NotTo(Equal("<none>"))
		}).Should(Succeed())
		Expect(*st.Addresses[0].Type).To(Equal(gatewayv1.IPAddressType))
		Expect(netip.MustParsePrefix(autoRange).Contains(netip.MustParseAddr(st.Addresses[0].Value))).To(BeTrue(), st.Addresses[0].Value)
		Expect(condition(st.Conditions, "Accepted")).To(Equal("True/Accepted"))
	})

	It("gives a Gateway requesting a specific IP inside a pool exactly that IP", func() {
		gw := infraGateway(ctx, c, ns, "fixed", infraAddresses(inFixed))
		Eventually(func(g Gomega) {
			st := infraGatewayStatus(ctx, c, gw)(g)
			g.Expect(st.Addresses).To(Equal([]gatewayv1.GatewayStatusAddress{{Type: new(gatewayv1.IPAddressType), Value: inFixed}}))
			g.Expect(programmed(st)).NotTo(Equal("False/AddressNotAssigned"))
			g.Expect(programmed(st)).NotTo(Equal("False/AddressNotUsable"))
		}).Should(Succeed())
	})

	It("gives a Gateway whose IPAddress entry has no value any address of the pool, with no fixed IP requested", func() {
		gw := infraGateway(ctx, c, ns, "empty", func(g *gatewayv1.Gateway) {
			g.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Type: new(gatewayv1.IPAddressType)}}
		})
		var st gatewayv1.GatewayStatus
		Eventually(func(g Gomega) {
			st = infraGatewayStatus(ctx, c, gw)(g)
			g.Expect(st.Addresses).To(HaveLen(1))
			g.Expect(programmed(st)).NotTo(HavePrefix("False/Address"))
			g.Expect(programmed(st)).NotTo(Equal("<none>"))
		}).Should(Succeed())
		Expect(netip.MustParsePrefix(autoRange).Contains(netip.MustParseAddr(st.Addresses[0].Value))).To(BeTrue(), st.Addresses[0].Value)
		var svc corev1.Service
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: infra.Name("empty")}, &svc)).To(Succeed())
		Expect(svc.Annotations).NotTo(HaveKey("metallb.io/loadBalancerIPs"))
		Expect(svc.Status.LoadBalancer.Ingress).To(HaveLen(1))
		Expect(svc.Status.LoadBalancer.Ingress[0].IP).To(Equal(st.Addresses[0].Value))

		By("two entries without a value: one address per family, so not all are assigned")
		update(ctx, c, gw, func(g *gatewayv1.Gateway) {
			g.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Type: new(gatewayv1.IPAddressType)}, {}}
		})
		Eventually(func(g Gomega) string {
			return programmed(infraGatewayStatus(ctx, c, gw)(g))
		}).Should(Equal("False/AddressNotAssigned"))
	})

	It("reports AddressNotUsable for a requested IP outside every pool, until the request is dropped", func() {
		gw := infraGateway(ctx, c, ns, "outside", infraAddresses(outside))
		Eventually(func(g Gomega) string {
			return programmed(infraGatewayStatus(ctx, c, gw)(g))
		}).Should(Equal("False/AddressNotUsable"))
		var got gatewayv1.Gateway
		Expect(c.Get(ctx, client.ObjectKeyFromObject(gw), &got)).To(Succeed())
		Expect(got.Status.Addresses).To(BeEmpty())
		for _, cond := range got.Status.Conditions {
			if cond.Type == "Programmed" {
				Expect(cond.Message).To(ContainSubstring(outside))
			}
		}
		Expect(condition(got.Status.Conditions, "Accepted")).To(Equal("True/Accepted"))

		By("dropping the unusable address: MetalLB assigns one from the auto-assign pool")
		update(ctx, c, gw, func(g *gatewayv1.Gateway) { g.Spec.Addresses = nil })
		Eventually(func(g Gomega) {
			st := infraGatewayStatus(ctx, c, gw)(g)
			g.Expect(st.Addresses).To(HaveLen(1))
			g.Expect(programmed(st)).NotTo(HavePrefix("False/Address"))
		}).Should(Succeed())
	})
})

var _ = Describe("Envoy fleet shapes in cluster mode", Ordered, func() {
	ctx := context.Background()
	var c client.Client
	var ns string

	BeforeAll(func() {
		_, c = infraStart(ctx, testenv.Options{Mode: testenv.Cluster, DefaultPool: true})
		ns = ownedFixture(ctx, c, "shapes", "").ns
	})

	daemonSet := func(g Gomega, name string) *appsv1.DaemonSet {
		var ds appsv1.DaemonSet
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: infra.Name(name)}, &ds)).To(Succeed())
		return &ds
	}
	programmed := func(gw *gatewayv1.Gateway) func(Gomega) string {
		return func(g Gomega) string { return condition(infraGatewayStatus(ctx, c, gw)(g).Conditions, "Programmed") }
	}

	It("runs a DaemonSet with host ports whose pod becomes ready on the node, and switches back to a Deployment", func() {
		params := infraGatewayParams(ctx, c, ns, "ds", shardgatev1alpha1.GatewayParametersSpec{Envoy: &shardgatev1alpha1.EnvoySpec{
			Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true,
		}})
		gw := infraGateway(ctx, c, ns, "ds", infraParams("ds"))
		Eventually(func(g Gomega) {
			ds := daemonSet(g, "ds")
			g.Expect(ds.Status.DesiredNumberScheduled).To(BeEquivalentTo(1))
			g.Expect(ds.Status.NumberReady).To(BeEquivalentTo(1))
			ports := map[string]int32{}
			for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
				ports[p.Name] = p.HostPort
			}
			g.Expect(ports).To(Equal(map[string]int32{"ready": 0, "metrics": 0, "http-80": 80, "tls-8443": 8443}))
		}, 60*time.Second).Should(Succeed())
		Expect(apierrors.IsNotFound(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: infra.Name("ds")}, &appsv1.Deployment{}))).To(BeTrue())
		Eventually(programmed(gw), 60*time.Second).Should(Equal("True/Programmed"))

		By("a second Gateway whose DaemonSet needs the same host ports on the only node is not Programmed")
		infraGatewayParams(ctx, c, ns, "ds2", shardgatev1alpha1.GatewayParametersSpec{Envoy: &shardgatev1alpha1.EnvoySpec{
			Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true,
		}})
		gw2 := infraGateway(ctx, c, ns, "ds2", infraParams("ds2"))
		Eventually(programmed(gw2), 60*time.Second).Should(Equal("False/NoResources"))
		Consistently(func(g Gomega) int32 { return daemonSet(g, "ds").Status.NumberReady }, 2*time.Second, 200*time.Millisecond).Should(BeEquivalentTo(1),
			"the first Gateway's pod keeps running")

		By("switching the first Gateway to a Deployment: the DaemonSet goes once the Deployment has an available pod")
		update(ctx, c, params, func(p *shardgatev1alpha1.GatewayParameters) {
			p.Spec.Envoy = &shardgatev1alpha1.EnvoySpec{Kind: shardgatev1alpha1.EnvoyKindDeployment}
		})
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: infra.Name("ds")}, &appsv1.DaemonSet{}))
		}, 60*time.Second).Should(BeTrue())
		Expect(infraDeployment(ctx, c, ns, "ds").Status.AvailableReplicas).To(BeNumerically(">=", 1))

		By("the freed host ports let the second Gateway's pod run")
		Eventually(func(g Gomega) int32 { return daemonSet(g, "ds2").Status.NumberReady }, 60*time.Second).Should(BeEquivalentTo(1))
		Eventually(programmed(gw2), 60*time.Second).Should(Equal("True/Programmed"))
	})
})

var _ = Describe("Upgrading an Envoy Deployment of the earlier selector in cluster mode", Ordered, func() {
	ctx := context.Background()
	var c client.Client

	BeforeAll(func() {
		_, c = infraStart(ctx, testenv.Options{Mode: testenv.Cluster})
	})

	deployment := func(g Gomega, ns, name string) *appsv1.Deployment {
		var d appsv1.Deployment
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: infra.Name(name)}, &d)).To(Succeed())
		return &d
	}

	// readyEndpoints counts the ready endpoints of the Envoy Service.
	readyEndpoints := func(g Gomega, ns, gw string) int {
		var slices discoveryv1.EndpointSliceList
		g.Expect(c.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: infra.Name(gw)})).To(Succeed())
		n := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					n++
				}
			}
		}
		return n
	}

	It("keeps the earlier selector in place, then replaces the Deployment for app.kubernetes.io/name: ingress-nginx without losing every endpoint", func() {
		ns := ownedFixture(ctx, c, "infra-upgrade", "").ns
		// The Gateway's class does not exist yet, so nothing is provisioned
		// while the earlier version's Deployment is put in place.
		gw := infraGateway(ctx, c, ns, "old", infraClass("later"))
		legacy := infra.LegacySelectorLabels("old")
		old := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: infra.Name("old"), Labels: legacy,
				OwnerReferences: []metav1.OwnerReference{infra.OwnerReference(gw)}},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: legacy},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: legacy},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "envoy", Image: config.DefaultEnvoyImage}}},
				},
			},
		}
		Expect(c.Create(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) int32 { return deployment(g, ns, "old").Status.AvailableReplicas }, 60*time.Second).Should(BeEquivalentTo(1))

		By("the class appears: the Deployment is updated in place, keeping its selector, and the Service selects by it")
		Expect(c.Create(ctx, &gatewayv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: "later"},
			Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			d := deployment(g, ns, "old")
			g.Expect(d.UID).To(Equal(old.UID))
			g.Expect(d.Spec.Selector.MatchLabels).To(Equal(legacy))
			g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("shardgate.io/gateway", "old"))
			g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(1))
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(1))
			var svc corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: infra.Name("old")}, &svc)).To(Succeed())
			g.Expect(svc.Spec.Selector).To(Equal(legacy))
			g.Expect(readyEndpoints(g, ns, "old")).To(BeNumerically(">=", 1))
		}, 90*time.Second).Should(Succeed())

		By("an infrastructure label breaks the earlier selector: the pods roll, the Deployment is replaced and adopts them")
		update(ctx, c, gw, func(g *gatewayv1.Gateway) {
			g.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{Labels: map[gatewayv1.LabelKey]gatewayv1.LabelValue{"app.kubernetes.io/name": "ingress-nginx"}}
		})
		minReady := 1 << 30
		Eventually(func(g Gomega) {
			n := readyEndpoints(g, ns, "old")
			minReady = min(minReady, n)
			d := deployment(g, ns, "old")
			g.Expect(d.UID).NotTo(Equal(old.UID))
			g.Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{"shardgate.io/gateway": "old"}))
			g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(1))
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(1))
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			running := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					running++
					g.Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", "ingress-nginx"), p.Name)
				}
			}
			g.Expect(running).To(Equal(1))
			var svc corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: infra.Name("old")}, &svc)).To(Succeed())
			g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"shardgate.io/gateway": "old"}))
			g.Expect(svc.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", "ingress-nginx"))
			g.Expect(n).To(BeNumerically(">=", 1))
		}, 120*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(minReady).To(BeNumerically(">=", 1), "the Service lost every ready endpoint during the replacement")
	})
})

var _ = Describe("Envoy provisioning in cluster mode", Ordered, func() {
	ctx := context.Background()
	var c client.Client

	BeforeAll(func() {
		_, c = infraStart(ctx, testenv.Options{Mode: testenv.Cluster})
	})

	It("runs the Envoy pods and removes every object through the garbage collector when the Gateway is deleted", func() {
		ns := ownedFixture(ctx, c, "infra-gc", "").ns
		gw := infraGateway(ctx, c, ns, "doomed")
		infraProvisioned(ctx, c, gw)
		Eventually(func() int32 { return infraDeployment(ctx, c, ns, "doomed").Status.ReadyReplicas }, 60*time.Second).Should(BeEquivalentTo(1))

		Expect(c.Delete(ctx, gw)).To(Succeed())
		for _, obj := range infraObjects(ns, "doomed") {
			Eventually(func() bool {
				return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
			}, 60*time.Second).Should(BeTrue(), "%T %s", obj, obj.GetName())
		}
	})
})
