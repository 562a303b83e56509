/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"maps"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Managed says whether shardgate wrote the object (LabelManaged "true"):
// the only Certificates and Secrets it ever updates or deletes.
func Managed(o metav1.Object) bool { return o.GetLabels()[LabelManaged] == "true" }

// CertificateFor is the cert-manager Certificate shardgate writes for w:
// named SecretName(host) in w's namespace and stored in the Secret of the
// same name, for exactly the name, from w's issuer; labelled LabelManaged
// (and the Secret too, through spec.secretTemplate) plus labels (the
// lease's), annotated AnnotationHostname, and owned by owner when set.
func CertificateFor(w *Want, labels map[string]string, owner *metav1.OwnerReference) *unstructured.Unstructured {
	name := SecretName(w.Host)
	l := map[string]string{LabelManaged: "true"}
	maps.Copy(l, labels)
	l[LabelManaged] = "true"
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"secretName": name,
			"dnsNames":   []any{w.Host},
			"issuerRef":  map[string]any{"group": w.Issuer.Group, "kind": w.Issuer.Kind, "name": w.Issuer.Name},
			"secretTemplate": map[string]any{
				"labels":      map[string]any{LabelManaged: "true"},
				"annotations": map[string]any{AnnotationHostname: w.Host},
			},
		},
	}}
	u.SetGroupVersionKind(CertificateGVK)
	u.SetNamespace(w.Namespace)
	u.SetName(name)
	u.SetLabels(l)
	u.SetAnnotations(map[string]string{AnnotationHostname: w.Host})
	if owner != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	return u
}

// specFields are the fields of a Certificate's spec shardgate sets.
var specFields = [][]string{{"spec", "secretName"}, {"spec", "dnsNames"}, {"spec", "issuerRef"}, {"spec", "secretTemplate"}}

// SpecEqual says whether existing asks for what desired does, in the
// fields shardgate sets (an empty string counts as absent, as an issuer
// group cert-manager fills in).
func SpecEqual(existing, desired *unstructured.Unstructured) bool {
	for _, f := range specFields {
		a, _, _ := unstructured.NestedFieldNoCopy(existing.Object, f...)
		b, _, _ := unstructured.NestedFieldNoCopy(desired.Object, f...)
		if !reflect.DeepEqual(normalJSON(a), normalJSON(b)) {
			return false
		}
	}
	return true
}

// normalJSON drops empty strings and empty maps from maps, and makes
// string slices []any, so that equal JSON compares equal.
func normalJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if s, ok := x.(string); ok && s == "" {
				continue
			}
			if m, ok := x.(map[string]any); ok && len(m) == 0 {
				continue
			}
			out[k] = normalJSON(x)
		}
		return out
	case map[string]string:
		out := map[string]any{}
		for k, x := range t {
			if x != "" {
				out[k] = x
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalJSON(x)
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = x
		}
		return out
	}
	return v
}

// Record is what the Pacer counts of a Certificate shardgate wrote.
type Record struct {
	Issuer, Host, Owner string
	Created             time.Time
}

// RecordOf reads the Pacer's record of a Certificate (false: shardgate did
// not write it). The owner is its lease-owner label.
func RecordOf(c *unstructured.Unstructured) (Record, bool) {
	if !Managed(c) {
		return Record{}, false
	}
	var ref shardgatev1alpha1.IssuerReference
	ref.Group, _, _ = unstructured.NestedString(c.Object, "spec", "issuerRef", "group")
	ref.Kind, _, _ = unstructured.NestedString(c.Object, "spec", "issuerRef", "kind")
	ref.Name, _, _ = unstructured.NestedString(c.Object, "spec", "issuerRef", "name")
	return Record{
		Issuer:  IssuerKey(ref, c.GetNamespace()),
		Host:    c.GetAnnotations()[AnnotationHostname],
		Owner:   c.GetLabels()[shardgatev1alpha1.LabelLeaseOwner],
		Created: c.GetCreationTimestamp().Time,
	}, true
}
