package infra

import (
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// addressPinning are annotations load-balancer and IPAM controllers read
// to choose a Service's address or pool. None may reach an Envoy object
// from a Gateway, whatever prefixes the provider allows, except one the
// provider lists explicitly.
var addressPinning = map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{
	"lbipam.cilium.io/ips":                                         "127.240.1.11",
	"lbipam.cilium.io/sharing-key":                                 "victim",
	"kube-vip.io/loadBalancerIPs":                                  "127.240.1.11",
	"service.beta.kubernetes.io/aws-load-balancer-eip-allocations": "eipalloc-1",
	"service.beta.kubernetes.io/azure-load-balancer-ipv4":          "127.240.1.11",
	"networking.gke.io/load-balancer-ip-addresses":                 "victim-ip",
	"metallb.io/loadBalancerIPs":                                   "127.240.1.11",
	"metallb.universe.tf/address-pool":                             "tiny",
	"shardgate.io/desired-hash":                                    "forged",
}

func TestInfrastructureAnnotationsAreAllowListed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []string
		want    map[string]string
	}{
		{"default: keys without a prefix only", nil,
			map[string]string{"owner": "platform"}},
		{"a configured prefix", []string{"prometheus.io/"},
			map[string]string{"owner": "platform", "prometheus.io/scrape": "true"}},
		{"a configured cloud prefix lets the provider's own key through", []string{"service.beta.kubernetes.io/"},
			map[string]string{"owner": "platform", "service.beta.kubernetes.io/aws-load-balancer-eip-allocations": "eipalloc-1",
				"service.beta.kubernetes.io/azure-load-balancer-ipv4": "127.240.1.11"}},
		{"reserved prefixes are never allowed", []string{"metallb.io/", "metallb.universe.tf/", "shardgate.io/"},
			map[string]string{"owner": "platform"}},
	} {
		gw := testGateway()
		ann := map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{"owner": "platform", "prometheus.io/scrape": "true"}
		for k, v := range addressPinning {
			ann[k] = v
		}
		gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{Annotations: ann}
		o := mustBuild(t, gw, nil, Options{AnnotationPrefixes: tc.allowed})
		metas := map[string]map[string]string{"pod template": o.Deployment.Spec.Template.Annotations}
		for _, obj := range o.All() {
			metas[obj.GetObjectKind().GroupVersionKind().Kind] = obj.GetAnnotations()
		}
		for what, got := range metas {
			for k, v := range got {
				if want, ok := tc.want[k]; ok {
					if v != want {
						t.Errorf("%s: %s: %s=%q, want %q", tc.name, what, k, v, want)
					}
					continue
				}
				if gv, fromGateway := ann[gatewayv1.AnnotationKey(k)]; fromGateway && string(gv) == v {
					t.Errorf("%s: %s carries the Gateway's annotation %s=%s", tc.name, what, k, v)
				}
			}
			for k := range tc.want {
				if _, ok := got[k]; !ok {
					t.Errorf("%s: %s lacks the allowed annotation %s", tc.name, what, k)
				}
			}
		}
		if _, ok := gw.Spec.Infrastructure.Annotations["lbipam.cilium.io/ips"]; !ok {
			t.Fatal("Build changed the caller's Gateway")
		}
	}
}

func TestAllowedAnnotation(t *testing.T) {
	for key, want := range map[string]bool{
		"owner":                        true,
		"lbipam.cilium.io/ips":         false,
		"kube-vip.io/loadBalancerIPs":  false,
		"prometheus.io/scrape":         true, // allowed below
		"prometheus.io.evil/x":         false,
		"metallb.io/address-pool":      false,
		"shardgate.io/desired-hash":    false,
		"example.com/prometheus.io/ab": false,
	} {
		if got := AllowedAnnotation(key, []string{"prometheus.io/", "metallb.io/"}); got != want {
			t.Errorf("AllowedAnnotation(%q) = %v, want %v", key, got, want)
		}
	}
}
