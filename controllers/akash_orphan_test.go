package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/testenv"
)

// beforeGet runs before once before its first Get, then reads through.
type beforeGet struct {
	client.Reader
	once   sync.Once
	before func()
}

func (b *beforeGet) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	b.once.Do(b.before)
	return b.Reader.Get(ctx, key, obj, opts...)
}

// The orphan check of a leased-IP Service reads two sources: the
// apiserver (whether shardgate wrote the Service) and the cache (whether a
// ProviderLeasedIP produces it). Here the ProviderLeasedIP of a Service
// Akash's IP operator wrote arrives, and shardgate applies the Service,
// after the check's first cache read and before the apiserver answers it,
// as can happen on a loaded machine: the Service is not shardgate's orphan
// and stays.
var _ = Describe("Akash drop-in mode: a leased-IP Service's orphan check", Ordered, func() {
	ctx := context.Background()
	var (
		env    *testenv.Env
		cached client.Client
		stop   context.CancelFunc
	)
	BeforeAll(func() {
		root, err := testenv.Root()
		Expect(err).NotTo(HaveOccurred())
		env, err = testenv.Start(ctx, testenv.Options{ExtraCRDPaths: []string{filepath.Join(root, "crds", "akash")}})
		Expect(err).NotTo(HaveOccurred())
		ca, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(ca.IndexField(ctx, &akashv1.ProviderLeasedIP{}, controllers.ProviderLeasedIPServiceIndex, controllers.IPServiceIndex)).To(Succeed())
		// The informers of the check's reads, started with the cache.
		_, err = ca.GetInformer(ctx, &akashv1.ProviderLeasedIP{})
		Expect(err).NotTo(HaveOccurred())
		_, err = ca.GetInformer(ctx, &corev1.Service{})
		Expect(err).NotTo(HaveOccurred())
		var cacheCtx context.Context
		cacheCtx, stop = context.WithCancel(ctx)
		go func() { _ = ca.Start(cacheCtx) }()
		Expect(ca.WaitForCacheSync(ctx)).To(BeTrue())
		cached, err = client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: ca}})
		Expect(err).NotTo(HaveOccurred())
	})
	AfterAll(func() {
		if stop != nil {
			stop()
		}
		if env != nil {
			Expect(env.Stop()).To(Succeed())
		}
	})

	It("keeps a Service whose ProviderLeasedIP arrived, and which shardgate applied, between its reads", func() {
		c := env.Client
		l := akash.Lease{Owner: akashAlice, DSeq: 51, GSeq: 1, OSeq: 1, Provider: akashProvider}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(), Labels: l.Labels()}}
		ns.Labels[akash.LabelManaged] = "true"
		Expect(c.Create(ctx, ns)).To(Succeed())
		dumps.Add(c, ns.Name)
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease"}})).To(Succeed())
		dumps.Add(c, "lease")
		lip := &akashv1.ProviderLeasedIP{
			ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "lease", Labels: map[string]string{akash.LabelManaged: "true"}},
			Spec: akashv1.ProviderLeasedIPSpec{
				LeaseID:     akashv1.LeaseID{Owner: l.Owner, DSeq: fmt.Sprint(l.DSeq), GSeq: l.GSeq, OSeq: l.OSeq, Provider: l.Provider},
				ServiceName: "web", Port: 8080, ExternalPort: 82, Protocol: "TCP", SharingKey: akashAlice + "-ip-late",
			},
		}
		_, proto, err := akash.IPLease(lip)
		Expect(err).NotTo(HaveOccurred())
		By("Akash's IP operator wrote the Service; no ProviderLeasedIP produces it yet")
		theirs := akash.IPServiceFor(lip, l, proto, akash.DefaultMetalLBPool)
		Expect(c.Create(ctx, theirs, client.FieldOwner("akash-ip-operator"))).To(Succeed())
		uid := theirs.UID
		key := client.ObjectKeyFromObject(theirs)
		Eventually(func() error { return cached.Get(ctx, key, &corev1.Service{}) }).Should(Succeed())

		live := &beforeGet{Reader: c, before: func() {
			By("before the apiserver answers the check: the ProviderLeasedIP arrives, and shardgate applies the Service for it")
			Expect(c.Create(ctx, lip)).To(Succeed())
			Eventually(func(g Gomega) {
				var producers akashv1.ProviderLeasedIPList
				g.Expect(cached.List(ctx, &producers, client.InNamespace("lease"),
					client.MatchingFields{controllers.ProviderLeasedIPServiceIndex: key.String()})).To(Succeed())
				g.Expect(producers.Items).To(HaveLen(1))
			}).Should(Succeed())
			var existing corev1.Service
			Expect(c.Get(ctx, key, &existing)).To(Succeed())
			desired := akash.IPServiceFor(lip, l, proto, akash.DefaultMetalLBPool)
			Expect(controllers.Write(ctx, c, c, desired, &existing)).To(Succeed())
		}}
		Expect(controllers.DeleteOrphan(ctx, cached, live, "lease", key)).To(Succeed())

		var svc corev1.Service
		Expect(c.Get(ctx, key, &svc)).To(Succeed(), "the Service of a live ProviderLeasedIP")
		Expect(svc.UID).To(Equal(uid))
		managers := []string{}
		for _, m := range svc.ManagedFields {
			managers = append(managers, m.Manager)
		}
		Expect(managers).To(ContainElement(shardgatev1alpha1.FieldOwner), "the check ran past shardgate's apply")

		By("a Service a cached ProviderLeasedIP produces is left from the cache alone, without asking the apiserver")
		asked := &beforeGet{Reader: c}
		asked.before = func() { Fail("the check read the apiserver for a Service a cached ProviderLeasedIP produces") }
		Expect(controllers.DeleteOrphan(ctx, cached, asked, "lease", key)).To(Succeed())

		By("its ProviderLeasedIP gone, the same check deletes it")
		Expect(c.Delete(ctx, lip)).To(Succeed())
		Eventually(func(g Gomega) {
			var producers akashv1.ProviderLeasedIPList
			g.Expect(cached.List(ctx, &producers, client.InNamespace("lease"))).To(Succeed())
			g.Expect(producers.Items).To(BeEmpty())
		}).Should(Succeed())
		Expect(controllers.DeleteOrphan(ctx, cached, c, "lease", key)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, key, &corev1.Service{})) }).Should(BeTrue(), "the orphan")
	})
})
