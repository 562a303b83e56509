/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/ir"
)

// withMisdirected adds to hosts, the virtual hosts of HTTPS listener l's TLS
// server, one virtual host answering 421 (Misdirected Request) for each
// hostname the server must not answer although a client may send it there
// (GatewayHTTPSListenerDetectMisdirectedRequests).
//
// A client that holds a connection to the certificate SNI selected may
// reuse it for another hostname the certificate covers (HTTP/2 connection
// coalescing), or simply send a Host that differs from its SNI. A request
// whose Host is owned by another listener of the port (listener isolation:
// the most specific listener hostname covering it) is not this server's to
// answer, and neither is a Host outside l's hostname. So:
//
//   - every other served listener hostname of the port that l's hostname
//     covers (all of them for the catch-all listener) answers 421: Envoy
//     picks an exact domain, then the longest wildcard, before l's own
//     wildcard or catch-all virtual host;
//   - a listener with a hostname also answers 421 for any other host ("*").
//
// The catch-all listener keeps its own "*" virtual host: a Host no listener
// owns is its to serve (or answer 404). None of these domains can collide
// with a virtual host of l's routes: those are hostnames l owns.
func withMisdirected(hosts []*ir.VirtualHost, gw types.NamespacedName, port []*listenerState, l *listenerState) []*ir.VirtualHost {
	var names []string
	if hostnameRank(l.hostname) == 0 {
		// An exact hostname covers only itself: only "any other host"
		// (below). A shard with automatic HTTPS has one such listener
		// per name on its port.
		port = nil
	}
	for _, o := range port {
		if o == l || o.hostname == l.hostname || !hostnameCovers(l.hostname, o.hostname) {
			continue
		}
		names = append(names, o.hostname)
	}
	if l.hostname != "" {
		names = append(names, "")
	}
	if len(names) == 0 {
		return hosts
	}
	out := slices.Clone(hosts)
	for _, h := range names {
		d := domain(h)
		if slices.ContainsFunc(out, func(v *ir.VirtualHost) bool { return v.Name == d }) {
			continue
		}
		out = append(out, misdirectedHost(gw, l.name, d))
	}
	slices.SortFunc(out, func(a, b *ir.VirtualHost) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// misdirectedHost answers every request for domain d with 421. Its route
// comes from Gateway gw, not from any route.
func misdirectedHost(gw types.NamespacedName, listener, d string) *ir.VirtualHost {
	return &ir.VirtualHost{Name: d, Domains: []string{d}, Routes: []ir.Route{{
		Name:           "misdirected/" + listener + "/" + d,
		Match:          ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
		DirectResponse: &ir.DirectResponse{Status: http.StatusMisdirectedRequest},
		Source:         ir.Source{Kind: kindGateway, Namespace: gw.Namespace, Name: gw.Name},
	}}}
}
