package sharding

import (
	"errors"
	"fmt"
	"strings"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

const (
	// MaxHostLength is the longest DNS name accepted (RFC 1123).
	MaxHostLength = 253
	// MaxLabelLength is the longest DNS label accepted (RFC 1123).
	MaxLabelLength = 63
)

// ErrInvalidHost is wrapped by every error ComposeHost, ValidateHost and
// HostsFor return for a name that is not an acceptable host, so callers can
// tell "refuse this host" (reason InvalidHost) from other failures with
// errors.Is.
var ErrInvalidHost = errors.New("invalid host")

// ComposeHost returns subdomain + "." + domain, the host a shard with that
// domain serves for a LeaseHost with that subdomain. Both parts are
// lowercased and trimmed of surrounding space first (internal/hostnames
// normalises every name the same way); the result must be a valid host (see
// ValidateHost). A multi-label subdomain such as "a.b" is allowed.
func ComposeHost(subdomain, domain string) (string, error) {
	subdomain = normalise(subdomain)
	domain = normalise(domain)
	if subdomain == "" {
		return "", fmt.Errorf("%w: empty subdomain", ErrInvalidHost)
	}
	if domain == "" {
		return "", fmt.Errorf("%w: empty domain", ErrInvalidHost)
	}
	host := subdomain + "." + domain
	if err := ValidateHost(host); err != nil {
		return "", err
	}
	return host, nil
}

// ValidateHost checks that host is a lowercase RFC 1123 DNS subdomain: at
// most 253 characters, dot-separated labels of 1 to 63 characters, each of
// [a-z0-9-] that neither starts nor ends with '-'. Wildcards and a trailing
// dot are refused. Errors wrap ErrInvalidHost and say what is wrong.
func ValidateHost(host string) error {
	if host == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidHost)
	}
	if len(host) > MaxHostLength {
		return fmt.Errorf("%w: %q is %d characters long, more than %d", ErrInvalidHost, abbreviate(host), len(host), MaxHostLength)
	}
	for i, label := range strings.Split(host, ".") {
		if label == "" {
			return fmt.Errorf("%w: %q has an empty label", ErrInvalidHost, host)
		}
		if len(label) > MaxLabelLength {
			return fmt.Errorf("%w: label %d of %q is %d characters long, more than %d", ErrInvalidHost, i+1, abbreviate(host), len(label), MaxLabelLength)
		}
		for j := 0; j < len(label); j++ {
			c := label[j]
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			case c == '-':
				if j == 0 || j == len(label)-1 {
					return fmt.Errorf("%w: label %q of %q starts or ends with '-'", ErrInvalidHost, label, host)
				}
			case c >= 'A' && c <= 'Z':
				return fmt.Errorf("%w: %q is not lowercase", ErrInvalidHost, host)
			default:
				return fmt.Errorf("%w: %q contains %q; only a-z, 0-9, '-' and '.' are allowed", ErrInvalidHost, host, string(rune(c)))
			}
		}
	}
	return nil
}

// DefaultCanonicalHostname is a shard's canonical hostname when its
// GatewayParameters set none: router-<gateway name>.<domain>, as the
// OpenShift router names itself.
func DefaultCanonicalHostname(gatewayName, domain string) string {
	return "router-" + normalise(gatewayName) + "." + normalise(domain)
}

// ShardHost is the host one shard serves for one LeaseHost.
type ShardHost struct {
	Shard Shard
	// Host is the explicit spec.hostname or the composed
	// subdomain.<shard domain>. It is set even when Err is, so status can
	// show what was refused (it may then be longer than 253 characters).
	Host string
	// Err, when set, wraps ErrInvalidHost: this shard cannot serve the
	// LeaseHost and reports reason InvalidHost, while other shards are not
	// affected.
	Err error
}

// HostsFor returns the host each of shards serves for lh, in the order of
// shards. An explicit spec.hostname wins over spec.subdomain: every shard
// then serves that one name. Otherwise each shard serves
// subdomain.<its domain>, and a composition that is not a valid host (too
// long, say) has Err set for that shard only.
func HostsFor(lh *shardgatev1alpha1.LeaseHost, shards []Shard) []ShardHost {
	if lh == nil || len(shards) == 0 {
		return nil
	}
	out := make([]ShardHost, 0, len(shards))
	if hostname := normalise(lh.Spec.Hostname); hostname != "" {
		err := ValidateHost(hostname)
		for _, s := range shards {
			out = append(out, ShardHost{Shard: s, Host: hostname, Err: err})
		}
		return out
	}
	subdomain := normalise(lh.Spec.Subdomain)
	for _, s := range shards {
		sh := ShardHost{Shard: s}
		switch {
		case subdomain == "":
			sh.Err = fmt.Errorf("%w: LeaseHost %s/%s sets neither hostname nor subdomain", ErrInvalidHost, lh.Namespace, lh.Name)
		default:
			sh.Host = subdomain + "." + normalise(s.Domain)
			if _, err := ComposeHost(subdomain, s.Domain); err != nil {
				sh.Err = err
			}
		}
		out = append(out, sh)
	}
	return out
}

func normalise(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}

// abbreviate keeps error messages readable for absurdly long inputs.
func abbreviate(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:38] + "..." + s[len(s)-38:]
}
