package manager

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/shardgate/shardgate/internal/infra"
)

func transformOf[T any](t *testing.T, opts cache.Options) func(any) (any, error) {
	t.Helper()
	for o, by := range opts.ByObject {
		if _, ok := any(o).(T); ok {
			if by.Transform == nil {
				t.Fatalf("%T has no transform", o)
			}
			return by.Transform
		}
	}
	t.Fatalf("no cache options for %T", *new(T))
	return nil
}

// The cache holds every ConfigMap (any may be a Gateway's client CA), but
// of those shardgate does not manage only ca.crt; shardgate's own keep
// everything (the infra controller compares them). Non-TLS Secrets keep
// ca.crt only.
func TestCacheKeepsOnlyCABundles(t *testing.T) {
	opts := cacheOptions()
	for o, by := range opts.ByObject {
		if _, ok := o.(*corev1.ConfigMap); ok && by.Label != nil {
			t.Fatal("ConfigMaps are cached by label: a CA ConfigMap would never reach the translator")
		}
	}
	cmT := transformOf[*corev1.ConfigMap](t, opts)
	tenant := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "t", Annotations: map[string]string{"big": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data:       map[string]string{"ca.crt": "PEM", "other": "large"},
		BinaryData: map[string][]byte{"blob": []byte("large")},
	}
	got, err := cmT(tenant)
	if err != nil {
		t.Fatal(err)
	}
	c := got.(*corev1.ConfigMap)
	if !maps.Equal(c.Data, map[string]string{"ca.crt": "PEM"}) || c.BinaryData != nil || c.Annotations != nil || c.ManagedFields != nil {
		t.Fatalf("tenant ConfigMap cached as data=%v binary=%v annotations=%v managedFields=%v", c.Data, c.BinaryData, c.Annotations, c.ManagedFields)
	}
	noCA, _ := cmT(&corev1.ConfigMap{Data: map[string]string{"other": "large"}})
	if noCA.(*corev1.ConfigMap).Data != nil {
		t.Fatal("a ConfigMap without ca.crt keeps data")
	}
	ours := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{infra.LabelManagedBy: infra.LabelManagedByValue},
			Annotations: map[string]string{infra.AnnotationDesiredHash: "h"}},
		Data: map[string]string{infra.BootstrapKey: "envoy"},
	}
	got, _ = cmT(ours)
	if c := got.(*corev1.ConfigMap); c.Data[infra.BootstrapKey] != "envoy" || c.Annotations[infra.AnnotationDesiredHash] != "h" {
		t.Fatalf("shardgate's ConfigMap lost data or annotations: %v %v", c.Data, c.Annotations)
	}

	secT := transformOf[*corev1.Secret](t, opts)
	got, _ = secT(&corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ca.crt": []byte("PEM"), "password": []byte("x")}})
	s := got.(*corev1.Secret)
	if string(s.Data["ca.crt"]) != "PEM" || s.Data["password"] != nil {
		t.Fatalf("Opaque Secret cached as %v", s.Data)
	}
}
