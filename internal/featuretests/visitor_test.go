package featuretests

import (
	"fmt"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/internal/xdstest"
)

// What a visitor gets, read from what a proxy holds as Envoy would use it.

// proxy is what the tests read of a client: the resources it holds.
type proxy interface {
	Resource(typeURL, name string) proto.Message
}

var (
	_ proxy = (*xdstest.Delta)(nil)
	_ proxy = (*xdstest.Sotw)(nil)
)

// visit is where a request for host and path, on the listener whose route
// configuration is table, goes: the cluster of the first route that
// matches, as Envoy picks it (the virtual host whose domain matches the
// host exactly, else by the longest wildcard suffix, else "*"; then the
// first route whose path match holds; routes with header or query matches
// are passed over, as the request carries none). It says why when there is
// no cluster.
func visit(p proxy, table, host, path string) (string, error) {
	rc, _ := p.Resource(resourcev3.RouteType, table).(*routev3.RouteConfiguration)
	if rc == nil {
		return "", fmt.Errorf("no route configuration %s", table)
	}
	vh := virtualHost(rc, host)
	if vh == nil {
		return "", fmt.Errorf("no virtual host for %s in %s", host, table)
	}
	for _, r := range vh.GetRoutes() {
		m := r.GetMatch()
		if len(m.GetHeaders()) > 0 || len(m.GetQueryParameters()) > 0 || !pathMatches(m, path) {
			continue
		}
		if r.GetRoute() == nil {
			return "", fmt.Errorf("%s%s is answered directly (%v), not routed", host, path, r.GetAction())
		}
		if c := r.GetRoute().GetCluster(); c != "" {
			return c, nil
		}
		return "", fmt.Errorf("%s%s goes to weighted clusters %v", host, path, r.GetRoute().GetWeightedClusters())
	}
	return "", fmt.Errorf("no route of virtual host %s matches %s", vh.GetName(), path)
}

func virtualHost(rc *routev3.RouteConfiguration, host string) *routev3.VirtualHost {
	var best *routev3.VirtualHost
	bestLen := -1
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			switch {
			case d == host:
				return vh
			case strings.HasPrefix(d, "*.") && strings.HasSuffix(host, d[1:]) && len(d) > bestLen:
				best, bestLen = vh, len(d)
			case d == "*" && bestLen < 0:
				best, bestLen = vh, 0
			}
		}
	}
	return best
}

func pathMatches(m *routev3.RouteMatch, path string) bool {
	switch {
	case m.GetPath() != "":
		return path == m.GetPath()
	case m.GetPathSeparatedPrefix() != "":
		p := m.GetPathSeparatedPrefix()
		return path == p || strings.HasPrefix(path, p+"/")
	case m.GetSafeRegex() != nil:
		return false // not needed by the tests
	default:
		return strings.HasPrefix(path, m.GetPrefix())
	}
}

// endpoints are the addresses ("ip:port") a cluster sends requests to: its
// load assignment's, when the proxy holds the cluster and it is an EDS
// cluster; sorted.
func endpoints(p proxy, cluster string) ([]string, error) {
	c, _ := p.Resource(resourcev3.ClusterType, cluster).(*clusterv3.Cluster)
	if c == nil {
		return nil, fmt.Errorf("no cluster %s", cluster)
	}
	if c.GetType() != clusterv3.Cluster_EDS {
		return nil, fmt.Errorf("cluster %s is %v, not EDS", cluster, c.GetType())
	}
	name := c.GetEdsClusterConfig().GetServiceName()
	if name == "" {
		name = cluster
	}
	cla, _ := p.Resource(resourcev3.EndpointType, name).(*endpointv3.ClusterLoadAssignment)
	if cla == nil {
		return nil, fmt.Errorf("no load assignment %s", name)
	}
	out := xdstest.Addresses(cla)
	slices.Sort(out)
	return out, nil
}
