package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/tenancy"
)

// Defaults applied to keys that are absent, null or the empty string.
const (
	DefaultControllerName          = "shardgate.io/gateway-controller"
	DefaultXDSAddress              = ":18000"
	DefaultEnvoyImage              = "envoyproxy/envoy:v1.37.0"
	DefaultMetricsAddress          = ":8080"
	DefaultHealthAddress           = ":8081"
	DefaultLeaderElectionNamespace = "shardgate-system"
	DefaultLeaderElectionID        = "shardgate.io-leader"
	DefaultAkashNamespace          = "lease"
	DefaultAkashAPIAddress         = ":8086"
	DefaultAkashMetalLBPool        = "default"
)

// Config is the controller configuration file. The JSON/YAML keys are a
// public contract.
//
// A Config handed out by this package (Parse, Load, Watcher.Current,
// Watcher.Subscribe) may share its BlockedHostnames backing array with other
// holders: treat it as read-only, or DeepCopy it first.
type Config struct {
	// BlockedHostnames lists names that tenants may never claim. An entry
	// "example.com" blocks exactly that name; an entry ".example.com" blocks
	// example.com and every name below it. After Parse the entries are
	// lowercased, trimmed, without a trailing dot, deduplicated and sorted;
	// an empty list is nil.
	BlockedHostnames []string `json:"blockedHostnames,omitempty"`
	// ControllerName is the GatewayClass spec.controllerName this instance owns.
	ControllerName string `json:"controllerName"`
	// XDS is the xDS server.
	XDS XDSConfig `json:"xds"`
	// Envoy configures the provisioned Envoy data plane.
	Envoy EnvoyConfig `json:"envoy"`
	// MetricsAddress is the host:port of the metrics endpoint ("0" disables it).
	MetricsAddress string `json:"metricsAddress"`
	// HealthAddress is the host:port of the health probes ("0" disables them).
	HealthAddress string `json:"healthAddress"`
	// LeaderElection configures controller-runtime leader election.
	LeaderElection LeaderElectionConfig `json:"leaderElection"`
	// NamespaceOwnerAnnotation, when set, is an extra annotation (or label)
	// key on a Namespace naming the lease owner allowed to use it, read
	// after shardgate.io/owner. The shardgate.io/owner marking is always
	// read; this key only adds one.
	NamespaceOwnerAnnotation string `json:"namespaceOwnerAnnotation,omitempty"`
	// RequireNamespaceOwner: a namespace without an owner marking claims no
	// hostname (NamespaceOwnerMissing). Unset means true. False is for
	// single-tenant clusters only: an unmarked namespace may then claim
	// names for whatever owner its LeaseHosts name.
	RequireNamespaceOwner *bool `json:"requireNamespaceOwner,omitempty"`
	// ShardNamespaces, when not empty, are the only namespaces whose
	// Gateways may be shards. Empty allows any namespace that carries no
	// owner marking; a namespace with an owner marking never holds a shard.
	ShardNamespaces []string `json:"shardNamespaces,omitempty"`
	// Akash is the Akash drop-in mode.
	Akash AkashConfig `json:"akash"`
	// Shards configures every shard (a Gateway whose GatewayParameters
	// have a shard section).
	Shards ShardsConfig `json:"shards"`
	// Certificates paces the cert-manager Certificates shardgate writes
	// for shards with automatic HTTPS (GatewayParameters shard.tls).
	Certificates CertificatesConfig `json:"certificates"`
}

// CertificatesConfig are the ACME rate limits shardgate keeps to when it
// writes Certificates, and the backoff of names whose issuance failed.
// Absent, 0 or "" takes the default; negative values are invalid. Read at
// start.
type CertificatesConfig struct {
	// OrdersPerIssuer is the most new Certificates written per issuer
	// (ACME account) within OrdersWindow. Default 300 (Let's Encrypt's new
	// orders per account per 3 hours).
	OrdersPerIssuer int `json:"ordersPerIssuer,omitempty"`
	// OrdersWindow is a Go duration. Default "3h".
	OrdersWindow string `json:"ordersWindow,omitempty"`
	// CertificatesPerDomain is the most new Certificates written per
	// registered domain (public suffix plus one label) within DomainWindow.
	// Default 50 (Let's Encrypt's certificates per registered domain per
	// week).
	CertificatesPerDomain int `json:"certificatesPerDomain,omitempty"`
	// DomainWindow is a Go duration. Default "168h".
	DomainWindow string `json:"domainWindow,omitempty"`
	// Backoff is how long a name whose issuance failed waits before its
	// Certificate is written again, doubling with each further failure up
	// to MaxBackoff. Defaults "1h" and "24h".
	Backoff    string `json:"backoff,omitempty"`
	MaxBackoff string `json:"maxBackoff,omitempty"`
}

// Defaults of CertificatesConfig (autotls.DefaultLimits).
const (
	DefaultCertificateOrdersPerIssuer       = autotls.DefaultOrders
	DefaultCertificateOrdersWindow          = "3h"
	DefaultCertificateCertificatesPerDomain = autotls.DefaultDomainCertificates
	DefaultCertificateDomainWindow          = "168h"
	DefaultCertificateBackoff               = "1h"
	DefaultCertificateMaxBackoff            = "24h"
)

// Limits are c as the certificate controller's pacing limits. c must be
// valid (Parse validates it); a bad duration takes the default.
func (c CertificatesConfig) Limits() autotls.Limits {
	dur := func(s string) time.Duration {
		d, _ := time.ParseDuration(s)
		return d
	}
	return autotls.Limits{
		Orders: c.OrdersPerIssuer, OrdersWindow: dur(c.OrdersWindow),
		DomainCertificates: c.CertificatesPerDomain, DomainWindow: dur(c.DomainWindow),
		BackoffInitial: dur(c.Backoff), BackoffMax: dur(c.MaxBackoff),
	}
}

// Defaults of shards.tenantLimits: sized for a legitimate tenant with room
// to spare (a lease has a handful of names, each one generated route of
// one rule and one match, and a large owner has a few hundred leases on a
// provider; a hand-written route rarely has more than ten rules of two
// matches), while one tenant's routes stay a small part of what a shard's
// proxies evaluate and receive (rules and matches bound its route table;
// regular expressions, the costly kind, are fewest).
const (
	DefaultTenantRoutes             = 500
	DefaultTenantRules              = 1000
	DefaultTenantMatches            = 2000
	DefaultTenantRegularExpressions = 100
)

// ShardsConfig configures every shard.
type ShardsConfig struct {
	// TenantLimits bound what one tenant (the owner of a route's
	// namespace, or the namespace when it carries no owner marking) may
	// have served on one shard. A route that would take its tenant over
	// one is not served there (Accepted=False TenantLimitExceeded); a
	// tenant's routes are admitted oldest first.
	TenantLimits TenantLimitsConfig `json:"tenantLimits"`
}

// TenantLimitsConfig are the per-tenant, per-shard limits. Absent or 0
// takes the default; negative values are invalid. They apply live.
type TenantLimitsConfig struct {
	// Routes: routes of the tenant naming the shard (any kind). Default 500.
	Routes int `json:"routes,omitempty"`
	// Rules: their valid rules. Default 1000.
	Rules int `json:"rules,omitempty"`
	// Matches: their matches (a rule without matches has one). Default 2000.
	Matches int `json:"matches,omitempty"`
	// RegularExpressions: their path, header, query parameter and gRPC
	// method matches of type RegularExpression. Default 100.
	RegularExpressions int `json:"regularExpressions,omitempty"`
}

// AkashConfig is the Akash drop-in mode's configuration.
type AkashConfig struct {
	// Enabled consumes the Akash provider's ProviderHost, ProviderLeasedIP
	// and Manifest objects (akash.network/v2beta2), writes the HTTPRoutes
	// and LoadBalancer Services Akash's hostname and IP operators would
	// write, serves their HTTP API on APIAddress, and makes Akash's lease
	// namespace label (akash.network/lease.id.owner) count as an owner
	// marking. The Akash CRDs must be installed: without them, start-up
	// fails with an error saying so. Default false.
	Enabled bool `json:"enabled"`
	// Namespace is where the provider writes ProviderHosts,
	// ProviderLeasedIPs and Manifests (its manifest namespace). Default
	// "lease".
	Namespace string `json:"namespace"`
	// APIAddress is the host:port of the Akash operators' HTTP API ("0"
	// disables it). Default ":8086".
	APIAddress string `json:"apiAddress"`
	// MetalLBPool is the MetalLB IPAddressPool leased IPs come from (the
	// IP operator's --metal-lb-pool). Leased-IP Services name it in the
	// annotation metallb.universe.tf/address-pool unless it is "default",
	// and GET /usage reports that pool only. Default "default".
	MetalLBPool string `json:"metalLBPool"`
}

// NamespaceOwnerRequired is RequireNamespaceOwner with its default (true).
func (c Config) NamespaceOwnerRequired() bool {
	return c.RequireNamespaceOwner == nil || *c.RequireNamespaceOwner
}

// OwnerPolicy is how a Namespace's owner is read under this configuration:
// shardgate.io/owner, then namespaceOwnerAnnotation when set, then (with
// akash.enabled) Akash's lease owner label; the first present wins.
func (c Config) OwnerPolicy() tenancy.Policy {
	keys := []string{tenancy.OwnerKey}
	if k := c.NamespaceOwnerAnnotation; k != "" && k != tenancy.OwnerKey {
		keys = append(keys, k)
	}
	if c.Akash.Enabled {
		keys = append(keys, tenancy.AkashOwnerLabel)
	}
	return tenancy.Policy{Keys: keys, RequireOwner: c.NamespaceOwnerRequired()}
}

// XDSConfig is the xDS server configuration.
type XDSConfig struct {
	// Address is the host:port the xDS gRPC server listens on.
	Address string `json:"address"`
	// TLS is optional; when set, all three files are required.
	TLS TLSConfig `json:"tls"`
	// DebugEndpoint serves /debug/xds on the metrics address: every
	// Gateway's xDS resource names and versions, which name every tenant's
	// clusters and Secrets. Off by default; the metrics address may be
	// reachable by more than the provider.
	DebugEndpoint bool `json:"debugEndpoint,omitempty"`
	// Limits bound what one xDS client may make the server hold. Read at
	// start.
	Limits XDSLimits `json:"limits"`
}

// XDSLimits bound the xDS server's streams and requests per client. An
// absent or zero value takes the default; negative values are invalid.
type XDSLimits struct {
	// StreamsPerIdentity is the most concurrent ADS streams of one
	// Gateway's client certificates together. Default 128.
	StreamsPerIdentity int `json:"streamsPerIdentity,omitempty"`
	// StreamsPerCertificate is the most concurrent ADS streams of one
	// client certificate. Default 64.
	StreamsPerCertificate int `json:"streamsPerCertificate,omitempty"`
	// ResourceNamesPerStream is the most resource names one stream
	// subscribes to, over every type. Default 40000.
	ResourceNamesPerStream int `json:"resourceNamesPerStream,omitempty"`
	// MaxRequestBytes is the largest request message accepted. Default
	// 2097152 (2 MiB).
	MaxRequestBytes int `json:"maxRequestBytes,omitempty"`
}

// Defaults of XDSLimits (the xDS server's own defaults; the values are
// justified there).
const (
	DefaultXDSStreamsPerIdentity     = 128
	DefaultXDSStreamsPerCertificate  = 64
	DefaultXDSResourceNamesPerStream = 40000
	DefaultXDSMaxRequestBytes        = 2 << 20
)

// TLSConfig names PEM files for mutual TLS. Either all fields are set or none.
type TLSConfig struct {
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	CAFile   string `json:"caFile,omitempty"`
}

// Enabled reports whether TLS is configured. After validation that means all
// three files are set.
func (t TLSConfig) Enabled() bool {
	return t.CertFile != "" || t.KeyFile != "" || t.CAFile != ""
}

// EnvoyConfig configures the provisioned Envoy proxies.
type EnvoyConfig struct {
	// Image is the Envoy container image.
	Image string `json:"image"`
	// AnnotationPrefixes are the annotation key prefixes (each ending in
	// "/", such as "prometheus.io/") under which a provider Gateway's
	// spec.infrastructure.annotations are copied onto its Envoy objects,
	// besides keys without a prefix. Annotations under other prefixes
	// (load-balancer and IPAM controllers' among them) are not copied,
	// and shardgate's and MetalLB's never are. Read at start.
	AnnotationPrefixes []string `json:"annotationPrefixes,omitempty"`
}

// LeaderElectionConfig configures leader election.
type LeaderElectionConfig struct {
	Enabled bool `json:"enabled"`
	// Namespace holds the Lease object.
	Namespace string `json:"namespace"`
	// ID is the Lease object's name.
	ID string `json:"id"`
}

// Default returns the configuration used when the file is empty.
func Default() Config {
	return Config{
		ControllerName: DefaultControllerName,
		XDS: XDSConfig{Address: DefaultXDSAddress, Limits: XDSLimits{
			StreamsPerIdentity:     DefaultXDSStreamsPerIdentity,
			StreamsPerCertificate:  DefaultXDSStreamsPerCertificate,
			ResourceNamesPerStream: DefaultXDSResourceNamesPerStream,
			MaxRequestBytes:        DefaultXDSMaxRequestBytes,
		}},
		Envoy:          EnvoyConfig{Image: DefaultEnvoyImage},
		MetricsAddress: DefaultMetricsAddress,
		HealthAddress:  DefaultHealthAddress,
		LeaderElection: LeaderElectionConfig{
			Namespace: DefaultLeaderElectionNamespace,
			ID:        DefaultLeaderElectionID,
		},
		Akash: AkashConfig{Namespace: DefaultAkashNamespace, APIAddress: DefaultAkashAPIAddress, MetalLBPool: DefaultAkashMetalLBPool},
		Shards: ShardsConfig{TenantLimits: TenantLimitsConfig{Routes: DefaultTenantRoutes, Rules: DefaultTenantRules,
			Matches: DefaultTenantMatches, RegularExpressions: DefaultTenantRegularExpressions}},
		Certificates: CertificatesConfig{OrdersPerIssuer: DefaultCertificateOrdersPerIssuer, OrdersWindow: DefaultCertificateOrdersWindow,
			CertificatesPerDomain: DefaultCertificateCertificatesPerDomain, DomainWindow: DefaultCertificateDomainWindow,
			Backoff: DefaultCertificateBackoff, MaxBackoff: DefaultCertificateMaxBackoff},
	}
}

// DeepCopy returns a copy of c that shares no memory with c.
func (c Config) DeepCopy() Config {
	c.BlockedHostnames = slices.Clone(c.BlockedHostnames)
	c.ShardNamespaces = slices.Clone(c.ShardNamespaces)
	c.Envoy.AnnotationPrefixes = slices.Clone(c.Envoy.AnnotationPrefixes)
	if c.RequireNamespaceOwner != nil {
		v := *c.RequireNamespaceOwner
		c.RequireNamespaceOwner = &v
	}
	return c
}

// Load reads and parses the file at path. Errors are prefixed with
// "config <path>: ".
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes, defaults, normalises and validates a YAML (or JSON) config
// document. Unknown keys, duplicate keys, wrongly typed values and invalid
// values are errors, each naming its key path, returned together as Errors:
// every unknown key and wrongly typed value, and, if no value has the wrong
// type, every invalid value too. An empty document yields Default().
func Parse(data []byte) (Config, error) {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Config{}, fmt.Errorf("invalid YAML: %s", oneLine(err.Error()))
	}

	// Pass 1: check the document's shape against Config's JSON keys, with
	// exact (case-sensitive) key matching and key-path messages.
	var raw any
	dec := json.NewDecoder(bytes.NewReader(jsonData))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("invalid YAML: %s", oneLine(err.Error()))
	}
	if raw == nil { // empty document or only comments
		return Default(), nil
	}
	var errs Errors
	if _, ok := raw.(map[string]any); !ok {
		errs = append(errs, fmt.Errorf("the document must be a mapping of keys, got %s", describe(raw)))
		return Config{}, errs
	}
	checkShape("", reflect.TypeFor[Config](), raw, &errs)
	if slices.ContainsFunc(errs, isTypeError) {
		return Config{}, errs
	}

	// Pass 2: decode what is left once unknown keys (already reported) are
	// removed. Its shape is known to be right, so this cannot fail on user
	// input; DisallowUnknownFields is a second line of defence.
	known, err := json.Marshal(raw)
	if err != nil {
		return Config{}, fmt.Errorf("internal error re-encoding config: %w", err)
	}
	var cfg Config
	dec = json.NewDecoder(bytes.NewReader(known))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("internal error decoding config: %w", err)
	}

	// Pass 3: defaults, normalisation, values. Reported together with any
	// unknown keys, so one run shows every problem.
	cfg.applyDefaults()
	errs = append(errs, cfg.normalizeAndValidate()...)
	if len(errs) > 0 {
		return Config{}, errs
	}
	return cfg, nil
}

func (c *Config) applyDefaults() {
	d := Default()
	setDefault(&c.ControllerName, d.ControllerName)
	setDefault(&c.XDS.Address, d.XDS.Address)
	setDefault(&c.Envoy.Image, d.Envoy.Image)
	setDefault(&c.MetricsAddress, d.MetricsAddress)
	setDefault(&c.HealthAddress, d.HealthAddress)
	setDefault(&c.LeaderElection.Namespace, d.LeaderElection.Namespace)
	setDefault(&c.LeaderElection.ID, d.LeaderElection.ID)
	setDefault(&c.Akash.Namespace, d.Akash.Namespace)
	setDefault(&c.Akash.APIAddress, d.Akash.APIAddress)
	setDefault(&c.Akash.MetalLBPool, d.Akash.MetalLBPool)
	setIntDefault(&c.XDS.Limits.StreamsPerIdentity, d.XDS.Limits.StreamsPerIdentity)
	setIntDefault(&c.XDS.Limits.StreamsPerCertificate, d.XDS.Limits.StreamsPerCertificate)
	setIntDefault(&c.XDS.Limits.ResourceNamesPerStream, d.XDS.Limits.ResourceNamesPerStream)
	setIntDefault(&c.XDS.Limits.MaxRequestBytes, d.XDS.Limits.MaxRequestBytes)
	l, dl := &c.Shards.TenantLimits, d.Shards.TenantLimits
	for _, f := range []struct {
		v   *int
		def int
	}{{&l.Routes, dl.Routes}, {&l.Rules, dl.Rules},
		{&l.Matches, dl.Matches}, {&l.RegularExpressions, dl.RegularExpressions}} {
		setIntDefault(f.v, f.def)
	}
	cc, dc := &c.Certificates, d.Certificates
	setIntDefault(&cc.OrdersPerIssuer, dc.OrdersPerIssuer)
	setIntDefault(&cc.CertificatesPerDomain, dc.CertificatesPerDomain)
	setDefault(&cc.OrdersWindow, dc.OrdersWindow)
	setDefault(&cc.DomainWindow, dc.DomainWindow)
	setDefault(&cc.Backoff, dc.Backoff)
	setDefault(&cc.MaxBackoff, dc.MaxBackoff)
}

func setIntDefault(n *int, def int) {
	if *n == 0 {
		*n = def
	}
}

func setDefault(s *string, def string) {
	if strings.TrimSpace(*s) == "" {
		*s = def
	}
}

// Errors is every problem found in one config document. Its message joins
// them with "; ".
type Errors []error

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap supports errors.Is and errors.As.
func (e Errors) Unwrap() []error { return e }

// checkShape walks a decoded JSON value against the Go type t, reporting
// unknown keys and wrongly typed values by key path. Unknown keys are
// reported and deleted from v. A null value for a field is accepted and means
// "use the default".
func checkShape(path string, t reflect.Type, v any, errs *Errors) {
	if v == nil {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			*errs = append(*errs, typeError(path, "a mapping", v))
			return
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := joinPath(path, k)
			ft, ok := fields[k]
			if !ok {
				*errs = append(*errs, unknownKeyError(sub))
				delete(m, k)
				continue
			}
			checkShape(sub, ft, m[k], errs)
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			*errs = append(*errs, typeError(path, "a list", v))
			return
		}
		for i, e := range l {
			sub := fmt.Sprintf("%s[%d]", path, i)
			if e == nil {
				*errs = append(*errs, typeError(sub, describeKind(t.Elem().Kind()), e))
				continue
			}
			checkShape(sub, t.Elem(), e, errs)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			*errs = append(*errs, typeError(path, "a string", v))
		}
	case reflect.Pointer:
		checkShape(path, t.Elem(), v, errs)
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			*errs = append(*errs, typeError(path, "a boolean (true or false)", v))
		}
	case reflect.Int:
		n, ok := v.(json.Number)
		if !ok {
			*errs = append(*errs, typeError(path, "an integer", v))
			break
		}
		if _, err := n.Int64(); err != nil {
			*errs = append(*errs, typeError(path, "an integer", v))
		}
	default:
		// Only reachable if Config grows a field of a kind not handled here.
		*errs = append(*errs, fmt.Errorf("%s: internal error: unsupported field kind %s", path, t.Kind()))
	}
}

// unknownKeyError reports a key, by path, that Config does not have.
type unknownKeyError string

func (e unknownKeyError) Error() string { return fmt.Sprintf("unknown key %q", string(e)) }

// isTypeError reports whether a checkShape error is about a value's type
// rather than an unknown key.
func isTypeError(err error) bool {
	_, unknown := err.(unknownKeyError)
	return !unknown
}

func describeKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Slice:
		return "a list"
	case reflect.Int:
		return "an integer"
	case reflect.Struct:
		return "a mapping"
	}
	return k.String()
}

// jsonFields maps the JSON key of every exported field of struct type t to
// the field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if name := jsonName(f); name != "-" {
			out[name] = f.Type
		}
	}
	return out
}

// jsonName is the key encoding/json uses for struct field f ("-" if none).
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		name = f.Name
	}
	return name
}

func typeError(path, want string, got any) error {
	msg := fmt.Sprintf("%s: expected %s, got %s", path, want, describe(got))
	if s, ok := got.(json.Number); ok && want == "a string" {
		msg += fmt.Sprintf(" (quote it: %q)", s.String())
	}
	return fmt.Errorf("%s", msg)
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case json.Number:
		return "number " + v.String()
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// oneLine collapses yaml's multi-line error messages.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
