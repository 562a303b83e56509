// Package fanout gives each shared informer of a controller-runtime cache
// one event handler registration, which hands every event to all the
// handlers the controllers register on it.
//
// client-go gives each registration its own listener: two goroutines and
// a notification buffer of its own (1024 slots to start). shardgate's
// controllers watch the same kinds many times over (Services by five
// controllers, eight in Akash mode; Namespaces by five, seven in Akash
// mode; Gateways and GatewayClasses by four or five): 47 registrations on
// 23 informers, whose listeners were 94 of the 444 goroutines the process
// ran at rest. Through Cache, every informer has one listener, and its
// goroutine calls each handler in turn.
//
// What a handler sees is what client-go would give it:
//   - every event after it was added, in the informer's order;
//   - when it is added to an informer that already has objects, each of
//     them first, as an add in the initial list (isInInitialList), before
//     AddEventHandler returns;
//   - its registration's HasSynced is true once the informer has synced
//     and the handler has been given its initial list.
//
// Handlers of one informer now run one after another, not side by side, so
// a handler must not block: controller-runtime's handlers only filter and
// enqueue. An event can reach a handler added while it was under way both
// in that handler's initial list and as the event itself (an add twice, or
// an update after the add of its new state): handlers are level-based,
// and client-go makes the same promise only up to duplicates.
//
// A handler that asks for its own resync period is registered with the
// informer directly, as before.
package fanout

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cache returns c, whose informers take every event handler into one
// registration each.
func Cache(c cache.Cache) cache.Cache {
	return &fanCache{Cache: c, fans: map[cache.Informer]*fan{}}
}

type fanCache struct {
	cache.Cache

	mu   sync.Mutex
	fans map[cache.Informer]*fan
}

func (c *fanCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return c.fanOf(inf), nil
}

func (c *fanCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return c.fanOf(inf), nil
}

// RemoveInformer removes the informer, and forgets the fans of informers
// that have stopped.
func (c *fanCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	err := c.Cache.RemoveInformer(ctx, obj)
	c.mu.Lock()
	c.pruneLocked()
	c.mu.Unlock()
	return err
}

// fanOf returns the fan of inf, made on first sight. An informer that is
// not a client-go SharedIndexInformer is returned as it is.
func (c *fanCache) fanOf(inf cache.Informer) cache.Informer {
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return inf
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.fans[inf]; ok {
		return f
	}
	// A new informer: a removed one may have stopped since.
	c.pruneLocked()
	f := &fan{SharedIndexInformer: sii}
	c.fans[inf] = f
	return f
}

func (c *fanCache) pruneLocked() {
	for inf := range c.fans {
		if inf.IsStopped() {
			delete(c.fans, inf)
		}
	}
}

// fan is an informer whose handlers share one registration (base). A
// handler with a resync period of its own (AddEventHandlerWithResyncPeriod,
// promoted from the informer) is registered with the informer itself.
type fan struct {
	toolscache.SharedIndexInformer

	// mu guards subs and base. Events are handed out under its read lock;
	// a handler's initial list under its write lock, so that no event
	// reaches that handler at the same time.
	mu   sync.RWMutex
	subs []*sub
	base toolscache.ResourceEventHandlerRegistration
}

// sub is one handler's registration.
type sub struct {
	h    toolscache.ResourceEventHandler
	base toolscache.ResourceEventHandlerRegistration
}

// HasSynced: the shared registration has synced, which is after every
// object of the informer's initial list went through it. A handler added
// later was given the store's objects before it was returned.
func (s *sub) HasSynced() bool { return s.base.HasSynced() }

func (s *sub) HasSyncedChecker() toolscache.DoneChecker { return s.base.HasSyncedChecker() }

func (f *fan) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (f *fan) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	if opts.ResyncPeriod != nil {
		return f.SharedIndexInformer.AddEventHandlerWithOptions(h, opts)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.base == nil {
		// The first handler: client-go gives the shared registration
		// the store's objects, and every event after them.
		base, err := f.SharedIndexInformer.AddEventHandlerWithOptions(dispatch{f}, opts)
		if err != nil {
			return nil, err
		}
		f.base = base
		s := &sub{h: h, base: base}
		f.subs = append(f.subs, s)
		return s, nil
	}
	s := &sub{h: h, base: f.base}
	f.subs = append(f.subs, s)
	for _, obj := range f.GetStore().List() {
		h.OnAdd(obj, true)
	}
	return s, nil
}

// RemoveEventHandler stops handing events to the handler of reg; the
// shared registration goes with the last one.
func (f *fan) RemoveEventHandler(reg toolscache.ResourceEventHandlerRegistration) error {
	s, ok := reg.(*sub)
	if !ok {
		return f.SharedIndexInformer.RemoveEventHandler(reg)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.subs, s)
	if i < 0 {
		return nil
	}
	f.subs = slices.Delete(f.subs, i, i+1)
	if len(f.subs) > 0 || f.base == nil {
		return nil
	}
	base := f.base
	f.base = nil
	return f.SharedIndexInformer.RemoveEventHandler(base)
}

// dispatch is the shared registration's handler.
type dispatch struct{ f *fan }

func (d dispatch) OnAdd(obj any, initial bool) {
	d.f.mu.RLock()
	defer d.f.mu.RUnlock()
	for _, s := range d.f.subs {
		s.h.OnAdd(obj, initial)
	}
}

func (d dispatch) OnUpdate(oldObj, newObj any) {
	d.f.mu.RLock()
	defer d.f.mu.RUnlock()
	for _, s := range d.f.subs {
		s.h.OnUpdate(oldObj, newObj)
	}
}

func (d dispatch) OnDelete(obj any) {
	d.f.mu.RLock()
	defer d.f.mu.RUnlock()
	for _, s := range d.f.subs {
		s.h.OnDelete(obj)
	}
}
