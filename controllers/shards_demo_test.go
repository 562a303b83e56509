package controllers_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// applyExample applies one file of examples/ with server-side apply, as
// the demo does.
func applyExample(ctx context.Context, c client.Client, root, file string) {
	data, err := os.ReadFile(filepath.Join(root, "examples", file))
	Expect(err).NotTo(HaveOccurred())
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			Expect(errors.Is(err, io.EOF)).To(BeTrue(), "%s: %v", file, err)
			return
		}
		if len(u.Object) == 0 {
			continue
		}
		Expect(c.Patch(ctx, &u, client.Apply, client.FieldOwner("shardgate-test"), client.ForceOwnership)).To(Succeed(), "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		if u.GetKind() == "Namespace" {
			dumps.Add(c, u.GetName())
		}
	}
}

// readyOf is a LeaseHost's Ready condition and status.admitted, as
// kubectl get leasehosts shows them (READY, REASON, ADMITTED).
func readyOf(ctx context.Context, c client.Client, ns, name string) func(Gomega) string {
	return func(g Gomega) string {
		var lh shardgatev1alpha1.LeaseHost
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lh)).To(Succeed())
		r := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReady)
		if r == nil {
			return "<none>"
		}
		return string(r.Status) + "/" + r.Reason + " " + lh.Status.Admitted
	}
}

// The demo's shards (examples/00-provider.yaml): shard-a has a listener
// for its domain and a hostless "custom" listener; shard-b has a listener
// for its domain only. A subdomain lease is admitted on both, and each
// shard's published route table carries its own name and not the other's.
var _ = Describe("shards with a hostless listener (the demo's layout)", Ordered, func() {
	ctx := context.Background()
	var env *testenv.Env
	var c client.Client
	var xds *xdsserver.Server
	shardA := types.NamespacedName{Namespace: "shardgate-system", Name: "shard-a"}
	shardB := types.NamespacedName{Namespace: "shardgate-system", Name: "shard-b"}
	const blogA, blogB = "blog.shard-a.apps.example.test", "blog.shard-b.apps.example.test"

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		c = env.Client
		env.RunManager(manager.Options{MetricsAddress: "0", HealthAddress: "0", Log: GinkgoLogr,
			OnXDSServer: func(s *xdsserver.Server) { xds = s }})
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		applyExample(ctx, c, root, "00-provider.yaml")
		applyExample(ctx, c, root, "10-bob.yaml")
		// As the demo does: bob holds his name before alice asks for hers.
		Eventually(reserved(ctx, c, "lease-bob", "web")).Should(Equal("True/Reserved"))
		applyExample(ctx, c, root, "11-tenants.yaml")
		// A new lease of alice's: the subdomain blog, which nobody holds.
		Expect(c.Create(ctx, &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: "lease-alice", Name: "blog"},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:     shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 101, GSeq: 1, OSeq: 1},
				Subdomain: "blog",
				Service:   shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			},
		})).To(Succeed())
	})

	It("admits a subdomain lease on both shards, READY True 2/2", func() {
		Eventually(entries(ctx, c, "lease-alice", "blog")).Should(Equal(map[string]string{
			"shard-a": blogA + " True/Admitted",
			"shard-b": blogB + " True/Admitted",
		}))
		Eventually(readyOf(ctx, c, "lease-alice", "blog")).Should(Equal("True/Admitted 2/2"))
	})

	It("publishes each shard's own name in its RouteConfiguration and not the other shard's", func() {
		Eventually(func(g Gomega) map[string]bool { return servedDomains(g, xds, shardA) }).Should(SatisfyAll(
			HaveKey(blogA), Not(HaveKey(blogB))))
		Eventually(func(g Gomega) map[string]bool { return servedDomains(g, xds, shardB) }).Should(SatisfyAll(
			HaveKey(blogB), Not(HaveKey(blogA))))
		Expect(vhostClusters(xds, shardA, blogA)).NotTo(BeEmpty(), "shard-a routes %s to a cluster", blogA)
		Expect(vhostClusters(xds, shardB, blogB)).NotTo(BeEmpty(), "shard-b routes %s to a cluster", blogB)
		Consistently(func(g Gomega) map[string]bool { return servedDomains(g, xds, shardA) }, "2s", "200ms").ShouldNot(HaveKey(blogB))
	})

	It("serves an explicit hostname on every shard that selects it, shard-a through its hostless listener", func() {
		Eventually(entries(ctx, c, "lease-bob", "web")).Should(Equal(map[string]string{
			"shard-a": "web.shard-b.apps.example.test True/Admitted",
			"shard-b": "web.shard-b.apps.example.test True/Admitted",
		}))
		Eventually(readyOf(ctx, c, "lease-bob", "web")).Should(Equal("True/Admitted 2/2"))
		Eventually(func(g Gomega) map[string]bool { return servedDomains(g, xds, shardA) }).Should(HaveKey("web.shard-b.apps.example.test"))
	})

	It("does not say READY True for a subdomain that one shard refuses", func() {
		// alice's "web" is bob's on shard-b (examples/11-tenants.yaml).
		Eventually(entries(ctx, c, "lease-alice", "web")).Should(Equal(map[string]string{
			"shard-a": "web.shard-a.apps.example.test True/Admitted",
			"shard-b": "web.shard-b.apps.example.test False/HostnameInUse",
		}))
		Eventually(readyOf(ctx, c, "lease-alice", "web")).Should(Equal("False/" + shardgatev1alpha1.ReasonPartiallyAdmitted + " 1/2"))
	})
})
