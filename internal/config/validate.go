package config

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// normalizeAndValidate normalises c in place and returns every invalid value,
// each naming its key path.
func (c *Config) normalizeAndValidate() Errors {
	var errs Errors

	blocked, blockErrs := NormalizeBlockedHostnames(c.BlockedHostnames)
	c.BlockedHostnames = blocked
	errs = append(errs, blockErrs...)

	if !controllerNameRe.MatchString(c.ControllerName) || len(c.ControllerName) > 253 {
		errs = append(errs, fmt.Errorf("controllerName: %q is not a domain-prefixed path such as %q",
			c.ControllerName, DefaultControllerName))
	}

	if err := validateListenAddress(c.XDS.Address, false); err != nil {
		errs = append(errs, fmt.Errorf("xds.address: %w", err))
	}
	t := &c.XDS.TLS
	t.CertFile = strings.TrimSpace(t.CertFile)
	t.KeyFile = strings.TrimSpace(t.KeyFile)
	t.CAFile = strings.TrimSpace(t.CAFile)
	if t.Enabled() && (t.CertFile == "" || t.KeyFile == "" || t.CAFile == "") {
		errs = append(errs, fmt.Errorf("xds.tls: certFile, keyFile and caFile must be set together (missing: %s)",
			strings.Join(missingTLS(*t), ", ")))
	}

	errs = append(errs, c.XDS.Limits.validate()...)

	if img := c.Envoy.Image; strings.IndexFunc(img, isSpace) >= 0 {
		errs = append(errs, fmt.Errorf("envoy.image: %q must not contain whitespace", img))
	}

	var prefixes []string
	for i, p := range c.Envoy.AnnotationPrefixes {
		p = strings.TrimSpace(p)
		if !strings.HasSuffix(p, "/") || !isDNS1123Subdomain(strings.TrimSuffix(p, "/")) {
			errs = append(errs, fmt.Errorf("envoy.annotationPrefixes[%d]: %q is not an annotation key prefix such as %q", i, p, "prometheus.io/"))
			continue
		}
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	c.Envoy.AnnotationPrefixes = slices.Compact(prefixes)

	if err := validateListenAddress(c.MetricsAddress, true); err != nil {
		errs = append(errs, fmt.Errorf("metricsAddress: %w", err))
	}
	if err := validateListenAddress(c.HealthAddress, true); err != nil {
		errs = append(errs, fmt.Errorf("healthAddress: %w", err))
	}

	if ns := c.LeaderElection.Namespace; !isDNS1123Label(ns) {
		errs = append(errs, fmt.Errorf("leaderElection.namespace: %q is not a valid namespace name (RFC 1123 label)", ns))
	}
	if id := c.LeaderElection.ID; !isDNS1123Subdomain(id) {
		errs = append(errs, fmt.Errorf("leaderElection.id: %q is not a valid Lease name (RFC 1123 subdomain)", id))
	}

	c.NamespaceOwnerAnnotation = strings.TrimSpace(c.NamespaceOwnerAnnotation)
	if a := c.NamespaceOwnerAnnotation; a != "" && !isQualifiedName(a) {
		errs = append(errs, fmt.Errorf("namespaceOwnerAnnotation: %q is not a valid annotation key such as %q",
			a, "shardgate.io/owner"))
	}

	if ns := c.Akash.Namespace; !isDNS1123Label(ns) {
		errs = append(errs, fmt.Errorf("akash.namespace: %q is not a valid namespace name (RFC 1123 label)", ns))
	}
	if err := validateListenAddress(c.Akash.APIAddress, true); err != nil {
		errs = append(errs, fmt.Errorf("akash.apiAddress: %w", err))
	}
	if p := c.Akash.MetalLBPool; !isDNS1123Subdomain(p) {
		errs = append(errs, fmt.Errorf("akash.metalLBPool: %q is not a valid IPAddressPool name (RFC 1123 subdomain)", p))
	}

	for _, f := range []struct {
		key string
		v   int
	}{{"routes", c.Shards.TenantLimits.Routes}, {"rules", c.Shards.TenantLimits.Rules},
		{"matches", c.Shards.TenantLimits.Matches}, {"regularExpressions", c.Shards.TenantLimits.RegularExpressions}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("shards.tenantLimits.%s: %d must not be negative (0 or absent: the default)", f.key, f.v))
		}
	}

	errs = append(errs, c.Certificates.validate()...)

	var shardNS []string
	for i, ns := range c.ShardNamespaces {
		ns = strings.ToLower(strings.TrimSpace(ns))
		if !isDNS1123Label(ns) {
			errs = append(errs, fmt.Errorf("shardNamespaces[%d]: %q is not a valid namespace name (RFC 1123 label)", i, ns))
			continue
		}
		shardNS = append(shardNS, ns)
	}
	slices.Sort(shardNS)
	c.ShardNamespaces = slices.Compact(shardNS)
	return errs
}

// maxXDSRequestBytes is the largest xds.limits.maxRequestBytes accepted:
// more than any proxy's request, and gRPC's own default is 4 MiB.
const maxXDSRequestBytes = 64 << 20

func (l XDSLimits) validate() Errors {
	var errs Errors
	for _, f := range []struct {
		key string
		v   int
	}{
		{"xds.limits.streamsPerIdentity", l.StreamsPerIdentity},
		{"xds.limits.streamsPerCertificate", l.StreamsPerCertificate},
		{"xds.limits.resourceNamesPerStream", l.ResourceNamesPerStream},
		{"xds.limits.maxRequestBytes", l.MaxRequestBytes},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %d must be positive (0 or absent takes the default)", f.key, f.v))
		}
	}
	if l.MaxRequestBytes > maxXDSRequestBytes {
		errs = append(errs, fmt.Errorf("xds.limits.maxRequestBytes: %d is more than %d (64 MiB)", l.MaxRequestBytes, maxXDSRequestBytes))
	}
	if l.MaxRequestBytes > 0 && l.MaxRequestBytes < 16<<10 {
		errs = append(errs, fmt.Errorf("xds.limits.maxRequestBytes: %d is less than 16384: an Envoy's first request (its node) would not fit", l.MaxRequestBytes))
	}
	return errs
}

func missingTLS(t TLSConfig) []string {
	var m []string
	if t.CertFile == "" {
		m = append(m, "certFile")
	}
	if t.KeyFile == "" {
		m = append(m, "keyFile")
	}
	if t.CAFile == "" {
		m = append(m, "caFile")
	}
	return m
}

// NormalizeBlockedHostnames normalises block-list entries the way Parse does:
// each entry is trimmed, lowercased and loses one trailing dot, then must be
// an RFC 1123 hostname, optionally with a leading "." for a suffix entry.
// The result is deduplicated and sorted; it is nil when empty. Errors name the
// entry by its index in entries, as "blockedHostnames[i]".
func NormalizeBlockedHostnames(entries []string) ([]string, Errors) {
	var (
		out  []string
		errs Errors
	)
	for i, raw := range entries {
		e, err := normalizeBlockedEntry(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("blockedHostnames[%d]: %w", i, err))
			continue
		}
		out = append(out, e)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		out = nil
	}
	return out, errs
}

func normalizeBlockedEntry(raw string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(raw))
	if len(e) > 1 {
		e = strings.TrimSuffix(e, ".")
	}
	if rest, ok := strings.CutPrefix(e, "*."); ok && rest != "" {
		return "", fmt.Errorf("%q: wildcards are not supported; use %q to block a domain and every name under it",
			raw, "."+rest)
	}
	name := strings.TrimPrefix(e, ".")
	if !isDNS1123Subdomain(name) {
		return "", fmt.Errorf("%q is not a valid hostname or .suffix", raw)
	}
	return e, nil
}

// validateListenAddress checks a host:port listen address. The port must be
// numeric (0-65535) and the host empty, an IP address or a hostname. With
// allowDisable, the literal "0" (controller-runtime's "disabled") is accepted.
func validateListenAddress(addr string, allowDisable bool) error {
	if allowDisable && addr == "0" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 || port == "" {
		return fmt.Errorf("%q is not host:port: port %q must be a number from 0 to 65535", addr, port)
	}
	if host != "" && net.ParseIP(host) == nil && !isDNS1123Subdomain(strings.ToLower(host)) {
		return fmt.Errorf("%q is not host:port: host %q is not an IP address or hostname", addr, host)
	}
	return nil
}

var (
	dns1123LabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// Gateway API's GatewayController format: a domain prefix, "/", a path.
	controllerNameRe    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$`)
	qualifiedNamePartRe = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

func isDNS1123Label(s string) bool {
	return len(s) <= 63 && dns1123LabelRe.MatchString(s)
}

// isDNS1123Subdomain reports whether s is a lowercase RFC 1123 hostname:
// dot-separated labels of 1-63 characters, 253 characters in all.
func isDNS1123Subdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !isDNS1123Label(label) {
			return false
		}
	}
	return true
}

// isQualifiedName reports whether s is a Kubernetes annotation/label key:
// an optional DNS subdomain prefix and "/", then a name of at most 63
// characters.
func isQualifiedName(s string) bool {
	prefix, name, found := strings.Cut(s, "/")
	if !found {
		name, prefix = prefix, ""
	} else if !isDNS1123Subdomain(prefix) {
		return false
	}
	return len(name) <= 63 && qualifiedNamePartRe.MatchString(name)
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

func (c *CertificatesConfig) validate() Errors {
	var errs Errors
	for _, f := range []struct {
		key string
		v   int
	}{{"ordersPerIssuer", c.OrdersPerIssuer}, {"certificatesPerDomain", c.CertificatesPerDomain}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("certificates.%s: %d must be positive (0 or absent takes the default)", f.key, f.v))
		}
	}
	durations := map[string]time.Duration{}
	for _, f := range []struct {
		key string
		v   *string
	}{{"ordersWindow", &c.OrdersWindow}, {"domainWindow", &c.DomainWindow}, {"backoff", &c.Backoff}, {"maxBackoff", &c.MaxBackoff}} {
		*f.v = strings.TrimSpace(*f.v)
		d, err := time.ParseDuration(*f.v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("certificates.%s: %q is not a duration such as \"3h\"", f.key, *f.v))
		case d <= 0:
			errs = append(errs, fmt.Errorf("certificates.%s: %q must be positive", f.key, *f.v))
		}
		durations[f.key] = d
	}
	if b, m := durations["backoff"], durations["maxBackoff"]; b > 0 && m > 0 && m < b {
		errs = append(errs, fmt.Errorf("certificates.maxBackoff: %q is shorter than certificates.backoff %q", c.MaxBackoff, c.Backoff))
	}
	return errs
}
