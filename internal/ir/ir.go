/*
Copyright The shardgate Authors.
*/

package ir

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gateway is everything one Gateway's Envoy fleet serves.
type Gateway struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Listeners are sorted by Port; there is one per port.
	Listeners []Listener `json:"listeners,omitempty"`
	// Clusters are sorted by Name.
	Clusters []*Cluster `json:"clusters,omitempty"`
	// Secrets are sorted by Name.
	Secrets []Secret `json:"secrets,omitempty"`
	// Traffic is how every listener treats requests; nil is
	// DefaultTraffic.
	Traffic *Traffic `json:"traffic,omitempty"`
	// Change says what changed since an earlier IR of the same Gateway;
	// nil: anything may have. It describes the IR's history, not what to
	// serve: it is not serialized, and two IRs of the same input may
	// differ in it alone.
	Change *Change `json:"-"`
}

// Traffic is how a Gateway's proxies treat requests: the data-plane
// defaults a tenant's visitors get (GatewayParameters spec.traffic).
type Traffic struct {
	// IdleTimeout ends an HTTP request when no byte has flowed either way
	// for this long; 0 disables it. It applies to HTTPRoute rules that set
	// no idle timeout of their own (Route.IdleTimeout).
	IdleTimeout metav1.Duration `json:"idleTimeout"`
	// WebSocketsAll lets every HTTP route upgrade to a WebSocket; false
	// leaves it to the routes that ask (Route.WebSocket) and to WebSocket
	// clusters.
	WebSocketsAll bool `json:"webSocketsAll,omitempty"`
	// TrustedHops is the number of proxies in front whose X-Forwarded-For
	// entries are trusted.
	TrustedHops uint32 `json:"trustedHops,omitempty"`
	// ProxyProtocol: every listener expects the PROXY protocol.
	ProxyProtocol bool `json:"proxyProtocol,omitempty"`
	// AccessLog is the HTTP listeners' access log; nil writes none.
	AccessLog *AccessLog `json:"accessLog,omitempty"`
}

// AccessLog is an access log written to the proxy's standard output:
// JSON fields, or a text line format.
type AccessLog struct {
	// JSON maps field names to Envoy command operators; used when Text is
	// empty.
	JSON map[string]string `json:"json,omitempty"`
	// Text is a line format in Envoy command operators.
	Text string `json:"text,omitempty"`
}

// DefaultIdleTimeout is the idle timeout of a Gateway that sets none:
// ingress-nginx's proxy-read-timeout and proxy-send-timeout.
const DefaultIdleTimeout = 60 * time.Second

// DefaultAccessLogFields are the default JSON access log's fields.
func DefaultAccessLogFields() map[string]string {
	return map[string]string{
		"start_time":       "%START_TIME%",
		"client_address":   "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
		"x_forwarded_for":  "%REQ(X-FORWARDED-FOR)%",
		"method":           "%REQ(:METHOD)%",
		"host":             "%REQ(:AUTHORITY)%",
		"path":             "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
		"protocol":         "%PROTOCOL%",
		"status":           "%RESPONSE_CODE%",
		"response_flags":   "%RESPONSE_FLAGS%",
		"bytes_received":   "%BYTES_RECEIVED%",
		"bytes_sent":       "%BYTES_SENT%",
		"duration_ms":      "%DURATION%",
		"upstream_ms":      "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
		"upstream_cluster": "%UPSTREAM_CLUSTER%",
		"upstream_host":    "%UPSTREAM_HOST%",
		"route":            "%ROUTE_NAME%",
		"user_agent":       "%REQ(USER-AGENT)%",
		"request_id":       "%REQ(X-REQUEST-ID)%",
	}
}

// DefaultTraffic is what a Gateway without GatewayParameters
// spec.traffic gets: a 60 s idle timeout, WebSockets on every route, no
// trusted hops, no PROXY protocol, and the JSON access log.
func DefaultTraffic() *Traffic {
	return &Traffic{
		IdleTimeout:   metav1.Duration{Duration: DefaultIdleTimeout},
		WebSocketsAll: true,
		AccessLog:     &AccessLog{JSON: DefaultAccessLogFields()},
	}
}

// TrafficOf is gw's traffic settings, the defaults when it has none.
func TrafficOf(gw *Gateway) *Traffic {
	if gw == nil || gw.Traffic == nil {
		return DefaultTraffic()
	}
	return gw.Traffic
}

// Protocol is what a port speaks.
type Protocol string

const (
	// ProtocolHTTP is plaintext HTTP/1.1 and h2c; VirtualHosts apply.
	ProtocolHTTP Protocol = "HTTP"
	// ProtocolHTTPS terminates TLS selected by SNI; TLSServers apply.
	ProtocolHTTPS Protocol = "HTTPS"
	// ProtocolTLSPassthrough forwards TLS by SNI without terminating;
	// TLSRoutes apply.
	ProtocolTLSPassthrough Protocol = "TLSPassthrough"
	// ProtocolTLSTerminate terminates TLS selected by SNI and forwards the
	// plaintext stream as TCP; TLSRoutes apply and each carries its
	// Certificates.
	ProtocolTLSTerminate Protocol = "TLSTerminate"
	// ProtocolTLSMixed is a port with TLS listeners of both modes (the
	// TLSRouteModeMixed feature): TLSRoutes apply, selected by SNI; a
	// route with Certificates terminates TLS and forwards the plaintext
	// stream, a route without passes the TLS stream through.
	ProtocolTLSMixed Protocol = "TLSMixed"
	// ProtocolTCP forwards every connection of the port, as a raw stream,
	// to the backends of its one TCPRoute; with none, connections are
	// refused.
	ProtocolTCP Protocol = "TCP"
)

// Listener is one port.
type Listener struct {
	// Name is deterministic: "<protocol lowercased>-<port>".
	Name     string   `json:"name"`
	Port     int32    `json:"port"`
	Protocol Protocol `json:"protocol"`
	// Sources are the Gateway listener names merged into this port, sorted.
	Sources []string `json:"sources,omitempty"`
	// VirtualHosts (HTTP) are sorted by Name.
	VirtualHosts []*VirtualHost `json:"virtualHosts,omitempty"`
	// TLSServers (HTTPS) are sorted by SNI specificity: exact hostnames
	// first, then wildcards by decreasing length, then the catch-all (no
	// SNI) last.
	TLSServers []TLSServer `json:"tlsServers,omitempty"`
	// TLSRoutes (TLSPassthrough, TLSTerminate, TLSMixed) are ordered like
	// TLSServers.
	TLSRoutes []TLSRoute `json:"tlsRoutes,omitempty"`
	// TCPRoute (TCP) is the route the port serves; nil refuses every
	// connection.
	TCPRoute *TCPRoute `json:"tcpRoute,omitempty"`
}

// TCPRoute forwards every connection of a TCP port to weighted backends.
type TCPRoute struct {
	// Name is "<route ns>/<route name>".
	Name     string    `json:"name"`
	Backends []Backend `json:"backends,omitempty"`
	// InvalidWeight is the share of connections that must be refused
	// because its backends did not resolve.
	InvalidWeight uint32 `json:"invalidWeight,omitempty"`
	Source        Source `json:"source"`
}

// TLSServer is one HTTPS Gateway listener: a certificate set selected by SNI.
type TLSServer struct {
	// Name is the Gateway listener name.
	Name string `json:"name"`
	// SNI hostnames; empty means any (the listener has no hostname).
	SNI []string `json:"sni,omitempty"`
	// Certificates name entries of Gateway.Secrets, in listener order.
	Certificates []SecretRef `json:"certificates,omitempty"`
	// ClientValidation, when set, asks clients for a certificate and
	// validates it (Gateway spec.tls.frontend).
	ClientValidation *ClientValidation `json:"clientValidation,omitempty"`
	VirtualHosts     []*VirtualHost    `json:"virtualHosts,omitempty"`
}

// ClientValidation is frontend client certificate validation.
type ClientValidation struct {
	// CA names an entry of Gateway.Secrets holding the trusted CA bundle
	// (Secret.CA).
	CA SecretRef `json:"ca"`
	// InsecureFallback accepts connections without a client certificate or
	// with one that fails validation (mode AllowInsecureFallback); false
	// requires a valid one (AllowValidOnly).
	InsecureFallback bool `json:"insecureFallback,omitempty"`
}

// SecretRef names a Secret in Gateway.Secrets ("namespace/name").
type SecretRef struct {
	Name string `json:"name"`
}

// Secret is a TLS certificate and key, PEM encoded; or, when CA is set, a
// bundle of trusted CA certificates (PEM) that validates client
// certificates.
type Secret struct {
	Name string `json:"name"`
	Cert []byte `json:"cert,omitempty"`
	Key  []byte `json:"key,omitempty"`
	CA   []byte `json:"ca,omitempty"`
}

// TLSRoute forwards a TLS stream selected by SNI.
type TLSRoute struct {
	// Name is "<route ns>/<route name>/<rule index>/<sni>", unique within the
	// listener.
	Name string `json:"name"`
	// SNI is one hostname, possibly a wildcard ("*.example.com"); "" means
	// any SNI.
	SNI string `json:"sni,omitempty"`
	// Certificates are set for ProtocolTLSTerminate, and for the routes of
	// ProtocolTLSMixed that terminate (those of a Terminate listener).
	Certificates []SecretRef `json:"certificates,omitempty"`
	Backends     []Backend   `json:"backends,omitempty"`
	// InvalidWeight is the share of connections that must be refused because
	// its backends did not resolve.
	InvalidWeight uint32 `json:"invalidWeight,omitempty"`
	Source        Source `json:"source"`
}

// VirtualHost is one hostname (or wildcard) with its routes.
type VirtualHost struct {
	// Name is the domain it serves ("*" for any host).
	Name    string   `json:"name"`
	Domains []string `json:"domains"`
	// Routes are in Gateway API precedence order: the first that matches
	// wins. An empty list means every request gets 404 (listener isolation
	// keeps such hosts from falling through to a wildcard host).
	Routes []Route `json:"routes,omitempty"`
}

// Route is one (rule, match) pair of an HTTPRoute or GRPCRoute.
type Route struct {
	// Name is unique within the Gateway listener:
	// "<kind>/<ns>/<name>/rule/<i>/match/<j>".
	Name  string `json:"name"`
	Match Match  `json:"match"`
	// GRPC is true for GRPCRoute rules.
	GRPC bool `json:"grpc,omitempty"`

	// Exactly one of Backends (with InvalidWeight), Redirect and
	// DirectResponse decides the action.
	Backends []Backend `json:"backends,omitempty"`
	// InvalidWeight is the share, in the same units as Backends' weights, of
	// requests that must be answered with 500 because their backendRefs did
	// not resolve.
	InvalidWeight  uint32          `json:"invalidWeight,omitempty"`
	Redirect       *Redirect       `json:"redirect,omitempty"`
	DirectResponse *DirectResponse `json:"directResponse,omitempty"`

	RequestHeaders     *HeaderModifier     `json:"requestHeaders,omitempty"`
	ResponseHeaders    *HeaderModifier     `json:"responseHeaders,omitempty"`
	Rewrite            *Rewrite            `json:"rewrite,omitempty"`
	Mirrors            []Mirror            `json:"mirrors,omitempty"`
	CORS               *CORS               `json:"cors,omitempty"`
	Timeouts           *Timeouts           `json:"timeouts,omitempty"`
	Retry              *Retry              `json:"retry,omitempty"`
	SessionPersistence *SessionPersistence `json:"sessionPersistence,omitempty"`
	// MaxRequestBodyBytes limits the request body; a larger request is
	// answered 413. 0 means no limit.
	MaxRequestBodyBytes uint32 `json:"maxRequestBodyBytes,omitempty"`
	// IdleTimeout, when set, replaces the Gateway's Traffic.IdleTimeout
	// for this route (0 disables it).
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`
	// WebSocket: the route may upgrade to a WebSocket whatever the
	// Gateway's Traffic.WebSocketsAll says.
	WebSocket bool `json:"webSocket,omitempty"`

	Source Source `json:"source"`
}

// Source says which object and rule a Route came from.
type Source struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Rule      int    `json:"rule"`
	// RuleName is the rule's optional name.
	RuleName string `json:"ruleName,omitempty"`
}

// Match is ANDed: every set field must match.
type Match struct {
	Path        *PathMatch   `json:"path,omitempty"`
	Headers     []ValueMatch `json:"headers,omitempty"`
	QueryParams []ValueMatch `json:"queryParams,omitempty"`
	// Method is an HTTP method; "" matches any.
	Method string `json:"method,omitempty"`
}

// MatchType says how a value is compared.
type MatchType string

const (
	MatchExact             MatchType = "Exact"
	MatchPathPrefix        MatchType = "PathPrefix"
	MatchRegularExpression MatchType = "RegularExpression"
)

// PathMatch matches the request path. PathPrefix matches whole path
// segments: "/foo" matches "/foo" and "/foo/bar", not "/foobar".
type PathMatch struct {
	Type  MatchType `json:"type"`
	Value string    `json:"value"`
}

// ValueMatch matches a header (case-insensitive name) or a query parameter
// (case-sensitive name).
type ValueMatch struct {
	Name  string    `json:"name"`
	Type  MatchType `json:"type"`
	Value string    `json:"value"`
}

// Backend is one weighted cluster.
type Backend struct {
	// Cluster names an entry of Gateway.Clusters.
	Cluster string `json:"cluster"`
	Weight  uint32 `json:"weight"`
	// Per-backend filters (HTTPRoute backendRef filters).
	RequestHeaders  *HeaderModifier `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderModifier `json:"responseHeaders,omitempty"`
}

// DirectResponse answers without a backend.
type DirectResponse struct {
	Status int    `json:"status"`
	Body   string `json:"body,omitempty"`
}

// Redirect answers with a redirect.
type Redirect struct {
	// Scheme, Hostname: "" keeps the request's.
	Scheme   string `json:"scheme,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	// Port is always resolved by the translator per the spec (filter port,
	// else the scheme's well-known port when Scheme is set, else the
	// listener's port). The Location header must omit it when it is the
	// well-known port of the resulting scheme.
	Port       int32         `json:"port,omitempty"`
	Path       *PathModifier `json:"path,omitempty"`
	StatusCode int           `json:"statusCode"`
}

// PathModifierType is how a path is rewritten.
type PathModifierType string

const (
	ReplaceFullPath    PathModifierType = "ReplaceFullPath"
	ReplacePrefixMatch PathModifierType = "ReplacePrefixMatch"
)

// PathModifier rewrites the path. ReplacePrefixMatch replaces the matched
// PathPrefix (Route.Match.Path.Value) with Value.
type PathModifier struct {
	Type  PathModifierType `json:"type"`
	Value string           `json:"value"`
}

// Rewrite changes the request before it is forwarded.
type Rewrite struct {
	Hostname string        `json:"hostname,omitempty"`
	Path     *PathModifier `json:"path,omitempty"`
}

// HeaderModifier edits headers; applied in the order Set, Add, Remove.
type HeaderModifier struct {
	Set    []Header `json:"set,omitempty"`
	Add    []Header `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// Header is a name and value.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Mirror sends a copy of a fraction of requests to a cluster; the response
// is ignored.
type Mirror struct {
	Cluster     string `json:"cluster"`
	Numerator   int32  `json:"numerator"`
	Denominator int32  `json:"denominator"`
}

// CORS is the HTTPRoute CORS filter.
type CORS struct {
	AllowOrigins     []string `json:"allowOrigins,omitempty"`
	AllowCredentials bool     `json:"allowCredentials,omitempty"`
	AllowMethods     []string `json:"allowMethods,omitempty"`
	AllowHeaders     []string `json:"allowHeaders,omitempty"`
	ExposeHeaders    []string `json:"exposeHeaders,omitempty"`
	MaxAge           int32    `json:"maxAge,omitempty"`
}

// Timeouts are HTTPRoute rule timeouts. A zero duration disables the
// timeout; nil leaves the data plane's default. BackendRequest applies to
// each attempt when Retry is set; Request bounds the whole exchange.
type Timeouts struct {
	Request        *metav1.Duration `json:"request,omitempty"`
	BackendRequest *metav1.Duration `json:"backendRequest,omitempty"`
}

// Retry is the HTTPRoute rule retry policy.
type Retry struct {
	Codes    []int            `json:"codes,omitempty"`
	Attempts *int             `json:"attempts,omitempty"`
	Backoff  *metav1.Duration `json:"backoff,omitempty"`
	// IdempotentOnly retries only requests whose method is idempotent:
	// never a POST, PATCH or LOCK.
	IdempotentOnly bool `json:"idempotentOnly,omitempty"`
}

// SessionPersistence pins a client to a backend.
type SessionPersistence struct {
	// Type is "Cookie" or "Header".
	Type            string           `json:"type"`
	SessionName     string           `json:"sessionName,omitempty"`
	AbsoluteTimeout *metav1.Duration `json:"absoluteTimeout,omitempty"`
	// CookieLifetime is "Permanent" or "Session" (cookies only).
	CookieLifetime string `json:"cookieLifetime,omitempty"`
}

// ClusterProtocol is how the proxy talks to a backend.
type ClusterProtocol string

const (
	ClusterHTTP1 ClusterProtocol = "HTTP1"
	ClusterH2C   ClusterProtocol = "H2C"
	// ClusterTCP is a raw stream (TLSRoute and TCPRoute backends).
	ClusterTCP ClusterProtocol = "TCP"
)

// Cluster is one Service port.
type Cluster struct {
	// Name is "<namespace>/<service>/<port>".
	Name      string          `json:"name"`
	Protocol  ClusterProtocol `json:"protocol"`
	WebSocket bool            `json:"websocket,omitempty"`
	// Service is the Service port the cluster sends to: the IR names it
	// and nothing more. Its endpoints are xds/endpoints' own (a table of
	// EndpointSlices, and the load assignments built from it), so that an
	// EndpointSlice change never goes through a Gateway's translation.
	Service ServicePort `json:"service,omitzero"`
	// TLS, when set, makes the proxy speak TLS to the backend (a
	// BackendTLSPolicy applies to the Service port).
	TLS *UpstreamTLS `json:"tls,omitempty"`
}

// UpstreamTLS is how the proxy speaks TLS to a backend and verifies it.
type UpstreamTLS struct {
	// SNI is the server name sent; without SubjectAltNames it is also the
	// DNS name the certificate must carry.
	SNI string `json:"sni"`
	// CACertificates is the PEM bundle of trusted CAs, or empty with
	// SystemCAs.
	CACertificates string `json:"caCertificates,omitempty"`
	// SystemCAs trusts the proxy's system CA bundle.
	SystemCAs bool `json:"systemCAs,omitempty"`
	// SubjectAltNames, when set, replace SNI as the names the certificate
	// must carry (one of them).
	SubjectAltNames []SubjectAltName `json:"subjectAltNames,omitempty"`
	// Invalid: the policy cannot be honoured (no valid CA certificate);
	// every connection to the backend must fail.
	Invalid bool `json:"invalid,omitempty"`
	// ClientCertificate names the entry of Gateway.Secrets presented to
	// the backend ("" for none): the Gateway's spec.tls.backend
	// clientCertificateRef.
	ClientCertificate string `json:"clientCertificate,omitempty"`
}

// SubjectAltNameType is the kind of a subject alternative name.
type SubjectAltNameType string

const (
	SANHostname SubjectAltNameType = "Hostname"
	SANURI      SubjectAltNameType = "URI"
)

// SubjectAltName is one name a backend certificate may carry.
type SubjectAltName struct {
	Type  SubjectAltNameType `json:"type"`
	Value string             `json:"value"`
}

// ServicePort names a Service port: its endpoints are those of the
// Service's EndpointSlices' port of the same name.
type ServicePort struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Port is the Service port's name ("" for an unnamed port).
	Port string `json:"port,omitempty"`
}

// SameUpstreamTLS reports whether a and b are the same TLS settings.
func SameUpstreamTLS(a, b *UpstreamTLS) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.SNI != b.SNI || a.CACertificates != b.CACertificates || a.SystemCAs != b.SystemCAs ||
		a.Invalid != b.Invalid || a.ClientCertificate != b.ClientCertificate || len(a.SubjectAltNames) != len(b.SubjectAltNames) {
		return false
	}
	for i := range a.SubjectAltNames {
		if a.SubjectAltNames[i] != b.SubjectAltNames[i] {
			return false
		}
	}
	return true
}

// Change is what changed in one Gateway's IR since an earlier IR of the
// same Gateway, named as the consumer names what it builds: the virtual
// hosts (by listener, TLS server and name) and the clusters (by name).
// Its producer numbers every IR it hands over (Generation, unique in the
// process); a Change with Since set says that, compared with the IR
// numbered Since, only the named virtual hosts and clusters were added,
// removed or edited, and nothing else differs (listeners, TLS servers,
// secrets and traffic settings are the same). A consumer that did not
// build the IR numbered Since treats every part as changed; so it does
// with no Change, or a Change with Since zero.
type Change struct {
	// Generation numbers this IR (zero: not numbered). An IR handed over
	// again unchanged keeps its Generation.
	Generation uint64
	// Since is the Generation of the IR this one is compared with; zero:
	// anything may have changed.
	Since uint64
	// VirtualHosts are the virtual hosts added, removed or edited,
	// sorted (CompareVirtualHostRefs).
	VirtualHosts []VirtualHostRef
	// Clusters are the names of the clusters added, removed or edited,
	// sorted.
	Clusters []string
}

// VirtualHostRef names one virtual host of a Gateway's IR: the listener
// it is served on, its TLS server (the Gateway listener name; "" on an
// HTTP listener) and its name.
type VirtualHostRef struct {
	Listener, Server, Name string
}

// CompareVirtualHostRefs orders references by listener, TLS server, then
// name.
func CompareVirtualHostRefs(a, b VirtualHostRef) int {
	if c := strings.Compare(a.Listener, b.Listener); c != 0 {
		return c
	}
	if c := strings.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
