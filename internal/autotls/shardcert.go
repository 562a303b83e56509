/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// ShardCertificates reads the certificates a shard's own HTTPS listeners
// present, to say whether one covers a name under the shard's domain
// (ShardState). Secret returns a Secret by namespace/name (nil when
// absent); the DNS names of each Secret's leaf certificate are parsed once
// per resourceVersion. Not safe for concurrent use.
type ShardCertificates struct {
	Secret func(types.NamespacedName) *corev1.Secret
	names  map[types.NamespacedName]parsedNames
}

type parsedNames struct {
	version string
	names   []string
}

// ShardState is the CertificateReady of host, a name under the domain of
// the shard whose Gateway is gw: True ShardCertificate when an HTTPS
// listener of gw whose hostname matches host presents a certificate with
// a DNS name covering host (itself, or a wildcard for exactly its first
// label, as TLS clients match them); otherwise False NoShardCertificate,
// saying what the shard lacks. A Gateway wildcard hostname matches any
// number of labels but a certificate's wildcard only one, so
// "a.b.<domain>" needs more than a "*.<domain>" certificate.
func (c *ShardCertificates) ShardState(gw *gatewayv1.Gateway, domain, host string) State {
	host = strings.ToLower(host)
	if gw == nil {
		return State{metav1.ConditionFalse, shardgatev1alpha1.ReasonNoShardCertificate,
			fmt.Sprintf("%s is under the shard's domain %s, served with the shard's own certificate, but the shard's Gateway is not known yet", host, domain)}
	}
	listeners := 0
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		if l.Protocol != gatewayv1.HTTPSProtocolType || !listenerMatches(l.Hostname, host) || l.TLS == nil {
			continue
		}
		listeners++
		for _, ref := range l.TLS.CertificateRefs {
			if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
				continue
			}
			ns := gw.Namespace
			if ref.Namespace != nil && *ref.Namespace != "" {
				ns = string(*ref.Namespace)
			}
			for _, n := range c.namesOf(types.NamespacedName{Namespace: ns, Name: string(ref.Name)}) {
				if SANCovers(n, host) {
					return State{metav1.ConditionTrue, shardgatev1alpha1.ReasonShardCertificate,
						fmt.Sprintf("%s is under the shard's domain %s and is served with the shard's own certificate (listener %s, Secret %s/%s, %s)", host, domain, l.Name, ns, ref.Name, n)}
				}
			}
		}
	}
	why := "it has no HTTPS listener whose hostname matches the name"
	if listeners > 0 {
		why = "no certificate of its HTTPS listeners matching the name covers it (a wildcard certificate covers one label only)"
	}
	return State{metav1.ConditionFalse, shardgatev1alpha1.ReasonNoShardCertificate,
		fmt.Sprintf("%s is under the shard's domain %s, which is served with the shard's own certificate, and no certificate is issued for it; but Gateway %s/%s does not serve it over HTTPS: %s", host, domain, gw.Namespace, gw.Name, why)}
}

// namesOf returns the DNS names of Secret k's leaf certificate, lowercased
// (nil: no Secret, or no certificate in it).
func (c *ShardCertificates) namesOf(k types.NamespacedName) []string {
	if c.Secret == nil {
		return nil
	}
	s := c.Secret(k)
	if s == nil {
		return nil
	}
	if p, ok := c.names[k]; ok && p.version == s.ResourceVersion && s.ResourceVersion != "" {
		return p.names
	}
	names := LeafDNSNames(s.Data[corev1.TLSCertKey])
	if c.names == nil {
		c.names = map[types.NamespacedName]parsedNames{}
	}
	c.names[k] = parsedNames{version: s.ResourceVersion, names: names}
	return names
}

// LeafDNSNames returns the DNS names of the first certificate of a PEM
// chain, lowercased; nil when there is none.
func LeafDNSNames(chain []byte) []string {
	for {
		var b *pem.Block
		b, chain = pem.Decode(chain)
		if b == nil {
			return nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil
		}
		out := make([]string, 0, len(leaf.DNSNames))
		for _, n := range leaf.DNSNames {
			out = append(out, strings.ToLower(n))
		}
		return out
	}
}

// SANCovers says whether a certificate DNS name covers host as TLS
// clients match it: the same name, or "*.<rest>" where host is one label
// followed by ".<rest>".
func SANCovers(san, host string) bool {
	san, host = strings.ToLower(san), strings.ToLower(host)
	if san == host {
		return true
	}
	rest, ok := strings.CutPrefix(san, "*.")
	if !ok {
		return false
	}
	first, after, ok := strings.Cut(host, ".")
	return ok && first != "" && after == rest
}

// listenerMatches says whether a Gateway listener hostname (nil: any)
// matches host as Gateway API does: the same name, or a wildcard
// "*.<suffix>" matching any number of labels before ".<suffix>".
func listenerMatches(h *gatewayv1.Hostname, host string) bool {
	if h == nil || *h == "" {
		return true
	}
	l := strings.ToLower(string(*h))
	if suffix, ok := strings.CutPrefix(l, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return l == host
}
