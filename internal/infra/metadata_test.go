package infra

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func infraGateway() *gatewayv1.Gateway {
	gw := testGateway()
	gw.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Value: "127.240.0.5"}}
	gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{
		Labels: map[gatewayv1.LabelKey]gatewayv1.LabelValue{
			"team":                                   "edge",
			"example.com/cost-center":                "42",
			"app.kubernetes.io/managed-by":           "someone-else",
			"gateway.networking.k8s.io/gateway-name": "other",
			"app.kubernetes.io/name":                 "ingress-nginx",
			"shardgate.io/gateway":                   "forged",
			"shardgate.io/x":                         "y",
		},
		Annotations: map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{
			"owner":                       "platform",
			"shardgate.io/desired-hash":   "forged",
			"shardgate.io/bootstrap-hash": "forged",
			"metallb.io/loadBalancerIPs":  "10.0.0.1",
			"metallb.io/address-pool":     "tenant-pool",
		},
	}
	return gw
}

// Every object and the pod template carry the Gateway's infrastructure
// labels and annotations. An infrastructure label may replace
// app.kubernetes.io/name and managed-by; shardgate.io/ labels and the
// gateway-name label keep shardgate's values, the selectors stay
// shardgate.io/gateway (which the pods carry), and reserved annotations are
// not copied.
func TestInfrastructureMetadataPropagated(t *testing.T) {
	gw := infraGateway()
	o := mustBuild(t, gw, nil, Options{})
	selector := SelectorLabels("edge")
	wantLabels := map[string]string{
		"team": "edge", "example.com/cost-center": "42",
		"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/managed-by": "someone-else",
		"gateway.networking.k8s.io/gateway-name": "edge", "shardgate.io/gateway": "edge",
	}
	type meta struct {
		what        string
		labels, ann map[string]string
	}
	metas := []meta{{"pod template", o.Deployment.Spec.Template.Labels, o.Deployment.Spec.Template.Annotations}}
	for _, obj := range o.All() {
		metas = append(metas, meta{obj.GetObjectKind().GroupVersionKind().Kind, obj.GetLabels(), obj.GetAnnotations()})
	}
	for _, m := range metas {
		if !reflect.DeepEqual(m.labels, wantLabels) {
			t.Errorf("%s labels = %v, want %v", m.what, m.labels, wantLabels)
		}
		if m.ann["owner"] != "platform" {
			t.Errorf("%s annotations = %v: the infrastructure annotation is missing", m.what, m.ann)
		}
		for k, v := range m.ann {
			if v == "forged" || v == "tenant-pool" || v == "10.0.0.1" {
				t.Errorf("%s: reserved annotation %s=%s was propagated", m.what, k, v)
			}
		}
	}
	if o.Deployment.Spec.Template.Annotations[AnnotationBootstrapHash] == "" || o.Deployment.Spec.Template.Annotations[AnnotationClientCertHash] == "" {
		t.Error("the pod template lost its rolling hashes")
	}
	if got := o.Service.Annotations["metallb.io/loadBalancerIPs"]; got != "127.240.0.5" {
		t.Errorf("Service loadBalancerIPs = %q, want the spec.addresses value", got)
	}
	if _, ok := o.Service.Annotations["metallb.io/address-pool"]; ok {
		t.Error("an infrastructure annotation chose the address pool")
	}
	if !reflect.DeepEqual(o.Deployment.Spec.Selector.MatchLabels, selector) || !reflect.DeepEqual(o.Service.Spec.Selector, selector) ||
		!reflect.DeepEqual(selector, map[string]string{"shardgate.io/gateway": "edge"}) {
		t.Errorf("selectors changed: %v %v", o.Deployment.Spec.Selector.MatchLabels, o.Service.Spec.Selector)
	}
	if !labels.SelectorFromSet(o.Service.Spec.Selector).Matches(labels.Set(o.Deployment.Spec.Template.Labels)) {
		t.Error("the Service does not select the pods")
	}
	// The golden records every object as built.
	var b strings.Builder
	for _, obj := range o.All() {
		y, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	path := filepath.Join("testdata", "objects-infrastructure.golden.yaml")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != b.String() {
		t.Errorf("objects differ from %s (run with -update):\n%s", path, b.String())
	}
}

// Changing or removing an infrastructure label or annotation changes every
// object's desired hash, so the infra controller re-applies them (and
// server-side apply drops what is no longer there).
func TestInfrastructureMetadataChangeIsNoticed(t *testing.T) {
	before := mustBuild(t, infraGateway(), nil, Options{})
	for name, change := range map[string]func(*gatewayv1.Gateway){
		"label changed":      func(g *gatewayv1.Gateway) { g.Spec.Infrastructure.Labels["team"] = "core" },
		"label removed":      func(g *gatewayv1.Gateway) { delete(g.Spec.Infrastructure.Labels, "team") },
		"annotation removed": func(g *gatewayv1.Gateway) { delete(g.Spec.Infrastructure.Annotations, "owner") },
		"all removed":        func(g *gatewayv1.Gateway) { g.Spec.Infrastructure = nil },
	} {
		gw := infraGateway()
		change(gw)
		after := mustBuild(t, gw, nil, Options{})
		for i, obj := range after.All() {
			old := before.All()[i]
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			if UpToDate(old, obj) {
				t.Errorf("%s: %s built before is still up to date", name, kind)
			}
			if name == "label removed" {
				if _, ok := obj.GetLabels()["team"]; ok {
					t.Errorf("%s: %s keeps the label", name, kind)
				}
			}
		}
		if name == "label removed" {
			if _, ok := after.Deployment.Spec.Template.Labels["team"]; ok {
				t.Error("the pod template keeps the removed label")
			}
		}
	}
}
