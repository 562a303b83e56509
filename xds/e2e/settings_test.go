package e2e_test

import (
	"context"
	"encoding/json"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/xds/translate"
)

var _ = Describe("HTTPRoute annotations", func() {
	It("publishes a body limit and idempotent-only retries that grpc-go accepts, and follows an annotation-only change", func(ctx SpecContext) {
		ns := namespace(ctx, "settings")
		gw := gateway(ctx, ns, "gw")
		backendService(ctx, ns, "plain", startBackend("plain"))
		backendService(ctx, ns, "limited", startBackend("limited"))
		r := httpRoute(ctx, gw, "r", "settings", rule(prefix("/"), to("plain")))
		c, node := xdsClient(gw, "settings")
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("plain"))

		By("annotating the route and giving its rule a retry policy")
		retried := rule(prefix("/"), to("limited"))
		retried.Retry = &gatewayv1.HTTPRouteRetry{Attempts: ptr.To(2)}
		Expect(patchRoute(ctx, r, map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{
				shardgatev1alpha1.AnnotationMaxRequestBodyBytes: "1048576",
				shardgatev1alpha1.AnnotationRetryIdempotentOnly: "true",
			}},
			"spec": map[string]any{"rules": []gatewayv1.HTTPRouteRule{retried}},
		})).To(Succeed())
		// grpc-go applies the table (it would NACK a per-route config or a
		// retry policy it cannot read, and keep routing to "plain").
		Eventually(answeredBy(ctx, c, methodEmpty)).Should(Equal("limited"))
		Expect(nacksFor(node)).To(BeEmpty())
		Eventually(publishedRoute(gw)).Should(Equal(routeSettings{MaxRequestBytes: 1048576, IdempotentOnly: true}))

		By("changing only the annotation (the generation stays)")
		gen := generation(ctx, r)
		Expect(patchRoute(ctx, r, map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			shardgatev1alpha1.AnnotationMaxRequestBodyBytes: "2048",
		}}})).To(Succeed())
		Eventually(publishedRoute(gw)).Should(Equal(routeSettings{MaxRequestBytes: 2048, IdempotentOnly: true}))
		Expect(generation(ctx, r)).To(Equal(gen))
		Expect(call(ctx, c, methodEmpty)).To(Equal("limited"))
		Expect(nacksFor(node)).To(BeEmpty())
	})
})

// routeSettings is what the published route table says of a route's
// annotations: its buffer limit (0 without one) and whether its retry
// policy spares non-idempotent methods.
type routeSettings struct {
	MaxRequestBytes uint32
	IdempotentOnly  bool
}

// publishedRoute reads the settings of the first route of gw's http-80
// table.
func publishedRoute(gw types.NamespacedName) func(Gomega) routeSettings {
	return func(g Gomega) routeSettings {
		res, ok := resources(g, gw, resourcev3.RouteType)[httpRouteTable]
		g.Expect(ok).To(BeTrue())
		rc, err := translate.DecodeRouteConfiguration(res.(*routev3.RouteConfiguration))
		g.Expect(err).NotTo(HaveOccurred())
		var out routeSettings
		for _, vh := range rc.GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				if cfg, ok := rt.GetTypedPerFilterConfig()["envoy.filters.http.buffer"]; ok {
					var fc routev3.FilterConfig
					g.Expect(cfg.UnmarshalTo(&fc)).To(Succeed())
					g.Expect(fc.GetIsOptional()).To(BeTrue())
					var b bufferv3.BufferPerRoute
					g.Expect(fc.GetConfig().UnmarshalTo(&b)).To(Succeed())
					out.MaxRequestBytes = b.GetBuffer().GetMaxRequestBytes().GetValue()
				}
				out.IdempotentOnly = len(rt.GetRoute().GetRetryPolicy().GetRetriableRequestHeaders()) > 0
				return out
			}
		}
		return out
	}
}

func patchRoute(ctx context.Context, r *gatewayv1.HTTPRoute, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return env.Client.Patch(ctx, r.DeepCopy(), client.RawPatch(types.MergePatchType, b))
}

func generation(ctx context.Context, r *gatewayv1.HTTPRoute) int64 {
	GinkgoHelper()
	var cur gatewayv1.HTTPRoute
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r), &cur)).To(Succeed())
	return cur.Generation
}
