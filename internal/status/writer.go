package status

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// Kind is a kind of object whose status the writer owns.
type Kind string

const (
	KindGatewayClass Kind = "GatewayClass"
	KindGateway      Kind = "Gateway"
	KindListenerSet  Kind = "ListenerSet"
	// The route kinds are gatewayapi.RouteKinds; these name them.
	KindHTTPRoute Kind = "HTTPRoute"
	KindGRPCRoute Kind = "GRPCRoute"
	KindTLSRoute  Kind = "TLSRoute"
	KindTCPRoute  Kind = "TCPRoute"
	// KindBackendTLSPolicy: only our status.ancestors entries are written.
	KindBackendTLSPolicy Kind = "BackendTLSPolicy"
)

// routeKinds are the kinds of route the translator serves.
var routeKinds = gatewayapi.RouteKinds()

// Key names one object.
type Key struct {
	Kind Kind
	types.NamespacedName
}

var writesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shardgate_status_writes_total",
	Help: "Status writes sent to the apiserver, by kind (retries after a conflict count again).",
}, []string{"kind"})

func init() { ctrlmetrics.Registry.MustRegister(writesTotal) }

// Writer writes desired status. Submit may be called on any replica; the
// writing itself (Start) runs on the leader only.
type Writer struct {
	client         client.Client // cached reads and writes
	reader         client.Reader // uncached reads after a conflict
	controllerName string
	log            logr.Logger
	workers        int
	now            func() time.Time

	mu       sync.Mutex
	classes  map[string]gatewayv1.GatewayClassStatus
	gateways map[types.NamespacedName]gatewayv1.GatewayStatus
	// listenerSets: the ListenerSets whose parent is a Gateway of ours.
	listenerSets map[types.NamespacedName]gatewayv1.ListenerSetStatus
	// Desired route status by kind: the translation's own immutable maps.
	// A route absent from them has no entries of ours.
	// routes[i] is for routeKinds[i].
	routes []gatewayapi.RouteStatuses
	// policies: the desired ancestor entries of ours per BackendTLSPolicy.
	policies gatewayapi.PolicyStatuses
	// checked remembers, per route, the resourceVersion and the batch of
	// the last comparison: the same object version with a desired status
	// unchanged since then needs no comparison (a difference found then
	// was queued then). batch counts Submits; since records, per route,
	// the batch from which its desired status has been the same (the
	// translation's StatusChanged), and allSince the last batch in which
	// every route's may have changed.
	checked  map[Key]checkedRoute
	batch    uint64
	lastSeq  uint64
	since    map[Key]uint64
	allSince uint64
	// written is the resourceVersion each of our writes produced. A cached
	// object older than that is the cache lagging behind our own write,
	// not a status that needs writing again.
	written map[Key]uint64
	// writing holds the objects whose status write is in flight, each
	// with the versions of the updates that changed its status, and left
	// it differing from the desired one, during the flight. Each may be
	// our write landing before its answer, or someone else's: only the
	// write's answer tells (endWrite), which queues the object then, at
	// once for our own, after the fight's back-off for someone else's.
	writing map[Key][]string
	// publish: the xDS server's publish outcomes by Gateway (publish.go).
	publish map[types.NamespacedName]string
	// fights counts, per object, the times its status had to be restored
	// after someone else changed it while its desired status stayed the
	// same. Each restore after the first waits longer, so a controller
	// that insists on writing our entries is answered at a falling rate
	// instead of in a tight loop.
	fights map[Key]fight
	// submitted: a translation has been submitted, so desired status is
	// known.
	submitted bool
	// ownership is the last Submit's ownership facts, and retiringSince
	// when each route whose write waits for its deletion started waiting
	// (see retiringWriteDelay).
	ownership     *gatewayapi.Ownership
	retiringSince map[Key]time.Time
	// lastRoutes is when a Submit last queued a route: routes are still
	// arriving (see floodWriters).
	lastRoutes time.Time
	// burstHold: the translation's hold when it last said (BurstHold):
	// the next batch of a sustained burst comes that much later, and the
	// flood lasts until then.
	burstHold  time.Duration
	burstFrom  time.Time // when the burst began (BurstHold)
	floodSlots chan struct{}
	queue      workqueue.TypedRateLimitingInterface[Key]
}

const (
	// floodWriters is how many status writes may be in flight while
	// routes are still arriving (a Submit queued routes in the last
	// floodQuiet). During a flood of Creates the apiserver's writes are
	// what everyone waits for: one writer keeps the routes' status moving
	// without taking the apiserver from the Creates; when the flood stops,
	// every worker writes what is left. Measured with 1000 Creates from
	// 32 clients on 2 cores: with 4 writers and a 200 ms quiet, the
	// Creates took 1.60–1.73 times as long as with shardgate stopped;
	// with one writer and 50 ms, 1.14–1.28 times, and the statuses were
	// all written as soon after the last Create (about 1.8–1.9 s both
	// ways). Creates from a flood arrive milliseconds apart, so 50 ms of
	// quiet is its end.
	floodWriters = 1
	floodQuiet   = 50 * time.Millisecond
	// floodHold is how long, from the start of a sustained burst of
	// changes (BurstHold), status writes wait for it to end before
	// floodWriters of them go ahead: a route's status lags a flood of
	// Creates by a few seconds at most, and the Creates have the
	// apiserver to themselves meanwhile.
	floodHold = 5 * time.Second
)

// New returns a writer with 32 workers: status writes are apiserver
// round trips, and a burst of new routes should not queue behind each other.
func New(c client.Client, reader client.Reader, controllerName string, log logr.Logger) *Writer {
	return &Writer{
		client: c, reader: reader, controllerName: controllerName, log: log,
		workers: 32, now: time.Now,
		classes:  map[string]gatewayv1.GatewayClassStatus{},
		gateways: map[types.NamespacedName]gatewayv1.GatewayStatus{},

		listenerSets:  map[types.NamespacedName]gatewayv1.ListenerSetStatus{},
		checked:       map[Key]checkedRoute{},
		since:         map[Key]uint64{},
		written:       map[Key]uint64{},
		writing:       map[Key][]string{},
		fights:        map[Key]fight{},
		retiringSince: map[Key]time.Time{},
		floodSlots:    make(chan struct{}, floodWriters),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "status"}),
	}
}

// Submit records the desired status in out and queues every object of in
// whose status in in (the informer cache's view) differs from it. Of the
// routes it compares only those out says changed, when it can (see all
// below): a one-route change costs one comparison, not one per route. A queued
// object is written once however many batches change it before a worker
// gets to it, with the latest desired status.
func (w *Writer) Submit(in *gatewayapi.Input, out *gatewayapi.Output) {
	now := w.now()
	var dirty []Key
	w.mu.Lock()
	w.submitted = true
	w.forgiveFights(out)
	w.classes = out.GatewayClasses
	w.gateways = out.GatewayStatus
	w.listenerSets = out.ListenerSetStatus
	if w.routes == nil {
		w.routes = make([]gatewayapi.RouteStatuses, len(routeKinds))
	}
	for i, kind := range routeKinds {
		w.routes[i] = out.RouteStatus(kind)
	}
	w.policies = out.BackendTLSPolicyStatus
	w.ownership = in.Ownership
	w.batch++
	// Every route's desired status may have changed, or a translation was
	// missed: compare every route. Otherwise only the routes whose desired
	// status may differ from the last Submit's; a route whose status
	// someone else changed comes through Recheck.
	all := out.StatusAllChanged || out.Seq != w.lastSeq+1 || in.RouteByKey == nil
	if all {
		w.allSince = w.batch
		clear(w.since)
	} else {
		for _, k := range out.StatusChanged {
			w.since[Key{Kind: Kind(k.Kind), NamespacedName: k.NN}] = w.batch
		}
	}
	w.lastSeq = out.Seq
	for _, gc := range in.GatewayClasses {
		if k, ok := w.differs(gc, now, true); ok {
			dirty = append(dirty, k)
		}
	}
	for _, gw := range in.Gateways {
		if k, ok := w.differs(gw, now, true); ok {
			dirty = append(dirty, k)
		}
	}
	for _, p := range in.BackendTLSPolicies { // few: all compared
		if k, ok := w.differs(p, now, true); ok {
			dirty = append(dirty, k)
		}
	}
	for _, ls := range in.ListenerSets {
		if k, ok := w.differs(ls, now, true); ok {
			dirty = append(dirty, k)
		}
	}
	// retiring: the dirty routes shardgate is deleting (their writes
	// wait retiringWriteDelay; see there).
	var retiring map[Key]bool
	route := func(obj client.Object) {
		k, ok := w.differs(obj, now, true)
		if !ok {
			return
		}
		dirty = append(dirty, k)
		if k.Kind != KindHTTPRoute {
			return
		}
		if c := metav1.GetControllerOf(obj); c != nil && in.Ownership.RetiringRoute(k.NamespacedName, *c) {
			if retiring == nil {
				retiring = map[Key]bool{}
			}
			retiring[k] = true
			if _, ok := w.retiringSince[k]; !ok {
				w.retiringSince[k] = now
			}
		} else {
			delete(w.retiringSince, k) // a later deletion waits afresh
		}
	}
	if all {
		for i, n := 0, in.NumRoutes(); i < n; i++ {
			if _, r := in.RouteAt(i); r != nil {
				route(r)
			}
		}
		// A route that reached the store after in was listed but before
		// the translation is in out and not in in, and no later
		// translation names it changed: compare every route out has a
		// status for (those compared above are skipped as checked).
		if in.RouteByKey != nil {
			for _, kind := range routeKinds {
				for nn := range out.RouteStatus(kind).All() {
					if obj := in.RouteByKey(gatewayapi.RouteKey{Kind: kind, NN: nn}); obj != nil {
						route(obj)
					}
				}
			}
		}
	} else {
		for _, rk := range out.StatusChanged {
			obj := in.RouteByKey(rk)
			if obj == nil {
				continue // deleted
			}
			route(obj)
		}
	}
	if routes := in.NumRoutes(); len(w.written) > 2*routes+64 || len(w.checked) > routes+64 {
		w.forgetGone(in)
	}
	delays := w.restoreDelays(dirty, false)
	if len(retiring) > 0 {
		if delays == nil {
			delays = make([]time.Duration, len(dirty))
		}
		for i, k := range dirty {
			if retiring[k] {
				delays[i] = max(delays[i], retiringWriteDelay)
			}
		}
	}
	for _, k := range dirty {
		if k.Kind != KindGateway && k.Kind != KindGatewayClass && k.Kind != KindListenerSet {
			w.lastRoutes = now
			break
		}
	}
	w.mu.Unlock()
	w.enqueue(dirty, delays)
}

// BurstHold says that the translations are those of a sustained burst
// that began at since, the next one due hold after the last
// (internal/translatelimit's Hold; zero: no burst). Routes are still
// arriving until then, so the writes stay those of a flood (floodWriters).
func (w *Writer) BurstHold(hold time.Duration, since time.Time) {
	w.mu.Lock()
	w.burstHold, w.burstFrom = hold, since
	w.mu.Unlock()
}

// fight is how often, and when last, an object's status was restored.
type fight struct {
	n    int
	last time.Time
}

const (
	// restoreBackoff is the wait before the second restore of an
	// object's status; each further restore waits twice as long, up to
	// maxRestoreBackoff.
	restoreBackoff    = time.Second
	maxRestoreBackoff = 5 * time.Minute
	// fightMemory: an object whose status was left alone this long is
	// restored at once again.
	fightMemory = 10 * time.Minute
)

// restoreDelays returns, for each key, how long its write waits because of
// earlier restores (zero for most). restoring counts this as a restore.
// Call with w.mu held.
func (w *Writer) restoreDelays(keys []Key, restoring bool) []time.Duration {
	var out []time.Duration
	now := w.now()
	for i, k := range keys {
		f, ok := w.fights[k]
		if ok && now.Sub(f.last) > fightMemory {
			f, ok = fight{}, false
		}
		if !ok && !restoring {
			continue
		}
		var d time.Duration
		if f.n > 0 {
			d = min(restoreBackoff<<min(f.n-1, 20), maxRestoreBackoff)
		}
		if restoring {
			f.n++
			f.last = now
			w.fights[k] = f
		}
		if d > 0 {
			if out == nil {
				out = make([]time.Duration, len(keys))
			}
			out[i] = d
		}
	}
	return out
}

// forgiveFights forgets the restores of objects whose desired status out
// changes: a new desired status is a new question, answered at once. Call
// with w.mu held, before out replaces the current desired status.
func (w *Writer) forgiveFights(out *gatewayapi.Output) {
	for k := range w.fights {
		var same bool
		switch k.Kind {
		case KindGatewayClass:
			a, okA := w.classes[k.Name]
			b, okB := out.GatewayClasses[k.Name]
			same = okA == okB && equality.Semantic.DeepEqual(a, b)
		case KindGateway:
			a, okA := w.gateways[k.NamespacedName]
			b, okB := out.GatewayStatus[k.NamespacedName]
			same = okA == okB && equality.Semantic.DeepEqual(a, b)
		case KindBackendTLSPolicy:
			same = equality.Semantic.DeepEqual(w.policies[k.NamespacedName], out.BackendTLSPolicyStatus[k.NamespacedName])
		case KindListenerSet:
			a, okA := w.listenerSets[k.NamespacedName]
			b, okB := out.ListenerSetStatus[k.NamespacedName]
			same = okA == okB && equality.Semantic.DeepEqual(a, b)
		default:
			next := out.RouteStatus(string(k.Kind)).At(k.NamespacedName)
			same = equality.Semantic.DeepEqual(w.desiredRoute(k), next)
		}
		if !same {
			delete(w.fights, k)
		}
	}
}

// forgetGone drops what the writer remembers of objects no longer in the
// snapshot. Call with w.mu held.
func (w *Writer) forgetGone(in *gatewayapi.Input) {
	live := make(map[Key]bool, in.NumRoutes()+len(in.Gateways)+len(in.GatewayClasses))
	for _, o := range in.GatewayClasses {
		live[Key{Kind: KindGatewayClass, NamespacedName: types.NamespacedName{Name: o.Name}}] = true
	}
	for _, o := range in.Gateways {
		live[Key{Kind: KindGateway, NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}}] = true
	}
	for _, o := range in.ListenerSets {
		live[Key{Kind: KindListenerSet, NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}}] = true
	}
	in.EachRoute(func(kind string, o gatewayapi.Object) {
		live[Key{Kind: Kind(kind), NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}] = true
	})
	for _, o := range in.BackendTLSPolicies {
		live[Key{Kind: KindBackendTLSPolicy, NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}}] = true
	}
	for k := range w.written {
		if !live[k] {
			delete(w.written, k)
		}
	}
	for k := range w.checked {
		if !live[k] {
			delete(w.checked, k)
		}
	}
	for k := range w.fights {
		if !live[k] {
			delete(w.fights, k)
		}
	}
	for k := range w.since {
		if !live[k] {
			delete(w.since, k)
		}
	}
	for k := range w.retiringSince {
		if !live[k] {
			delete(w.retiringSince, k)
		}
	}
}

// desiredRoute is the desired status.parents entries of ours for k.
func (w *Writer) desiredRoute(k Key) []gatewayv1.RouteParentStatus {
	for i, kind := range routeKinds {
		if Kind(kind) == k.Kind && i < len(w.routes) {
			return w.routes[i].At(k.NamespacedName)
		}
	}
	return nil
}

type checkedRoute struct {
	rv    string
	batch uint64
}

// Recheck compares one object's status, as an informer just delivered it,
// with the desired status of the last Submit, and queues a write if they
// differ. The controller calls it for status-only updates, which need no new
// translation: our own writes landing (no write follows), or another
// controller changing entries that are ours (we write them back, once).
// Without the previous version, a difference counts as a status change
// (see RecheckUpdate, which the controller's event handlers use).
func (w *Writer) Recheck(obj client.Object) { w.recheck(nil, obj) }

// RecheckUpdate is Recheck for an update from old to obj. Only an update
// that changed the status can be someone else undoing ours and count as
// a restore (see fights); one that left the status as it was (labels, an
// annotation, a resync) only queues a write if the status differs from
// the desired one, as a translation would.
func (w *Writer) RecheckUpdate(old, obj client.Object) { w.recheck(old, obj) }

// statusChanged reports whether obj's status differs from old's, the
// version before it (nil: not known, so it may have).
func statusChanged(old, obj client.Object) bool {
	if old == nil {
		return true
	}
	a, b := reflect.ValueOf(old), reflect.ValueOf(obj)
	if a.Kind() != reflect.Pointer || a.Type() != b.Type() {
		return true
	}
	sa, sb := a.Elem().FieldByName("Status"), b.Elem().FieldByName("Status")
	return !sa.IsValid() || !sb.IsValid() || !equality.Semantic.DeepEqual(sa.Interface(), sb.Interface())
}

// recheck is Recheck for an update from old (nil: not known) to obj.
func (w *Writer) recheck(old, obj client.Object) {
	w.mu.Lock()
	var (
		k      Key
		dirty  bool
		delays []time.Duration
	)
	if w.submitted { // before the first translation nothing is desired yet
		k, dirty = w.differs(obj, w.now(), false)
	}
	if dirty {
		changed := statusChanged(old, obj)
		if seen, flying := w.writing[k]; changed && flying {
			// Our write of k is in flight: this may be it landing, or
			// someone else's write landing before its answer. The answer
			// tells which, and queues k (endWrite).
			w.writing[k] = append(seen, obj.GetResourceVersion())
			w.mu.Unlock()
			return
		}
		// Our own write landing, after the desired status moved on, is
		// no fight: only a version someone else wrote counts as one.
		restoring := !w.ownWrite(k, obj.GetResourceVersion()) && changed
		delays = w.restoreDelays([]Key{k}, restoring)
	}
	w.mu.Unlock()
	if dirty {
		w.enqueue([]Key{k}, delays)
	}
}

// enqueue queues keys for writing; delays, when not nil, holds a least
// wait per key.
func (w *Writer) enqueue(keys []Key, delays []time.Duration) {
	for i, k := range keys {
		var d time.Duration
		if delays != nil {
			d = delays[i]
		}
		if k.Kind == KindGateway || k.Kind == KindGatewayClass || k.Kind == KindListenerSet {
			// attachedRoutes changes with every batch of a burst of
			// routes; the delaying queue keeps the first deadline, so a
			// Gateway is written at most once per window.
			d = max(d, GatewayWriteWindow)
		}
		if d > 0 {
			w.queue.AddAfter(k, d)
		} else {
			w.queue.Add(k)
		}
	}
}

// differs reports whether obj's status differs from its desired status, and
// the object's key. Objects with no desired status (not ours) and cached
// copies older than our last write of them never differ. Call with w.mu
// held.
func (w *Writer) differs(obj client.Object, now time.Time, submitting bool) (Key, bool) {
	var (
		k       Key
		changed bool
	)
	nn := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if kind, parents, ok := gatewayapi.RouteParents(obj); ok {
		k = Key{Kind: Kind(kind), NamespacedName: nn}
		return k, w.routeDiffers(k, obj, obj.GetResourceVersion(), *parents, now, submitting)
	}
	switch o := obj.(type) {
	case *gatewayv1.GatewayClass:
		k = Key{Kind: KindGatewayClass, NamespacedName: types.NamespacedName{Name: o.Name}}
		desired, ok := w.classes[o.Name]
		if !ok || w.behind(k, o.ResourceVersion) {
			return k, false
		}
		_, changed = MergeGatewayClass(o.Status, desired, now)
	case *gatewayv1.Gateway:
		k = Key{Kind: KindGateway, NamespacedName: nn}
		desired, ok := w.gateways[nn]
		if !ok || w.behind(k, o.ResourceVersion) {
			return k, false
		}
		_, changed = MergeGateway(o.Status, w.desiredGateway(nn, desired), now)
	case *gatewayv1.ListenerSet:
		k = Key{Kind: KindListenerSet, NamespacedName: nn}
		desired, ok := w.listenerSets[nn]
		if !ok || w.behind(k, o.ResourceVersion) {
			return k, false
		}
		_, changed = MergeListenerSet(o.Status, desired, now)
	case *gatewayv1.BackendTLSPolicy:
		k = Key{Kind: KindBackendTLSPolicy, NamespacedName: nn}
		changed = w.policyDiffers(k, o, now)
	}
	return k, changed
}

// routeDiffers: a route with no desired entries still differs when it
// carries stale entries of ours, which must be removed.
func (w *Writer) routeDiffers(k Key, obj client.Object, rv string, existing []gatewayv1.RouteParentStatus, now time.Time, submitting bool) bool {
	if c, ok := w.checked[k]; ok && rv != "" && c.rv == rv && c.batch >= w.allSince && c.batch >= w.since[k] {
		return false
	}
	d := w.desiredRoute(k)
	if d == nil && !submitting {
		// Not ours, or created after the last translation: the create
		// event brings a translation, which decides.
		return false
	}
	if w.behind(k, rv) {
		return false
	}
	_, changed := MergeParents(existing, d, w.controllerName, now)
	w.checked[k] = checkedRoute{rv: rv, batch: w.batch}
	return changed
}

// behind reports whether an object's resourceVersion rv is older than our
// last write of it. resourceVersions are etcd revisions on every real
// apiserver; one that does not parse as a number is never "behind", so the
// writer falls back to comparing content. Call with w.mu held.
func (w *Writer) behind(k Key, rv string) bool {
	last, ok := w.written[k]
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return err == nil && n < last
}

// ownWrite reports whether rv is the version our last write of k made.
// (An update during a write's flight waits for its answer: endWrite.)
// Call with w.mu held.
func (w *Writer) ownWrite(k Key, rv string) bool {
	last, ok := w.written[k]
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return err == nil && n == last
}

// recordWrite ends the flight of k's write, which made version rv.
func (w *Writer) recordWrite(k Key, rv string) { w.endWrite(k, rv, true) }

// endWrite ends the flight of k's write: ok, it made version rv; not ok,
// it failed and made none. The updates of k that differed from the
// desired status during the flight (writing) are judged now: one with
// another version than ours is someone else's status and counts as a
// restore, as it would have outside a flight; k is queued again, after
// the fight's back-off, since the status it carries, or the desired one
// that moved on, still needs writing.
func (w *Writer) endWrite(k Key, rv string, ok bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	w.mu.Lock()
	seen := w.writing[k]
	delete(w.writing, k)
	if ok && err == nil {
		w.written[k] = n
	}
	pending := len(seen) > 0
	var delays []time.Duration
	if pending {
		restoring := !ok || slices.ContainsFunc(seen, func(v string) bool { return v != rv })
		delays = w.restoreDelays([]Key{k}, restoring)
	}
	w.mu.Unlock()
	if pending {
		w.enqueue([]Key{k}, delays)
	}
}

// retiringWriteDelay is how long a status write waits for a route that
// shardgate is deleting (gatewayapi.Ownership.RetiringRoute: its
// LeaseHost lost its names, to a block-list entry for example, or was
// deleted). The route already serves nothing; its deletion usually lands
// first, and the write, which would cost the apiserver as much as the
// deletion, is then never sent. A route still there after the delay, and
// no longer being deleted, gets its status; one still being deleted waits
// again, for retiringHoldMax in all: a large revocation on a slow
// apiserver takes longer than one delay, and writing the statuses of the
// routes it has not reached yet would only slow it down more.
var (
	retiringWriteDelay = 30 * time.Second
	retiringHoldMax    = 2 * time.Minute
)

// stillRetiring reports how much longer the write of route k (obj, just
// read) waits: while the last ownership facts still say shardgate is
// deleting it and it has not waited retiringHoldMax. Otherwise it forgets
// the wait and reports 0.
func (w *Writer) stillRetiring(k Key, obj client.Object) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	since, ok := w.retiringSince[k]
	if !ok {
		return 0
	}
	left := retiringHoldMax - w.now().Sub(since)
	if c := metav1.GetControllerOf(obj); c != nil && left > 0 && w.ownership.RetiringRoute(k.NamespacedName, *c) {
		return min(retiringWriteDelay, left)
	}
	delete(w.retiringSince, k)
	return 0
}

// GatewayWriteWindow coalesces Gateway and GatewayClass status writes.
const GatewayWriteWindow = 50 * time.Millisecond

// Start writes until ctx ends, at most 32 writes at a time, each in a
// goroutine that exists only while it writes (see runWorkers), none
// during the first floodHold of a sustained burst (waitBurst).
func (w *Writer) Start(ctx context.Context) error {
	runWorkers(ctx, w.queue, w.workers, func() { w.waitBurst(ctx) }, func(k Key) { w.process(ctx, k) })
	return nil
}

// NeedLeaderElection: only the leader writes.
func (w *Writer) NeedLeaderElection() bool { return true }

// process writes k's status, and queues it again, rate limited, when that
// fails.
func (w *Writer) process(ctx context.Context, k Key) {
	if err := w.write(ctx, k); err != nil {
		w.log.V(1).Info("status write failed; retrying", "kind", k.Kind, "object", k.NamespacedName, "error", err.Error())
		w.queue.AddRateLimited(k)
		return
	}
	w.queue.Forget(k)
}

// write brings one object's status in line with its desired status. It reads
// the cache first and, after a conflict, the apiserver.
func (w *Writer) write(ctx context.Context, k Key) error {
	obj, merge := w.object(k)
	if obj == nil {
		return nil
	}
	var reader client.Reader = w.client
	for attempt := 0; attempt < 3; attempt++ {
		if err := reader.Get(ctx, k.NamespacedName, obj); err != nil {
			if apierrors.IsNotFound(err) {
				w.mu.Lock()
				delete(w.retiringSince, k)
				w.mu.Unlock()
				return nil
			}
			return fmt.Errorf("get %s %s: %w", k.Kind, k.NamespacedName, err)
		}
		w.mu.Lock()
		stale := w.behind(k, obj.GetResourceVersion())
		w.mu.Unlock()
		if stale && reader != w.reader {
			// The cache has not seen our last write yet: read the
			// apiserver rather than send an update bound to conflict.
			reader = w.reader
			continue
		}
		if k.Kind == KindHTTPRoute {
			if d := w.stillRetiring(k, obj); d > 0 {
				w.queue.AddAfter(k, d)
				return nil
			}
		}
		if !merge(w.now()) {
			return nil
		}
		release := w.floodSlot(ctx)
		writesTotal.WithLabelValues(string(k.Kind)).Inc()
		w.mu.Lock()
		w.writing[k] = nil // in flight, no update seen yet
		w.mu.Unlock()
		err := w.client.Status().Update(ctx, obj)
		release()
		if err == nil {
			w.recordWrite(k, obj.GetResourceVersion())
			return nil
		}
		w.endWrite(k, "", false)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("write status of %s %s: %w", k.Kind, k.NamespacedName, err)
		}
		reader = w.reader
	}
	return fmt.Errorf("write status of %s %s: conflicts persisted", k.Kind, k.NamespacedName)
}

// waitBurst waits while the translations say a sustained burst
// (BurstHold) that began less than floodHold ago, until its end (see
// floodWait). The writer waits here before it takes the next object from
// its queue (runWorkers' gate): the queued objects wait there, one entry
// each however often the burst changes them, with no goroutine each, and
// each is read and written with its desired status of when the burst
// ended.
func (w *Writer) waitBurst(ctx context.Context) {
	for {
		wait, _ := w.floodWait()
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// floodSlot waits, while routes are still arriving, for one of the
// floodWriters slots, and returns its release.
func (w *Writer) floodSlot(ctx context.Context) func() {
	if wait, slot := w.floodWait(); wait <= 0 && !slot {
		return func() {}
	}
	select {
	case w.floodSlots <- struct{}{}:
		return func() { <-w.floodSlots }
	case <-ctx.Done():
		return func() {}
	}
}

// floodWait says what a write does now: go ahead (zero, false), take one
// of the floodWriters slots first (zero, true: routes are still
// arriving), or look again after wait (waitBurst). It waits while a
// sustained burst (BurstHold) is under way and began less than floodHold
// ago: the apiserver's writes then go to the Creates, and the statuses
// follow them when the burst ends (or trickle, one writer at a time, once
// it has lasted floodHold).
func (w *Writer) floodWait() (wait time.Duration, slot bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	end := w.lastRoutes.Add(floodQuiet + w.burstHold)
	if !now.Before(end) {
		return 0, false
	}
	held := w.burstFrom.Add(floodHold)
	if w.burstHold <= 0 || !now.Before(held) {
		return 0, true
	}
	if held.Before(end) {
		end = held
	}
	return end.Sub(now), false
}

// object returns an empty object of k's kind and a function that merges the
// desired status into it, reporting whether anything changed. It returns nil
// when there is no desired status for k any more.
func (w *Writer) object(k Key) (client.Object, func(time.Time) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch k.Kind {
	case KindGatewayClass:
		desired, ok := w.classes[k.Name]
		if !ok {
			return nil, nil
		}
		gc := &gatewayv1.GatewayClass{}
		return gc, func(now time.Time) (changed bool) {
			gc.Status, changed = MergeGatewayClass(gc.Status, desired, now)
			return changed
		}
	case KindGateway:
		desired, ok := w.gateways[k.NamespacedName]
		if !ok {
			return nil, nil
		}
		desired = w.desiredGateway(k.NamespacedName, desired)
		gw := &gatewayv1.Gateway{}
		return gw, func(now time.Time) (changed bool) {
			gw.Status, changed = MergeGateway(gw.Status, desired, now)
			return changed
		}
	case KindListenerSet:
		desired, ok := w.listenerSets[k.NamespacedName]
		if !ok {
			return nil, nil
		}
		ls := &gatewayv1.ListenerSet{}
		return ls, func(now time.Time) (changed bool) {
			ls.Status, changed = MergeListenerSet(ls.Status, desired, now)
			return changed
		}
	}
	if k.Kind == KindBackendTLSPolicy {
		return w.policyObject(k)
	}
	desired := w.desiredRoute(k)
	obj := gatewayapi.NewRoute(string(k.Kind))
	if obj == nil {
		return nil, nil
	}
	_, parents, _ := gatewayapi.RouteParents(obj)
	return obj, func(now time.Time) (changed bool) {
		*parents, changed = MergeParents(*parents, desired, w.controllerName, now)
		if *parents == nil {
			*parents = []gatewayv1.RouteParentStatus{}
		}
		return changed
	}
}
