package fanout_test

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/internal/fanout"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/testwait"
)

// recorder is a handler that keeps, per ConfigMap name, its last seen
// data, as a controller's view of the kind.
type recorder struct {
	mu      sync.Mutex
	live    map[string]string // name → data["v"]
	initial map[string]bool   // adds given as the initial list
	busy    atomic.Bool       // set while a call is under way: calls must not overlap
	overlap atomic.Bool
}

func newRecorder() *recorder {
	return &recorder{live: map[string]string{}, initial: map[string]bool{}}
}

func (r *recorder) enter() {
	if !r.busy.CompareAndSwap(false, true) {
		r.overlap.Store(true)
	}
	r.mu.Lock()
}

func (r *recorder) leave() { r.mu.Unlock(); r.busy.Store(false) }

func (r *recorder) OnAdd(obj any, initial bool) {
	r.enter()
	defer r.leave()
	cm := obj.(*corev1.ConfigMap)
	if cm.Namespace != ns {
		return
	}
	r.live[cm.Name] = cm.Data["v"]
	if initial {
		r.initial[cm.Name] = true
	}
}

func (r *recorder) OnUpdate(_, obj any) {
	r.enter()
	defer r.leave()
	if cm := obj.(*corev1.ConfigMap); cm.Namespace == ns {
		r.live[cm.Name] = cm.Data["v"]
	}
}

func (r *recorder) OnDelete(obj any) {
	r.enter()
	defer r.leave()
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if cm := obj.(*corev1.ConfigMap); cm.Namespace == ns {
		delete(r.live, cm.Name)
	}
}

func (r *recorder) view() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlap.Load() {
		panic("a handler was called while another of its calls was under way")
	}
	return maps.Clone(r.live)
}

func (r *recorder) initialNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.initial))
}

const ns = "fanout"

func configMap(name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": v}}
}

// stored is what the apiserver holds: name → data["v"].
func stored(t *testing.T, ctx context.Context, c client.Client) map[string]string {
	t.Helper()
	var l corev1.ConfigMapList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Name] = cm.Data["v"]
	}
	return out
}

// sees waits until r's view is want.
func sees(t *testing.T, name string, r *recorder, want map[string]string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("%s sees %v", name, want), func() bool {
		return maps.Equal(r.view(), want)
	})
}

// harness is an apiserver with the namespace ns, holding before
// ConfigMaps, and a fanned-out cache (not started) whose ConfigMap
// informer is inf; plain is the cache it wraps.
type harness struct {
	ctx   context.Context
	c     client.Client
	plain cache.Cache
	fc    cache.Cache
	inf   cache.Informer
}

func newHarness(t *testing.T, before int) *harness {
	t.Helper()
	env := testenv.StartT(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{ctx: ctx, c: env.Client}
	if err := h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if err := h.c.Create(ctx, configMap(fmt.Sprintf("before-%d", i), "1")); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if h.plain, err = cache.New(env.Config, cache.Options{Scheme: env.Scheme}); err != nil {
		t.Fatal(err)
	}
	h.fc = fanout.Cache(h.plain)
	if h.inf, err = h.fc.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// start starts the cache and waits for it to sync.
func (h *harness) start(t *testing.T) {
	t.Helper()
	go func() {
		if err := h.fc.Start(h.ctx); err != nil {
			t.Error(err)
		}
	}()
	if !h.fc.WaitForCacheSync(h.ctx) {
		t.Fatal("cache did not sync")
	}
}

func TestHandlersShareOneRegistration(t *testing.T) {
	h := newHarness(t, 3)
	ctx, c, inf := h.ctx, h.c, h.inf
	if again, _ := h.fc.GetInformer(ctx, &corev1.ConfigMap{}); again != inf {
		t.Fatal("a second GetInformer of the kind returned another informer")
	}
	if _, ok := inf.(interface{ GetStore() toolscache.Store }); !ok {
		t.Fatal("the informer has no store")
	}

	// Before the cache starts, as controller-runtime's sources may.
	first := newRecorder()
	reg1, err := inf.AddEventHandler(first)
	if err != nil {
		t.Fatal(err)
	}
	h.start(t)
	testwait.For(t, "the first registration syncs", reg1.HasSynced)
	want := stored(t, ctx, c)
	sees(t, "first", first, want)
	if got := first.initialNames(); !slices.Equal(got, []string{"before-0", "before-1", "before-2"}) {
		t.Errorf("first handler's initial list = %v", got)
	}

	// Added after the sync: given the store's objects before it returns.
	late := newRecorder()
	reg2, err := inf.AddEventHandler(late)
	if err != nil {
		t.Fatal(err)
	}
	if !reg2.HasSynced() {
		t.Error("a handler added after the sync has not synced on return")
	}
	if got := late.view(); !maps.Equal(got, want) {
		t.Errorf("late handler on return = %v, want %v", got, want)
	}
	if got := late.initialNames(); len(got) != 3 {
		t.Errorf("late handler's initial list = %v", got)
	}

	// Ten more handlers cost no goroutine; ten on the informer itself
	// cost two each (client-go's listener).
	before := runtime.NumGoroutine()
	more := make([]*recorder, 10)
	for i := range more {
		more[i] = newRecorder()
		if _, err := inf.AddEventHandler(more[i]); err != nil {
			t.Fatal(err)
		}
	}
	if d := runtime.NumGoroutine() - before; d > 2 {
		t.Errorf("10 handlers started %d goroutines", d)
	}
	direct, err := h.plain.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	before = runtime.NumGoroutine()
	for range 10 {
		if _, err := direct.AddEventHandler(newRecorder()); err != nil {
			t.Fatal(err)
		}
	}
	if d := runtime.NumGoroutine() - before; d < 10 {
		t.Errorf("10 handlers on the informer itself started %d goroutines: the test no longer measures what a registration costs", d)
	}

	// Every handler sees every change after it.
	if err := c.Create(ctx, configMap("new", "1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, configMap("before-0", "2")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, configMap("before-1", "")); err != nil {
		t.Fatal(err)
	}
	want = stored(t, ctx, c)
	if want["before-0"] != "2" || len(want) != 3 {
		t.Fatalf("stored = %v", want)
	}
	for i, r := range append([]*recorder{first, late}, more...) {
		sees(t, fmt.Sprint("handler ", i), r, want)
	}

	// A removed handler is given nothing more; the others go on.
	if err := inf.RemoveEventHandler(reg2); err != nil {
		t.Fatal(err)
	}
	lateBefore := late.view()
	if err := c.Create(ctx, configMap("after-remove", "1")); err != nil {
		t.Fatal(err)
	}
	want = stored(t, ctx, c)
	// The last handler is called last: once it has the change, every
	// handler the event went to has been called.
	sees(t, "the last handler", more[len(more)-1], want)
	if got := late.view(); !maps.Equal(got, lateBefore) {
		t.Errorf("a removed handler was given an event: %v", got)
	}
}

// TestHandlerAddedDuringChanges adds handlers while objects are created,
// updated and deleted: each ends with the apiserver's state, none called
// twice at once.
func TestHandlerAddedDuringChanges(t *testing.T) {
	h := newHarness(t, 0)
	ctx, c, inf := h.ctx, h.c, h.inf
	h.start(t)
	first := newRecorder()
	if _, err := inf.AddEventHandler(first); err != nil {
		t.Fatal(err)
	}

	// Handlers are added between the changes, while the events of the
	// changes before are still on their way.
	const n = 60
	var added []*recorder
	var regs []toolscache.ResourceEventHandlerRegistration
	for i := range n {
		if err := c.Create(ctx, configMap(fmt.Sprint("cm-", i), "1")); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := c.Update(ctx, configMap(fmt.Sprint("cm-", i), "2")); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 0 {
			if err := c.Delete(ctx, configMap(fmt.Sprint("cm-", i), "")); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 4 {
			r := newRecorder()
			reg, err := inf.AddEventHandler(r)
			if err != nil {
				t.Fatal(err)
			}
			added, regs = append(added, r), append(regs, reg)
		}
	}
	want := stored(t, ctx, c)
	if len(want) != n-n/5 {
		t.Fatalf("stored %d ConfigMaps, want %d", len(want), n-n/5)
	}
	sees(t, "first", first, want)
	for i, r := range added {
		sees(t, fmt.Sprint("added ", i), r, want)
		if !regs[i].HasSynced() {
			t.Errorf("handler %d has not synced", i)
		}
	}
}
