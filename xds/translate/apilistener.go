/*
Copyright The shardgate Authors.
*/

package translate

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/shardgate/shardgate/internal/ir"
)

// API listeners: what proxyless gRPC clients (grpc-go, grpc-java, gRPC
// C-core with an xDS bootstrap) read instead of Envoy's listeners. Such a
// client dials "xds:///<target>" and asks for the listener named <target>;
// the listener has no address and no filter chains, only an api_listener:
// the HttpConnectionManager of the Gateway's own listener, whose RDS names
// that listener's route configuration. Routes, clusters, load assignments
// and secrets are the Gateway's translation, the same for Envoy and gRPC.
//
// Naming, for every exact hostname H that a virtual host of an HTTP listener
// or of an HTTPS listener's TLS server serves (wildcard hosts and the
// catch-all "*" have none: a client cannot dial a wildcard):
//   - "H": the route table of the plaintext HTTP listener with the lowest
//     port that serves H, or, if none does, of the first TLS server (lowest
//     port, most specific SNI first) that serves H;
//   - "H:P": the route table of port P's listener (for an HTTPS port, its
//     first TLS server) that serves H.
//
// gRPC matches a virtual host by the channel's authority, which is the
// target: "xds:///H" matches H's virtual host; a client of "xds:///H:P"
// sets its authority to H (grpc.WithAuthority in grpc-go), since the virtual
// hosts name hosts without ports.

// APIRoutes are the API listeners of one route table: the route
// configuration of an HTTP listener or of an HTTPS listener's TLS server,
// the HttpConnectionManager its API listeners carry, and their names,
// sorted.
type APIRoutes struct {
	RouteConfig string
	HCM         *anypb.Any
	Names       []string
}

// APIListenerRoutes returns gw's API listeners grouped by route table, in
// listener order. It is pure and costs one HttpConnectionManager
// serialization per route table; APIListener makes the listeners.
func APIListenerRoutes(gw *ir.Gateway) []APIRoutes {
	type table struct {
		rc    string
		port  int32
		plain bool
		hosts []string
	}
	var tables []table
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		switch l.Protocol {
		case ir.ProtocolHTTP:
			tables = append(tables, table{rc: l.Name, port: l.Port, plain: true, hosts: exactHosts(l.VirtualHosts)})
		case ir.ProtocolHTTPS:
			for j := range l.TLSServers {
				s := &l.TLSServers[j]
				tables = append(tables, table{rc: l.Name + "/" + s.Name, port: l.Port, hosts: exactHosts(s.VirtualHosts)})
			}
		}
	}
	// The table "H" names: plaintext first, then by port; a stable sort
	// keeps a port's TLS servers in their order (most specific first).
	order := make([]int, len(tables))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ta, tb := tables[a], tables[b]
		if ta.plain != tb.plain {
			if ta.plain {
				return -1
			}
			return 1
		}
		return cmp.Compare(ta.port, tb.port)
	})
	// A name is taken by the first table in that order; with one table
	// (the common shard: one HTTP port) nothing is taken twice, since a
	// table's virtual host names are distinct.
	var bare, ported map[string]bool // "H", "H:P" taken
	if len(tables) > 1 {
		bare, ported = map[string]bool{}, map[string]bool{}
	}
	names := make([][]string, len(tables))
	for _, i := range order {
		t := tables[i]
		port := ":" + strconv.Itoa(int(t.port))
		names[i] = make([]string, 0, 2*len(t.hosts))
		for _, h := range t.hosts {
			if bare == nil || !bare[h] {
				if bare != nil {
					bare[h] = true
				}
				names[i] = append(names[i], h)
			}
			if hp := h + port; ported == nil || !ported[hp] {
				if ported != nil {
					ported[hp] = true
				}
				names[i] = append(names[i], hp)
			}
		}
	}
	traffic := ir.TrafficOf(gw)
	var out []APIRoutes
	for i, t := range tables {
		if len(names[i]) == 0 {
			continue
		}
		slices.Sort(names[i])
		// The HttpConnectionManager of the Gateway's listener for this
		// port, as Envoy gets it (stat prefix: the listener name).
		statPrefix, _, _ := strings.Cut(t.rc, "/")
		hcm := httpConnectionManager(statPrefix, t.rc, traffic).GetTypedConfig()
		out = append(out, APIRoutes{RouteConfig: t.rc, HCM: hcm, Names: names[i]})
	}
	return out
}

// APIListenerDigest is a digest of everything gw's API listeners are made
// of (APIListenerRoutes): the HTTP listeners' and HTTPS TLS servers' route
// tables, ports and virtual host names, in order, and the Gateway's traffic
// settings, which shape the HttpConnectionManager. Two IRs with the same
// digest have the same API listeners, so a caller that keeps them skips
// making them again; it costs a hash of the names, with no allocation per
// virtual host.
func APIListenerDigest(gw *ir.Gateway) Digest {
	h := sha256.New()
	buf := make([]byte, 0, 8<<10)
	flush := func() {
		if len(buf) > 7<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	table := func(kind byte, rc string, port int32, vhs []*ir.VirtualHost) {
		buf = append(buf, kind)
		buf = strconv.AppendInt(buf, int64(port), 10)
		buf = append(buf, 0)
		buf = append(buf, rc...)
		buf = append(buf, 0)
		for _, v := range vhs {
			buf = append(append(buf, v.Name...), 0)
			flush()
		}
		buf = append(buf, 1) // the table's end
	}
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		switch l.Protocol {
		case ir.ProtocolHTTP:
			table('h', l.Name, l.Port, l.VirtualHosts)
		case ir.ProtocolHTTPS:
			for j := range l.TLSServers {
				table('s', l.Name+"/"+l.TLSServers[j].Name, l.Port, l.TLSServers[j].VirtualHosts)
			}
		}
	}
	h.Write(buf)
	// The HttpConnectionManager but for its names (covered above).
	h.Write([]byte{'t'})
	h.Write(httpConnectionManager("", "", ir.TrafficOf(gw)).GetTypedConfig().GetValue())
	var d Digest
	h.Sum(d[:0])
	return d
}

// exactHosts are the virtual hosts' names that are neither wildcards nor
// the catch-all.
func exactHosts(vhs []*ir.VirtualHost) []string {
	var out []string
	for _, v := range vhs {
		if v.Name == "" || v.Name == "*" || strings.HasPrefix(v.Name, "*.") {
			continue
		}
		out = append(out, v.Name)
	}
	return out
}

// APIListener is the API listener name with the given HttpConnectionManager
// (APIRoutes.HCM, which it shares, never modifies).
func APIListener(name string, hcm *anypb.Any) *listenerv3.Listener {
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}
}

// APIListeners returns every API listener of gw, sorted by name.
func APIListeners(gw *ir.Gateway) []*listenerv3.Listener {
	var out []*listenerv3.Listener
	for _, r := range APIListenerRoutes(gw) {
		for _, n := range r.Names {
			out = append(out, APIListener(n, r.HCM))
		}
	}
	slices.SortFunc(out, func(a, b *listenerv3.Listener) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// ValidateAPIListener checks one API listener as Validate checks every
// listener: its ValidateAll and that of its HttpConnectionManager, and that
// the route configuration it names is among routes.
func ValidateAPIListener(l *listenerv3.Listener, routes map[string]bool) error {
	if l.GetApiListener() == nil {
		return fmt.Errorf("listener %q: not an API listener", l.GetName())
	}
	var errs []error
	if err := ValidateMessage(l); err != nil {
		errs = append(errs, fmt.Errorf("listener %q: %w", l.GetName(), err))
	}
	errs = append(errs, ListenerReferences(l, nil, routes, nil)...)
	return errors.Join(errs...)
}
