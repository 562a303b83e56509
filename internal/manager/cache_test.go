package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/internal/infra"
)

// The ConfigMap cache keeps of every ConfigMap shardgate does not manage
// only what a BackendTLSPolicy reads, ca.crt; its own (the Envoy
// bootstrap) stay whole.
func TestConfigMapCacheKeepsOnlyCABundles(t *testing.T) {
	tenant := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "ca", Labels: map[string]string{"app": "x"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...big...}"}},
		Data:       map[string]string{"ca.crt": "PEM", "other": "large"},
		BinaryData: map[string][]byte{"blob": make([]byte, 1024)},
	}
	got := caBundleOnly(tenant).(*corev1.ConfigMap)
	if len(got.Data) != 1 || got.Data["ca.crt"] != "PEM" || got.BinaryData != nil || got.Annotations != nil || got.Labels["app"] != "x" {
		t.Fatalf("tenant ConfigMap kept as %+v", got)
	}
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "cfg"}, Data: map[string]string{"app.yaml": "large"}}
	if got := caBundleOnly(plain).(*corev1.ConfigMap); got.Data != nil {
		t.Fatalf("a ConfigMap without ca.crt keeps no data, got %v", got.Data)
	}
	ours := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "s", Name: "envoy",
		Labels: map[string]string{infra.LabelManagedBy: infra.LabelManagedByValue}}, Data: map[string]string{"envoy.yaml": "bootstrap"}}
	if got := caBundleOnly(ours).(*corev1.ConfigMap); got.Data["envoy.yaml"] != "bootstrap" {
		t.Fatalf("shardgate's own ConfigMap must stay whole, got %v", got.Data)
	}
	found := false
	for o, bo := range cacheOptions().ByObject {
		if _, ok := o.(*corev1.ConfigMap); ok {
			found = true
			if bo.Label != nil {
				t.Fatal("ConfigMaps must not be filtered by label: BackendTLSPolicies read tenants' CA ConfigMaps")
			}
			out, err := bo.Transform(tenant.DeepCopy())
			if err != nil || len(out.(*corev1.ConfigMap).Data) != 1 {
				t.Fatalf("the cache's ConfigMap transform: %v %v", out, err)
			}
		}
	}
	if !found {
		t.Fatal("no ConfigMap cache options")
	}
}
