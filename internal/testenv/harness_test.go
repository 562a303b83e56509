package testenv_test

import (
	"context"
	"net/netip"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

func leaseHost(name string, mutate func(*shardgatev1alpha1.LeaseHostSpec)) *shardgatev1alpha1.LeaseHost {
	lh := &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1tenant", DSeq: 7, GSeq: 1, OSeq: 1},
			Hostname: "web.example.com",
			Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
		},
	}
	if mutate != nil {
		mutate(&lh.Spec)
	}
	return lh
}

var _ = Describe("envtest mode with MetalLB", Ordered, func() {
	var env *testenv.Env
	ctx := context.Background()

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{Mode: testenv.Envtest, MetalLB: true, DefaultPool: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	})

	It("establishes every CRD the product uses", func() {
		for _, name := range []string{
			"leasehosts.shardgate.io", "leasedips.shardgate.io", "gatewayparameters.shardgate.io",
			"gatewayclasses.gateway.networking.k8s.io", "gateways.gateway.networking.k8s.io",
			"httproutes.gateway.networking.k8s.io", "grpcroutes.gateway.networking.k8s.io",
			"tlsroutes.gateway.networking.k8s.io", "referencegrants.gateway.networking.k8s.io",
			"ipaddresspools.metallb.io",
		} {
			var crd apiextensionsv1.CustomResourceDefinition
			Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, &crd)).To(Succeed(), name)
			established := false
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			Expect(established).To(BeTrue(), "%s is not Established", name)
		}
	})

	It("dumps a failed test's namespaces, and nothing after a passing one", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dump-"}}
		Expect(env.Client.Create(ctx, ns)).To(Succeed())
		Expect(env.Client.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "dumped-svc", Namespace: ns.Name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		})).To(Succeed())
		var d testenv.Dumps
		var out strings.Builder
		d.Add(env.Client, ns.Name)
		d.Flush(ctx, &out, false)
		Expect(out.String()).To(BeEmpty(), "a passing test prints nothing")
		d.Add(env.Client, ns.Name)
		d.Flush(ctx, &out, true)
		Expect(out.String()).To(ContainSubstring("name: dumped-svc"))
		Expect(out.String()).To(ContainSubstring("namespace: " + ns.Name))
		Expect(out.String()).NotTo(ContainSubstring("managedFields"))
		out.Reset()
		d.Flush(ctx, &out, true)
		Expect(out.String()).To(BeEmpty(), "Flush forgets what it dumped")
	})

	It("installs the experimental Gateway API channel (TLSRoute v1alpha2 served)", func() {
		var crd apiextensionsv1.CustomResourceDefinition
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "tlsroutes.gateway.networking.k8s.io"}, &crd)).To(Succeed())
		var served []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		Expect(served).To(ContainElement("v1alpha2"))
	})

	DescribeTable("the real apiserver validates LeaseHosts",
		func(name string, mutate func(*shardgatev1alpha1.LeaseHostSpec), wantErr string) {
			err := env.Client.Create(ctx, leaseHost(name, mutate))
			if wantErr == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantErr))
		},
		Entry("a valid hostname is accepted", "valid", nil, ""),
		Entry("a valid subdomain is accepted", "valid-sub", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname, s.Subdomain = "", "web.team"
		}, ""),
		Entry("both hostname and subdomain are refused", "both", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Subdomain = "web"
		}, "exactly one of hostname and subdomain"),
		Entry("neither hostname nor subdomain is refused", "neither", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname = ""
		}, "exactly one of hostname and subdomain"),
		Entry("an uppercase hostname is refused", "upper", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname = "Web.Example.com"
		}, "spec.hostname"),
		Entry("an over-long hostname is refused", "long", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname = strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + "." + strings.Repeat("d", 60) + ".example.com"
		}, "spec.hostname"),
		Entry("a label over 63 characters is refused", "label", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname = strings.Repeat("a", 64) + ".example.com"
		}, "spec.hostname"),
		Entry("a wildcard is refused", "wildcard", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname = "*.example.com"
		}, "spec.hostname"),
		Entry("a trailing dot is refused", "dot", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname = "web.example.com."
		}, "spec.hostname"),
		Entry("port 0 is refused", "port0", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Service.Port = 0
		}, "spec.service.port"),
		Entry("port 65536 is refused", "port65536", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Service.Port = 65536
		}, "spec.service.port"),
	)

	It("refuses a LeasedIP with a protocol other than TCP or UDP", func() {
		ip := &shardgatev1alpha1.LeasedIP{
			ObjectMeta: metav1.ObjectMeta{Name: "sctp", Namespace: "default"},
			Spec: shardgatev1alpha1.LeasedIPSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1tenant"},
				Endpoint: "db", Service: "db", Port: 5432, ExternalPort: 5432, Protocol: "SCTP",
			},
		}
		err := env.Client.Create(ctx, ip)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.protocol"))
	})

	It("gets a LoadBalancer address from the real MetalLB controller", func() {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: "default"},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeLoadBalancer,
				Selector: map[string]string{"app": "lb"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
			},
		}
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		pool := netip.MustParsePrefix(testenv.DefaultPoolRange)
		Eventually(func(g Gomega) {
			var got corev1.Service
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svc), &got)).To(Succeed())
			g.Expect(got.Status.LoadBalancer.Ingress).To(HaveLen(1))
			ip, err := netip.ParseAddr(got.Status.LoadBalancer.Ingress[0].IP)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pool.Contains(ip)).To(BeTrue(), "%s is not in %s", ip, pool)
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		Eventually(func(g Gomega) {
			var p metallbv1beta1.IPAddressPool
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.MetalLBNamespace, Name: testenv.DefaultPoolName}, &p)).To(Succeed())
			g.Expect(p.Status.AssignedIPv4).To(BeNumerically("==", 1))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
})

var _ = Describe("cluster mode", Ordered, func() {
	var env *testenv.Env
	ctx := context.Background()

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{Mode: testenv.Cluster, DefaultPool: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	})

	It("runs a Deployment's Pods on the KWOK node and writes their EndpointSlice", func() {
		labels := map[string]string{"app": "echo"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(2)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{
							Name: "echo", Image: "registry.invalid/echo:none",
							Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
						}},
					},
				},
			},
		}
		Expect(env.Client.Create(ctx, dep)).To(Succeed())
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
			Spec: corev1.ServiceSpec{
				Selector: labels,
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		Expect(env.Client.Create(ctx, svc)).To(Succeed())

		var podIPs []string
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(env.Client.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels))).To(Succeed())
			podIPs = nil
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).To(Equal(testenv.NodeName))
				ready := false
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						ready = true
					}
				}
				g.Expect(ready).To(BeTrue(), "pod %s not Ready", p.Name)
				g.Expect(p.Status.PodIP).NotTo(BeEmpty())
				podIPs = append(podIPs, p.Status.PodIP)
			}
			g.Expect(podIPs).To(HaveLen(2))
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		podCIDR := netip.MustParsePrefix(testenv.PodCIDR)
		for _, ip := range podIPs {
			Expect(podCIDR.Contains(netip.MustParseAddr(ip))).To(BeTrue(), "pod IP %s outside %s", ip, podCIDR)
		}

		Eventually(func(g Gomega) {
			var slices discoveryv1.EndpointSliceList
			g.Expect(env.Client.List(ctx, &slices, client.InNamespace("default"),
				client.MatchingLabels{discoveryv1.LabelServiceName: "echo"})).To(Succeed())
			var addrs []string
			for _, s := range slices.Items {
				for _, ep := range s.Endpoints {
					if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
						addrs = append(addrs, ep.Addresses...)
					}
				}
			}
			g.Expect(addrs).To(ConsistOf(podIPs))
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})

	It("runs MetalLB, which assigns LoadBalancer addresses", func() {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "echo-lb", Namespace: "default"},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeLoadBalancer,
				Selector: map[string]string{"app": "echo"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		Expect(env.Client.Create(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			var got corev1.Service
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svc), &got)).To(Succeed())
			g.Expect(got.Status.LoadBalancer.Ingress).NotTo(BeEmpty())
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})

	It("stops every process it started", func() {
		procs := env.Processes()
		Expect(procs).NotTo(BeEmpty())
		Expect(env.Stop()).To(Succeed())
		for _, p := range procs {
			done, _ := p.Exited()
			Expect(done).To(BeTrue(), "%s still running", p.Name)
		}
	})
})
