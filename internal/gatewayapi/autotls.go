/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"crypto/tls"
	"net/http"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/ir"
)

// Automatic HTTPS on shards (GatewayParameters spec.shard.tls): each name a
// generated route holds on the shard outside the shard's domain is served
// on port 443 by a listener of its own, made here, as soon as its Secret
// (autotls.SecretName, in the route's namespace) holds a certificate for
// exactly that name. The listener is internal: it takes part in route
// attachment, listener isolation, misdirected-request handling and the IR
// like any HTTPS listener, but never in the Gateway's status.

const (
	// autoTLSPort is the port the per-name HTTPS servers are served on.
	autoTLSPort = 443
	// autoTLSPrefix starts the IR name of a per-name TLS server
	// ("auto-tls/<host>"): no Gateway listener name has a '/'.
	autoTLSPrefix = "auto-tls/"
	// acmeChallengePrefix is the path every HTTP-01 challenge is under.
	acmeChallengePrefix = "/.well-known/acme-challenge/"
)

// shardTLS returns gw's automatic HTTPS settings and its shard domain
// (lowercased); nil when gw is not a shard with spec.shard.tls, or no
// Ownership says it is a shard.
func (idx *Index) shardTLS(gw *gatewayv1.Gateway) (*shardgatev1alpha1.ShardTLS, string) {
	if idx.ownership == nil {
		return nil, ""
	}
	if _, shard := idx.ownership.Shards[nn(gw.Namespace, gw.Name)]; !shard {
		return nil, ""
	}
	p := idx.gatewayParams(gw)
	if p == nil || p.Spec.Shard == nil || p.Spec.Shard.TLS == nil {
		return nil, ""
	}
	return p.Spec.Shard.TLS, strings.ToLower(strings.TrimSuffix(p.Spec.Shard.Domain, "."))
}

// underDomain: h is the shard's domain or a name below it, which the
// shard's own HTTPS listener serves with its wildcard certificate.
func underDomain(h, domain string) bool {
	return domain != "" && (h == domain || strings.HasSuffix(h, "."+domain))
}

// autoTLSCandidates calls f with each name cr (a route naming shard gw)
// would have served on 443: a name its LeaseHost holds on gw, that it
// lists, outside the shard's domain, whose Secret in cr's namespace is a
// valid TLS Secret for exactly that name.
func (idx *Index) autoTLSCandidates(gwKey types.NamespacedName, domain string, cr *compiledRoute, f func(host string, secret types.NamespacedName, s *corev1.Secret)) {
	if cr == nil {
		return
	}
	g, ok := idx.ownership.generatedOn(gwKey, cr)
	if !ok {
		return
	}
	for _, h := range g.Hosts[gwKey] {
		h = strings.ToLower(h)
		if h == "" || isWildcard(h) || underDomain(h, domain) || !slices.Contains(cr.hostnames, h) {
			continue
		}
		k := nn(cr.key.NN.Namespace, autotls.SecretName(h))
		s := idx.secrets[k]
		if s == nil || !idx.certFor(k, s, h) {
			continue
		}
		f(h, k, s)
	}
}

// autoTLSHostsOf lists the names cr would have served on 443 on gw (see
// autoTLSCandidates), sorted; nil when gw has no automatic HTTPS.
func (idx *Index) autoTLSHostsOf(gw *gatewayv1.Gateway, cr *compiledRoute) []string {
	t, domain := idx.shardTLS(gw)
	if t == nil {
		return nil
	}
	var out []string
	idx.autoTLSCandidates(nn(gw.Namespace, gw.Name), domain, cr, func(h string, _ types.NamespacedName, _ *corev1.Secret) {
		out = append(out, h)
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// autoTLSListeners makes the per-name HTTPS listeners of shard gw from the
// routes naming it (crs), given its real listeners (those of the Gateway
// and its ListenerSets, already validated). Port 443 rules: when a real
// listener on 443 speaks anything but HTTPS, no name is served (the port
// is taken); a name a real listener on 443 has as its hostname is left to
// that listener. One name is served once: by the generated route first in
// route order when two hold it. The certificates are added to secrets.
func (idx *Index) autoTLSListeners(gw *gatewayv1.Gateway, real []*listenerState, crs []*compiledRoute, secrets map[string]*ir.Secret) []*listenerState {
	t, domain := idx.shardTLS(gw)
	if t == nil {
		return nil
	}
	taken := map[string]bool{}
	for _, l := range real {
		if l.port != autoTLSPort {
			continue
		}
		if l.proto != ir.ProtocolHTTPS {
			return nil
		}
		taken[l.hostname] = true
	}
	type cand struct {
		host   string
		route  RouteKey
		secret types.NamespacedName
		s      *corev1.Secret
	}
	var cands []cand
	gwKey := nn(gw.Namespace, gw.Name)
	for _, cr := range crs {
		idx.autoTLSCandidates(gwKey, domain, cr, func(h string, k types.NamespacedName, s *corev1.Secret) {
			if !taken[h] {
				cands = append(cands, cand{host: h, route: cr.key, secret: k, s: s})
			}
		})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := strings.Compare(a.host, b.host); c != 0 {
			return c
		}
		if routeKeyLess(a.route, b.route) {
			return -1
		}
		if routeKeyLess(b.route, a.route) {
			return 1
		}
		return 0
	})
	kinds := kindsForProtocol(ir.ProtocolHTTPS)
	out := make([]*listenerState, 0, len(cands))
	for i, c := range cands {
		if i > 0 && cands[i-1].host == c.host {
			continue
		}
		name := c.secret.Namespace + "/" + c.secret.Name
		if _, ok := secrets[name]; !ok {
			secrets[name] = &ir.Secret{Name: name, Cert: c.s.Data[corev1.TLSCertKey], Key: c.s.Data[corev1.TLSPrivateKeyKey]}
		}
		l := &listenerState{
			name:     autoTLSPrefix + c.host,
			irName:   autoTLSPrefix + c.host,
			ns:       gw.Namespace,
			port:     autoTLSPort,
			hostname: c.host,
			proto:    ir.ProtocolHTTPS,
			accepted: true,
			nsFrom:   gatewayv1.NamespacesFromAll,
			certs:    []ir.SecretRef{{Name: name}},
			attached: map[RouteKey]*attachment{},
			auto:     true,
			autoFor:  c.route,
		}
		for _, k := range kinds {
			l.kinds = append(l.kinds, routeGroupKind(k))
		}
		out = append(out, l)
	}
	return out
}

// autoTLSNarrowed returns the listeners cr may match: when listeners end
// with per-name listeners (sorted by name, as autoTLSListeners makes them)
// and every hostname of cr is a plain name, the real listeners and the
// per-name listeners of those names only, found by binary search; else
// listeners. A per-name listener matches nothing else (its hostname is
// exact), so the result is the same as walking them all, at the cost of
// the route's names, not of the shard's.
func autoTLSNarrowed(listeners []*listenerState, cr *compiledRoute) []*listenerState {
	n := len(listeners)
	if n == 0 || !listeners[n-1].auto || !specificHosts(cr) {
		return listeners
	}
	first := sort.Search(n, func(i int) bool { return listeners[i].auto })
	autos := listeners[first:]
	out := listeners[:first:first]
	for _, h := range cr.hostnames {
		if i, ok := slices.BinarySearchFunc(autos, h, func(l *listenerState, h string) int { return strings.Compare(l.hostname, h) }); ok &&
			!slices.Contains(out[first:], autos[i]) {
			out = append(out, autos[i])
		}
	}
	return out
}

// realListenerAllows says whether a real (not per-name) listener among
// listeners that routes may attach to allows cr's kind and namespace: a
// per-name listener takes a route only then, so it never widens what the
// provider's listeners admit (allowedRoutes).
func (idx *Index) realListenerAllows(listeners []*listenerState, cr *compiledRoute) bool {
	for _, l := range listeners {
		if !l.auto && l.accepted && l.allowsKind(cr.key.Kind) && idx.allowsNamespace(l, cr.key.NN.Namespace) {
			return true
		}
	}
	return false
}

// autoTLSHostsIn lists the names of the per-name listeners among ls made
// for route cr (its last compilation; nil: none), sorted. Such a listener
// has one of cr's hostnames, and ls ends with the per-name listeners sorted
// by name: each is found by binary search.
func autoTLSHostsIn(ls []*listenerState, cr *compiledRoute) []string {
	n := len(ls)
	if cr == nil || n == 0 || !ls[n-1].auto {
		return nil
	}
	autos := ls[sort.Search(n, func(i int) bool { return ls[i].auto }):]
	var out []string
	for _, h := range cr.hostnames {
		if i, ok := slices.BinarySearchFunc(autos, h, func(l *listenerState, h string) int { return strings.Compare(l.hostname, h) }); ok &&
			autos[i].autoFor == cr.key {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// certEntry is a Secret's certificate check: whether it is a valid TLS
// Secret, and the DNS names of its leaf certificate.
type certEntry struct {
	secret *corev1.Secret // the object checked: a new version is checked again
	names  []string       // lowercased; nil when the Secret is not valid
}

// certFor says whether Secret k (s) is a valid TLS Secret (tlsSecretProblem)
// whose leaf certificate lists host itself among its DNS names (a wildcard
// name covering it does not count: the certificate is for exactly that
// name). Checks are kept in idx.certs per Secret object, so a Secret that
// did not change is parsed once.
func (idx *Index) certFor(k types.NamespacedName, s *corev1.Secret, host string) bool {
	if idx.certs == nil {
		idx.certs = map[types.NamespacedName]*certEntry{}
	}
	e := idx.certs[k]
	if e == nil || e.secret != s {
		e = &certEntry{secret: s, names: certNames(s)}
		idx.certs[k] = e
	}
	return slices.Contains(e.names, host)
}

// certNames returns the DNS names of the leaf certificate of s, lowercased,
// or nil when s cannot serve as a certificate.
func certNames(s *corev1.Secret) []string {
	if tlsSecretProblem(s) != "" {
		return nil
	}
	c, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil || c.Leaf == nil {
		return nil
	}
	names := make([]string, 0, len(c.Leaf.DNSNames))
	for _, n := range c.Leaf.DNSNames {
		names = append(names, strings.ToLower(n))
	}
	if len(names) == 0 {
		return []string{} // valid, but for no name
	}
	return names
}

// autoRedirect says which names an HTTP port of gw answers with a redirect
// to HTTPS (spec.shard.tls.redirectHTTP): those served by a per-name
// listener. nil when none.
type autoRedirect struct {
	gw    types.NamespacedName
	hosts map[string]bool
}

func (idx *Index) autoRedirectOf(gw *gatewayv1.Gateway, listeners []*listenerState) *autoRedirect {
	t, _ := idx.shardTLS(gw)
	if t == nil || !t.RedirectHTTP {
		return nil
	}
	var r *autoRedirect
	for _, l := range listeners {
		if !l.auto || !l.served() {
			continue
		}
		if r == nil {
			r = &autoRedirect{gw: nn(gw.Namespace, gw.Name), hosts: map[string]bool{}}
		}
		r.hosts[l.hostname] = true
	}
	return r
}

// apply makes vh, the virtual host of a redirected name on an HTTP port,
// answer 301 to https://<host><path> for every request but those under
// /.well-known/acme-challenge/, which are answered as without the
// redirect: the routes whose path match lies under that prefix (the ACME
// HTTP-01 solver routes) are kept first, then each route whose
// PathPrefix covers the prefix is kept once more, matching only under it
// (challengeCopy), and a catch-all redirect comes last.
func (r *autoRedirect) apply(vh *ir.VirtualHost, host string) {
	if r == nil || !r.hosts[host] {
		return
	}
	kept := make([]ir.Route, 0, 2)
	for i := range vh.Routes {
		if underChallenge(vh.Routes[i].Match.Path) {
			kept = append(kept, vh.Routes[i])
		}
	}
	for i := range vh.Routes {
		if c, ok := challengeCopy(&vh.Routes[i]); ok {
			kept = append(kept, c)
		}
	}
	vh.Routes = append(kept, ir.Route{
		Name:     "auto-tls-redirect/" + host,
		Match:    ir.Match{Path: &ir.PathMatch{Type: ir.MatchPathPrefix, Value: "/"}},
		Redirect: &ir.Redirect{Scheme: "https", Port: autoTLSPort, StatusCode: http.StatusMovedPermanently},
		Source:   ir.Source{Kind: kindGateway, Namespace: r.gw.Namespace, Name: r.gw.Name},
	})
}

// challengeCopy is rt narrowed to the paths under
// /.well-known/acme-challenge/, when rt is not already under it and its
// PathPrefix match covers the whole prefix ("/", "/.well-known", ...), so
// that the challenge paths keep reaching what they reached without the
// redirect. A route that rewrites or redirects its matched prefix
// (ReplacePrefixMatch) is not copied: narrowing the match would change
// what it does, so those paths are redirected instead.
func challengeCopy(rt *ir.Route) (ir.Route, bool) {
	p := rt.Match.Path
	if p == nil || p.Type != ir.MatchPathPrefix || underChallenge(p) || !prefixCovers(p.Value, acmeChallengePrefix) {
		return ir.Route{}, false
	}
	if (rt.Rewrite != nil && rt.Rewrite.Path != nil && rt.Rewrite.Path.Type == ir.ReplacePrefixMatch) ||
		(rt.Redirect != nil && rt.Redirect.Path != nil && rt.Redirect.Path.Type == ir.ReplacePrefixMatch) {
		return ir.Route{}, false
	}
	c := *rt
	c.Name = rt.Name + "/acme-challenge"
	c.Match.Path = &ir.PathMatch{Type: ir.MatchPathPrefix, Value: acmeChallengePrefix}
	return c, true
}

// prefixCovers: a PathPrefix match of value v matches every path under
// prefix (which ends in '/'): v is "/" or a whole-segment prefix of it.
func prefixCovers(v, prefix string) bool {
	v = strings.TrimSuffix(v, "/")
	return v == "" || (strings.HasPrefix(prefix, v) && prefix[len(v)] == '/')
}

// underChallenge: the path match p matches only paths under
// /.well-known/acme-challenge/ (an Exact or PathPrefix match there).
func underChallenge(p *ir.PathMatch) bool {
	return p != nil && (p.Type == ir.MatchExact || p.Type == ir.MatchPathPrefix) &&
		strings.HasPrefix(p.Value, acmeChallengePrefix)
}

// acmeSolverShape says whether an HTTPRoute has the shape of cert-manager's
// HTTP-01 solver route: hostnames, and rules that each have matches, only
// Exact or PathPrefix path matches under /.well-known/acme-challenge/, and
// no filters (on the rule or its backends).
func acmeSolverShape(r *gatewayv1.HTTPRoute) bool {
	if len(r.Spec.Hostnames) == 0 || len(r.Spec.Rules) == 0 {
		return false
	}
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		if len(rule.Matches) == 0 || len(rule.Filters) > 0 {
			return false
		}
		for _, b := range rule.BackendRefs {
			if len(b.Filters) > 0 {
				return false
			}
		}
		for _, m := range rule.Matches {
			if m.Path == nil || m.Path.Value == nil || m.Path.Type == nil {
				return false
			}
			t := ir.MatchType(*m.Path.Type)
			if t != ir.MatchExact && t != ir.MatchPathPrefix {
				return false
			}
			if !underChallenge(&ir.PathMatch{Type: t, Value: *m.Path.Value}) {
				return false
			}
		}
	}
	return true
}

// admitsSolver says whether cr, a route shardgate does not generate, is
// an ACME HTTP-01 solver route the shard gw admits: of the solver's
// shape (acmeSolverShape), and every hostname of it held on gw by a
// generated route of cr's own namespace (held answers that).
func (o *Ownership) admitsSolver(gw types.NamespacedName, cr *compiledRoute, held func(heldKey) bool) bool {
	if !cr.acmeSolver || len(cr.hostnames) == 0 {
		return false
	}
	ns := cr.key.NN.Namespace
	for _, h := range cr.hostnames {
		if !held(heldKey{gw: gw, ns: ns, host: h}) {
			return false
		}
	}
	return true
}

// heldKey is a name held on a shard by a generated route of a namespace.
type heldKey struct {
	gw       types.NamespacedName
	ns, host string
}

// heldIn says whether k's name is held on k's shard by a generated route
// of k's namespace. The set is made from the ownership facts the first
// time a translation asks (only solver-shaped routes do), at the cost of
// every name held, so each question after it is one lookup.
func (idx *Index) heldIn(k heldKey) bool {
	if idx.held == nil {
		idx.held = map[heldKey]bool{}
		if idx.ownership != nil {
			for r, g := range idx.ownership.Generated {
				for gw, hosts := range g.Hosts {
					for _, h := range hosts {
						idx.held[heldKey{gw: gw, ns: r.Namespace, host: h}] = true
					}
				}
			}
		}
	}
	return idx.held[k]
}
