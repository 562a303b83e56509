package shardgate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/internal/config"
)

// TestShardNamespaceRBAC: the Envoy objects' writes are granted per shard
// namespace, never cluster-wide.
func TestShardNamespaceRBAC(t *testing.T) {
	g := NewWithT(t)
	writes := map[string][]string{"": {"secrets", "serviceaccounts", "configmaps"}, "apps": {"deployments", "daemonsets"}, "policy": {"poddisruptionbudgets"}}
	clusterWrites := func(rel *release) []string {
		var out []string
		for _, r := range roleRules(t, rel) {
			if r.namespace != "" {
				continue
			}
			for _, grp := range r.APIGroups {
				for _, res := range r.Resources {
					if !slices.Contains(writes[grp], res) {
						continue
					}
					for _, v := range r.Verbs {
						// Automatic HTTPS deletes, in any lease namespace, the
						// Secret of a revoked name's certificate: only one
						// labelled shardgate.io/auto-tls and named
						// shardgate-tls.<host> (controllers/certificates.go).
						if grp == "" && res == "secrets" && v == "delete" {
							continue
						}
						if v != "list" && v != "watch" {
							out = append(out, v+" "+grp+"/"+res)
						}
					}
				}
			}
		}
		return out
	}
	// shardRoles maps namespace -> the verbs per resource of the shard Role there.
	shardRoles := func(rel *release) map[string]map[string][]string {
		out := map[string]map[string][]string{}
		for _, r := range roleRules(t, rel) {
			if r.namespace == "" || r.namespace == rel.namespace && !isShardRule(r.Resources) {
				continue
			}
			if out[r.namespace] == nil {
				out[r.namespace] = map[string][]string{}
			}
			for _, res := range r.Resources {
				out[r.namespace][res] = append(out[r.namespace][res], r.Verbs...)
			}
		}
		return out
	}
	want := map[string][]string{
		"secrets": {"get", "create", "patch", "delete"}, "serviceaccounts": {"get", "create", "patch", "delete"},
		"configmaps": {"get", "create", "patch", "delete"}, "deployments": {"get", "create", "patch", "delete"},
		"daemonsets": {"get", "create", "patch", "delete"}, "poddisruptionbudgets": {"get", "create", "patch", "delete"},
	}

	// Default: the release namespace only.
	rel := mustRender(t, "shardgate", "shardgate-system", nil)
	g.Expect(clusterWrites(rel)).To(BeEmpty(), "the ClusterRole grants Envoy-object writes in every namespace")
	g.Expect(shardRoles(rel)).To(Equal(map[string]map[string][]string{"shardgate-system": want}))

	// Listed namespaces, besides the release namespace (which always may
	// hold shards): one Role and RoleBinding each, bound to the release's
	// ServiceAccount.
	rel = mustRender(t, "shardgate", "shardgate-system", map[string]any{"shardNamespaces": []any{"providers", "edge", "providers"}})
	g.Expect(clusterWrites(rel)).To(BeEmpty())
	g.Expect(shardRoles(rel)).To(Equal(map[string]map[string][]string{"shardgate-system": want, "providers": want, "edge": want}))
	var bound []string
	for _, u := range rel.objects {
		if u.GetKind() != "RoleBinding" || u.GetName() != "shardgate-shard" {
			continue
		}
		subjects, _, _ := unstructuredSlice(u.Object, "subjects")
		g.Expect(subjects).To(HaveLen(1))
		g.Expect(subjects[0]).To(HaveKeyWithValue("name", "shardgate"))
		g.Expect(subjects[0]).To(HaveKeyWithValue("namespace", "shardgate-system"))
		bound = append(bound, u.GetNamespace())
	}
	g.Expect(bound).To(ConsistOf("shardgate-system", "providers", "edge"))
}

func isShardRule(resources []string) bool {
	for _, r := range resources {
		if r == "serviceaccounts" || r == "configmaps" || r == "deployments" || r == "daemonsets" || r == "poddisruptionbudgets" {
			return true
		}
	}
	return false
}

// TestPDBOnlyWithReplicas: a PodDisruptionBudget over a single replica would
// block every node drain, so it is rendered only above one replica.
func TestPDBOnlyWithReplicas(t *testing.T) {
	g := NewWithT(t)
	for replicas, want := range map[int]bool{1: false, 2: true, 3: true} {
		rel := mustRender(t, "shardgate", "sg", map[string]any{"replicaCount": replicas})
		_, has := kinds(rel.objects)["PodDisruptionBudget"]
		g.Expect(has).To(Equal(want), "replicaCount %d", replicas)
	}
	rel := mustRender(t, "shardgate", "sg", map[string]any{"replicaCount": 3, "podDisruptionBudget": map[string]any{"enabled": false}})
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("PodDisruptionBudget"))
}

// TestExtraArgsEnvAnnotationsDigest: extraArgs follow the chart's flags,
// extraEnv follows GOMEMLIMIT, podAnnotations reach the Pod template, and
// image.digest pins the image.
func TestExtraArgsEnvAnnotationsDigest(t *testing.T) {
	g := NewWithT(t)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	rel := mustRender(t, "shardgate", "sg", map[string]any{
		"extraArgs":      []any{"--kube-api-qps=100", "--enable-profiling"},
		"extraEnv":       []any{map[string]any{"name": "GODEBUG", "value": "madvdontneed=1"}},
		"podAnnotations": map[string]any{"example.com/team": "edge"},
		"image":          map[string]any{"tag": "v9.9.9", "digest": digest},
	})
	d := find[appsv1.Deployment](t, rel, "Deployment", "shardgate")
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args[len(c.Args)-2:]).To(Equal([]string{"--kube-api-qps=100", "--enable-profiling"}))
	g.Expect(c.Args[0]).To(Equal("controller"))
	g.Expect(c.Env).To(HaveLen(2))
	g.Expect(c.Env[0].Name).To(Equal("GOMEMLIMIT"))
	g.Expect(c.Env[1]).To(Equal(corev1.EnvVar{Name: "GODEBUG", Value: "madvdontneed=1"}))
	g.Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("example.com/team", "edge"))
	g.Expect(c.Image).To(Equal("ghcr.io/shardgate/shardgate@" + digest))
}

func unstructuredSlice(obj map[string]any, field string) ([]map[string]any, bool, error) {
	raw, ok := obj[field].([]any)
	if !ok {
		return nil, false, nil
	}
	var out []map[string]any
	for _, r := range raw {
		m, _ := r.(map[string]any)
		out = append(out, m)
	}
	return out, true, nil
}

// TestValuesSchema: values.schema.json accepts values.yaml and the values
// the other tests use, and refuses unknown keys and wrong types by name.
func TestValuesSchema(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string // substring of the error
	}{
		{"unknown top-level key", map[string]any{"replicas": 2}, "replicas"},
		{"unknown nested key", map[string]any{"config": map[string]any{"blockedHostname": []any{"a"}}}, "blockedHostname"},
		{"wrong type", map[string]any{"replicaCount": "two"}, "replicaCount"},
		{"bad digest", map[string]any{"image": map[string]any{"digest": "latest"}}, "digest"},
		{"bad log format", map[string]any{"logFormat": "xml"}, "logFormat"},
		{"extraArgs must be flags", map[string]any{"extraArgs": []any{"controller"}}, "extraArgs"},
		{"shard namespace name", map[string]any{"shardNamespaces": []any{"Not_A_Namespace"}}, "shardNamespaces"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render("shardgate", "sg", c.values)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("render(%v) = %v, want a schema error naming %q", c.values, err, c.want)
			}
		})
	}
	for _, v := range []map[string]any{
		nil,
		{"logLevel": 4}, {"logLevel": "debug"}, {"podDisruptionBudget": map[string]any{"minAvailable": "50%"}},
		{"gatewayAPI": map[string]any{"installCRDs": true}},
	} {
		if _, err := render("shardgate", "sg", v); err != nil {
			t.Errorf("render(%v): %v", v, err)
		}
	}
}

// TestNotes: the install notes give the next steps.
func TestNotes(t *testing.T) {
	g := NewWithT(t)
	rel := mustRender(t, "shardgate", "shardgate-system", map[string]any{"shardNamespaces": []any{"providers"}})
	for _, want := range []string{"GatewayParameters", "LeaseHost", "shardgate status -A", "kubectl get gatewayclass shardgate", "providers"} {
		g.Expect(rel.notes).To(ContainSubstring(want))
	}
}

// TestNotesShardNamespaces: the notes list the namespaces that may hold
// shards as the controller's config and the chart's RBAC have them: the
// release namespace always, and shardNamespaces besides it.
func TestNotesShardNamespaces(t *testing.T) {
	for _, c := range []struct {
		name   string
		shards []any
		want   string
	}{
		{"none", nil, "edge-system"},
		{"others", []any{"providers", "tenants-a"}, "edge-system, providers, tenants-a"},
		{"with the release namespace", []any{"providers", "edge-system"}, "edge-system, providers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			values := map[string]any{}
			if c.shards != nil {
				values["shardNamespaces"] = c.shards
			}
			rel := mustRender(t, "edge", "edge-system", values)
			var line string
			for l := range strings.SplitSeq(rel.notes, "\n") {
				if rest, ok := strings.CutPrefix(l, "Shard namespaces (where the controller may provision Envoy): "); ok {
					line = rest
				}
			}
			g.Expect(line).To(Equal(c.want), "notes:\n%s", rel.notes)

			// The same set as the controller's config and the shard Roles.
			listed := strings.Split(line, ", ")
			cfg, _ := controllerConfig(t, rel)
			g.Expect(listed).To(ConsistOf(cfg.ShardNamespaces))
			roles := map[string]bool{}
			for _, r := range roleRules(t, rel) {
				if r.namespace != "" && isShardRule(r.Resources) {
					roles[r.namespace] = true
				}
			}
			g.Expect(listed).To(ConsistOf(keys(roles)))
		})
	}
}

// TestXDSLimits: config.xdsLimits reaches the controller's config as
// xds.limits, the keys not given keep their defaults, and bad values are
// refused by the schema.
func TestXDSLimits(t *testing.T) {
	configOf := func(values map[string]any) (config.Config, error) {
		rel, err := render("shardgate", "shardgate-system", values)
		if err != nil {
			return config.Config{}, err
		}
		for _, o := range rel.objects {
			if data, ok, _ := unstructuredString(o.Object, "data", "config.yaml"); ok {
				return config.Parse([]byte(data))
			}
		}
		return config.Config{}, fmt.Errorf("no config.yaml rendered")
	}
	cfg, err := configOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.XDS.Limits != config.Default().XDS.Limits {
		t.Fatalf("default limits %+v, want %+v", cfg.XDS.Limits, config.Default().XDS.Limits)
	}
	cfg, err = configOf(map[string]any{"config": map[string]any{"xdsLimits": map[string]any{"streamsPerCertificate": 200, "maxRequestBytes": 1048576}}})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default().XDS.Limits
	want.StreamsPerCertificate, want.MaxRequestBytes = 200, 1<<20
	if cfg.XDS.Limits != want {
		t.Fatalf("limits %+v, want %+v", cfg.XDS.Limits, want)
	}
	for _, bad := range []map[string]any{
		{"streamsPerNode": 3},
		{"streamsPerIdentity": 0},
		{"maxRequestBytes": 1000},
	} {
		if _, err := configOf(map[string]any{"config": map[string]any{"xdsLimits": bad}}); err == nil {
			t.Errorf("xdsLimits %v rendered", bad)
		}
	}
}

// TestCertificatesValues: config.certificates reaches the controller's
// config (absent: Let's Encrypt's limits); the schema refuses what the
// controller would.
func TestCertificatesValues(t *testing.T) {
	configOf := func(values map[string]any) (config.Config, error) {
		rel, err := render("shardgate", "shardgate-system", values)
		if err != nil {
			return config.Config{}, err
		}
		for _, o := range rel.objects {
			if data, ok, _ := unstructuredString(o.Object, "data", "config.yaml"); ok {
				return config.Parse([]byte(data))
			}
		}
		return config.Config{}, fmt.Errorf("no config.yaml rendered")
	}
	cfg, err := configOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Certificates != config.Default().Certificates {
		t.Fatalf("default %+v, want %+v", cfg.Certificates, config.Default().Certificates)
	}
	cfg, err = configOf(map[string]any{"config": map[string]any{"certificates": map[string]any{"ordersPerIssuer": 20, "domainWindow": "24h"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default().Certificates
	want.OrdersPerIssuer, want.DomainWindow = 20, "24h"
	if cfg.Certificates != want {
		t.Fatalf("certificates %+v, want %+v", cfg.Certificates, want)
	}
	for _, bad := range []map[string]any{
		{"ordersPerAccount": 3},
		{"ordersPerIssuer": 0},
		{"backoff": "an hour"},
	} {
		if _, err := configOf(map[string]any{"config": map[string]any{"certificates": bad}}); err == nil {
			t.Errorf("certificates %v rendered", bad)
		}
	}
}
