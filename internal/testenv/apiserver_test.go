package testenv_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/internal/testenv"
)

var _ = Describe("apiserver restart", Ordered, func() {
	var env *testenv.Env
	ctx := context.Background()

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	})

	It("comes back on the same address with the same data and credentials", func() {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "survives", Namespace: "default"},
			Data:       map[string]string{"k": "v"},
		}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		host := env.Config.Host

		Expect(env.StopAPIServer()).To(Succeed())
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := env.Client.Get(short, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		cancel()
		Expect(err).To(HaveOccurred(), "the apiserver answered while stopped")

		start := time.Now()
		Expect(env.StartAPIServer(ctx)).To(Succeed())
		GinkgoWriter.Printf("kube-apiserver restarted in %s\n", time.Since(start).Round(time.Millisecond))
		Expect(env.Config.Host).To(Equal(host))

		// The clients made before the outage work unchanged: same port,
		// same serving CA, same client CA.
		var got corev1.ConfigMap
		Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got) }).
			WithTimeout(10 * time.Second).Should(Succeed())
		Expect(got.Data).To(Equal(cm.Data))
		rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		kc, err := client.New(rc, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(kc.Get(ctx, client.ObjectKeyFromObject(cm), &got)).To(Succeed())
	})
})
