package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Akash objects over their lifetime: leased-IP Services left behind while
// shardgate was down, and ProviderHosts re-pointed in place to another
// lease.
var _ = Describe("Akash drop-in mode: objects that change or go while shardgate is down", Ordered, func() {
	ctx := context.Background()
	var (
		env  *testenv.Env
		c    client.Client
		stop func() error
		cfg  config.Config
	)
	start := func() {
		stop = env.RunManager(manager.Options{Config: cfg, Log: GinkgoLogr})
	}
	leaseNS := func(l akash.Lease) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
		ns.Labels[akash.LabelManaged] = "true"
		Expect(c.Create(ctx, ns)).To(Succeed())
		dumps.Add(c, ns.Name)
		return ns.Name
	}
	service := func(ns, name string, port int32) {
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: name},
				Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(8080)}}},
		})).To(Succeed())
	}
	gone := func(obj client.Object) func() bool {
		return func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		}
	}
	routeIn := func(ns, name string) func() (*gatewayv1.HTTPRoute, error) {
		return func() (*gatewayv1.HTTPRoute, error) {
			var r gatewayv1.HTTPRoute
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &r)
			return &r, err
		}
	}
	noRoute := func(ns, name string) func() bool {
		return func() bool { _, err := routeIn(ns, name)(); return apierrors.IsNotFound(err) }
	}
	// accepted is the route's backend and Accepted status on the shard.
	accepted := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			r, err := routeIn(ns, name)()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Spec.Rules).To(HaveLen(1))
			g.Expect(r.Spec.Rules[0].BackendRefs).To(HaveLen(1))
			backend := string(r.Spec.Rules[0].BackendRefs[0].Name)
			g.Expect(r.Status.Parents).To(HaveLen(1))
			a := meta.FindStatusCondition(r.Status.Parents[0].Conditions, "Accepted")
			g.Expect(a).NotTo(BeNil())
			return backend + " " + string(a.Status)
		}
	}
	events := func(name string) func(Gomega) map[string]int {
		return eventsAbout(ctx, c, "lease", "ProviderHost", name)
	}
	lease := func(owner string, dseq uint64) akash.Lease {
		return akash.Lease{Owner: owner, DSeq: dseq, GSeq: 1, OSeq: 1, Provider: akashProvider}
	}

	BeforeAll(func() {
		var err error
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		env, err = testenv.Start(ctx, testenv.Options{MetalLB: true, DefaultPool: true,
			ExtraCRDPaths: []string{filepath.Join(root, "crds", "akash")}})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		cfg, err = config.Parse([]byte("akash:\n  enabled: true\n  apiAddress: \"0\"\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease"}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "akash-edge"}})).To(Succeed())
		shard(ctx, c, "akash-edge", "edge", "example.com")
		start()
	})
	AfterAll(func() {
		if stop != nil {
			Expect(stop()).To(Succeed())
		}
		if env != nil {
			Expect(env.Stop()).To(Succeed())
		}
	})

	It("deletes on start the leased-IP Service of a ProviderLeasedIP deleted while it was down, with none left, and never another's Service", func() {
		l := lease(akashAlice, 21)
		ns := leaseNS(l)
		service(ns, "web", 80)
		lip := &akashv1.ProviderLeasedIP{
			ObjectMeta: metav1.ObjectMeta{Name: "only", Namespace: "lease", Labels: map[string]string{akash.LabelManaged: "true"}},
			Spec: akashv1.ProviderLeasedIPSpec{
				LeaseID:     akashv1.LeaseID{Owner: l.Owner, DSeq: fmt.Sprint(l.DSeq), GSeq: l.GSeq, OSeq: l.OSeq, Provider: l.Provider},
				ServiceName: "web", Port: 8080, ExternalPort: 80, Protocol: "TCP", SharingKey: akashAlice + "-ip-myip",
			},
		}
		Expect(c.Create(ctx, lip)).To(Succeed())
		ours := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-ip-80-tcp"}}
		Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(ours), ours) }).Should(Succeed())

		By("a leased-IP Service in Akash's shape that shardgate did not write (Akash's IP operator's)")
		labels := l.Labels()
		labels[akash.LabelManaged] = "true"
		labels[akash.LabelServiceTarget] = akash.ServiceTargetMetalLB
		theirs := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-ip-5432-tcp", Labels: labels},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{akash.LabelManifestService: "db"},
				Ports: []corev1.ServicePort{{Name: "db-ip-5432-tcp", Port: 5432, TargetPort: intstr.FromInt32(5432)}}},
		}
		Expect(c.Create(ctx, theirs, client.FieldOwner("akash-ip-operator"))).To(Succeed())

		By("the lease ends while shardgate is down: no ProviderLeasedIP is left at all")
		Expect(stop()).To(Succeed())
		stop = nil
		Expect(c.Delete(ctx, lip)).To(Succeed())
		var lips akashv1.ProviderLeasedIPList
		Expect(c.List(ctx, &lips)).To(Succeed())
		Expect(lips.Items).To(BeEmpty())
		start()
		Eventually(gone(ours)).Should(BeTrue(), "the orphaned Service shardgate wrote")
		Consistently(func() error { return c.Get(ctx, client.ObjectKeyFromObject(theirs), &corev1.Service{}) }, "3s", "200ms").Should(Succeed(),
			"a Service shardgate did not write is never deleted")
	})

	It("takes over a leased-IP Service Akash's IP operator wrote as desired, and deletes it on start when its lease ended while shardgate was down", func() {
		l := lease(akashAlice, 24)
		ns := leaseNS(l)
		service(ns, "web", 80)
		lip := &akashv1.ProviderLeasedIP{
			ObjectMeta: metav1.ObjectMeta{Name: "adopted", Namespace: "lease", Labels: map[string]string{akash.LabelManaged: "true"}},
			Spec: akashv1.ProviderLeasedIPSpec{
				LeaseID:     akashv1.LeaseID{Owner: l.Owner, DSeq: fmt.Sprint(l.DSeq), GSeq: l.GSeq, OSeq: l.OSeq, Provider: l.Provider},
				ServiceName: "web", Port: 8080, ExternalPort: 81, Protocol: "TCP", SharingKey: akashAlice + "-ip-adopted",
			},
		}
		By("the old IP operator wrote the Service exactly as shardgate would")
		_, proto, err := akash.IPLease(lip)
		Expect(err).NotTo(HaveOccurred())
		theirs := akash.IPServiceFor(lip, l, proto, cfg.Akash.MetalLBPool)
		Expect(c.Create(ctx, theirs, client.FieldOwner("akash-ip-operator"))).To(Succeed())
		uid := theirs.UID
		Expect(c.Create(ctx, lip)).To(Succeed())

		By("shardgate applies it once in place: same UID, its fields now shardgate's")
		Eventually(func(g Gomega) {
			var s corev1.Service
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(theirs), &s)).To(Succeed())
			g.Expect(s.UID).To(Equal(uid))
			managers := []string{}
			for _, m := range s.ManagedFields {
				managers = append(managers, m.Manager)
			}
			g.Expect(managers).To(ContainElement(shardgatev1alpha1.FieldOwner))
		}).Should(Succeed())

		By("the lease ends while shardgate is down: the start-up sweep deletes the Service")
		Expect(stop()).To(Succeed())
		stop = nil
		Expect(c.Delete(ctx, lip)).To(Succeed())
		start()
		Eventually(gone(theirs)).Should(BeTrue(), "the adopted Service of a ProviderLeasedIP that is gone")
	})

	It("moves a ProviderHost re-pointed to another lease of its owner: the route follows to the new lease namespace and backend, the old one goes", func() {
		a1, a2 := lease(akashAlice, 31), lease(akashAlice, 32)
		nsA1, nsA2 := leaseNS(a1), leaseNS(a2)
		service(nsA1, "web", 80)
		service(nsA2, "api", 80)
		ph := &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Name: "move", Namespace: "lease"},
			Spec: akashv1.ProviderHostSpec{Owner: a1.Owner, Provider: a1.Provider, Hostname: "move.example.com",
				Dseq: a1.DSeq, Gseq: a1.GSeq, Oseq: a1.OSeq, ServiceName: "web", ExternalPort: 80},
		}
		Expect(c.Create(ctx, ph)).To(Succeed())
		Eventually(accepted(nsA1, "move.example.com")).Should(Equal("web True"))

		update(ctx, c, ph, func(p *akashv1.ProviderHost) { p.Spec.Dseq, p.Spec.ServiceName = a2.DSeq, "api" })
		Eventually(accepted(nsA2, "move.example.com")).Should(Equal("api True"))
		Eventually(noRoute(nsA1, "move.example.com")).Should(BeTrue(), "the old lease's route")
		r, err := routeIn(nsA2, "move.example.com")()
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Labels).To(HaveKeyWithValue(akash.LabelLeaseDSeq, "32"))
	})

	It("never carries a name across owners by re-pointing: the old owner's waiting deployment gets it, the new owner is refused", func() {
		a1, a2, b := lease(akashAlice, 41), lease(akashAlice, 42), lease(akashBob, 43)
		nsA1, nsA2, nsB := leaseNS(a1), leaseNS(a2), leaseNS(b)
		for _, ns := range []string{nsA1, nsA2, nsB} {
			service(ns, "web", 80)
		}
		host := func(name string, l akash.Lease, hostname string) *akashv1.ProviderHost {
			ph := &akashv1.ProviderHost{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lease"},
				Spec: akashv1.ProviderHostSpec{Owner: l.Owner, Provider: l.Provider, Hostname: hostname,
					Dseq: l.DSeq, Gseq: l.GSeq, Oseq: l.OSeq, ServiceName: "web", ExternalPort: 80},
			}
			Expect(c.Create(ctx, ph)).To(Succeed())
			return ph
		}
		held := host("held", a1, "shop.example.com")
		Eventually(accepted(nsA1, "shop.example.com")).Should(Equal("web True"))
		host("waiting", a2, "shop.example.com")
		Eventually(events("waiting")).Should(HaveKey("Warning/Withheld/Reserve"))

		By("re-pointing alice's holding ProviderHost to bob's lease")
		update(ctx, c, held, func(p *akashv1.ProviderHost) { p.Spec.Owner, p.Spec.Dseq = b.Owner, b.DSeq })
		Eventually(events("held")).Should(HaveKey("Warning/HostnameInUse/Reserve"))
		Eventually(accepted(nsA2, "shop.example.com")).Should(Equal("web True"), "alice's waiting deployment holds the name")
		Eventually(events("waiting")).Should(HaveKey("Normal/Reserved/Reserve"))
		Eventually(noRoute(nsA1, "shop.example.com")).Should(BeTrue())
		Consistently(noRoute(nsB, "shop.example.com"), "3s", "200ms").Should(BeTrue(), "bob gets no route for alice's name")

		By("a name nobody else asks for is released by alice and reserved for bob")
		solo := host("solo", a1, "solo.example.com")
		Eventually(accepted(nsA1, "solo.example.com")).Should(Equal("web True"))
		update(ctx, c, solo, func(p *akashv1.ProviderHost) { p.Spec.Owner, p.Spec.Dseq = b.Owner, b.DSeq })
		Eventually(accepted(nsB, "solo.example.com")).Should(Equal("web True"))
		Eventually(noRoute(nsA1, "solo.example.com")).Should(BeTrue())
	})
})
