package shardgate_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/internal/infra"
)

// TestEnvoyPodMonitor: metrics.podMonitor renders a PodMonitor that
// selects every Envoy pod shardgate provisions (by shardgate.io/gateway,
// whatever infrastructure labels they carry) in the namespaces that hold
// shards, scrapes only the metrics port's /stats/prometheus, and labels
// the series with namespace and gateway.
func TestEnvoyPodMonitor(t *testing.T) {
	g := NewWithT(t)
	rel := mustRender(t, "edge", "edge-system", nil)
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("PodMonitor"), "rendered only when enabled")

	rel = mustRender(t, "edge", "edge-system", map[string]any{
		"shardNamespaces": []any{"providers", "edge-system"},
		"metrics":         map[string]any{"podMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}},
	})
	pm := findUnstructured(t, rel, "PodMonitor", "edge-shardgate-envoy")
	g.Expect(pm.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(pm.GetNamespace()).To(Equal("edge-system"))
	g.Expect(pm.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	names, _, _ := unstructured.NestedStringSlice(pm.Object, "spec", "namespaceSelector", "matchNames")
	g.Expect(names).To(ConsistOf("edge-system", "providers"))

	// The selector matches the labels Build gives the Envoy pods, also
	// when an infrastructure label replaced app.kubernetes.io/name.
	exprs, _, _ := unstructured.NestedSlice(pm.Object, "spec", "selector", "matchExpressions")
	g.Expect(exprs).To(HaveLen(1))
	e := exprs[0].(map[string]any)
	req, err := labels.NewRequirement(e["key"].(string), "exists", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e["operator"]).To(Equal("Exists"))
	pods := infra.Labels("edge")
	pods[infra.LabelName] = "ingress-nginx"
	g.Expect(labels.NewSelector().Add(*req).Matches(labels.Set(pods))).To(BeTrue())
	g.Expect(req.Key()).To(Equal(infra.LabelOwnGateway))

	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	g.Expect(eps).To(HaveLen(1))
	ep := eps[0].(map[string]any)
	g.Expect(ep).To(HaveKeyWithValue("port", "metrics"))
	g.Expect(ep).To(HaveKeyWithValue("path", infra.MetricsPath))
	g.Expect(ep["relabelings"]).To(ConsistOf(
		map[string]any{"sourceLabels": []any{"__meta_kubernetes_namespace"}, "targetLabel": "namespace"},
		map[string]any{"sourceLabels": []any{"__meta_kubernetes_pod_label_shardgate_io_gateway"}, "targetLabel": "gateway"},
	))
}
