package statuscli

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sync"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// Watch is `shardgate status --watch`: it prints the listing as Run does
// (LeaseHosts and, in Akash mode, ProviderHosts), then, until ctx ends, the
// rows of every LeaseHost or ProviderHost whose rows changed (kubectl get
// --watch's shape: tables keep the first header, and its columns, which
// are wide enough for typical cells; see Printer.Watching). An object whose status
// changes without changing its rows (a condition's message, say) prints
// nothing. A watch that ends is resumed from the last seen
// resourceVersion; one that expired lists again and prints what changed
// meanwhile. Deleted objects print nothing.
//
// A ProviderHost has no status: its rows follow from the ProviderHost, its
// generated route's status and its Reserve and Certify Events, so a change
// of any of them recomputes the ProviderHost rows (changes that arrive while that
// runs are coalesced into one more pass).
func Watch(ctx context.Context, c client.WithWatch, opts Options, w io.Writer) error {
	p, err := NewPrinter(opts.Format)
	if err != nil {
		return err
	}
	p.Watching()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v := &watchView{p: p, w: w, filter: opts.Filter, printed: map[rowKey][]Row{}}

	items, rv, err := list(ctx, c, opts)
	if err != nil {
		return err
	}
	akashRows, akashServed, err := listProviderHostRows(ctx, c, opts)
	if err != nil {
		return err
	}
	if err := v.initial(items, akashRows); err != nil {
		return err
	}

	if !akashServed {
		return v.followLeaseHosts(ctx, c, opts, rv)
	}
	// Each follower returns nil only once ctx ends: the first to return
	// ends the other.
	akashDone := make(chan error, 1)
	go func() { akashDone <- v.followProviderHosts(ctx, c, opts) }()
	lhDone := make(chan error, 1)
	go func() { lhDone <- v.followLeaseHosts(ctx, c, opts, rv) }()
	select {
	case err = <-lhDone:
		cancel()
		if aerr := <-akashDone; err == nil {
			err = aerr
		}
	case err = <-akashDone:
		cancel()
		if lerr := <-lhDone; err == nil {
			err = lerr
		}
	}
	return err
}

// rowKey is the object rows belong to.
type rowKey struct{ source, namespace, name string }

func keyOf(r Row) rowKey { return rowKey{r.Source, r.Namespace, r.LeaseHost} }

// watchView prints the rows that changed, one writer at a time.
type watchView struct {
	mu      sync.Mutex
	p       *Printer
	w       io.Writer
	filter  Filter
	printed map[rowKey][]Row
}

// initial prints the listing: every row, sorted as Run sorts them.
func (v *watchView) initial(items []shardgatev1alpha1.LeaseHost, akashRows []Row) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	all := RowsFor(items)
	if len(akashRows) > 0 {
		all = append(all, akashRows...)
		sortRows(all)
	}
	for i := range items {
		v.printed[rowKey{SourceLeaseHost, items[i].Namespace, items[i].Name}] = v.filter.Apply(RowsFor(items[i : i+1]))
	}
	for k, rows := range groupRows(akashRows) {
		v.printed[k] = v.filter.Apply(rows)
	}
	return v.p.Print(v.filter.Apply(all), v.w)
}

// show prints the rows of each object of next whose filtered rows differ
// from what was printed for it, and forgets the objects of gone.
func (v *watchView) show(next map[rowKey][]Row, gone []rowKey) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, k := range gone {
		delete(v.printed, k)
	}
	var rows []Row
	for k, objRows := range next {
		r := v.filter.Apply(objRows)
		if reflect.DeepEqual(v.printed[k], r) {
			continue
		}
		v.printed[k] = r
		rows = append(rows, r...)
	}
	sortRows(rows)
	if len(rows) == 0 {
		return nil
	}
	return v.p.Print(rows, v.w)
}

func groupRows(rows []Row) map[rowKey][]Row {
	out := map[rowKey][]Row{}
	for _, r := range rows {
		k := keyOf(r)
		out[k] = append(out[k], r)
	}
	return out
}

func (v *watchView) showLeaseHosts(items []shardgatev1alpha1.LeaseHost) error {
	next := make(map[rowKey][]Row, len(items))
	for i := range items {
		next[rowKey{SourceLeaseHost, items[i].Namespace, items[i].Name}] = RowsFor(items[i : i+1])
	}
	return v.show(next, nil)
}

// followLeaseHosts watches LeaseHosts from resourceVersion rv.
func (v *watchView) followLeaseHosts(ctx context.Context, c client.WithWatch, opts Options, rv string) error {
	relist := func() (string, error) {
		items, rv, err := list(ctx, c, opts)
		if err != nil {
			return "", err
		}
		return rv, v.showLeaseHosts(items)
	}
	listOpts := []client.ListOption{}
	if opts.Namespace != "" {
		listOpts = append(listOpts, client.InNamespace(opts.Namespace))
	}
	for ctx.Err() == nil {
		wi, err := c.Watch(ctx, &shardgatev1alpha1.LeaseHostList{}, append(listOpts,
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
				return fmt.Errorf("watch LeaseHosts: %w", err)
			}
			if rv, err = relist(); err != nil {
				return err
			}
			continue
		}
		expired := false
		for ev := range wi.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				lh, ok := ev.Object.(*shardgatev1alpha1.LeaseHost)
				if !ok {
					continue
				}
				rv = lh.ResourceVersion
				if err := v.showLeaseHosts([]shardgatev1alpha1.LeaseHost{*lh}); err != nil {
					wi.Stop()
					return err
				}
			case watch.Deleted:
				if lh, ok := ev.Object.(*shardgatev1alpha1.LeaseHost); ok {
					rv = lh.ResourceVersion
					if err := v.show(nil, []rowKey{{SourceLeaseHost, lh.Namespace, lh.Name}}); err != nil {
						wi.Stop()
						return err
					}
				}
			case watch.Bookmark:
				if o, ok := ev.Object.(client.Object); ok {
					rv = o.GetResourceVersion()
				}
			case watch.Error:
				if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					expired = true
				}
			}
		}
		wi.Stop()
		if expired && ctx.Err() == nil {
			if rv, err = relist(); err != nil {
				return err
			}
		}
	}
	return nil
}

// followProviderHosts recomputes the ProviderHost rows whenever a
// ProviderHost, an Akash-labelled HTTPRoute or a Reserve or Certify Event
// about a ProviderHost changes.
func (v *watchView) followProviderHosts(ctx context.Context, c client.WithWatch, opts Options) error {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	inNS := []client.ListOption{}
	if opts.Namespace != "" {
		inNS = append(inNS, client.InNamespace(opts.Namespace))
	}
	watches := []struct {
		what     string
		newList  func() client.ObjectList
		opts     []client.ListOption
		relevant func(runtime.Object) bool
	}{
		{"ProviderHosts", func() client.ObjectList { return &akashv1.ProviderHostList{} }, inNS, nil},
		// Generated routes live in the lease namespaces, whatever the
		// namespace of their ProviderHosts.
		{"Akash HTTPRoutes", func() client.ObjectList { return &gatewayv1.HTTPRouteList{} },
			[]client.ListOption{client.MatchingLabels{akash.LabelManaged: "true"}}, nil},
		{"Events", func() client.ObjectList { return &eventsv1.EventList{} }, inNS, func(o runtime.Object) bool {
			ev, ok := o.(*eventsv1.Event)
			return ok && (ev.Action == "Reserve" || ev.Action == actionCertify) && ev.Regarding.Kind == "ProviderHost"
		}},
	}
	errs := make(chan error, len(watches))
	for _, wt := range watches {
		go func() {
			if err := watchChanges(ctx, c, wt.newList, wt.opts, wt.relevant, poke); err != nil {
				errs <- fmt.Errorf("watch %s: %w", wt.what, err)
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case <-kick:
			rows, _, err := listProviderHostRows(ctx, c, opts)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			next := groupRows(rows)
			var gone []rowKey
			v.mu.Lock()
			for k := range v.printed {
				if _, ok := next[k]; !ok && k.source == SourceProviderHost {
					gone = append(gone, k)
				}
			}
			v.mu.Unlock()
			if err := v.show(next, gone); err != nil {
				return err
			}
		}
	}
}

// watchChanges calls changed for every relevant change of the objects
// listed by newList and opts, until ctx ends. A watch that ends is resumed
// from the last seen resourceVersion, one that expired from the current
// state (whose objects then count as changed). A kind the cluster does not
// serve is not watched.
func watchChanges(ctx context.Context, c client.WithWatch, newList func() client.ObjectList, opts []client.ListOption, relevant func(runtime.Object) bool, changed func()) error {
	rv := ""
	for ctx.Err() == nil {
		wi, err := c.Watch(ctx, newList(), append(opts,
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		switch {
		case err == nil:
		case ctx.Err() != nil, meta.IsNoMatchError(err):
			return nil
		case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
			rv = ""
			continue
		default:
			return err
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					rv = ""
				}
				continue
			}
			if o, ok := ev.Object.(client.Object); ok {
				rv = o.GetResourceVersion()
			}
			if ev.Type != watch.Bookmark && (relevant == nil || relevant(ev.Object)) {
				changed()
			}
		}
		wi.Stop()
	}
	return nil
}
