/*
Copyright The shardgate Authors.
*/

package translate

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/shardgate/shardgate/internal/ir"
)

// TestMemoMatchesTranslate: a Memo's translation equals a fresh one, for
// every golden input and after edits, and reuses the messages of what did
// not change.
func TestMemoMatchesTranslate(t *testing.T) {
	ins, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		var m Memo
		gw := loadGateway(t, in)
		for range 2 {
			got, err := m.Translate(gw)
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			want, err := Translate(gw)
			if err != nil {
				t.Fatal(err)
			}
			assertEqualResources(t, want, got)
		}
	}
}

func TestMemoRebuildsOnlyChanges(t *testing.T) {
	gw := largeGateway(500)
	var m Memo
	first, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	// Change one virtual host the way the Gateway API translator does: a
	// new routes array for it, the others kept.
	vhs := slices.Clone(gw.Listeners[0].VirtualHosts)
	vh2 := *vhs[2] // the translated IR's host stays as it was
	vh2.Routes = slices.Clone(vh2.Routes)
	vh2.Routes[0].Match.Path = &ir.PathMatch{Type: vh2.Routes[0].Match.Path.Type, Value: "/changed"}
	vhs[2] = &vh2
	gw.Listeners[0].VirtualHosts = vhs
	gw.Clusters = slices.Clone(gw.Clusters)
	c1 := *gw.Clusters[1] // the translated IR's cluster stays as it was
	c1.Endpoints = append(slices.Clone(c1.Endpoints), c1.Endpoints[0])
	c1.Endpoints[len(c1.Endpoints)-1].Port++
	gw.Clusters[1] = &c1

	second, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	assertEqualResources(t, want, second)
	a, b := first.Routes[0].VirtualHosts, second.Routes[0].VirtualHosts
	for i := range a {
		if same := a[i] == b[i]; same != (i != 2) {
			t.Errorf("virtual host %d: reused=%v", i, same)
		}
	}
	for i := range first.Clusters {
		if same := first.Endpoints[i] == second.Endpoints[i]; same != (i != 1) {
			t.Errorf("load assignment %d: reused=%v", i, same)
		}
	}

	// A cluster turning WebSocket rebuilds the virtual hosts (route
	// actions upgrade to WebSocket for it).
	gw.Clusters = slices.Clone(gw.Clusters)
	c0 := *gw.Clusters[0]
	c0.WebSocket = true
	gw.Clusters[0] = &c0
	third, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	if want, err = Translate(gw); err != nil {
		t.Fatal(err)
	}
	assertEqualResources(t, want, third)
}
