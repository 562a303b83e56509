/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CertificateGVK is cert-manager's Certificate.
var CertificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

const (
	// NamePrefix begins the name of every Certificate shardgate writes
	// and of the Secret cert-manager stores it in.
	NamePrefix = "shardgate-tls."

	// LabelManaged marks the Certificates (and, through the Certificate's
	// secretTemplate, the Secrets) shardgate writes; its value is "true".
	LabelManaged = "shardgate.io/auto-tls"

	// AnnotationHostname on those objects is the name they are for.
	AnnotationHostname = "shardgate.io/hostname"

	// maxName is the longest object name (a DNS subdomain).
	maxName = 253
)

// SecretName is the name of the Certificate shardgate writes for host in
// a lease namespace, and of the Secret cert-manager stores it in:
// "shardgate-tls.<host>", or, when that would be longer than an object
// name may be, "shardgate-tls.<first 32 hex digits of SHA-256(host)>". It
// is a function of host alone, so the translator finds the Secret of a
// held name without reading any Certificate.
func SecretName(host string) string {
	host = strings.ToLower(host)
	if len(NamePrefix)+len(host) <= maxName {
		return NamePrefix + host
	}
	sum := sha256.Sum256([]byte(host))
	return NamePrefix + hex.EncodeToString(sum[:16])
}

// IsSecretName says whether name has the form SecretName gives.
func IsSecretName(name string) bool { return strings.HasPrefix(name, NamePrefix) }
