package infra

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Object names and labels. The names are a public contract (see doc.go).
const (
	// NamePrefix starts every provisioned object's name.
	NamePrefix = "shardgate-"
	// BootstrapSuffix ends the bootstrap ConfigMap's name.
	BootstrapSuffix = "-bootstrap"
	// ClientCertSuffix ends the xDS client certificate Secret's name.
	ClientCertSuffix = "-xds-client"
	// MaxNameLength bounds every name: the Service name must be a DNS-1035
	// label, and the other names follow the same rule so they read alike.
	MaxNameLength = validation.DNS1035LabelMaxLength // 63

	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelGateway   = "gateway.networking.k8s.io/gateway-name"
	// LabelOwnGateway selects a Gateway's Envoy pods; its value is the
	// gateway-name label's (GatewayLabelValue).
	LabelOwnGateway = "shardgate.io/gateway"
	// LabelPrefix is shardgate's own label prefix: no infrastructure label
	// under it is propagated.
	LabelPrefix = "shardgate.io/"

	// LabelNameValue and LabelManagedByValue are the fixed label values.
	LabelNameValue      = "envoy"
	LabelManagedByValue = "shardgate"

	// hashLength is the hex length of the stable hash appended to
	// shortened names and label values.
	hashLength = 8
)

// Name is the name of a Gateway's Deployment, Service and ServiceAccount:
// "shardgate-<gateway name>", or a shortened stable form when that is not
// a DNS-1035 label of at most 63 characters (see objectName).
func Name(gateway string) string { return objectName(gateway, "") }

// BootstrapName is the bootstrap ConfigMap's name:
// "shardgate-<gateway name>-bootstrap".
func BootstrapName(gateway string) string { return objectName(gateway, BootstrapSuffix) }

// ClientCertName is the xDS client certificate Secret's name:
// "shardgate-<gateway name>-xds-client".
func ClientCertName(gateway string) string { return objectName(gateway, ClientCertSuffix) }

// objectName is "shardgate-<gateway><suffix>" when that is a DNS-1035
// label (at most 63 characters, lowercase alphanumerics and '-', starting
// with a letter, ending alphanumeric). Otherwise — a long name, or a
// Gateway name with dots — the "shardgate-<gateway>" part is made
// label-safe (dots become dashes), cut so that the whole fits in 63
// characters, and followed by "-" and the first 8 hex digits of the
// SHA-256 of the Gateway's name, then the suffix. The hash keeps two
// Gateways whose shortened names would collide apart; the same Gateway name
// always gives the same result.
func objectName(gateway, suffix string) string {
	full := NamePrefix + gateway + suffix
	if len(validation.IsDNS1035Label(full)) == 0 {
		return full
	}
	base := sanitize(NamePrefix + gateway)
	room := MaxNameLength - len(suffix) - 1 - hashLength
	if len(base) > room {
		base = strings.TrimRight(base[:room], "-")
	}
	return base + "-" + shortHash(gateway) + suffix
}

// GatewayLabelValue is the gateway.networking.k8s.io/gateway-name label
// value: the Gateway's name, or, when it is longer than a label value may
// be (63), its first 54 characters, "-" and the 8-hex-digit hash.
func GatewayLabelValue(gateway string) string {
	if len(validation.IsValidLabelValue(gateway)) == 0 {
		return gateway
	}
	room := validation.LabelValueMaxLength - 1 - hashLength
	v := gateway
	if len(v) > room {
		v = v[:room]
	}
	v = strings.TrimRight(v, "-._")
	return v + "-" + shortHash(gateway)
}

// sanitize lowercases s and replaces every character that may not appear
// in a DNS-1035 label by '-'.
func sanitize(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLength]
}

// SelectorLabels select the Envoy pods of a workload this version creates
// (and are its spec.selector, the Service's selector and the
// PodDisruptionBudget's): shardgate.io/gateway, a label under shardgate's
// own prefix that spec.infrastructure.labels cannot set, so no
// infrastructure label ever changes what selects the pods. A workload's
// selector is immutable: never change them.
func SelectorLabels(gateway string) map[string]string {
	return map[string]string{LabelOwnGateway: GatewayLabelValue(gateway)}
}

// LegacySelectorLabels are the selector of the Envoy Deployments that
// versions before shardgate.io/gateway existed created. Such a Deployment
// keeps it while its pods still carry those labels (see AdoptSelector).
func LegacySelectorLabels(gateway string) map[string]string {
	return map[string]string{
		LabelName:      LabelNameValue,
		LabelManagedBy: LabelManagedByValue,
		LabelGateway:   GatewayLabelValue(gateway),
	}
}

// Labels are shardgate's labels on every provisioned object and pod:
// app.kubernetes.io/name and managed-by (defaults that
// spec.infrastructure.labels may override), the Gateway API's
// gateway-name label and shardgate.io/gateway (which it may not).
func Labels(gateway string) map[string]string {
	out := LegacySelectorLabels(gateway)
	out[LabelOwnGateway] = GatewayLabelValue(gateway)
	return out
}
