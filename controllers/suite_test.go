package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestControllers(t *testing.T) {
	testenv.Require(t)
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "controllers")
}

// fixture creates objects in one namespace of its own.
type fixture struct {
	c  client.Client
	ns string
}

func newFixture(ctx context.Context, c client.Client, prefix string) *fixture {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	dumps.Add(c, ns.Name)
	return &fixture{c: c, ns: ns.Name}
}

// dumps are the namespaces the running spec created; a spec that fails
// prints their objects.
var dumps testenv.Dumps

var _ = AfterEach(func() { dumps.Flush(context.Background(), GinkgoWriter, CurrentSpecReport().Failed()) })

func (f *fixture) service(ctx context.Context, name string) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	Expect(f.c.Create(ctx, svc)).To(Succeed())
}

type lhOpt func(*shardgatev1alpha1.LeaseHost)

func owner(o string, dseq uint64) lhOpt {
	return func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Lease.Owner, lh.Spec.Lease.DSeq = o, dseq }
}
func takeover(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Takeover = true }
func service(name string) lhOpt {
	return func(lh *shardgatev1alpha1.LeaseHost) { lh.Spec.Service.Name = name }
}

func (f *fixture) leaseHost(ctx context.Context, name, host string, opts ...lhOpt) *shardgatev1alpha1.LeaseHost {
	lh := &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 1, GSeq: 1, OSeq: 1},
			Hostname: host,
			Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			Path:     "/",
		},
	}
	for _, o := range opts {
		o(lh)
	}
	Expect(f.c.Create(ctx, lh)).To(Succeed())
	return lh
}

func (f *fixture) get(ctx context.Context, name string) *shardgatev1alpha1.LeaseHost {
	var lh shardgatev1alpha1.LeaseHost
	Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &lh)).To(Succeed())
	return &lh
}

// reserved returns the Reserved condition's status and reason, once the
// controller has written a status for the current generation.
func reserved(ctx context.Context, c client.Client, ns, name string) func(Gomega) string {
	return func(g Gomega) string {
		var lh shardgatev1alpha1.LeaseHost
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lh)).To(Succeed())
		g.Expect(lh.Status.ObservedGeneration).To(Equal(lh.Generation))
		cond := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved)
		g.Expect(cond).NotTo(BeNil())
		return fmt.Sprintf("%s/%s", cond.Status, cond.Reason)
	}
}

func routeHostnames(ctx context.Context, c client.Client, ns, name string) func() []string {
	return func() []string {
		var r gatewayv1.HTTPRoute
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &r); err != nil {
			return nil
		}
		out := []string{}
		for _, h := range r.Spec.Hostnames {
			out = append(out, string(h))
		}
		return out
	}
}

// shard creates a GatewayClass of ours (once), a GatewayParameters with a
// shard section and a Gateway using it, in namespace ns.
func shard(ctx context.Context, c client.Client, ns, name, domain string) {
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}
	if err := c.Create(ctx, class); err != nil {
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
	params := &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: domain}},
	}
	Expect(c.Create(ctx, params)).To(Succeed())
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: "shardgate.io", Kind: "GatewayParameters", Name: name,
			}},
			Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
				Hostname:      new(gatewayv1.Hostname("*." + domain)),
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}},
			}},
		},
	}
	Expect(c.Create(ctx, gw)).To(Succeed())
}

func writeConfig(path string, blocked ...string) {
	data := "blockedHostnames:\n"
	for _, b := range blocked {
		data += fmt.Sprintf("  - %q\n", b)
	}
	tmp := path + ".tmp"
	Expect(os.WriteFile(tmp, []byte(data), 0o644)).To(Succeed())
	Expect(os.Rename(tmp, path)).To(Succeed())
}

func configPath() string { return filepath.Join(GinkgoT().TempDir(), "config.yaml") }

// update re-reads obj and applies mutate until the write does not conflict
// with the controller's own status writes.
func update[T client.Object](ctx context.Context, c client.Client, obj T, mutate func(T)) {
	Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return c.Update(ctx, obj)
	}).Should(Succeed())
}
