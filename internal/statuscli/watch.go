package statuscli

import (
	"context"
	"fmt"
	"io"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Watch is `shardgate status --watch`: it prints the listing as Run does,
// then, until ctx ends, the rows of every LeaseHost whose rows changed
// (kubectl get --watch's shape: tables keep the first header). A LeaseHost
// whose status changes without changing its rows (a condition's message,
// say) prints nothing. A watch that ends is resumed from the last seen
// resourceVersion; one that expired lists again and prints what changed
// meanwhile. Deleted LeaseHosts print nothing.
func Watch(ctx context.Context, c client.WithWatch, opts Options, w io.Writer) error {
	p, err := NewPrinter(opts.Format)
	if err != nil {
		return err
	}
	printed := map[types.NamespacedName][]Row{}
	show := func(items []shardgatev1alpha1.LeaseHost, all bool) error {
		var rows []Row
		for i := range items {
			nn := types.NamespacedName{Namespace: items[i].Namespace, Name: items[i].Name}
			r := opts.Filter.Apply(RowsFor(items[i : i+1]))
			if reflect.DeepEqual(printed[nn], r) {
				continue
			}
			printed[nn] = r
			rows = append(rows, r...)
		}
		if len(rows) == 0 && !all {
			return nil
		}
		return p.Print(rows, w)
	}
	relist := func(all bool) (string, error) {
		items, rv, err := list(ctx, c, opts)
		if err != nil {
			return "", err
		}
		return rv, show(items, all)
	}
	rv, err := relist(true)
	if err != nil {
		return err
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
			if rv, err = relist(false); err != nil {
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
				if err := show([]shardgatev1alpha1.LeaseHost{*lh}, false); err != nil {
					wi.Stop()
					return err
				}
			case watch.Deleted:
				if lh, ok := ev.Object.(*shardgatev1alpha1.LeaseHost); ok {
					rv = lh.ResourceVersion
					delete(printed, types.NamespacedName{Namespace: lh.Namespace, Name: lh.Name})
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
			if rv, err = relist(false); err != nil {
				return err
			}
		}
	}
	return nil
}
