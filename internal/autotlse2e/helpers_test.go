package autotlse2e_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/internal/testcert"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/xdstest"
)

// ------------------------------------------------------------ recording

// recorder keeps every version of every object a watch reported, over the
// whole run, so that a test can assert what never existed (not only what
// does not exist now) and what existed only for a while.
type recorder struct {
	mu       sync.Mutex
	versions map[string][]client.Object // "namespace/name" → every version, in order
	deleted  map[string]bool
}

// record watches list in every namespace until the suite ends.
func record(ctx context.Context, wc client.WithWatch, list client.ObjectList) *recorder {
	GinkgoHelper()
	w, err := wc.Watch(ctx, list)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	r := &recorder{versions: map[string][]client.Object{}, deleted: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			k := o.GetNamespace() + "/" + o.GetName()
			r.mu.Lock()
			r.versions[k] = append(r.versions[k], o)
			if ev.Type == watch.Deleted {
				r.deleted[k] = true
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// keys lists every object seen, as "namespace/name".
func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.versions))
	for k := range r.versions {
		out = append(out, k)
	}
	return out
}

// all returns every version of every object seen.
func (r *recorder) all() map[string][]client.Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]client.Object, len(r.versions))
	for k, v := range r.versions {
		out[k] = append([]client.Object(nil), v...)
	}
	return out
}

func (r *recorder) wasDeleted(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleted[key]
}

// lockedBuffer is a bytes.Buffer one goroutine writes and another reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ------------------------------------------------------------ what the shard is served

// served is what the xDS client holds at one moment.
type served struct {
	listeners map[string]*listenerv3.Listener
	routes    map[string]*routev3.RouteConfiguration
	secrets   map[string]*tlsv3.Secret
}

func held(d *xdstest.Delta) served {
	s := served{listeners: map[string]*listenerv3.Listener{}, routes: map[string]*routev3.RouteConfiguration{}, secrets: map[string]*tlsv3.Secret{}}
	for _, n := range d.Names(resourcev3.ListenerType) {
		if l, ok := d.Resource(resourcev3.ListenerType, n).(*listenerv3.Listener); ok {
			s.listeners[n] = l
		}
	}
	for _, n := range d.Names(resourcev3.RouteType) {
		if rc, ok := d.Resource(resourcev3.RouteType, n).(*routev3.RouteConfiguration); ok {
			s.routes[n] = rc
		}
	}
	for _, n := range d.Names(resourcev3.SecretType) {
		if sec, ok := d.Resource(resourcev3.SecretType, n).(*tlsv3.Secret); ok {
			s.secrets[n] = sec
		}
	}
	return s
}

func port(l *listenerv3.Listener) uint32 { return l.GetAddress().GetSocketAddress().GetPortValue() }

// chainsFor returns the filter chains of the listeners on port p whose SNI
// match names host.
func (s served) chainsFor(p uint32, host string) []*listenerv3.FilterChain {
	var out []*listenerv3.FilterChain
	for _, l := range s.listeners {
		if port(l) != p {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			for _, n := range fc.GetFilterChainMatch().GetServerNames() {
				if n == host {
					out = append(out, fc)
					break
				}
			}
		}
	}
	return out
}

// sdsNames are the names of the certificates a chain's downstream TLS
// context fetches by SDS.
func sdsNames(fc *listenerv3.FilterChain) []string {
	ts := fc.GetTransportSocket()
	if ts == nil {
		return nil
	}
	var ctx tlsv3.DownstreamTlsContext
	if err := ts.GetTypedConfig().UnmarshalTo(&ctx); err != nil {
		return nil
	}
	var out []string
	for _, c := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
		out = append(out, c.GetName())
	}
	return out
}

// certChain is the PEM certificate chain of an SDS TLS certificate secret.
func certChain(s *tlsv3.Secret) []byte {
	return s.GetTlsCertificate().GetCertificateChain().GetInlineBytes()
}

// hcm is the HTTP connection manager of a chain, nil if it has none.
func hcm(fc *listenerv3.FilterChain) *hcmv3.HttpConnectionManager {
	for _, f := range fc.GetFilters() {
		var m hcmv3.HttpConnectionManager
		if f.GetTypedConfig() != nil && f.GetTypedConfig().UnmarshalTo(&m) == nil {
			return &m
		}
	}
	return nil
}

// vhost returns the virtual host that serves host on the plain HTTP
// listener on port p (through its RouteConfiguration), nil if none.
func (s served) vhost(p uint32, host string) *routev3.VirtualHost {
	for _, l := range s.listeners {
		if port(l) != p {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			m := hcm(fc)
			if m == nil {
				continue
			}
			rc := s.routes[m.GetRds().GetRouteConfigName()]
			for _, vh := range rc.GetVirtualHosts() {
				for _, d := range vh.GetDomains() {
					if d == host || d == fmt.Sprintf("%s:%d", host, p) {
						return vh
					}
				}
			}
		}
	}
	return nil
}

// firstRoute is the route of vh that answers a GET for path: Envoy takes
// the first route whose match fits. Only the path matters here (no
// header or query matches are used on these routes).
func firstRoute(vh *routev3.VirtualHost, path string) *routev3.Route {
	for _, r := range vh.GetRoutes() {
		m := r.GetMatch()
		if len(m.GetHeaders()) > 0 || len(m.GetQueryParameters()) > 0 {
			continue
		}
		switch {
		case m.GetPrefix() != "":
			if strings.HasPrefix(path, m.GetPrefix()) {
				return r
			}
		case m.GetPath() != "":
			if path == m.GetPath() {
				return r
			}
		case m.GetPathSeparatedPrefix() != "":
			p := m.GetPathSeparatedPrefix()
			if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
				return r
			}
		case m.GetSafeRegex() != nil:
			Fail(fmt.Sprintf("route %q has a regex match, which this test does not evaluate", r.GetName()))
		default:
			if m.GetPrefix() == "" && m.GetPathSpecifier() != nil {
				return r // prefix ""
			}
		}
	}
	return nil
}

// routeText describes a vhost's routes for failure messages.
func routeText(vh *routev3.VirtualHost) string {
	var b strings.Builder
	for _, r := range vh.GetRoutes() {
		fmt.Fprintf(&b, "%s\n", xdstest.Text(r))
	}
	return b.String()
}

// everRouteConfig calls f with every RouteConfiguration the client was
// ever sent.
func everRouteConfig(d *xdstest.Delta, f func(*routev3.RouteConfiguration)) {
	for _, resp := range d.Log() {
		if resp.TypeURL != resourcev3.RouteType {
			continue
		}
		for _, m := range resp.Resources {
			if rc, ok := m.(*routev3.RouteConfiguration); ok {
				f(rc)
			}
		}
	}
}

// everListener calls f with every Listener the client was ever sent.
func everListener(d *xdstest.Delta, f func(*listenerv3.Listener)) {
	for _, resp := range d.Log() {
		if resp.TypeURL != resourcev3.ListenerType {
			continue
		}
		for _, m := range resp.Resources {
			if l, ok := m.(*listenerv3.Listener); ok {
				f(l)
			}
		}
	}
}

// everSecret calls f with every Secret the client was ever sent.
func everSecret(d *xdstest.Delta, f func(name string, s *tlsv3.Secret)) {
	for _, resp := range d.Log() {
		if resp.TypeURL != resourcev3.SecretType {
			continue
		}
		for n, m := range resp.Resources {
			if s, ok := m.(*tlsv3.Secret); ok {
				f(n, s)
			}
		}
	}
}

// vhostsFor returns the virtual hosts of rc for host.
func vhostsFor(rc *routev3.RouteConfiguration, host string) []*routev3.VirtualHost {
	var out []*routev3.VirtualHost
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			if d == host || strings.HasPrefix(d, host+":") {
				out = append(out, vh)
				break
			}
		}
	}
	return out
}

// clustersOf lists the clusters every route of vh sends to.
func clustersOf(vh *routev3.VirtualHost) []string {
	rc := &routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{proto.Clone(vh).(*routev3.VirtualHost)}}
	return xdstest.RouteClusters(rc)
}

// ------------------------------------------------------------ certificates and objects

// selfSigned makes a self-signed ECDSA certificate for names, as PEM.
func selfSigned(names ...string) (certPEM, keyPEM []byte) {
	GinkgoHelper()
	crt, key, err := testcert.SelfSigned(names...)
	Expect(err).NotTo(HaveOccurred())
	return crt, key
}

// leaf parses the first certificate of a PEM chain.
func leaf(chain []byte) *x509.Certificate {
	GinkgoHelper()
	block, _ := pem.Decode(chain)
	Expect(block).NotTo(BeNil(), "no PEM block in %q", chain)
	c, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// writeConfig writes the controller config with a block list and Akash
// mode on; the manager picks a change of the block list up without a
// restart.
func writeConfig(path string, blocked ...string) {
	GinkgoHelper()
	var b bytes.Buffer
	// Akash mode too: ProviderHosts are the other kind of holder.
	b.WriteString("akash:\n  enabled: true\n  apiAddress: \"0\"\n")
	// A failed issuance is tried again after seconds, not the production
	// hour: an ACME error the local Pebble returns once (the harness runs
	// beside other suites on a loaded machine) is then retried by
	// shardgate's own backoff inside a spec's wait, as in production.
	b.WriteString("certificates:\n  backoff: 2s\n  maxBackoff: 10s\n")
	b.WriteString("blockedHostnames:\n")
	for _, h := range blocked {
		fmt.Fprintf(&b, "  - %q\n", h)
	}
	tmp := path + ".tmp"
	Expect(os.WriteFile(tmp, b.Bytes(), 0o644)).To(Succeed())
	Expect(os.Rename(tmp, path)).To(Succeed())
}

// condition returns the status/reason of the condition typ in a list of
// unstructured conditions, "" if absent.
func condition(u *unstructured.Unstructured, typ string, fields ...string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, fields...)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return fmt.Sprintf("%v/%v", m["status"], m["reason"])
		}
	}
	return ""
}

// ------------------------------------------------------------ diagnosis

// acmeKinds are cert-manager's objects of one issuance, in its order.
var acmeKinds = []metav1.GroupVersionKind{
	certificateGVK,
	{Group: "cert-manager.io", Version: "v1", Kind: "CertificateRequest"},
	{Group: "acme.cert-manager.io", Version: "v1", Kind: "Order"},
	{Group: "acme.cert-manager.io", Version: "v1", Kind: "Challenge"},
}

// diagnose writes, for a failed spec, the state of cert-manager's objects
// in every namespace (their conditions, state, reason and failure time;
// no certificate bodies) and the end of cert-manager's and Pebble's logs:
// an issuance that stalls is otherwise a bare timeout.
func diagnose(ctx context.Context, c client.Client, env *testenv.Env) {
	w := GinkgoWriter
	for _, gvk := range acmeKinds {
		list := listOf(gvk)
		if err := c.List(ctx, list); err != nil {
			fmt.Fprintf(w, "diagnosis: list %s: %v\n", gvk.Kind, err)
			continue
		}
		for _, u := range list.Items {
			status, _ := u.Object["status"].(map[string]any)
			brief := map[string]any{}
			for _, k := range []string{"conditions", "state", "reason", "lastFailureTime", "failedIssuanceAttempts", "failureTime", "presented", "processing"} {
				if v, ok := status[k]; ok {
					brief[k] = v
				}
			}
			b, _ := json.Marshal(brief)
			fmt.Fprintf(w, "diagnosis: %s %s/%s created %s: %s\n", gvk.Kind, u.GetNamespace(), u.GetName(),
				u.GetCreationTimestamp().UTC().Format(time.RFC3339), b)
		}
	}
	for _, p := range env.Processes() {
		if p.Name == "cert-manager-controller" || p.Name == "pebble" {
			fmt.Fprintf(w, "diagnosis: the end of %s's log:\n%s\n", p.Name, p.Tail(80))
		}
	}
}
