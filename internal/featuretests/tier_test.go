package featuretests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/status"
	"github.com/shardgate/shardgate/internal/testwait"
	"github.com/shardgate/shardgate/internal/xdstest"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// controllerName is the GatewayClass controller the tier's reconciler
// serves.
const controllerName = shardgatev1alpha1.ControllerName

// tier is the Gateway API controller and the xDS server of one test, fed
// without an apiserver (see the package doc).
type tier struct {
	t         *testing.T
	ctx       context.Context
	informers *informers
	handlers  map[reflect.Type]handler.EventHandler
	queue     workqueue.TypedRateLimitingInterface[reconcile.Request]
	srv       *xdsserver.Server
	ca        *pki.CA
	target    string

	mu sync.Mutex // orders Apply and Delete, as one informer delivers its events in order
	rv int64
}

// setup starts the tier: the xDS server on a loopback port with mTLS, and
// the Gateway API controller publishing to it. Both stop when the test
// ends.
func setup(t *testing.T) *tier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	ft := &tier{t: t, ctx: ctx, informers: &informers{byType: map[reflect.Type]toolscache.SharedIndexInformer{}}}

	ca, err := pki.NewCA("featuretests xDS CA")
	if err != nil {
		t.Fatal(err)
	}
	ft.ca = ca
	creds, err := xdsserver.NewCredentials(ctx, xdstest.ServerCertificates(ca), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ft.srv = xdsserver.New(xdsserver.Options{Address: "127.0.0.1:0", TLS: creds.TLSConfig(), Log: logr.Discard()})
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ft.srv.Start(ctx); err != nil {
			t.Errorf("xDS server: %v", err)
		}
	}()

	r := &controllers.GatewayAPIReconciler{
		Cache:          ft.informers,
		ControllerName: controllerName,
		Status:         status.New(nil, nil, controllerName, logr.Discard()),
		Publisher:      ft.srv,
		Log:            logr.Discard(),
	}
	ft.handlers = map[reflect.Type]handler.EventHandler{}
	for _, w := range r.Watches() {
		ft.handlers[reflect.TypeOf(w.Object)] = w.Handler
	}
	c, err := controller.NewTypedUnmanaged("gatewayapi", controller.TypedOptions[reconcile.Request]{
		Reconciler: r, MaxConcurrentReconciles: 1, SkipNameValidation: new(true), Logger: logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The informers' events reach the controller's queue as a Kind
	// source's do: through the handler, given the queue.
	started := make(chan struct{})
	for _, src := range []source.Source{r.TriggerSource(), source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		ft.queue = q
		close(started)
		return nil
	})} {
		if err := c.Watch(src); err != nil {
			t.Fatal(err)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Start(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the controller did not start its sources")
	}
	testwait.Succeeds(t, func() error {
		if ft.srv.Addr() == nil || !ft.srv.Serving() {
			return errors.New("the xDS server is not serving yet")
		}
		return nil
	})
	_, port, _ := net.SplitHostPort(ft.srv.Addr().String())
	ft.target = net.JoinHostPort("127.0.0.1", port)
	return ft
}

// Apply creates or updates each object, as an informer delivers a watch
// event: into its kind's store, then to the kind's event handler. The
// objects are copied; the tier sets what the apiserver would.
func (ft *tier) Apply(objs ...client.Object) {
	ft.t.Helper()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, o := range objs {
		obj := o.DeepCopyObject().(client.Object)
		h := ft.handler(obj)
		store := ft.informers.of(obj).GetIndexer()
		item, exists, err := store.Get(obj)
		if err != nil {
			ft.t.Fatal(err)
		}
		ft.rv++
		obj.SetResourceVersion(strconv.FormatInt(ft.rv, 10))
		if exists {
			old := item.(client.Object)
			obj.SetUID(old.GetUID())
			obj.SetCreationTimestamp(old.GetCreationTimestamp())
			obj.SetGeneration(old.GetGeneration() + 1)
			if err := store.Update(obj); err != nil {
				ft.t.Fatal(err)
			}
			h.Update(ft.ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: obj}, ft.queue)
			continue
		}
		if obj.GetUID() == "" {
			obj.SetUID(uuid.NewUUID())
		}
		if ct := obj.GetCreationTimestamp(); ct.IsZero() {
			obj.SetCreationTimestamp(metav1.Now())
		}
		obj.SetGeneration(1)
		if err := store.Add(obj); err != nil {
			ft.t.Fatal(err)
		}
		h.Create(ft.ctx, event.CreateEvent{Object: obj}, ft.queue)
	}
}

// Delete deletes each object (by kind, namespace and name), as an informer
// delivers a watch event.
func (ft *tier) Delete(objs ...client.Object) {
	ft.t.Helper()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, obj := range objs {
		h := ft.handler(obj)
		store := ft.informers.of(obj).GetIndexer()
		item, exists, err := store.Get(obj)
		if err != nil {
			ft.t.Fatal(err)
		}
		if !exists {
			ft.t.Fatalf("delete %T %s/%s: not applied", obj, obj.GetNamespace(), obj.GetName())
		}
		if err := store.Delete(item); err != nil {
			ft.t.Fatal(err)
		}
		h.Delete(ft.ctx, event.DeleteEvent{Object: item.(client.Object)}, ft.queue)
	}
}

func (ft *tier) handler(obj client.Object) handler.EventHandler {
	ft.t.Helper()
	h, ok := ft.handlers[reflect.TypeOf(obj)]
	if !ok {
		ft.t.Fatalf("the Gateway API controller does not watch %T", obj)
	}
	return h
}

// delta connects a proxy of gw with the shared delta client, subscribed to
// every resource of every type, as Envoy does.
func (ft *tier) delta(gw types.NamespacedName) *xdstest.Delta {
	ft.t.Helper()
	cfg, err := xdstest.GatewayTLS(ft.ca, gw)
	if err != nil {
		ft.t.Fatal(err)
	}
	c, err := xdstest.DialDelta(ft.ctx, ft.target, cfg, xdstest.DeltaOptions{
		Node:  &core.Node{Id: "featuretests-" + ft.t.Name(), Cluster: xdsserver.NodeGroup(gw)},
		Types: xdstest.DeltaTypes,
	})
	if err != nil {
		ft.t.Fatal(err)
	}
	ft.t.Cleanup(c.Close)
	return c
}

// sotw connects a proxy of gw with the shared state-of-the-world client,
// subscribed as subs.
func (ft *tier) sotw(gw types.NamespacedName, subs ...xdstest.Subscription) *xdstest.Sotw {
	ft.t.Helper()
	cfg, err := xdstest.GatewayTLS(ft.ca, gw)
	if err != nil {
		ft.t.Fatal(err)
	}
	c, err := xdstest.DialSotw(ft.ctx, ft.target, cfg, xdstest.SotwOptions{
		Node:          &core.Node{Id: "featuretests-" + ft.t.Name(), Cluster: xdsserver.NodeGroup(gw)},
		Subscriptions: subs,
	})
	if err != nil {
		ft.t.Fatal(err)
	}
	ft.t.Cleanup(c.Close)
	return c
}

// informers are the informers of the kinds the controller watches, one per
// kind: client-go SharedIndexInformers whose stores the tier fills. They
// are never run: there is no apiserver to list and watch.
type informers struct {
	mu     sync.Mutex
	byType map[reflect.Type]toolscache.SharedIndexInformer
}

var _ controllers.Informers = (*informers)(nil)

// GetInformer is the kind's informer, as the manager's cache gives it.
func (i *informers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	return i.of(obj), nil
}

func (i *informers) of(obj client.Object) toolscache.SharedIndexInformer {
	i.mu.Lock()
	defer i.mu.Unlock()
	t := reflect.TypeOf(obj)
	inf, ok := i.byType[t]
	if !ok {
		inf = toolscache.NewSharedIndexInformer(noAPIServer{}, reflect.New(t.Elem()).Interface().(runtime.Object), 0, toolscache.Indexers{})
		i.byType[t] = inf
	}
	return inf
}

// noAPIServer is the informers' ListerWatcher: they are never run, so it
// is never called.
type noAPIServer struct{}

func (noAPIServer) List(metav1.ListOptions) (runtime.Object, error) {
	return nil, fmt.Errorf("the feature-test tier has no apiserver")
}

func (noAPIServer) Watch(metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("the feature-test tier has no apiserver")
}
