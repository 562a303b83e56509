package shardgate_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/internal/config"
)

// TestAkashMode: the chart's Akash mode turns Akash mode on in the config,
// exposes the API port, and creates the Services the Akash provider
// discovers its operators by: operator-hostname and operator-ip in
// akash-services, each with a TCP port named "rest" leading to the API.
func TestAkashMode(t *testing.T) {
	rel, err := render("shardgate", "akash-services", map[string]any{"akash": map[string]any{"enabled": true, "namespace": "manifests"}})
	if err != nil {
		t.Fatal(err)
	}
	var cfgData string
	services := map[string]corev1.Service{}
	apiPort := false
	akashRead := false
	for _, o := range rel.objects {
		switch o.GetKind() {
		case "ConfigMap":
			if data, ok, _ := unstructuredString(o.Object, "data", "config.yaml"); ok {
				cfgData = data
			}
		case "Service":
			var s corev1.Service
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
				t.Fatal(err)
			}
			services[s.Name] = s
		case "Deployment":
			apiPort = strings.Contains(mustJSON(t, o.Object), `"name":"akash-api"`)
		case "ClusterRole":
			if strings.Contains(mustJSON(t, o.Object), `"providerhosts"`) {
				akashRead = true
			}
		}
	}
	cfg, err := config.Parse([]byte(cfgData))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, cfgData)
	}
	if !cfg.Akash.Enabled || cfg.Akash.Namespace != "manifests" || cfg.Akash.APIAddress != ":8086" || cfg.Akash.MetalLBPool != "default" {
		t.Fatalf("config akash = %+v", cfg.Akash)
	}
	if !apiPort || !akashRead {
		t.Fatalf("container port akash-api: %v; ClusterRole reads Akash objects: %v", apiPort, akashRead)
	}
	for _, name := range []string{"operator-hostname", "operator-ip"} {
		s, ok := services[name]
		if !ok {
			t.Fatalf("no Service %s (have %v)", name, keys(services))
		}
		if s.Namespace != "akash-services" || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "rest" ||
			s.Spec.Ports[0].Protocol != corev1.ProtocolTCP || s.Spec.Ports[0].TargetPort.String() != "akash-api" {
			t.Fatalf("Service %s: namespace %s ports %+v", name, s.Namespace, s.Spec.Ports)
		}
	}

	// Elsewhere, the provider would not find them: a clear error.
	if _, err := render("shardgate", "shardgate-system", map[string]any{"akash": map[string]any{"enabled": true}}); err == nil || !strings.Contains(err.Error(), "akash-services") {
		t.Fatalf("render in shardgate-system = %v, want an error naming akash-services", err)
	}
	rel, err = render("shardgate", "shardgate-system", map[string]any{"akash": map[string]any{"enabled": true, "operatorServices": false}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rel.objects {
		if o.GetKind() == "Service" && strings.HasPrefix(o.GetName(), "operator-") {
			t.Fatalf("operatorServices=false still renders %s", o.GetName())
		}
	}
	// Off by default: no akash key in the config.
	rel, err = render("shardgate", "shardgate-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rel.objects {
		if data, ok, _ := unstructuredString(o.Object, "data", "config.yaml"); ok && strings.Contains(data, "akash") {
			t.Fatalf("default config mentions akash:\n%s", data)
		}
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	return unstructured.NestedString(obj, fields...)
}

func mustJSON(t *testing.T, obj map[string]any) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestAkashAPINetworkPolicy: in Akash mode the API port of the controller
// pods admits only the provider's pods (app=akash-provider in
// akash-services); tenants' pods reach every other port (xDS, metrics,
// health) as without a policy. A NetworkPolicy engine evaluates the
// rendered policy.
func TestAkashAPINetworkPolicy(t *testing.T) {
	type pod struct {
		name      string
		namespace map[string]string // the namespace's labels
		labels    map[string]string
	}
	provider := pod{"the provider", map[string]string{"kubernetes.io/metadata.name": "akash-services"}, map[string]string{"app": "akash-provider"}}
	tenant := pod{"a tenant pod", map[string]string{"kubernetes.io/metadata.name": "vb3l0q1c8p2m9g6a7uu2o0j2k3l4m5n6o7p8q9r0s1t2u", "akash.network": "true"}, map[string]string{"akash.network/manifest-service": "web"}}
	forged := pod{"a tenant pod labelled app=akash-provider", tenant.namespace, map[string]string{"app": "akash-provider"}}
	neighbour := pod{"another pod of akash-services", provider.namespace, map[string]string{"app": "akash-inventory-operator"}}

	policies := func(t *testing.T, values map[string]any) ([]networkingv1.NetworkPolicy, map[string]string) {
		t.Helper()
		rel, err := render("shardgate", "akash-services", values)
		if err != nil {
			t.Fatal(err)
		}
		var out []networkingv1.NetworkPolicy
		var podLabels map[string]string
		for _, o := range rel.objects {
			switch o.GetKind() {
			case "NetworkPolicy":
				var np networkingv1.NetworkPolicy
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np); err != nil {
					t.Fatal(err)
				}
				out = append(out, np)
			case "Deployment":
				var d appsv1.Deployment
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
					t.Fatal(err)
				}
				podLabels = d.Spec.Template.Labels
			}
		}
		return out, podLabels
	}
	// allowed evaluates the policies for ingress from src to the
	// controller pod on port (TCP), with a NetworkPolicy engine.
	allowed := func(t *testing.T, nps []networkingv1.NetworkPolicy, podLabels map[string]string, src pod, port int32) bool {
		t.Helper()
		ptrs := make([]*networkingv1.NetworkPolicy, 0, len(nps))
		for i := range nps {
			ptrs = append(ptrs, &nps[i])
		}
		policy := matcher.BuildNetworkPolicies(true, ptrs)
		return policy.IsTrafficAllowed(&matcher.Traffic{
			Source: &matcher.TrafficPeer{IP: "10.244.3.3", Internal: &matcher.InternalPeer{
				Namespace: src.namespace["kubernetes.io/metadata.name"], NamespaceLabels: src.namespace, PodLabels: src.labels,
			}},
			Destination: &matcher.TrafficPeer{IP: "10.244.0.9", Internal: &matcher.InternalPeer{
				Namespace: "akash-services", NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "akash-services"}, PodLabels: podLabels,
			}},
			ResolvedPort: int(port),
			Protocol:     corev1.ProtocolTCP,
		}).IsAllowed()
	}

	nps, podLabels := policies(t, map[string]any{"akash": map[string]any{"enabled": true}})
	if len(nps) != 1 {
		t.Fatalf("%d NetworkPolicies in Akash mode, want 1", len(nps))
	}
	const api, xds, metrics, health = 8086, 18000, 8080, 8081
	for _, c := range []struct {
		src  pod
		port int32
		want bool
	}{
		{provider, api, true},
		{tenant, api, false},
		{forged, api, false},
		{neighbour, api, false},
		{tenant, xds, true},
		{tenant, metrics, true},
		{tenant, health, true},
		{provider, xds, true},
		{tenant, api - 1, true},
		{tenant, api + 1, true},
	} {
		if got := allowed(t, nps, podLabels, c.src, c.port); got != c.want {
			t.Errorf("%s to port %d: allowed %v, want %v", c.src.name, c.port, got, c.want)
		}
	}

	// Configurable: another peer list, another port.
	nps, podLabels = policies(t, map[string]any{"akash": map[string]any{"enabled": true, "apiPort": 9999, "apiNetworkPolicy": map[string]any{
		"from": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "akash-services"}}}},
	}}})
	if !allowed(t, nps, podLabels, neighbour, 9999) || allowed(t, nps, podLabels, tenant, 9999) || !allowed(t, nps, podLabels, tenant, 8086) {
		t.Errorf("apiPort 9999, from akash-services: neighbour %v (want true), tenant %v (want false), tenant to 8086 %v (want true)",
			allowed(t, nps, podLabels, neighbour, 9999), allowed(t, nps, podLabels, tenant, 9999), allowed(t, nps, podLabels, tenant, 8086))
	}
	// Off, and outside Akash mode: no policy.
	if nps, _ = policies(t, map[string]any{"akash": map[string]any{"enabled": true, "apiNetworkPolicy": map[string]any{"enabled": false}}}); len(nps) != 0 {
		t.Errorf("apiNetworkPolicy.enabled=false renders %d policies", len(nps))
	}
	if nps, _ = policies(t, map[string]any{"akash": map[string]any{"enabled": false, "operatorServices": false}}); len(nps) != 0 {
		t.Errorf("Akash mode off renders %d policies", len(nps))
	}
}

// TestAkashOperatorServicePort: the operator Services expose port 8080
// named "rest", as Akash's charts do, whatever port the API binds in the
// Pod (the targetPort), and a port the controller binds twice fails the
// install, naming both keys.
func TestAkashOperatorServicePort(t *testing.T) {
	for _, apiPort := range []int{8086, 9000} {
		rel, err := render("shardgate", "akash-services", map[string]any{"akash": map[string]any{"enabled": true, "apiPort": apiPort, "metalLBPool": "leased-ips"}})
		if err != nil {
			t.Fatal(err)
		}
		containerPorts := map[string]int32{}
		var cfgData string
		svcs := 0
		for _, o := range rel.objects {
			switch o.GetKind() {
			case "Deployment":
				var d appsv1.Deployment
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
					t.Fatal(err)
				}
				for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
					containerPorts[p.Name] = p.ContainerPort
				}
			case "ConfigMap":
				if data, ok, _ := unstructuredString(o.Object, "data", "config.yaml"); ok {
					cfgData = data
				}
			case "Service":
				if !strings.HasPrefix(o.GetName(), "operator-") {
					continue
				}
				var s corev1.Service
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
					t.Fatal(err)
				}
				svcs++
				p := s.Spec.Ports[0]
				if p.Name != "rest" || p.Port != 8080 || p.TargetPort.String() != "akash-api" {
					t.Errorf("apiPort %d: Service %s port %+v, want 8080 \"rest\" to akash-api", apiPort, s.Name, p)
				}
			}
		}
		if svcs != 2 {
			t.Fatalf("apiPort %d: %d operator Services", apiPort, svcs)
		}
		if containerPorts["akash-api"] != int32(apiPort) {
			t.Errorf("apiPort %d: container ports %v", apiPort, containerPorts)
		}
		seen := map[int32]string{}
		for name, p := range containerPorts {
			if other, ok := seen[p]; ok {
				t.Errorf("apiPort %d: container ports %s and %s are both %d", apiPort, other, name, p)
			}
			seen[p] = name
		}
		cfg, err := config.Parse([]byte(cfgData))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Akash.APIAddress != fmt.Sprintf(":%d", apiPort) || cfg.Akash.MetalLBPool != "leased-ips" {
			t.Errorf("apiPort %d: config akash = %+v", apiPort, cfg.Akash)
		}
	}

	// The metrics port is 8080 in the Pod by default: the API may not take
	// it (the Service port 8080 is another Service's, and may).
	for name, values := range map[string]map[string]any{
		"api on metrics": {"akash": map[string]any{"enabled": true, "apiPort": 8080}},
		"api on health":  {"akash": map[string]any{"enabled": true, "apiPort": 9999}, "ports": map[string]any{"health": 9999}},
		"metrics on xds": {"ports": map[string]any{"metrics": 18000}},
	} {
		_, err := render("shardgate", "akash-services", values)
		if err == nil || !strings.Contains(err.Error(), "are both port") {
			t.Errorf("%s: render = %v, want a port collision error", name, err)
		}
	}
	// Off, akash.apiPort binds nothing and may be anything.
	if _, err := render("shardgate", "shardgate-system", map[string]any{"akash": map[string]any{"apiPort": 8080}}); err != nil {
		t.Errorf("akash off, apiPort 8080: %v", err)
	}
}
