package testenv

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// namespacedLists are the kinds Dump prints for each namespace it is given.
func namespacedLists() []client.ObjectList {
	return []client.ObjectList{
		&shardgatev1alpha1.LeaseHostList{},
		&shardgatev1alpha1.LeasedIPList{},
		&shardgatev1alpha1.GatewayParametersList{},
		&gatewayv1.GatewayList{},
		&gatewayv1.HTTPRouteList{},
		&gatewayv1.GRPCRouteList{},
		&corev1.ServiceList{},
		&discoveryv1.EndpointSliceList{},
		&corev1.EventList{},
	}
}

// Dump writes, as YAML, the objects a failing test needs to see: every
// GatewayClass, and the shardgate, Gateway API, Service, EndpointSlice and
// Event objects of each namespace given. managedFields are left out. It
// reads with c and reports a failed read inline instead of stopping, so a
// dump after a failure shows as much as can be read.
func Dump(ctx context.Context, c client.Client, w io.Writer, namespaces ...string) {
	fmt.Fprintf(w, "\n===== object dump (namespaces %v) =====\n", namespaces)
	dumpList(ctx, c, w, &gatewayv1.GatewayClassList{})
	seen := map[string]bool{}
	sorted := append([]string(nil), namespaces...)
	sort.Strings(sorted)
	for _, ns := range sorted {
		if seen[ns] || ns == "" {
			continue
		}
		seen[ns] = true
		for _, l := range namespacedLists() {
			dumpList(ctx, c, w, l, client.InNamespace(ns))
		}
	}
	fmt.Fprintln(w, "===== end of object dump =====")
}

func dumpList(ctx context.Context, c client.Client, w io.Writer, list client.ObjectList, opts ...client.ListOption) {
	kind := fmt.Sprintf("%T", list)
	if err := c.List(ctx, list, opts...); err != nil {
		fmt.Fprintf(w, "# %s: list failed: %v\n", kind, err)
		return
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		fmt.Fprintf(w, "# %s: %v\n", kind, err)
		return
	}
	for _, it := range items {
		o, ok := it.(client.Object)
		if !ok {
			continue
		}
		o.SetManagedFields(nil)
		writeObject(w, kind, o)
	}
}

func writeObject(w io.Writer, kind string, o runtime.Object) {
	b, err := yaml.Marshal(o)
	if err != nil {
		fmt.Fprintf(w, "# %s: %v\n", kind, err)
		return
	}
	fmt.Fprintf(w, "---\n# %s\n%s", kind, b)
}

// Dumps collects the namespaces a test creates, by the client that reads
// them, so that a failing test can print what it saw. Register with Add
// when a namespace is created; call Flush after each test.
type Dumps struct {
	mu      sync.Mutex
	targets map[client.Client][]string
}

// Add remembers ns, read with c, for the next Flush.
func (d *Dumps) Add(c client.Client, ns string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.targets == nil {
		d.targets = map[client.Client][]string{}
	}
	d.targets[c] = append(d.targets[c], ns)
}

// Flush dumps every remembered namespace (and "default") to w when failed,
// then forgets them.
func (d *Dumps) Flush(ctx context.Context, w io.Writer, failed bool) {
	d.mu.Lock()
	targets := d.targets
	d.targets = nil
	d.mu.Unlock()
	if !failed {
		return
	}
	for c, nss := range targets {
		Dump(ctx, c, w, append(nss, "default")...)
	}
}
