package addresses

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// MetalLB's Service annotations.
const (
	// AnnotationAllowSharedIP carries the sharing key: Services with the same
	// key may share one IP on distinct ports.
	AnnotationAllowSharedIP = "metallb.io/allow-shared-ip"
	// AnnotationAddressPool pins allocation to one IPAddressPool.
	AnnotationAddressPool = "metallb.io/address-pool"
	// AnnotationLoadBalancerIPs requests specific addresses.
	AnnotationLoadBalancerIPs = "metallb.io/loadBalancerIPs"
	// AnnotationIPAllocatedFromPool is written by MetalLB: the pool an
	// assigned address came from.
	AnnotationIPAllocatedFromPool = "metallb.io/ip-allocated-from-pool"
)

// keySafe is the form an owner and an endpoint must have to appear
// verbatim in a sharing key.
var keySafe = regexp.MustCompile(`^[a-z0-9-]+$`)

// keyEncoding is RFC 4648 base32 with the "extended hex" alphabet,
// lowercased and unpadded.
var keyEncoding = base32.NewEncoding(strings.ToLower("0123456789ABCDEFGHIJKLMNOPQRSTUV")).WithPadding(base32.NoPadding)

// keySeparator joins the owner and the endpoint of a plain sharing key.
const keySeparator = "-ip-"

// SharingKey is the metallb.io/allow-shared-ip value of a lease owner's
// endpoint. MetalLB lets Services with one key share an IP across ports, so
// the key must never name two owners.
//
//   - "<owner>-ip-<endpoint>" when the endpoint matches ^[a-z0-9-]+$;
//     otherwise the endpoint is replaced by the lowercase, unpadded
//     base32hex of the first 15 bytes of SHA-256(endpoint) (24 characters),
//     as Akash's IP operator does. This form is used when the owner matches
//     ^[a-z0-9-]+$ too and the key contains "-ip-" exactly once (overlapping
//     occurrences counted), so that the owner is everything before it;
//   - otherwise "ip-" and the lowercase, unpadded base32hex of the first 20
//     bytes of SHA-256 over the owner and the endpoint, each preceded by its
//     length in bytes as a 4-byte big-endian integer (32 characters).
//
// The first form always contains "-ip-" once and the second never, and the
// owner is the part before "-ip-", so keys of two owners never match. (Two
// endpoints of one owner could share a key only if one were named exactly
// like the other's 24-character hash, which shares nothing across owners.)
func SharingKey(owner, endpoint string) string {
	ep := endpoint
	if !keySafe.MatchString(ep) {
		sum := sha256.Sum256([]byte(endpoint))
		ep = keyEncoding.EncodeToString(sum[:15])
	}
	plain := owner + keySeparator + ep
	if keySafe.MatchString(owner) &&
		strings.LastIndex(plain, keySeparator) == len(owner) && strings.Index(plain, keySeparator) == len(owner) {
		return plain
	}
	h := sha256.New()
	for _, field := range []string{owner, endpoint} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(field)))
		h.Write(n[:])
		h.Write([]byte(field))
	}
	return "ip-" + keyEncoding.EncodeToString(h.Sum(nil)[:20])
}

// LeasedIPSharingKey is SharingKey of lip's owner and endpoint.
func LeasedIPSharingKey(lip *shardgatev1alpha1.LeasedIP) string {
	return SharingKey(lip.Spec.Lease.Owner, lip.Spec.Endpoint)
}

// MaxServiceName is the longest Service name (a DNS-1035 label).
const MaxServiceName = 63

// serviceHashLen is how many hex digits of SHA-256(service) a truncated name
// carries.
const serviceHashLen = 8

// ServiceName is the LoadBalancer Service's name for a LeasedIP:
// "<service>-ip-<externalPort>-<proto>", lowercased, proto "tcp" or "udp".
//
// When that is longer than 63 characters, the service part is cut and the
// first 8 hex digits of SHA-256(service) are inserted after it:
// "<service[:n]>-<hash8>-ip-<externalPort>-<proto>", exactly 63 characters
// long (with trailing hyphens of the cut part dropped). The suffix stays
// readable, the name is stable, and two long service names that share a
// prefix still get different names.
func ServiceName(service string, externalPort int32, protocol string) string {
	service = strings.ToLower(service)
	suffix := "-ip-" + strconv.FormatInt(int64(externalPort), 10) + "-" + proto(protocol)
	if len(service)+len(suffix) <= MaxServiceName {
		return service + suffix
	}
	sum := sha256.Sum256([]byte(service))
	hash := hex.EncodeToString(sum[:])[:serviceHashLen]
	keep := MaxServiceName - len(suffix) - 1 - serviceHashLen
	head := strings.TrimRight(service[:keep], "-")
	return head + "-" + hash + suffix
}

// LeasedIPServiceName is ServiceName of lip's spec.
func LeasedIPServiceName(lip *shardgatev1alpha1.LeasedIP) string {
	return ServiceName(lip.Spec.Service, lip.Spec.ExternalPort, lip.Spec.Protocol)
}

// proto is the lowercase protocol; the CRD defaults an unset one to TCP.
func proto(p string) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(p)
}
