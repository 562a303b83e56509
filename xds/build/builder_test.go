/*
Copyright The shardgate Authors.
*/

package build

import (
	"slices"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// lease i leaves gw: its host and cluster, named by a Change since gw's.
func leaseGone(gw *ir.Gateway, i int) *ir.Gateway {
	next := *gw
	next.Listeners = slices.Clone(gw.Listeners)
	vhs := gw.Listeners[0].VirtualHosts
	next.Listeners[0].VirtualHosts = slices.Delete(slices.Clone(vhs), i, i+1)
	next.Clusters = slices.Delete(slices.Clone(gw.Clusters), i, i+1)
	next.Change = &ir.Change{Generation: gw.Change.Generation + 1, Since: gw.Change.Generation,
		VirtualHosts: []ir.VirtualHostRef{{Listener: "http-80", Name: vhs[i].Name}}, Clusters: []string{gw.Clusters[i].Name}}
	return &next
}

func clusterNames(c *Config) []string {
	var out []string
	for _, cl := range c.Resources.Clusters {
		out = append(out, cl.GetName())
	}
	return out
}

// What the Builder retains and introduces follows the IR's change: a
// cluster the change names that left is retained (and referenced only by
// its old host), one it names that came is introduced; the same IR again
// is the same config. Its Config is what was checked: what Validate makes
// of the published resources is no error, and the clusters published are
// the translation's plus the retained one.
func TestBuilderFollowsTheChange(t *testing.T) {
	b := NewBuilder(Options{RetainRemoved: time.Hour})
	defer b.Stop()
	gw := propertyBase(5)
	gw.Change = &ir.Change{Generation: 1}
	first, err := b.Build(gw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Introduced) != 0 {
		t.Fatalf("a first config introduced %v", first.Introduced)
	}
	again, err := b.Build(gw, first)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged(first) {
		t.Fatal("the same IR again is another config")
	}

	// Lease 2 leaves: its cluster is retained.
	second := leaseGone(gw, 2)
	c2, err := b.Build(second, again)
	if err != nil {
		t.Fatal(err)
	}
	gone := gw.Clusters[2].Name
	if got := clusterNames(c2); !slices.Contains(got, gone) || len(got) != 5 {
		t.Fatalf("clusters %v, want the 4 left and %s retained", got, gone)
	}
	if len(c2.EDS.Retained) != 1 || c2.EDS.Retained[0].Name != gone {
		t.Fatalf("EDS retained %+v, want %s", c2.EDS.Retained, gone)
	}
	if err := translate.Validate(c2.Resources); err != nil {
		t.Fatalf("the published config does not validate: %v", err)
	}
	if c2.Snapshot.GetVersion(resourcev3.ClusterType) != first.Snapshot.GetVersion(resourcev3.ClusterType) ||
		c2.Snapshot.GetVersion(resourcev3.RouteType) == first.Snapshot.GetVersion(resourcev3.RouteType) {
		t.Fatal("want the same clusters (one retained) and other routes")
	}

	// A new lease: the change names its cluster, which is introduced.
	third := *second
	third.Listeners = slices.Clone(second.Listeners)
	third.Listeners[0].VirtualHosts = append(slices.Clone(second.Listeners[0].VirtualHosts), propertyVhost("h99.example.com", "default/svc-99/80", "/"))
	third.Clusters = append(slices.Clone(second.Clusters), &ir.Cluster{Name: "default/svc-99/80", Protocol: ir.ClusterHTTP1})
	third.Change = &ir.Change{Generation: 3, Since: 2, VirtualHosts: []ir.VirtualHostRef{{Listener: "http-80", Name: "h99.example.com"}},
		Clusters: []string{"default/svc-99/80"}}
	c3, err := b.Build(&third, c2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c3.Introduced, []string{"default/svc-99/80"}) {
		t.Fatalf("introduced %v, want the new lease's cluster", c3.Introduced)
	}
	if got := clusterNames(c3); !slices.Contains(got, gone) || !slices.Contains(got, "default/svc-99/80") {
		t.Fatalf("clusters %v, want the retained one and the new one", got)
	}
}

// A refused config leaves the Builder comparing the next IR with none: the
// next config introduces every cluster, whatever its change says.
func TestBuilderAfterARefusedConfig(t *testing.T) {
	b := NewBuilder(Options{})
	defer b.Stop()
	gw := propertyBase(3)
	gw.Change = &ir.Change{Generation: 1}
	first, err := b.Build(gw, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := *gw
	bad.Listeners = slices.Clone(gw.Listeners)
	bad.Listeners[0].VirtualHosts = append(slices.Clone(gw.Listeners[0].VirtualHosts), propertyVhost("dup.example.com", "default/svc-00/80", "/"))
	bad.Listeners[0].VirtualHosts = append(bad.Listeners[0].VirtualHosts, propertyVhost("dup.example.com", "default/svc-01/80", "/"))
	bad.Change = &ir.Change{Generation: 2, Since: 1, VirtualHosts: []ir.VirtualHostRef{{Listener: "http-80", Name: "dup.example.com"}}}
	if _, err := b.Build(&bad, first); err == nil {
		t.Fatal("a route table with a duplicate virtual host passed")
	}
	next := *gw
	next.Change = &ir.Change{Generation: 3, Since: 2}
	c, err := b.Build(&next, first)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, cl := range gw.Clusters {
		want = append(want, cl.Name)
	}
	if !slices.Equal(c.Introduced, want) {
		t.Fatalf("introduced %v after a refused config, want every cluster %v", c.Introduced, want)
	}
	if got := clusterNames(c); !slices.Equal(got, want) {
		t.Fatalf("clusters %v, want %v", got, want)
	}
}

// A change of the Service a cluster sends to changes nothing the snapshot
// holds (the cluster message names no Service), but the cluster's load
// assignment: the config is not the same as before. A change naming no
// cluster needs the same load assignments.
func TestBuilderSeesLoadAssignmentChanges(t *testing.T) {
	b := NewBuilder(Options{})
	defer b.Stop()
	gw := propertyBase(3)
	for _, c := range gw.Clusters {
		c.Service = ir.ServicePort{Namespace: "default", Name: c.Name[len("default/"):len("default/svc-00")], Port: "http"}
	}
	gw.Change = &ir.Change{Generation: 1}
	first, err := b.Build(gw, nil)
	if err != nil {
		t.Fatal(err)
	}
	moved := *gw
	moved.Clusters = slices.Clone(gw.Clusters)
	c := *moved.Clusters[1]
	c.Service.Name = "elsewhere"
	moved.Clusters[1] = &c
	moved.Change = &ir.Change{Generation: 2, Since: 1, Clusters: []string{c.Name}}
	second, err := b.Build(&moved, first)
	if err != nil {
		t.Fatal(err)
	}
	if !equalVersions(first.Versions, second.Versions) {
		t.Fatalf("versions %v, then %v: a Service change moved a snapshot version", first.Versions, second.Versions)
	}
	if second.Unchanged(first) {
		t.Fatal("a cluster sending to another Service is the same config")
	}
	same := moved
	same.Change = &ir.Change{Generation: 3, Since: 2}
	third, err := b.Build(&same, second)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Unchanged(second) {
		t.Fatal("a change naming nothing is another config")
	}
}
