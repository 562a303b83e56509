package controllers_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Pools of the LeasedIP specs. All are loopback: MetalLB assigns from them
// and no test ever sends traffic to an assigned address.
const (
	// leasedPool is the only auto-assign pool: LeasedIPs without spec.pool
	// get their address from it. 16 addresses, none ending in .0 or .255.
	leasedPool      = "leased"
	leasedPoolRange = "127.240.0.16/28"
	// tinyPool has exactly two addresses and is never auto-assigned.
	tinyPool      = "tiny"
	tinyPoolRange = "127.240.1.10-127.240.1.11"
	// latePool is created by a spec, after a LeasedIP asked for it.
	latePool      = "late"
	latePoolRange = "127.240.2.16/30"
)

type lipOpt func(*shardgatev1alpha1.LeasedIP)

func lipPool(p string) lipOpt { return func(l *shardgatev1alpha1.LeasedIP) { l.Spec.Pool = p } }
func lipProto(p string) lipOpt {
	return func(l *shardgatev1alpha1.LeasedIP) { l.Spec.Protocol = p }
}
func lipLease(owner string, dseq uint64) lipOpt {
	return func(l *shardgatev1alpha1.LeasedIP) { l.Spec.Lease.Owner, l.Spec.Lease.DSeq = owner, dseq }
}

// leasedIP creates a LeasedIP of akash1alice's lease 1 for endpoint on
// service, target port 8000+externalPort%1000.
func (f *fixture) leasedIP(ctx context.Context, name, endpoint, service string, externalPort int32, opts ...lipOpt) *shardgatev1alpha1.LeasedIP {
	l := &shardgatev1alpha1.LeasedIP{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: shardgatev1alpha1.LeasedIPSpec{
			Lease:        shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 1, GSeq: 1, OSeq: 1},
			Endpoint:     endpoint,
			Service:      service,
			Port:         8000 + externalPort%1000,
			ExternalPort: externalPort,
		},
	}
	for _, o := range opts {
		o(l)
	}
	Expect(f.c.Create(ctx, l)).To(Succeed())
	return l
}

func (f *fixture) getLeasedIP(ctx context.Context, name string) *shardgatev1alpha1.LeasedIP {
	var l shardgatev1alpha1.LeasedIP
	Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &l)).To(Succeed())
	return &l
}

// allocated returns the Allocated condition as "status/reason" once the
// controller has written status for the current generation.
func allocated(ctx context.Context, c client.Client, ns, name string) func(Gomega) string {
	return func(g Gomega) string {
		var l shardgatev1alpha1.LeasedIP
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &l)).To(Succeed())
		g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
		cond := meta.FindStatusCondition(l.Status.Conditions, shardgatev1alpha1.ConditionAllocated)
		g.Expect(cond).NotTo(BeNil())
		return fmt.Sprintf("%s/%s", cond.Status, cond.Reason)
	}
}

// allocatedIP waits for Allocated=True and returns status.ip, checking that
// the Service reports the same address.
func (f *fixture) allocatedIP(ctx context.Context, name string) string {
	Eventually(allocated(ctx, f.c, f.ns, name)).Should(Equal("True/Allocated"), name)
	l := f.getLeasedIP(ctx, name)
	Expect(l.Status.IP).NotTo(BeEmpty())
	var svc corev1.Service
	Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: l.Status.Service}, &svc)).To(Succeed())
	Expect(svc.Status.LoadBalancer.Ingress).NotTo(BeEmpty())
	Expect(svc.Status.LoadBalancer.Ingress[0].IP).To(Equal(l.Status.IP))
	return l.Status.IP
}

func (f *fixture) serviceExists(ctx context.Context, name string) func() bool {
	return func() bool {
		err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return false
		}
		Expect(err).NotTo(HaveOccurred())
		return true
	}
}

func (f *fixture) serviceRV(ctx context.Context, name string) string {
	var svc corev1.Service
	Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &svc)).To(Succeed())
	return svc.ResourceVersion
}

func inRange(ip, cidr string) bool {
	return netip.MustParsePrefix(cidr).Contains(netip.MustParseAddr(ip))
}

var _ = Describe("LeasedIPs on the real MetalLB controller", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var proc *testenv.Process
	var metrics string
	// Namespaces of this Describe, for the restart snapshot.
	var namespaces []string

	// newNS creates a namespace marked as owner's (akash1alice unless
	// given): a LeasedIP holds an address only in its owner's namespace.
	newNS := func(prefix string, owner ...string) *fixture {
		o := "akash1alice"
		if len(owner) > 0 {
			o = owner[0]
		}
		f := ownedFixture(ctx, c, prefix, o)
		namespaces = append(namespaces, f.ns)
		return f
	}
	start := func(name string) {
		port, err := testenv.FreePort()
		Expect(err).NotTo(HaveOccurred())
		metrics = fmt.Sprintf("127.0.0.1:%d", port)
		// The built binary, not an in-process manager: controller names
		// are unique per process, and the restart spec needs a second one.
		proc, err = env.StartShardgate(name, "--metrics-address="+metrics, "--metrics-secure=false",
			"--health-address=0", "--xds-address=127.0.0.1:0", "--log-format=text")
		Expect(err).NotTo(HaveOccurred())
	}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{MetalLB: true, Pools: []testenv.Pool{{Name: leasedPool, Addresses: []string{leasedPoolRange}}}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			metalLBQuiet(env)
			Expect(env.Stop()).To(Succeed())
		})
		c = env.Client
		createPool(ctx, c, tinyPool, tinyPoolRange)
		start("shardgate-lip-1")
	})

	It("gives two ports of one endpoint the same IP, and another owner's endpoint a different one", func() {
		alice := newNS("lip-alice")
		alice.service(ctx, "web")
		alice.leasedIP(ctx, "myip-80", "myip", "web", 80)
		alice.leasedIP(ctx, "myip-443", "myip", "web", 443)
		bob := newNS("lip-bob", "akash1bob")
		bob.service(ctx, "web")
		bob.leasedIP(ctx, "myip-80", "myip", "web", 80, lipLease("akash1bob", 7))

		ip80 := alice.allocatedIP(ctx, "myip-80")
		ip443 := alice.allocatedIP(ctx, "myip-443")
		ipBob := bob.allocatedIP(ctx, "myip-80")
		Expect(ip443).To(Equal(ip80), "two ports of one endpoint share one IP")
		Expect(ipBob).NotTo(Equal(ip80), "another owner's endpoint gets its own IP")
		for _, ip := range []string{ip80, ipBob} {
			Expect(inRange(ip, leasedPoolRange)).To(BeTrue(), ip)
		}

		By("writing the LoadBalancer Service of the LeasedIP")
		l := alice.getLeasedIP(ctx, "myip-443")
		Expect(l.Status.SharingKey).To(Equal("akash1alice-ip-myip"))
		Expect(l.Status.Service).To(Equal("web-ip-443-tcp"))
		var svc corev1.Service
		Expect(c.Get(ctx, client.ObjectKey{Namespace: alice.ns, Name: "web-ip-443-tcp"}, &svc)).To(Succeed())
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "web"}))
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0].Port).To(Equal(int32(443)))
		Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromInt32(8443)))
		Expect(svc.Spec.Ports[0].Protocol).To(Equal(corev1.ProtocolTCP))
		Expect(svc.Annotations).To(HaveKeyWithValue("metallb.io/allow-shared-ip", "akash1alice-ip-myip"))
		Expect(svc.Annotations).NotTo(HaveKey("metallb.io/address-pool"))
		Expect(svc.Labels).To(HaveKeyWithValue(shardgatev1alpha1.LabelLeaseOwner, "akash1alice"))
		Expect(svc.Labels).To(HaveKeyWithValue(shardgatev1alpha1.LabelLeaseDSeq, "1"))
		ref := metav1.GetControllerOf(&svc)
		Expect(ref).NotTo(BeNil())
		Expect(ref.Kind).To(Equal("LeasedIP"))
		Expect(ref.UID).To(Equal(l.UID))
		Expect(bob.getLeasedIP(ctx, "myip-80").Status.SharingKey).To(Equal("akash1bob-ip-myip"))
	})

	It("keeps an endpoint's ports on one IP even when a lower address is free", func() {
		// MetalLB hands out the first free or shareable address of a pool;
		// without the controller asking for the sibling's address, the
		// second port would get the lower address carol frees.
		carol := newNS("lip-carol", "akash1carol")
		carol.service(ctx, "web")
		carol.leasedIP(ctx, "ip", "ep", "web", 80, lipLease("akash1carol", 1))
		carolIP := carol.allocatedIP(ctx, "ip")
		dave := newNS("lip-dave", "akash1dave")
		dave.service(ctx, "web")
		dave.leasedIP(ctx, "ip-80", "ep", "web", 80, lipLease("akash1dave", 1))
		daveIP := dave.allocatedIP(ctx, "ip-80")
		Expect(netip.MustParseAddr(carolIP).Less(netip.MustParseAddr(daveIP))).To(BeTrue(), "carol %s, dave %s", carolIP, daveIP)

		assigned := poolAssigned(ctx, c, leasedPool)()
		Expect(c.Delete(ctx, carol.getLeasedIP(ctx, "ip"))).To(Succeed())
		Eventually(carol.serviceExists(ctx, "web-ip-80-tcp")).Should(BeFalse())
		// MetalLB has released carol's address.
		Eventually(poolAssigned(ctx, c, leasedPool)).Should(Equal(assigned - 1))

		dave.leasedIP(ctx, "ip-443", "ep", "web", 443, lipLease("akash1dave", 1))
		Expect(dave.allocatedIP(ctx, "ip-443")).To(Equal(daveIP))
	})

	It("allocates TCP and UDP on the same external port, as two Services on one IP", func() {
		f := newNS("lip-dns")
		f.service(ctx, "dns")
		f.leasedIP(ctx, "dns-tcp", "dns", "dns", 53, lipProto("TCP"))
		f.leasedIP(ctx, "dns-udp", "dns", "dns", 53, lipProto("UDP"))
		tcp := f.allocatedIP(ctx, "dns-tcp")
		udp := f.allocatedIP(ctx, "dns-udp")
		Expect(udp).To(Equal(tcp))
		Expect(f.getLeasedIP(ctx, "dns-tcp").Status.Service).To(Equal("dns-ip-53-tcp"))
		Expect(f.getLeasedIP(ctx, "dns-udp").Status.Service).To(Equal("dns-ip-53-udp"))
		var svc corev1.Service
		Expect(c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "dns-ip-53-udp"}, &svc)).To(Succeed())
		Expect(svc.Spec.Ports[0].Protocol).To(Equal(corev1.ProtocolUDP))
	})

	It("reports AddressConflict when one endpoint asks for the same port twice", func() {
		f := newNS("lip-conflict")
		f.service(ctx, "api")
		f.service(ctx, "admin")
		f.leasedIP(ctx, "api", "shared", "api", 9000)
		ip := f.allocatedIP(ctx, "api")
		// Another Service of the same endpoint on the same port cannot be
		// on the same IP.
		f.leasedIP(ctx, "admin", "shared", "admin", 9000)
		Eventually(allocated(ctx, c, f.ns, "admin")).Should(Equal("False/AddressConflict"))
		cond := meta.FindStatusCondition(f.getLeasedIP(ctx, "admin").Status.Conditions, shardgatev1alpha1.ConditionAllocated)
		Expect(cond.Message).To(ContainSubstring("already in use"))
		Expect(f.getLeasedIP(ctx, "admin").Status.IP).To(BeEmpty())

		By("allocating it once the port is free")
		Expect(c.Delete(ctx, f.getLeasedIP(ctx, "api"))).To(Succeed())
		f.allocatedIP(ctx, "admin")
		_ = ip
	})

	It("reports PoolExhausted for the third endpoint of a two-address pool, and allocates it when one is deleted", func() {
		f := newNS("lip-exhaust")
		f.service(ctx, "web")
		f.leasedIP(ctx, "e1", "e1", "web", 81, lipPool(tinyPool))
		first := f.allocatedIP(ctx, "e1")
		f.leasedIP(ctx, "e2", "e2", "web", 82, lipPool(tinyPool))
		second := f.allocatedIP(ctx, "e2")
		Expect(first).NotTo(Equal(second))
		for _, ip := range []string{first, second} {
			Expect(ip).To(BeElementOf("127.240.1.10", "127.240.1.11"))
		}
		var svc corev1.Service
		Expect(c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web-ip-81-tcp"}, &svc)).To(Succeed())
		Expect(svc.Annotations).To(HaveKeyWithValue("metallb.io/address-pool", tinyPool))

		f.leasedIP(ctx, "e3", "e3", "web", 83, lipPool(tinyPool))
		Eventually(allocated(ctx, c, f.ns, "e3")).Should(Equal("False/PoolExhausted"))
		Consistently(allocated(ctx, c, f.ns, "e3"), "2s").Should(Equal("False/PoolExhausted"))
		exhausted := corev1.EventTypeWarning + "/" + shardgatev1alpha1.ReasonPoolExhausted + "/Allocate"
		Eventually(eventsAbout(ctx, c, f.ns, "LeasedIP", "e3")).Should(HaveKeyWithValue(exhausted, 1))

		By("exporting the pool's usage")
		Eventually(func(g Gomega) {
			assigned, err := metric(metrics, "shardgate_pool_addresses", `pool="tiny",state="assigned"`)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(assigned).To(Equal(2.0))
			available, err := metric(metrics, "shardgate_pool_addresses", `pool="tiny",state="available"`)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(available).To(BeZero())
		}).Should(Succeed())

		Expect(c.Delete(ctx, f.getLeasedIP(ctx, "e1"))).To(Succeed())
		Expect(f.allocatedIP(ctx, "e3")).To(Equal(first))
		Expect(f.allocatedIP(ctx, "e2")).To(Equal(second))
		// One Warning for the exhausted pool, one Normal for the address.
		Eventually(eventsAbout(ctx, c, f.ns, "LeasedIP", "e3")).Should(And(
			HaveKeyWithValue(exhausted, 1),
			HaveKeyWithValue(corev1.EventTypeNormal+"/"+shardgatev1alpha1.ReasonAllocated+"/Allocate", 1)))
	})

	It("deletes only the deleted LeasedIP's Service", func() {
		f := newNS("lip-scoped")
		f.service(ctx, "web")
		f.leasedIP(ctx, "p1", "one", "web", 80)
		f.leasedIP(ctx, "p2", "two", "web", 443)
		// Another lease (deployment) of the same owner in the namespace.
		f.leasedIP(ctx, "other-lease", "one", "web", 8080, lipLease("akash1alice", 2))
		// A Service nobody leased, carrying the lease's labels: nothing is
		// ever deleted by label.
		unrelated := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: f.ns, Labels: map[string]string{
				shardgatev1alpha1.LabelLeaseOwner: "akash1alice", shardgatev1alpha1.LabelLeaseDSeq: "1",
				shardgatev1alpha1.LabelLeaseGSeq: "1", shardgatev1alpha1.LabelLeaseOSeq: "1",
			}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		Expect(c.Create(ctx, unrelated)).To(Succeed())
		f.allocatedIP(ctx, "p1")
		ip2 := f.allocatedIP(ctx, "p2")
		ipOther := f.allocatedIP(ctx, "other-lease")
		survivors := map[string]string{}
		for _, n := range []string{"web-ip-443-tcp", "web-ip-8080-tcp", "unrelated", "web"} {
			survivors[n] = f.serviceRV(ctx, n)
		}

		Expect(c.Delete(ctx, f.getLeasedIP(ctx, "p1"))).To(Succeed())
		Eventually(f.serviceExists(ctx, "web-ip-80-tcp")).Should(BeFalse())
		Consistently(func(g Gomega) {
			for n, rv := range survivors {
				var svc corev1.Service
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: n}, &svc)).To(Succeed(), n)
				g.Expect(svc.ResourceVersion).To(Equal(rv), n)
			}
		}, "2s").Should(Succeed())
		Expect(f.allocatedIP(ctx, "p2")).To(Equal(ip2))
		Expect(f.allocatedIP(ctx, "other-lease")).To(Equal(ipOther))
	})

	It("reports SelectorNotFound for a missing target Service and creates nothing until it exists", func() {
		f := newNS("lip-missing")
		f.leasedIP(ctx, "ghost", "ghost", "ghost", 80)
		Eventually(allocated(ctx, c, f.ns, "ghost")).Should(Equal("False/SelectorNotFound"))
		Consistently(f.serviceExists(ctx, "ghost-ip-80-tcp"), "1s").Should(BeFalse())
		Expect(f.getLeasedIP(ctx, "ghost").Status.Service).To(BeEmpty())

		f.service(ctx, "ghost")
		f.allocatedIP(ctx, "ghost")
	})

	It("reports PoolNotFound for a pool that does not exist, and allocates once it does", func() {
		f := newNS("lip-nopool")
		f.service(ctx, "web")
		f.leasedIP(ctx, "late", "late", "web", 80, lipPool(latePool))
		Eventually(allocated(ctx, c, f.ns, "late")).Should(Equal("False/PoolNotFound"))
		Consistently(f.serviceExists(ctx, "web-ip-80-tcp"), "1s").Should(BeFalse())

		createPool(ctx, c, latePool, latePoolRange)
		lateIP := f.allocatedIP(ctx, "late")
		Expect(inRange(lateIP, latePoolRange)).To(BeTrue())

		By("keeping an endpoint's ports on one IP of a named pool even when a lower address is free")
		erin := newNS("lip-erin", "akash1erin")
		erin.service(ctx, "web")
		erin.leasedIP(ctx, "x-80", "x", "web", 80, lipPool(latePool), lipLease("akash1erin", 1))
		erinIP := erin.allocatedIP(ctx, "x-80")
		Expect(netip.MustParseAddr(lateIP).Less(netip.MustParseAddr(erinIP))).To(BeTrue(), "late %s, erin %s", lateIP, erinIP)
		Expect(c.Delete(ctx, f.getLeasedIP(ctx, "late"))).To(Succeed())
		Eventually(f.serviceExists(ctx, "web-ip-80-tcp")).Should(BeFalse())
		// MetalLB has released it.
		Eventually(poolAssigned(ctx, c, latePool)).Should(Equal(int64(1)))
		erin.leasedIP(ctx, "x-443", "x", "web", 443, lipPool(latePool), lipLease("akash1erin", 1))
		Expect(erin.allocatedIP(ctx, "x-443")).To(Equal(erinIP))
	})

	It("leaves a foreign Service with the name alone and reports ServiceConflict", func() {
		f := newNS("lip-foreign")
		f.service(ctx, "web")
		foreign := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web-ip-80-tcp", Namespace: f.ns},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "other"}, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		Expect(c.Create(ctx, foreign)).To(Succeed())
		f.leasedIP(ctx, "taken", "taken", "web", 80)
		Eventually(allocated(ctx, c, f.ns, "taken")).Should(Equal("False/ServiceConflict"))
		var got corev1.Service
		Expect(c.Get(ctx, client.ObjectKeyFromObject(foreign), &got)).To(Succeed())
		Expect(got.ResourceVersion).To(Equal(foreign.ResourceVersion))

		By("deleting the LeasedIP leaves the foreign Service too")
		Expect(c.Delete(ctx, f.getLeasedIP(ctx, "taken"))).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(foreign), &got)).To(Succeed())
			g.Expect(got.ResourceVersion).To(Equal(foreign.ResourceVersion))
		}, "1s").Should(Succeed())
	})

	It("hashes an endpoint name that is not DNS-safe and truncates a long Service name", func() {
		f := newNS("lip-names")
		long := "s" + strings.Repeat("x", 61) + "z" // 63 characters
		f.service(ctx, long)
		f.leasedIP(ctx, "odd", "My IP!", long, 65535, lipProto("UDP"))
		f.allocatedIP(ctx, "odd")
		l := f.getLeasedIP(ctx, "odd")
		// The endpoint is replaced by the base32hex of the first 15 bytes of
		// its SHA-256 (see addresses.SharingKey; vector from its test).
		Expect(l.Status.SharingKey).To(Equal("akash1alice-ip-6u5debd38rq359gfft2fasin"))
		Expect(l.Status.Service).To(HaveLen(63))
		Expect(l.Status.Service).To(HaveSuffix("-ip-65535-udp"))
		Expect(l.Status.Service).To(HavePrefix("sxxx"))
	})

	It("changes no IP and rewrites nothing when the controller restarts", func() {
		type snap struct{ ip, lipRV, svcRV, cond string }
		take := func() map[string]snap {
			out := map[string]snap{}
			for _, ns := range namespaces {
				var lips shardgatev1alpha1.LeasedIPList
				Expect(c.List(ctx, &lips, client.InNamespace(ns))).To(Succeed())
				for _, l := range lips.Items {
					s := snap{ip: l.Status.IP, lipRV: l.ResourceVersion}
					if cond := meta.FindStatusCondition(l.Status.Conditions, shardgatev1alpha1.ConditionAllocated); cond != nil {
						s.cond = string(cond.Status) + "/" + cond.Reason
					}
					if l.Status.Service != "" {
						var svc corev1.Service
						Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.Service}, &svc)).To(Succeed())
						s.svcRV = svc.ResourceVersion
					}
					out[ns+"/"+l.Name] = s
				}
			}
			return out
		}
		Eventually(settled(metrics, "leasedip", 1)).Should(Succeed())
		before := take()
		allocatedN := 0
		for _, s := range before {
			if s.cond == "True/Allocated" {
				allocatedN++
			}
		}
		Expect(allocatedN).To(BeNumerically(">=", 12))

		Expect(proc.Signal(syscall.SIGTERM)).To(Succeed())
		Eventually(proc.Done()).WithTimeout(30 * time.Second).Should(BeClosed())
		start("shardgate-lip-2")
		Eventually(settled(metrics, "leasedip", float64(len(before)))).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(take()).To(Equal(before))
	})
})

// createPool creates a MetalLB pool that is never auto-assigned (so only
// LeasedIPs naming it use it) and waits for MetalLB to report its status.
func createPool(ctx context.Context, c client.Client, name, addresses string) {
	pool := &metallbv1beta1.IPAddressPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.MetalLBNamespace},
		Spec:       metallbv1beta1.IPAddressPoolSpec{Addresses: []string{addresses}, AvoidBuggyIPs: true, AutoAssign: new(false)},
	}
	Expect(c.Create(ctx, pool)).To(Succeed())
	Eventually(func(g Gomega) {
		var got metallbv1beta1.IPAddressPool
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pool), &got)).To(Succeed())
		g.Expect(got.Status.AvailableIPv4 + got.Status.AssignedIPv4).To(BeNumerically(">", 0))
	}).Should(Succeed())
}

// metalLBQuiet waits until the MetalLB controller has logged nothing for
// two seconds. MetalLB v0.15.2 reprocesses every Service on each namespace
// and pool change, and a reprocess that asks for another one while the
// process is stopping blocks forever on its unconsumed reload channel
// (ServiceReconciler.forceReload), so SIGTERM is ignored and the harness
// reports a kill. Stopping it idle avoids that.
func metalLBQuiet(env *testenv.Env) {
	var log string
	for _, p := range env.Processes() {
		if p.Name == "metallb-controller" {
			log = p.LogPath
		}
	}
	if log == "" {
		return
	}
	size := func() int64 {
		st, err := os.Stat(log)
		if err != nil {
			return -1
		}
		return st.Size()
	}
	last, quietSince := size(), time.Now()
	Eventually(func() bool {
		if n := size(); n != last {
			last, quietSince = n, time.Now()
		}
		return time.Since(quietSince) >= 2*time.Second
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
}

// poolAssigned reads the pool's status.assignedIPv4.
func poolAssigned(ctx context.Context, c client.Client, name string) func() int64 {
	return func() int64 {
		var p metallbv1beta1.IPAddressPool
		Expect(c.Get(ctx, client.ObjectKey{Namespace: testenv.MetalLBNamespace, Name: name}, &p)).To(Succeed())
		return p.Status.AssignedIPv4
	}
}
