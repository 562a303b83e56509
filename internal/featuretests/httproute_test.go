package featuretests

import (
	"fmt"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/xdstest"
)

// wait is how long a test waits for what a proxy holds to change.
const wait = time.Minute

// httpTable is the route configuration of the Gateways' HTTP listener on
// port 80.
const httpTable = "http-80"

var gw = types.NamespacedName{Namespace: "infra", Name: "gw"}

// world is a GatewayClass of the controller and its Gateway gw, with one
// HTTP listener, and the namespace app with a Service web (port 80 → 8080)
// and its EndpointSlice.
func world(ft *tier) {
	ft.Apply(
		namespace(gw.Namespace, nil), namespace("app", nil),
		gatewayClass("shardgate"), gateway(gw, "shardgate"),
		service("app", "web", 80, 8080), endpointSlice("app", "web-1", "web", 8080, "10.244.1.5"),
	)
}

// goesTo returns a condition: a request for host and path goes to cluster.
func goesTo(p proxy, host, path, cluster string) func() error {
	return func() error {
		got, err := visit(p, httpTable, host, path)
		if err != nil {
			return err
		}
		if got != cluster {
			return fmt.Errorf("%s%s goes to %s, want %s", host, path, got, cluster)
		}
		return nil
	}
}

// waitFor waits until cond holds for what p holds, or fails with its last
// error.
func waitFor(t *testing.T, p interface {
	WaitFor(time.Duration, string, func() bool) error
}, cond func() error) {
	t.Helper()
	var last error
	if err := p.WaitFor(wait, "the proxy's config to change", func() bool { last = cond(); return last == nil }); err != nil {
		t.Fatalf("%v: %v", err, last)
	}
}

// An HTTPRoute becomes a virtual host for its hostname, whose route for its
// path goes to the cluster of its backend's Service port.
func TestHTTPRouteIsServedToTheGatewaysProxy(t *testing.T) {
	ft := setup(t)
	world(ft)
	p := ft.delta(gw)
	// The proxy holds the Gateway's config before the route is written,
	// so the route's cluster and route table arrive as one change after
	// it. The server sends a change in order (clusters first) to a proxy
	// that has acknowledged the config before it; a config that follows
	// the last one faster than the proxy acknowledges finds no cluster
	// watch open, and go-control-plane answers the watches that are.
	waitFor(t, p, func() error {
		if p.Resource(resourcev3.RouteType, httpTable) == nil {
			return fmt.Errorf("no route table %s yet", httpTable)
		}
		return nil
	})
	ft.Apply(httpRoute("app", "web", gw, "web.example.test", "/api", "web", 80))

	waitFor(t, p, goesTo(p, "web.example.test", "/api/items", "app/web/80"))
	if _, err := visit(p, httpTable, "web.example.test", "/other"); err == nil {
		t.Fatal("a path outside the route's prefix is routed")
	}
	if _, err := visit(p, httpTable, "other.example.test", "/api"); err == nil {
		t.Fatal("a hostname the route does not name is routed")
	}

	// A change of the route's path moves what is served.
	ft.Apply(httpRoute("app", "web", gw, "web.example.test", "/v2", "web", 80))
	waitFor(t, p, goesTo(p, "web.example.test", "/v2/items", "app/web/80"))
	if _, err := visit(p, httpTable, "web.example.test", "/api/items"); err == nil {
		t.Fatal("the route's old path is still routed")
	}
	// Every route configuration came after the clusters it names.
	if d := p.Dangling(); len(d) > 0 {
		t.Fatalf("routes arrived before their clusters: %v", d)
	}

	// Another Gateway's proxy is served none of it.
	other := types.NamespacedName{Namespace: "infra", Name: "other"}
	ft.Apply(gateway(other, "shardgate"))
	q := ft.sotw(other,
		xdstest.Subscription{TypeURL: resourcev3.ListenerType},
		xdstest.Subscription{TypeURL: resourcev3.RouteType, Names: []string{httpTable}})
	waitFor(t, q, func() error {
		if q.Resource(resourcev3.RouteType, httpTable) == nil {
			return fmt.Errorf("no route configuration %s", httpTable)
		}
		return nil
	})
	if c, err := visit(q, httpTable, "web.example.test", "/v2"); err == nil {
		t.Fatalf("the other Gateway's proxy routes web.example.test to %s", c)
	}
}

// A route deleted is no longer served: its virtual host goes.
func TestDeletedHTTPRouteIsNoLongerServed(t *testing.T) {
	ft := setup(t)
	world(ft)
	ft.Apply(service("app", "api", 80, 8080), endpointSlice("app", "api-1", "api", 8080, "10.244.1.6"))
	p := ft.delta(gw)
	web := httpRoute("app", "web", gw, "web.example.test", "/", "web", 80)
	ft.Apply(web, httpRoute("app", "api", gw, "api.example.test", "/", "api", 80))
	waitFor(t, p, goesTo(p, "web.example.test", "/", "app/web/80"))
	waitFor(t, p, goesTo(p, "api.example.test", "/", "app/api/80"))

	ft.Delete(web)
	waitFor(t, p, func() error {
		if c, err := visit(p, httpTable, "web.example.test", "/"); err == nil {
			return fmt.Errorf("web.example.test still goes to %s", c)
		}
		return nil
	})
	// The other route stays.
	if err := goesTo(p, "api.example.test", "/", "app/api/80")(); err != nil {
		t.Fatal(err)
	}
}
