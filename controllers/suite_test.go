package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
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
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestControllers(t *testing.T) {
	testenv.Require(t)
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "controllers")
}

// defaultOwner is the owner of a fixture's own namespace and of its
// LeaseHosts unless a test names another.
const defaultOwner = "akash1alice"

// fixture creates objects in tenant namespaces of its own: ns belongs to
// defaultOwner, and a LeaseHost of another owner goes to that owner's
// namespace (created on first use). Every namespace is marked with its
// owner (tenancy.OwnerKey), as a provider marks tenant namespaces; shards
// live elsewhere, since a tenant namespace never holds one.
type fixture struct {
	c  client.Client
	ns string

	mu       sync.Mutex
	owners   map[string]string // owner → namespace
	of       map[string]string // LeaseHost name → namespace
	services []string          // created in every namespace of the fixture
}

func newFixture(ctx context.Context, c client.Client, prefix string) *fixture {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-",
		Annotations: map[string]string{tenancy.OwnerKey: defaultOwner}}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	dumps.Add(c, ns.Name)
	return &fixture{c: c, ns: ns.Name, owners: map[string]string{defaultOwner: ns.Name}, of: map[string]string{}}
}

// ownedFixture creates a namespace marked as owner's (the
// shardgate.io/owner annotation), or unmarked when owner is "".
func ownedFixture(ctx context.Context, c client.Client, prefix, owner string) *fixture {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if owner != "" {
		ns.Annotations = map[string]string{tenancy.OwnerKey: owner}
	}
	Expect(c.Create(ctx, ns)).To(Succeed())
	dumps.Add(c, ns.Name)
	return &fixture{c: c, ns: ns.Name, owners: map[string]string{owner: ns.Name}, of: map[string]string{}}
}

// dumps are the namespaces the running spec created; a spec that fails
// prints their objects.
var dumps testenv.Dumps

var _ = AfterEach(func() { dumps.Flush(context.Background(), GinkgoWriter, CurrentSpecReport().Failed()) })

// nsFor returns owner's namespace in this fixture, creating it (marked
// with owner, and with the fixture's Services) on first use.
func (f *fixture) nsFor(ctx context.Context, owner string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ns, ok := f.owners[owner]; ok {
		return ns
	}
	// Numbered, not named after the owner: refusal messages name the
	// namespace, and must not reveal its owner.
	name := fmt.Sprintf("%s-o%d", f.ns, len(f.owners))
	Expect(f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{tenancy.OwnerKey: owner}}})).To(Succeed())
	dumps.Add(f.c, name)
	for _, svc := range f.services {
		f.createService(ctx, name, svc)
	}
	f.owners[owner] = name
	return name
}

// nsOf is the namespace of the fixture's LeaseHost name.
func (f *fixture) nsOf(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ns, ok := f.of[name]; ok {
		return ns
	}
	return f.ns
}

// namespaces lists every namespace of the fixture.
func (f *fixture) namespaces() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.owners))
	for _, ns := range f.owners {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// service creates a Service in every namespace of the fixture, present and
// future.
func (f *fixture) service(ctx context.Context, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.services = append(f.services, name)
	for _, ns := range f.owners {
		f.createService(ctx, ns, name)
	}
}

func (f *fixture) createService(ctx context.Context, ns, name string) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
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

// leaseHost creates a LeaseHost in its owner's namespace of the fixture.
func (f *fixture) leaseHost(ctx context.Context, name, host string, opts ...lhOpt) *shardgatev1alpha1.LeaseHost {
	lh := &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: defaultOwner, DSeq: 1, GSeq: 1, OSeq: 1},
			Hostname: host,
			Service:  shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
			Path:     "/",
		},
	}
	for _, o := range opts {
		o(lh)
	}
	lh.Namespace = f.nsFor(ctx, lh.Spec.Lease.Owner)
	f.mu.Lock()
	f.of[name] = lh.Namespace
	f.mu.Unlock()
	Expect(f.c.Create(ctx, lh)).To(Succeed())
	return lh
}

func (f *fixture) get(ctx context.Context, name string) *shardgatev1alpha1.LeaseHost {
	var lh shardgatev1alpha1.LeaseHost
	Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.nsOf(name), Name: name}, &lh)).To(Succeed())
	return &lh
}

// reserved is the package-level reserved for the fixture's LeaseHost name.
func (f *fixture) reserved(ctx context.Context, name string) func(Gomega) string {
	return reserved(ctx, f.c, f.nsOf(name), name)
}

// routeHostnames is the package-level routeHostnames for the route of the
// fixture's LeaseHost name.
func (f *fixture) routeHostnames(ctx context.Context, name string) func() []string {
	return routeHostnames(ctx, f.c, f.nsOf(name), name)
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
	ourGatewayClass(ctx, c)
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

// ourGatewayClass creates the GatewayClass "shardgate" of our controller,
// unless it exists.
func ourGatewayClass(ctx context.Context, c client.Client) {
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}
	if err := c.Create(ctx, class); err != nil {
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
}

// gateway creates a GatewayClass of ours (once) and a Gateway that is not a
// shard (no parameters), with one HTTP listener for *.<domain> open to every
// namespace: for tests of Gateway API behaviour rather than tenancy, since a
// shard serves only the routes that ownership allows.
func gateway(ctx context.Context, c client.Client, ns, name, domain string) {
	ourGatewayClass(ctx, c)
	Expect(c.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
				Hostname:      new(gatewayv1.Hostname("*." + domain)),
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}},
			}},
		},
	})).To(Succeed())
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
