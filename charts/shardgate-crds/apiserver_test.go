package shardgatecrds_test

import (
	"context"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestUpgradeOnAPIServer: a real kube-apiserver accepts the rendered CRDs
// (server-side applied) over the CRDs the harness installs (experimental
// channel, shardgate's), as an upgrade of the release replaces them: a
// switch to standard, back to experimental, and the Akash CRDs added. Each switch shows in what the
// apiserver serves, and an HTTPRoute is stored through both.
func TestUpgradeOnAPIServer(t *testing.T) {
	testenv.Require(t)
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	c := env.Client

	apply := func(crds map[string]*apiextensionsv1.CustomResourceDefinition) {
		t.Helper()
		for _, name := range names(crds) {
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crds[name])
			if err != nil {
				t.Fatal(err)
			}
			delete(obj, "status")
			u := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: obj})
			if err := c.Apply(ctx, u, client.FieldOwner("helm"), client.ForceOwnership); err != nil {
				t.Fatalf("apply CRD %s: %v", name, err)
			}
		}
	}
	// servedOf waits until the apiserver serves exactly want of crd.
	servedOf := func(crd string, want []string) {
		t.Helper()
		var got []string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			var cur apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: crd}, &cur); err != nil {
				return false, err
			}
			got = served(&cur)
			established := false
			for _, cond := range cur.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			return established && slices.Equal(got, want), nil
		})
		if err != nil {
			t.Fatalf("%s serves %v, want %v: %v", crd, got, want, err)
		}
	}
	route := func(name string) {
		t.Helper()
		r := &gatewayv1.HTTPRoute{}
		r.Namespace, r.Name = testenv.SystemNamespace, name
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "shard-a"}}
		if err := c.Create(ctx, r); err != nil {
			t.Fatalf("create HTTPRoute %s: %v", name, err)
		}
	}

	apply(mustTemplate(t, "--set", "gatewayAPI.channel=standard"))
	servedOf("tlsroutes.gateway.networking.k8s.io", []string{"v1"})
	servedOf("leasehosts.shardgate.io", []string{"v1alpha1"})
	route("on-standard")

	apply(mustTemplate(t, "--set", "akash.enabled=true"))
	servedOf("tlsroutes.gateway.networking.k8s.io", []string{"v1", "v1alpha2", "v1alpha3"})
	servedOf("providerhosts.akash.network", []string{"v2beta2"})
	route("on-experimental")
	var kept apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "httproutes.gateway.networking.k8s.io"}, &kept); err != nil {
		t.Fatal(err)
	}
	if kept.Annotations["helm.sh/resource-policy"] != "keep" || kept.Annotations["gateway.networking.k8s.io/channel"] != "experimental" {
		t.Fatalf("stored HTTPRoute CRD annotations %v", kept.Annotations)
	}
}
