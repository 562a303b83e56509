/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func TestCertificateFor(t *testing.T) {
	w := &Want{Key: Key{Namespace: "tenant", Host: "shop.example.com"}, Issuer: le}
	owner := &metav1.OwnerReference{APIVersion: "shardgate.io/v1alpha1", Kind: "LeaseHost", Name: "shop", UID: "u1"}
	c := CertificateFor(w, map[string]string{shardgatev1alpha1.LabelLeaseOwner: "akash1x", LabelManaged: "false"}, owner)
	if c.GetName() != "shardgate-tls.shop.example.com" || c.GetNamespace() != "tenant" || c.GroupVersionKind() != CertificateGVK {
		t.Fatalf("object %s/%s %v", c.GetNamespace(), c.GetName(), c.GroupVersionKind())
	}
	if !Managed(c) || c.GetLabels()[shardgatev1alpha1.LabelLeaseOwner] != "akash1x" || c.GetAnnotations()[AnnotationHostname] != "shop.example.com" {
		t.Fatalf("labels %v annotations %v", c.GetLabels(), c.GetAnnotations())
	}
	if refs := c.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "u1" {
		t.Fatalf("owners %v", refs)
	}
	dns, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
	secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
	tmpl, _, _ := unstructured.NestedString(c.Object, "spec", "secretTemplate", "labels", LabelManaged)
	if len(dns) != 1 || dns[0] != "shop.example.com" || secret != c.GetName() || tmpl != "true" {
		t.Fatalf("spec %v", c.Object["spec"])
	}
	if CertificateFor(w, nil, nil).GetOwnerReferences() != nil {
		t.Fatal("an owner without one")
	}

	// As read back: the issuer's group filled in, other fields added by
	// defaulting; equal. A changed issuer is not.
	back := c.DeepCopy()
	_ = unstructured.SetNestedField(back.Object, "RSA", "spec", "privateKey", "algorithm")
	if !SpecEqual(back, c) {
		t.Fatal("read back: not equal")
	}
	other := CertificateFor(&Want{Key: w.Key, Issuer: shardgatev1alpha1.IssuerReference{Group: "cert-manager.io", Kind: "ClusterIssuer", Name: "other"}}, nil, nil)
	if SpecEqual(back, other) {
		t.Fatal("another issuer: equal")
	}
}

func TestRecordOf(t *testing.T) {
	c := CertificateFor(&Want{Key: Key{Namespace: "ns", Host: "a.example"}, Issuer: le},
		map[string]string{shardgatev1alpha1.LabelLeaseOwner: "akash1x"}, nil)
	at := metav1.NewTime(t0)
	c.SetCreationTimestamp(at)
	rec, ok := RecordOf(c)
	if !ok || rec.Issuer != IssuerKey(le, "ns") || rec.Host != "a.example" || rec.Owner != "akash1x" || !rec.Created.Equal(t0.Truncate(time.Second)) {
		t.Fatalf("record %+v %v", rec, ok)
	}
	c.SetLabels(nil)
	if _, ok := RecordOf(c); ok {
		t.Fatal("a Certificate shardgate did not write is counted")
	}
}
