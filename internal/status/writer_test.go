package status_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/status"
	"github.com/shardgate/shardgate/internal/testenv"
)

// writerEnv is one real apiserver with an informer cache, shared by the
// writer's integration tests; each test works in its own namespace with
// its own Writer.
type writerEnv struct {
	ctx   context.Context
	env   *testenv.Env
	api   client.Client // the apiserver, uncached: what "another controller" writes with
	cache cache.Cache
}

func startWriterEnv(t *testing.T) *writerEnv {
	env := testenv.StartT(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // informers stop before the apiserver does
	ca, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{&gatewayv1.HTTPRoute{}, &gatewayv1.Gateway{}, &gatewayv1.ListenerSet{}} {
		if _, err := ca.GetInformer(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("informer cache did not sync")
	}
	return &writerEnv{ctx: ctx, env: env, api: env.Client, cache: ca}
}

// cachedClient reads from the informer cache and writes to the apiserver,
// as the manager's client does.
func (e *writerEnv) cachedClient(t *testing.T) client.WithWatch {
	c, err := client.NewWithWatch(e.env.Config, client.Options{Scheme: e.env.Scheme, Cache: &client.CacheOptions{Reader: e.cache}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writer returns a Writer over c, not yet started. Every update the
// informers deliver goes to RecheckUpdate, as the controller's event
// handler sends the updates that need no translation there, and then to
// each of handled.
func (e *writerEnv) writer(t *testing.T, c client.Client, handled ...func(client.Object)) *status.Writer {
	w := status.New(c, e.api, ours, logr.Discard())
	for _, o := range []client.Object{&gatewayv1.HTTPRoute{}, &gatewayv1.Gateway{}, &gatewayv1.ListenerSet{}} {
		inf, err := e.cache.GetInformer(e.ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, obj any) {
				before, _ := old.(client.Object)
				if o, ok := obj.(client.Object); ok {
					w.RecheckUpdate(before, o)
					for _, h := range handled {
						h(o)
					}
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inf.RemoveEventHandler(reg) })
	}
	return w
}

// start runs w until the test ends.
func (e *writerEnv) start(t *testing.T, w *status.Writer) {
	ctx, stop := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Start(ctx)
	}()
	t.Cleanup(func() { stop(); <-done })
}

func (e *writerEnv) namespace(t *testing.T, name string) string {
	if err := e.api.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// route creates a route attached to Gateway "gw", with owners as its
// ownerReferences, and waits for the cache to have it.
// routes creates n routes r-0 … r-<n-1> in ns.
func (e *writerEnv) routes(t *testing.T, ns string, n int) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, n)
	for i := range n {
		keys = append(keys, e.route(t, ns, fmt.Sprintf("r-%d", i)))
	}
	return keys
}

func (e *writerEnv) route(t *testing.T, ns, name string, owners ...metav1.OwnerReference) types.NamespacedName {
	r := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{
			ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}},
		}},
	}
	if err := e.api.Create(e.ctx, r); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	e.cached(t, key, func(*gatewayv1.HTTPRoute) bool { return true })
	return key
}

// controlledRoute creates a route whose controller is the LeaseHost with
// UID uid (a LeaseHost's generated route).
func (e *writerEnv) controlledRoute(t *testing.T, ns, name string, uid types.UID) types.NamespacedName {
	return e.route(t, ns, name, metav1.OwnerReference{
		APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: name, UID: uid, Controller: ptr(true)})
}

// cached waits until the cache's copy of route key satisfies ok.
func (e *writerEnv) cached(t *testing.T, key types.NamespacedName, ok func(*gatewayv1.HTTPRoute) bool) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		var r gatewayv1.HTTPRoute
		return e.cache.Get(e.ctx, key, &r) == nil && ok(&r)
	}).WithTimeout(30*time.Second).Should(BeTrue(), "the cache's copy of %s", key)
}

// snapshot is the input a translation of namespace ns would see: the
// cache's routes and Gateways there.
func (e *writerEnv) snapshot(t *testing.T, ns string) *gatewayapi.Input {
	var routes gatewayv1.HTTPRouteList
	var gws gatewayv1.GatewayList
	if err := e.cache.List(e.ctx, &routes, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := e.cache.List(e.ctx, &gws, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	in := &gatewayapi.Input{ControllerName: ours}
	for i := range routes.Items {
		in.HTTPRoutes = append(in.HTTPRoutes, &routes.Items[i])
	}
	for i := range gws.Items {
		in.Gateways = append(in.Gateways, &gws.Items[i])
	}
	var sets gatewayv1.ListenerSetList
	if err := e.cache.List(e.ctx, &sets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range sets.Items {
		in.ListenerSets = append(in.ListenerSets, &sets.Items[i])
	}
	return in
}

// acceptedBy is the desired status a translation hands over for a route
// attached to Gateway "gw", with msg as the Accepted message.
func acceptedBy(msg string) []gatewayv1.RouteParentStatus {
	return []gatewayv1.RouteParentStatus{{
		ParentRef: gatewayv1.ParentReference{Name: "gw"},
		Conditions: []metav1.Condition{{
			Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
			Reason: string(gatewayv1.RouteReasonAccepted), Message: msg, ObservedGeneration: 1,
		}},
	}}
}

func output(routes map[types.NamespacedName][]gatewayv1.RouteParentStatus) *gatewayapi.Output {
	return &gatewayapi.Output{
		GatewayClasses:  map[string]gatewayv1.GatewayClassStatus{},
		GatewayStatus:   map[types.NamespacedName]gatewayv1.GatewayStatus{},
		HTTPRouteStatus: gatewayapi.RouteStatusesOf(routes),
	}
}

const (
	ours   = "shardgate.io/gateway-controller"
	theirs = "example.com/other-controller"
)

// writes reads shardgate_status_writes_total{kind} from the registry the
// controller's metrics endpoint serves.
func writes(kind status.Kind) int {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shardgate_status_writes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == string(kind) {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

// parents reads route key's status.parents from the apiserver.
func (e *writerEnv) parents(key types.NamespacedName) func() ([]gatewayv1.RouteParentStatus, error) {
	return func() ([]gatewayv1.RouteParentStatus, error) {
		var r gatewayv1.HTTPRoute
		err := e.api.Get(e.ctx, key, &r)
		return r.Status.Parents, err
	}
}

func ourMessage(parents []gatewayv1.RouteParentStatus) string {
	for _, p := range parents {
		if p.ControllerName == ours && len(p.Conditions) > 0 {
			return p.Conditions[0].Message
		}
	}
	return ""
}

// quietly is how long a test watches for writes that must not happen.
const quietly = 2 * time.Second

func TestWriter(t *testing.T) {
	e := startWriterEnv(t)

	t.Run("many submits before a worker runs become one write per object", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "coalesce")
		keys := e.routes(t, ns, 10)
		w := e.writer(t, e.cachedClient(t))
		before := writes(status.KindHTTPRoute)
		for round := range 20 {
			desired := map[types.NamespacedName][]gatewayv1.RouteParentStatus{}
			for _, k := range keys {
				desired[k] = acceptedBy(fmt.Sprintf("round %d", round))
			}
			w.Submit(e.snapshot(t, ns), output(desired))
		}
		e.start(t, w)
		for _, k := range keys {
			g.Eventually(e.parents(k)).WithTimeout(30*time.Second).Should(WithTransform(ourMessage, Equal("round 19")), "route %s", k)
		}
		g.Consistently(func() int { return writes(status.KindHTTPRoute) - before }).WithTimeout(quietly).Should(Equal(len(keys)),
			"20 submits of 10 routes must give one write per route")
	})

	t.Run("an idle writer holds no goroutine", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "idle")
		keys := e.routes(t, ns, 40)
		w := e.writer(t, e.cachedClient(t))
		e.start(t, w)
		for _, msg := range []string{"first", "second"} {
			desired := map[types.NamespacedName][]gatewayv1.RouteParentStatus{}
			for _, k := range keys {
				desired[k] = acceptedBy(msg)
			}
			w.Submit(e.snapshot(t, ns), output(desired))
			for _, k := range keys {
				g.Eventually(e.parents(k)).WithTimeout(30*time.Second).Should(WithTransform(ourMessage, Equal(msg)), "route %s", k)
			}
			g.Eventually(status.WriteGoroutines).WithTimeout(30*time.Second).Should(BeZero(), "write goroutines after the %s writes", msg)
		}
	})

	t.Run("writes only what changed", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "on-change")
		a, b := e.route(t, ns, "a"), e.route(t, ns, "b")
		w := e.writer(t, e.cachedClient(t))
		e.start(t, w)
		before := writes(status.KindHTTPRoute)
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{a: acceptedBy("one"), b: acceptedBy("one")}))
		g.Eventually(e.parents(a)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("one")))
		g.Eventually(e.parents(b)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("one")))
		e.cached(t, a, func(r *gatewayv1.HTTPRoute) bool { return ourMessage(r.Status.Parents) == "one" })
		e.cached(t, b, func(r *gatewayv1.HTTPRoute) bool { return ourMessage(r.Status.Parents) == "one" })
		g.Expect(writes(status.KindHTTPRoute) - before).To(Equal(2))

		// The same content again, in new slices, and an update that
		// touches no status: nothing to write.
		for range 5 {
			w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{a: acceptedBy("one"), b: acceptedBy("one")}))
		}
		var r gatewayv1.HTTPRoute
		g.Expect(e.api.Get(e.ctx, a, &r)).To(Succeed())
		r.Labels = map[string]string{"touched": "yes"}
		g.Expect(e.api.Update(e.ctx, &r)).To(Succeed())
		e.cached(t, a, func(r *gatewayv1.HTTPRoute) bool { return r.Labels["touched"] == "yes" })
		g.Consistently(func() int { return writes(status.KindHTTPRoute) - before }).WithTimeout(quietly).Should(Equal(2),
			"unchanged desired status must not be written again")

		// One route changes: one write, to that route only.
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{a: acceptedBy("one"), b: acceptedBy("two")}))
		g.Eventually(e.parents(b)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("two")))
		g.Consistently(func() int { return writes(status.KindHTTPRoute) - before }).WithTimeout(quietly).Should(Equal(3))
		g.Expect(e.parents(a)()).To(WithTransform(ourMessage, Equal("one")))
	})

	t.Run("Gateway status is written once per change", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "gateway")
		gw := &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
			}}},
		}
		g.Expect(e.api.Create(e.ctx, gw)).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: "gw"}
		g.Eventually(func() error { return e.cache.Get(e.ctx, key, &gatewayv1.Gateway{}) }).WithTimeout(30 * time.Second).Should(Succeed())
		w := e.writer(t, e.cachedClient(t))
		e.start(t, w)
		desired := func(attached int32) *gatewayapi.Output {
			out := output(nil)
			out.GatewayStatus[key] = gatewayv1.GatewayStatus{
				Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1}},
				Listeners: []gatewayv1.ListenerStatus{{
					Name: "http", AttachedRoutes: attached, SupportedKinds: []gatewayv1.RouteGroupKind{{Kind: "HTTPRoute"}},
					Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", ObservedGeneration: 1}},
				}},
			}
			return out
		}
		attached := func() (int32, error) {
			var gw gatewayv1.Gateway
			if err := e.api.Get(e.ctx, key, &gw); err != nil || len(gw.Status.Listeners) == 0 {
				return -1, err
			}
			return gw.Status.Listeners[0].AttachedRoutes, nil
		}
		before := writes(status.KindGateway)
		// A burst of batches, each with one more route attached: the
		// Gateway's write window folds them.
		for n := range int32(10) {
			w.Submit(e.snapshot(t, ns), desired(n+1))
		}
		g.Eventually(attached).WithTimeout(30 * time.Second).Should(Equal(int32(10)))
		g.Eventually(func() (int32, error) {
			var gw gatewayv1.Gateway
			err := e.cache.Get(e.ctx, key, &gw)
			if err != nil || len(gw.Status.Listeners) == 0 {
				return -1, err
			}
			return gw.Status.Listeners[0].AttachedRoutes, nil
		}).WithTimeout(30 * time.Second).Should(Equal(int32(10)))
		n := writes(status.KindGateway) - before
		g.Expect(n).To(BeNumerically("<", 10), "ten batches inside one write window must not give ten writes")
		for range 5 {
			w.Submit(e.snapshot(t, ns), desired(10))
		}
		g.Consistently(func() int { return writes(status.KindGateway) - before }).WithTimeout(quietly).Should(Equal(n))
	})

	t.Run("ListenerSet status is written only on change", func(t *testing.T) { listenerSetOnChange(t, e) })
	t.Run("a ListenerSet status conflict is retried", func(t *testing.T) { listenerSetConflict(t, e) })

	t.Run("a conflict is retried against the apiserver", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "conflict")
		key := e.route(t, ns, "r")
		// Another writer changes the route between our read and our
		// update, once: the apiserver answers 409 Conflict.
		var raced atomic.Bool
		c := interceptor.NewClient(e.cachedClient(t), interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if !raced.Swap(true) {
					var r gatewayv1.HTTPRoute
					if err := e.api.Get(ctx, key, &r); err != nil {
						return err
					}
					r.Labels = map[string]string{"raced": "yes"}
					if err := e.api.Update(ctx, &r); err != nil {
						return err
					}
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		})
		w := e.writer(t, c)
		e.start(t, w)
		before := writes(status.KindHTTPRoute)
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{key: acceptedBy("after a conflict")}))
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("after a conflict")))
		g.Expect(raced.Load()).To(BeTrue())
		var r gatewayv1.HTTPRoute
		g.Expect(e.api.Get(e.ctx, key, &r)).To(Succeed())
		g.Expect(r.Labels).To(HaveKeyWithValue("raced", "yes"), "the other writer's change must stay")
		g.Consistently(func() int { return writes(status.KindHTTPRoute) - before }).WithTimeout(quietly).Should(Equal(2),
			"one refused write and one retry")
	})

	t.Run("a route shardgate is deleting is written only once it is no longer being deleted, or waited the most", func(t *testing.T) {
		// Routes shardgate deletes: those of LeaseHosts that hold no name
		// (Retiring) and those whose LeaseHost is gone.
		g := NewWithT(t)
		const delay, most = 8 * time.Second, 16 * time.Second
		status.SetRetiringHold(t, delay, most)
		ns := e.namespace(t, "retiring")
		plain := e.route(t, ns, "plain")
		gone := e.controlledRoute(t, ns, "gone", "uid-gone")
		// Still being deleted after every delay (its LeaseHost's
		// controller has not reached it): written when it waited the most.
		stays := e.controlledRoute(t, ns, "stays", "uid-stays")
		// Its LeaseHost holds a name again before the delay is out.
		revived := e.controlledRoute(t, ns, "revived", "uid-revived")
		// Controlled by another LeaseHost than the one Retiring names,
		// which was not deleted either (a UID no LeaseHost had, as a
		// tenant's forged ownerReference has): not retiring.
		other := e.controlledRoute(t, ns, "other", "uid-tenant")
		// Controlled by a LeaseHost that was deleted (a lease closed).
		closed := e.controlledRoute(t, ns, "closed", "uid-closed")
		var mu sync.Mutex
		sent := map[string]int{}
		c := interceptor.NewClient(e.cachedClient(t), interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				mu.Lock()
				sent[obj.GetName()]++
				mu.Unlock()
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		})
		sentTo := func(name string) func() int {
			return func() int { mu.Lock(); defer mu.Unlock(); return sent[name] }
		}
		w := e.writer(t, c)
		e.start(t, w)
		in := e.snapshot(t, ns)
		in.Ownership = &gatewayapi.Ownership{
			Retiring: map[types.NamespacedName]types.UID{
				gone: "uid-gone", stays: "uid-stays", other: "uid-leasehost", revived: "uid-revived"},
			Deleted: map[types.UID]bool{"uid-closed": true},
		}
		desired := map[types.NamespacedName][]gatewayv1.RouteParentStatus{}
		for _, k := range []types.NamespacedName{plain, gone, stays, other, closed, revived} {
			desired[k] = acceptedBy("refused")
		}
		submitted := time.Now()
		w.Submit(in, output(desired))
		g.Consistently(sentTo("revived")).WithTimeout(quietly).Should(BeZero(), "a route being deleted was written at once")
		next := e.snapshot(t, ns)
		next.Ownership = &gatewayapi.Ownership{
			Retiring: map[types.NamespacedName]types.UID{gone: "uid-gone", stays: "uid-stays", other: "uid-leasehost"},
			Deleted:  map[types.UID]bool{"uid-closed": true},
		}
		w.Submit(next, output(desired))
		g.Eventually(e.parents(revived)).WithTimeout(30*time.Second).Should(WithTransform(ourMessage, Equal("refused")), "the revived route")
		g.Expect(time.Since(submitted)).To(BeNumerically("<", delay), "a route no longer being deleted must not wait out the delay")
		for _, k := range []types.NamespacedName{gone, closed} {
			g.Expect(e.api.Delete(e.ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: k.Name}})).To(Succeed())
		}
		g.Eventually(func() bool {
			return apierrors.IsNotFound(e.cache.Get(e.ctx, gone, &gatewayv1.HTTPRoute{})) &&
				apierrors.IsNotFound(e.cache.Get(e.ctx, closed, &gatewayv1.HTTPRoute{}))
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		deletionSeen := time.Since(submitted)

		for _, k := range []types.NamespacedName{plain, other, stays} {
			g.Eventually(e.parents(k)).WithTimeout(most+30*time.Second).Should(WithTransform(ourMessage, Equal("refused")), "route %s", k)
		}
		g.Expect(time.Since(submitted)).To(BeNumerically(">=", most), "a route still being deleted must wait the most")
		// The others did not wait: each was written well before the delay
		// ran out (the transition time is the write's, in whole seconds).
		for _, k := range []types.NamespacedName{plain, other} {
			var r gatewayv1.HTTPRoute
			g.Expect(e.api.Get(e.ctx, k, &r)).To(Succeed())
			g.Expect(r.Status.Parents).NotTo(BeEmpty())
			g.Expect(r.Status.Parents[0].Conditions[0].LastTransitionTime.Time).To(BeTemporally("<", submitted.Add(delay/2)),
				"route %s is not being deleted: its write must not wait", k)
		}
		if deletionSeen >= delay {
			t.Logf("the deletion reached the cache only after %s, past the %s delay: whether the deleted route's write was skipped is not judged", deletionSeen, delay)
			return
		}
		g.Consistently(func() int { return sentTo("gone")() + sentTo("closed")() }).WithTimeout(quietly).Should(BeZero(),
			"a route deleted within the delay must not be written")
		g.Expect(sentTo("stays")()).To(Equal(1))
	})

	t.Run("another controller's entries are never touched", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "others")
		key := e.route(t, ns, "r")
		theirEntry := func(msg string) gatewayv1.RouteParentStatus {
			return gatewayv1.RouteParentStatus{
				ParentRef: gatewayv1.ParentReference{
					Group: ptr(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr(gatewayv1.Kind("Gateway")),
					Name: "their-gw", SectionName: ptr(gatewayv1.SectionName("web")),
				},
				ControllerName: theirs,
				Conditions: []metav1.Condition{{
					Type: "Accepted", Status: metav1.ConditionFalse, Reason: "TheirReason", Message: msg,
					LastTransitionTime: metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)),
				}, {
					Type: "example.com/Custom", Status: metav1.ConditionUnknown, Reason: "Pending",
					LastTransitionTime: metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)),
				}},
			}
		}
		setTheirs := func(msg string) {
			g.Eventually(func() error {
				var r gatewayv1.HTTPRoute
				if err := e.api.Get(e.ctx, key, &r); err != nil {
					return err
				}
				var kept []gatewayv1.RouteParentStatus
				for _, p := range r.Status.Parents {
					if p.ControllerName != theirs {
						kept = append(kept, p)
					}
				}
				r.Status.Parents = append(kept, theirEntry(msg))
				return e.api.Status().Update(e.ctx, &r)
			}).WithTimeout(30 * time.Second).Should(Succeed())
		}
		theirsIn := func(parents []gatewayv1.RouteParentStatus) *gatewayv1.RouteParentStatus {
			for i := range parents {
				if parents[i].ControllerName == theirs {
					return &parents[i]
				}
			}
			return nil
		}
		setTheirs("first")
		e.cached(t, key, func(r *gatewayv1.HTTPRoute) bool { return theirsIn(r.Status.Parents) != nil })

		w := e.writer(t, e.cachedClient(t))
		e.start(t, w)
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{key: acceptedBy("ours")}))
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("ours")))
		got, err := e.parents(key)()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(2))
		want := theirEntry("first")
		g.Expect(equality.Semantic.DeepEqual(*theirsIn(got), want)).To(BeTrue(), "their entry changed: %+v", theirsIn(got))

		// They change their entry: it is theirs, nothing for us to write.
		before := writes(status.KindHTTPRoute)
		setTheirs("second")
		e.cached(t, key, func(r *gatewayv1.HTTPRoute) bool {
			p := theirsIn(r.Status.Parents)
			return p != nil && p.Conditions[0].Message == "second"
		})
		g.Consistently(func() int { return writes(status.KindHTTPRoute) - before }).WithTimeout(quietly).Should(Equal(0))

		// The route is no longer ours: our entry goes, theirs stays.
		w.Submit(e.snapshot(t, ns), output(nil))
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(HaveLen(1))
		got, err = e.parents(key)()
		g.Expect(err).NotTo(HaveOccurred())
		want = theirEntry("second")
		g.Expect(equality.Semantic.DeepEqual(got[0], want)).To(BeTrue(), "their entry changed: %+v", got[0])
	})

	t.Run("a status-only update that undoes ours is restored once", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "recheck")
		key := e.route(t, ns, "r")
		w := e.writer(t, e.cachedClient(t))
		e.start(t, w)
		before := writes(status.KindHTTPRoute)
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{key: acceptedBy("ours")}))
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("ours")))

		tamper(g, e, key, "overwritten")
		// No new translation: the informer's update alone brings it back.
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("ours")))
		g.Consistently(func() int { return writes(status.KindHTTPRoute) - before }).WithTimeout(quietly).Should(Equal(2),
			"one write, one restore, and our own write landing must not cause another")
	})

	t.Run("a controller that keeps overwriting ours is answered ever more slowly", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace(t, "fight")
		key := e.route(t, ns, "r")
		w := e.writer(t, e.cachedClient(t))
		e.start(t, w)
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{key: acceptedBy("ours")}))
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("ours")))

		// First overwrite: restored at once. Second: after status.RestoreBackoff.
		tamper(g, e, key, "fight 1")
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("ours")))
		tamper(g, e, key, "fight 2")
		tampered := time.Now()
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("ours")))
		g.Expect(time.Since(tampered)).To(BeNumerically(">=", status.RestoreBackoff), "the second restore must wait")

		// Third: it waits twice as long; a new translation that changes
		// the desired status answers at once.
		tamper(g, e, key, "fight 3")
		g.Consistently(e.parents(key)).WithTimeout(status.RestoreBackoff).Should(WithTransform(ourMessage, Equal("fight 3")))
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{key: acceptedBy("new desired")}))
		g.Eventually(e.parents(key)).WithTimeout(status.RestoreBackoff).Should(WithTransform(ourMessage, Equal("new desired")))
	})

	t.Run("an overwrite that lands while our write is in flight counts as a fight", func(t *testing.T) {
		// Another controller answers each of our writes at once: its
		// overwrite lands, and reaches the writer's event handler, before
		// our write's answer does. This is the order a loaded machine
		// gives at random; here every write of ours is held until the
		// handler has taken the overwrite.
		g := NewWithT(t)
		ns := e.namespace(t, "fight-in-flight")
		key := e.route(t, ns, "r")
		handled := make(chan string, 64) // versions the handler took, after RecheckUpdate
		var (
			mu       sync.Mutex
			ourWrite []time.Time // when each of our writes of key was sent
			tampered []time.Time // when each overwrite landed
			failure  error
		)
		const fights = 2
		c := interceptor.NewClient(e.cachedClient(t), interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if obj.GetNamespace() != key.Namespace {
					return c.SubResource(sub).Update(ctx, obj, opts...)
				}
				mu.Lock()
				ourWrite = append(ourWrite, time.Now())
				n := len(ourWrite)
				mu.Unlock()
				if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil || n > fights {
					return err
				}
				rv, err := overwrite(e, key, fmt.Sprintf("fight %d", n))
				mu.Lock()
				tampered = append(tampered, time.Now())
				mu.Unlock()
				if err == nil {
					err = waitFor(handled, rv, 30*time.Second)
				}
				if err != nil {
					mu.Lock()
					failure = err
					mu.Unlock()
				}
				return nil
			},
		})
		w := e.writer(t, c, func(o client.Object) {
			if o.GetNamespace() == key.Namespace {
				select {
				case handled <- o.GetResourceVersion():
				default: // nobody waits: the fights are over
				}
			}
		})
		e.start(t, w)
		w.Submit(e.snapshot(t, ns), output(map[types.NamespacedName][]gatewayv1.RouteParentStatus{key: acceptedBy("ours")}))

		// Our write, overwritten (fight 1); the restore, overwritten
		// (fight 2); the second restore, after the back-off.
		g.Eventually(func() int { mu.Lock(); defer mu.Unlock(); return len(ourWrite) }).WithTimeout(30 * time.Second).Should(Equal(fights + 1))
		g.Eventually(e.parents(key)).WithTimeout(30 * time.Second).Should(WithTransform(ourMessage, Equal("ours")))
		mu.Lock()
		defer mu.Unlock()
		g.Expect(failure).NotTo(HaveOccurred())
		g.Expect(tampered).To(HaveLen(fights))
		g.Expect(ourWrite[fights].Sub(tampered[fights-1])).To(BeNumerically(">=", status.RestoreBackoff),
			"the second restore must wait: the first overwrite, which landed during our write, is a fight")
	})
}

// overwrite changes our Accepted message on route key once, as another
// controller would, and returns the version it made.
func overwrite(e *writerEnv, key types.NamespacedName, msg string) (string, error) {
	var r gatewayv1.HTTPRoute
	if err := e.api.Get(e.ctx, key, &r); err != nil {
		return "", err
	}
	for i := range r.Status.Parents {
		if r.Status.Parents[i].ControllerName == ours {
			r.Status.Parents[i].Conditions[0].Message = msg
		}
	}
	err := e.api.Status().Update(e.ctx, &r)
	return r.ResourceVersion, err
}

// waitFor reads versions from handled until it reads rv.
func waitFor(handled <-chan string, rv string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		select {
		case got := <-handled:
			if got == rv {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("the event handler did not take version %s in %s", rv, timeout)
		}
	}
}

// tamper overwrites our Accepted message on route key, as another
// controller would, retrying until the apiserver takes it.
func tamper(g Gomega, e *writerEnv, key types.NamespacedName, msg string) {
	g.Eventually(func() error {
		_, err := overwrite(e, key, msg)
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func ptr[T any](v T) *T { return &v }
