package shardgate_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shardgate/shardgate/internal/manager"
)

// boundTo lists the kind/name of every (Cluster)RoleBinding with a subject
// ServiceAccount namespace/name.
func boundTo(t *testing.T, rel *release, namespace, name string) []string {
	t.Helper()
	var out []string
	for _, u := range rel.objects {
		if u.GetKind() != "ClusterRoleBinding" && u.GetKind() != "RoleBinding" {
			continue
		}
		subjects, _, _ := unstructuredSlice(u.Object, "subjects")
		for _, s := range subjects {
			if s["kind"] == "ServiceAccount" && s["namespace"] == namespace && s["name"] == name {
				ref, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
				out = append(out, u.GetKind()+"/"+u.GetName()+"->"+ref)
			}
		}
	}
	return out
}

// TestServiceAccountCreateName: serviceAccount.create and .name; the
// Deployment and every binding of the controller follow the name.
func TestServiceAccountCreateName(t *testing.T) {
	g := NewWithT(t)
	controllerBindings := func() []string {
		return []string{
			"ClusterRoleBinding/edge-shardgate->edge-shardgate",
			"RoleBinding/edge-shardgate->edge-shardgate",
			"RoleBinding/edge-shardgate-shard->edge-shardgate-shard", // edge-system
			"RoleBinding/edge-shardgate-shard->edge-shardgate-shard", // providers
		}
	}
	saNames := func(rel *release) []string {
		var out []string
		for _, u := range rel.objects {
			if u.GetKind() == "ServiceAccount" {
				out = append(out, u.GetName())
			}
		}
		return out
	}
	base := map[string]any{"shardNamespaces": []any{"providers"}}

	// Default: created, named after the release.
	rel := mustRender(t, "edge", "edge-system", base)
	g.Expect(saNames(rel)).To(ConsistOf("edge-shardgate", "shardgate-config-reader"))
	g.Expect(find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate").Spec.Template.Spec.ServiceAccountName).To(Equal("edge-shardgate"))
	g.Expect(boundTo(t, rel, "edge-system", "edge-shardgate")).To(ConsistOf(controllerBindings()))

	// Created under another name.
	base["serviceAccount"] = map[string]any{"name": "ingress-controller", "annotations": map[string]any{"example.com/role": "x"}}
	rel = mustRender(t, "edge", "edge-system", base)
	g.Expect(saNames(rel)).To(ConsistOf("ingress-controller", "shardgate-config-reader"))
	sa := find[corev1.ServiceAccount](t, rel, "ServiceAccount", "ingress-controller")
	g.Expect(sa.Annotations).To(HaveKeyWithValue("example.com/role", "x"))
	g.Expect(find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate").Spec.Template.Spec.ServiceAccountName).To(Equal("ingress-controller"))
	g.Expect(boundTo(t, rel, "edge-system", "ingress-controller")).To(ConsistOf(controllerBindings()))
	g.Expect(boundTo(t, rel, "edge-system", "edge-shardgate")).To(BeEmpty())

	// Not created: the existing one is used and bound.
	base["serviceAccount"] = map[string]any{"create": false, "name": "platform-sa"}
	rel = mustRender(t, "edge", "edge-system", base)
	g.Expect(saNames(rel)).To(ConsistOf("shardgate-config-reader"))
	g.Expect(find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate").Spec.Template.Spec.ServiceAccountName).To(Equal("platform-sa"))
	g.Expect(boundTo(t, rel, "edge-system", "platform-sa")).To(ConsistOf(controllerBindings()))

	// Not created and not named: refused, by name.
	_, err := render("edge", "edge-system", map[string]any{"serviceAccount": map[string]any{"create": false}})
	g.Expect(err).To(MatchError(ContainSubstring("name")))
	g.Expect(err).To(MatchError(ContainSubstring("serviceAccount")))
	_, err = render("edge", "edge-system", map[string]any{"serviceAccount": map[string]any{"create": false, "name": ""}})
	g.Expect(err).To(MatchError(ContainSubstring("serviceAccount")))
}

// TestConfigReader: the shardgate-config-reader ServiceAccount that
// `shardgate config dump`'s help names, bound to exactly get on the config
// dump path the metrics server serves, nothing else.
func TestConfigReader(t *testing.T) {
	g := NewWithT(t)
	// Whatever the release's name, the account is the one the CLI names.
	rel := mustRender(t, "edge", "edge-system", nil)
	sa := find[corev1.ServiceAccount](t, rel, "ServiceAccount", "shardgate-config-reader")
	g.Expect(sa.Namespace).To(Equal("edge-system"))
	g.Expect(*sa.AutomountServiceAccountToken).To(BeFalse())
	g.Expect(boundTo(t, rel, "edge-system", "shardgate-config-reader")).To(Equal([]string{
		"ClusterRoleBinding/edge-shardgate-config-reader->edge-shardgate-config-reader",
	}))
	crb := find[rbacv1.ClusterRoleBinding](t, rel, "ClusterRoleBinding", "edge-shardgate-config-reader")
	g.Expect(crb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edge-shardgate-config-reader"}))
	role := find[rbacv1.ClusterRole](t, rel, "ClusterRole", "edge-shardgate-config-reader")
	g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{
		NonResourceURLs: []string{manager.ConfigDumpPath, manager.ConfigDumpPath + "/*"},
		Verbs:           []string{"get"},
	}}))
	// No Secret holds a token of it: `kubectl create token` issues one.
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("Secret"))

	rel = mustRender(t, "edge", "edge-system", map[string]any{"configReader": map[string]any{"name": "dump-reader"}})
	g.Expect(boundTo(t, rel, "edge-system", "dump-reader")).To(HaveLen(1))
	rel = mustRender(t, "edge", "edge-system", map[string]any{"configReader": map[string]any{"create": false}})
	g.Expect(boundTo(t, rel, "edge-system", "shardgate-config-reader")).To(BeEmpty())
	g.Expect(findAll(rel, "ServiceAccount", "shardgate-config-reader")).To(BeEmpty())
	// The ClusterRole stays, for users to bind themselves.
	find[rbacv1.ClusterRole](t, rel, "ClusterRole", "edge-shardgate-config-reader")
}

func findAll(rel *release, kind, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range rel.objects {
		if u.GetKind() == kind && u.GetName() == name {
			out = append(out, u)
		}
	}
	return out
}

// endpoint renders the chart and returns the ServiceMonitor's endpoint.
func endpoint(t *testing.T, rel *release) map[string]any {
	t.Helper()
	eps, _, _ := unstructured.NestedSlice(findUnstructured(t, rel, "ServiceMonitor", "edge-shardgate").Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("endpoints %v", eps)
	}
	return eps[0].(map[string]any)
}

func monitorValues(metrics map[string]any) map[string]any {
	return map[string]any{"metrics": metrics}
}

// TestServiceMonitorAuthorization: the scrape sends a token from a Secret
// (the chart's metrics-reader token, or the user's) and verifies the
// serving certificate with a CA, never skipping verification unless told.
func TestServiceMonitorAuthorization(t *testing.T) {
	g := NewWithT(t)

	// metrics.certSecret: its ca.crt verifies the metrics Service's name.
	rel := mustRender(t, "edge", "edge-system", monitorValues(map[string]any{
		"certSecret": "metrics-tls", "serviceMonitor": map[string]any{"enabled": true},
	}))
	ep := endpoint(t, rel)
	g.Expect(ep).To(HaveKeyWithValue("scheme", "https"))
	g.Expect(ep).NotTo(HaveKey("bearerTokenFile"))
	g.Expect(ep).To(HaveKeyWithValue("authorization", map[string]any{
		"type": "Bearer", "credentials": map[string]any{"name": "edge-shardgate-metrics-reader-token", "key": "token"},
	}))
	g.Expect(ep).To(HaveKeyWithValue("tlsConfig", map[string]any{
		"ca":         map[string]any{"secret": map[string]any{"name": "metrics-tls", "key": "ca.crt"}},
		"serverName": "edge-shardgate-metrics.edge-system.svc",
	}))
	find[corev1.Service](t, rel, "Service", "edge-shardgate-metrics")
	// The token: a service-account-token Secret of a ServiceAccount bound
	// to get /metrics only.
	sec := find[corev1.Secret](t, rel, "Secret", "edge-shardgate-metrics-reader-token")
	g.Expect(sec.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
	g.Expect(sec.Namespace).To(Equal("edge-system"))
	g.Expect(sec.Annotations).To(HaveKeyWithValue(corev1.ServiceAccountNameKey, "edge-shardgate-metrics-reader"))
	find[corev1.ServiceAccount](t, rel, "ServiceAccount", "edge-shardgate-metrics-reader")
	g.Expect(boundTo(t, rel, "edge-system", "edge-shardgate-metrics-reader")).To(Equal([]string{
		"ClusterRoleBinding/edge-shardgate-metrics-reader->edge-shardgate-metrics-reader",
	}))
	g.Expect(find[rbacv1.ClusterRole](t, rel, "ClusterRole", "edge-shardgate-metrics-reader").Rules).To(Equal([]rbacv1.PolicyRule{{
		NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"},
	}}))
	// Helm installs the ServiceAccount before the token Secret.
	order := names(rel.objects)
	g.Expect(indexOf(order, "ServiceAccount/edge-shardgate-metrics-reader")).To(BeNumerically("<", indexOf(order, "Secret/edge-shardgate-metrics-reader-token")))

	// A user's Secret and key, a user's CA and serverName (each key of
	// tlsConfig given replaces the chart's, the CA as a whole).
	rel = mustRender(t, "edge", "edge-system", monitorValues(map[string]any{
		"certSecret": "metrics-tls",
		"serviceMonitor": map[string]any{
			"enabled":       true,
			"authorization": map[string]any{"createSecret": false, "secretName": "prom-token", "key": "jwt"},
			"tlsConfig": map[string]any{
				"ca":         map[string]any{"configMap": map[string]any{"name": "metrics-ca", "key": "ca.crt"}},
				"serverName": "metrics.example",
			},
		},
	}))
	ep = endpoint(t, rel)
	g.Expect(ep["authorization"]).To(Equal(map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prom-token", "key": "jwt"}}))
	g.Expect(ep["tlsConfig"]).To(Equal(map[string]any{
		"ca":         map[string]any{"configMap": map[string]any{"name": "metrics-ca", "key": "ca.crt"}},
		"serverName": "metrics.example",
	}))
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("Secret"))
	g.Expect(boundTo(t, rel, "edge-system", "edge-shardgate-metrics-reader")).To(BeEmpty())

	// Self-signed (no certSecret): a user's CA, no chart CA.
	rel = mustRender(t, "edge", "edge-system", monitorValues(map[string]any{"serviceMonitor": map[string]any{
		"enabled": true, "tlsConfig": map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "ca", "key": "ca.crt"}}, "serverName": "edge"},
	}}))
	g.Expect(endpoint(t, rel)["tlsConfig"]).To(Equal(map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "ca", "key": "ca.crt"}}, "serverName": "edge"}))

	// Skipping verification is an explicit choice, by the new key or the
	// tlsConfig of earlier releases.
	for _, sm := range []map[string]any{
		{"enabled": true, "insecureSkipVerify": true},
		{"enabled": true, "tlsConfig": map[string]any{"insecureSkipVerify": true}},
	} {
		rel = mustRender(t, "edge", "edge-system", monitorValues(map[string]any{"serviceMonitor": sm}))
		g.Expect(endpoint(t, rel)["tlsConfig"]).To(Equal(map[string]any{"insecureSkipVerify": true}), "%v", sm)
	}

	// Nothing to verify with: verification is skipped as in earlier
	// releases, so an upgrade keeps scraping (NOTES warns).
	rel = mustRender(t, "edge", "edge-system", monitorValues(map[string]any{"serviceMonitor": map[string]any{"enabled": true}}))
	g.Expect(endpoint(t, rel)["tlsConfig"]).To(Equal(map[string]any{"insecureSkipVerify": true}))
	g.Expect(rel.notes).To(ContainSubstring("WARNING: the ServiceMonitor skips verification"))
	// Told, or given a CA: no warning.
	for _, m := range []map[string]any{
		{"serviceMonitor": map[string]any{"enabled": true, "insecureSkipVerify": true}},
		{"certSecret": "metrics-tls", "serviceMonitor": map[string]any{"enabled": true}},
	} {
		rel = mustRender(t, "edge", "edge-system", monitorValues(m))
		g.Expect(rel.notes).NotTo(ContainSubstring("WARNING"), "%v", m)
	}

	// Refused, by name: no token Secret.
	_, err := render("edge", "edge-system", monitorValues(map[string]any{"certSecret": "tls", "serviceMonitor": map[string]any{"enabled": true, "authorization": map[string]any{"createSecret": false}}}))
	g.Expect(err).To(MatchError(ContainSubstring("metrics.serviceMonitor.authorization.secretName is required")))
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestPDBMaxUnavailable: maxUnavailable instead of minAvailable, never both.
func TestPDBMaxUnavailable(t *testing.T) {
	g := NewWithT(t)
	pdb := func(values map[string]any) (*policyv1.PodDisruptionBudget, error) {
		vals := map[string]any{}
		if values != nil {
			vals["podDisruptionBudget"] = values
		}
		rel, err := render("shardgate", "sg", vals)
		if err != nil {
			return nil, err
		}
		return find[policyv1.PodDisruptionBudget](t, rel, "PodDisruptionBudget", "shardgate"), nil
	}
	for _, c := range []struct {
		values   map[string]any
		min, max *intstr.IntOrString
	}{
		{nil, new(intstr.FromInt32(1)), nil},
		{map[string]any{"minAvailable": 0}, new(intstr.FromInt32(0)), nil},
		{map[string]any{"minAvailable": "50%"}, new(intstr.FromString("50%")), nil},
		{map[string]any{"minAvailable": nil, "maxUnavailable": 1}, nil, new(intstr.FromInt32(1))},
		{map[string]any{"minAvailable": nil, "maxUnavailable": "25%"}, nil, new(intstr.FromString("25%"))},
	} {
		p, err := pdb(c.values)
		g.Expect(err).NotTo(HaveOccurred(), "%v", c.values)
		g.Expect(p.Spec.MinAvailable).To(Equal(c.min), "%v", c.values)
		g.Expect(p.Spec.MaxUnavailable).To(Equal(c.max), "%v", c.values)
	}
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"maxUnavailable": 1}, "set minAvailable or maxUnavailable, not both"},
		{map[string]any{"minAvailable": 2, "maxUnavailable": "10%"}, "not both"},
		{map[string]any{"minAvailable": nil, "maxUnavailable": "half"}, "maxUnavailable"},
		{map[string]any{"minAvailable": nil, "maxUnavailable": -1}, "maxUnavailable"},
	} {
		_, err := pdb(c.values)
		g.Expect(err).To(MatchError(ContainSubstring(c.want)), "%v", c.values)
	}
}

// TestGrafanaDashboard: the packaged dashboard in a ConfigMap a Grafana
// sidecar finds by label, off by default.
func TestGrafanaDashboard(t *testing.T) {
	g := NewWithT(t)
	rel := mustRender(t, "edge", "edge-system", nil)
	g.Expect(findAll(rel, "ConfigMap", "edge-shardgate-dashboard")).To(BeEmpty())

	want, err := os.ReadFile(filepath.Join("dashboards", "shardgate.json"))
	g.Expect(err).NotTo(HaveOccurred())
	rel = mustRender(t, "edge", "edge-system", monitorValues(map[string]any{"grafanaDashboard": map[string]any{"enabled": true}}))
	cm := find[corev1.ConfigMap](t, rel, "ConfigMap", "edge-shardgate-dashboard")
	g.Expect(cm.Namespace).To(Equal("edge-system"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("app.kubernetes.io/instance", "edge"))
	g.Expect(cm.Annotations).To(BeEmpty())
	g.Expect(cm.Data).To(HaveLen(1))
	g.Expect(cm.Data["shardgate.json"]).To(MatchJSON(want))

	rel = mustRender(t, "edge", "edge-system", monitorValues(map[string]any{"grafanaDashboard": map[string]any{
		"enabled": true, "namespace": "monitoring",
		"labels":      map[string]any{"grafana_dashboard": nil, "dashboards": "shardgate"},
		"annotations": map[string]any{"grafana_folder": "Ingress"},
	}}))
	cm = find[corev1.ConfigMap](t, rel, "ConfigMap", "edge-shardgate-dashboard")
	g.Expect(cm.Namespace).To(Equal("monitoring"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("dashboards", "shardgate"))
	g.Expect(cm.Labels).NotTo(HaveKey("grafana_dashboard"))
	g.Expect(cm.Annotations).To(Equal(map[string]string{"grafana_folder": "Ingress"}))
}
