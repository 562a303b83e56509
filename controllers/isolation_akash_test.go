package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The Akash API lists every lease's hostnames and IPs by Akash's labels. A
// tenant (Bob) writes, in his own lease namespace, a route and a Service
// labelled akash.network=true with Alice's lease labels: the API must keep
// reporting Alice's lease as shardgate wrote it, and nothing of Bob's under
// her lease.
var _ = Describe("Tenant isolation: the Akash API", Ordered, func() {
	ctx := context.Background()
	var (
		env     *testenv.Env
		c       client.Client
		stop    func() error
		apiAddr string
	)
	api := func(path string) (int, []byte) {
		resp, err := http.Get("http://" + apiAddr + path)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	leaseA := akash.Lease{Owner: akashAlice, DSeq: 11, GSeq: 1, OSeq: 1, Provider: akashProvider}
	leaseB := akash.Lease{Owner: akashBob, DSeq: 12, GSeq: 1, OSeq: 1, Provider: akashProvider}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "crds", "akash")}, MaxTime: 2 * time.Minute})
		Expect(err).NotTo(HaveOccurred())
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		apiAddr = lis.Addr().String()
		Expect(lis.Close()).To(Succeed())
		cfg, err := config.Parse([]byte(fmt.Sprintf("akash:\n  enabled: true\n  apiAddress: %q\n", apiAddr)))
		Expect(err).NotTo(HaveOccurred())
		for _, ns := range []string{"lease", "akash-edge"} {
			Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
		shard(ctx, c, "akash-edge", "edge", "example.com")
		for _, l := range []akash.Lease{leaseA, leaseB} {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
			ns.Labels[akash.LabelManaged] = "true"
			Expect(c.Create(ctx, ns)).To(Succeed())
			Expect(c.Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: l.Namespace()},
				Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
					Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
			})).To(Succeed())
		}
		stop = env.RunManager(manager.Options{Config: cfg})
		Eventually(func() int { code, _ := api("/health"); return code }).Should(Equal(http.StatusOK))
	})
	AfterAll(func() {
		if stop != nil {
			Expect(stop()).To(Succeed())
		}
		if env != nil {
			Expect(env.Stop()).To(Succeed())
		}
	})

	It("reports only the routes and leased-IP Services shardgate wrote, in the lease namespace of their lease, never a tenant's forged labels", func() {
		Expect(c.Create(ctx, &akashv1.ProviderHost{
			ObjectMeta: metav1.ObjectMeta{Name: "a-web", Namespace: "lease"},
			Spec: akashv1.ProviderHostSpec{Owner: leaseA.Owner, Provider: leaseA.Provider, Hostname: "alice.example.com",
				Dseq: leaseA.DSeq, Gseq: leaseA.GSeq, Oseq: leaseA.OSeq, ServiceName: "web", ExternalPort: 80},
		})).To(Succeed())
		hostnames := func(g Gomega) map[string]akash.ManagedHostname {
			code, body := api("/managed-hostnames")
			g.Expect(code).To(Equal(http.StatusOK), string(body))
			var m map[string]akash.ManagedHostname
			g.Expect(json.Unmarshal(body, &m)).To(Succeed())
			return m
		}
		Eventually(func(g Gomega) { g.Expect(hostnames(g)).To(HaveKey("alice.example.com")) }).Should(Succeed())

		By("Bob labels routes in his own namespace with Alice's lease")
		forged := func(name, host string) {
			labels := leaseA.Labels()
			labels[akash.LabelManaged] = "true"
			port := gatewayv1.PortNumber(80)
			r := &gatewayv1.HTTPRoute{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: leaseB.Namespace(), Labels: labels},
				Spec: gatewayv1.HTTPRouteSpec{
					Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)},
					Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
						BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: &port}}}}}},
				},
			}
			Expect(c.Create(ctx, r)).To(Succeed())
		}
		forged("stolen.example.com", "stolen.example.com")
		forged("shadow", "alice.example.com")

		By("and a Service labelled as Alice's leased IP")
		ipLabels := leaseA.Labels()
		ipLabels[akash.LabelManaged] = "true"
		ipLabels[akash.LabelServiceTarget] = akash.ServiceTargetMetalLB
		fake := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web-ip-80-tcp", Namespace: leaseB.Namespace(), Labels: ipLabels},
			Spec: corev1.ServiceSpec{Selector: map[string]string{akash.LabelManifestService: "web"},
				Ports: []corev1.ServicePort{{Name: "web-ip-80-tcp", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		Expect(c.Create(ctx, fake)).To(Succeed())

		// The controller's cache sees them within moments; the API must
		// answer as before throughout.
		Consistently(func(g Gomega) {
			m := hostnames(g)
			g.Expect(m).NotTo(HaveKey("stolen.example.com"), "Bob's forged route is reported under Alice's lease")
			g.Expect(m).To(HaveLen(1))
			e := m["alice.example.com"]
			g.Expect(e.Namespace).To(Equal(leaseA.Namespace()))
			g.Expect(e.LeaseID.Owner).To(Equal(akashAlice))

			code, body := api("/state")
			g.Expect(code).To(Equal(http.StatusOK))
			var state map[string]json.RawMessage
			g.Expect(json.Unmarshal(body, &state)).To(Succeed())
			g.Expect(state).NotTo(HaveKey(leaseA.String()), "Bob's Service is reported as Alice's leased IP")

			// Alice has no leased IP: 204, not Bob's Service (whose
			// missing address would make it a 500 for her).
			code, body = api(fmt.Sprintf("/ip-lease-status/%s/%d/%d/%d", leaseA.Owner, leaseA.DSeq, leaseA.GSeq, leaseA.OSeq))
			g.Expect(code).To(Equal(http.StatusNoContent), string(body))
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})
