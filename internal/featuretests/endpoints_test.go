package featuretests

import (
	"fmt"
	"slices"
	"testing"
)

// hasEndpoints returns a condition: cluster is held, is an EDS cluster, and
// its load assignment sends to want (sorted).
func hasEndpoints(p proxy, cluster string, want ...string) func() error {
	return func() error {
		got, err := endpoints(p, cluster)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("cluster %s sends to %v, want %v", cluster, got, want)
		}
		return nil
	}
}

// A route's backend Service becomes a cluster, and its EndpointSlices the
// cluster's load assignment, which follows every change of the slices.
func TestServiceAndEndpointSlicesAreTheClusterAndItsEndpoints(t *testing.T) {
	ft := setup(t)
	world(ft)
	p := ft.delta(gw)
	ft.Apply(httpRoute("app", "web", gw, "web.example.test", "/", "web", 80))
	waitFor(t, p, goesTo(p, "web.example.test", "/", "app/web/80"))
	waitFor(t, p, hasEndpoints(p, "app/web/80", "10.244.1.5:8080"))

	// A pod more: the slice grows.
	ft.Apply(endpointSlice("app", "web-1", "web", 8080, "10.244.1.5", "10.244.1.7"))
	waitFor(t, p, hasEndpoints(p, "app/web/80", "10.244.1.5:8080", "10.244.1.7:8080"))

	// A second slice of the same Service adds its endpoints.
	ft.Apply(endpointSlice("app", "web-2", "web", 8080, "10.244.2.9"))
	waitFor(t, p, hasEndpoints(p, "app/web/80", "10.244.1.5:8080", "10.244.1.7:8080", "10.244.2.9:8080"))

	// The first slice deleted: only the second's are left.
	ft.Delete(endpointSlice("app", "web-1", "web", 8080))
	waitFor(t, p, hasEndpoints(p, "app/web/80", "10.244.2.9:8080"))

	// Another Service's slice changes nothing of this cluster.
	ft.Apply(service("app", "api", 80, 8080), endpointSlice("app", "api-1", "api", 8080, "10.244.3.3"))
	if err := hasEndpoints(p, "app/web/80", "10.244.2.9:8080")(); err != nil {
		t.Fatal(err)
	}
}
