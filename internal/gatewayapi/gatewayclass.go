/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/shardgate/shardgate/internal/params"
)

// SupportedFeatures are the Gateway API features the translator implements
// and the GatewayClass status advertises. Claim a feature here only when the
// translator (and the IR it emits) implements it in full; the conformance
// suite reads this list to decide which tests to run.
//
// GatewayInfrastructure's labels and annotations are the infra package's
// (internal/infra/metadata.go).
//
// GatewayAddressEmpty: an IPAddress entry without a value asks MetalLB for
// any address (internal/addresses).
//
// TCPRoute: a TCP listener serves one TCPRoute, the oldest attached
// (tcproute.go).
//
// Deliberately absent: UDPRoute and every Mesh feature.
var SupportedFeatures = []features.FeatureName{
	features.SupportGateway,
	features.SupportGatewayPort8080,
	features.SupportGatewayStaticAddresses,
	features.SupportGatewayInfrastructure,
	features.SupportGatewayAddressEmpty,
	features.SupportGatewayFrontendClientCertificateValidation,
	features.SupportGatewayFrontendClientCertificateValidationInsecureFallback,
	features.SupportGatewayHTTPListenerIsolation,
	features.SupportGatewayHTTPSListenerDetectMisdirectedRequests,
	features.SupportReferenceGrant,
	features.SupportHTTPRoute,
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteDestinationPortMatching,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRouteBackendRequestHeaderModification,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportHTTPRouteCORS,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteRetry,
	features.SupportHTTPRouteRetryBackendTimeout,
	features.SupportHTTPRouteRetryConnectionError,
	features.SupportGRPCRoute,
	features.SupportGRPCRouteNamedRouteRule,
	features.SupportTLSRoute,
	features.SupportTLSRouteModeTerminate,
	features.SupportBackendTLSPolicy,
	features.SupportBackendTLSPolicySANValidation,
	features.SupportGatewayBackendClientCertificate,
	features.SupportTLSRouteModeMixed,
	features.SupportListenerSet,
	features.SupportTCPRoute,
}

func supportedFeatureStatus() []gatewayv1.SupportedFeature {
	out := make([]gatewayv1.SupportedFeature, 0, len(SupportedFeatures))
	for _, f := range SupportedFeatures {
		out = append(out, gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(f)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (idx *Index) classStatus(c *gatewayv1.GatewayClass) *classInfo {
	ci := &classInfo{class: c, accepted: true}
	gen := c.Generation
	accepted := condition(string(gatewayv1.GatewayClassConditionStatusAccepted), true,
		string(gatewayv1.GatewayClassReasonAccepted), "GatewayClass is accepted by "+idx.controllerName, gen)
	if msg := idx.classParamsProblem(c); msg != "" {
		ci.accepted = false
		ci.message = msg
		accepted = condition(string(gatewayv1.GatewayClassConditionStatusAccepted), false,
			string(gatewayv1.GatewayClassReasonInvalidParameters), msg, gen)
	}
	// The bundle-version annotation of the installed CRDs is not visible
	// from here; we are built against the installed version.
	version := condition(string(gatewayv1.GatewayClassConditionStatusSupportedVersion), true,
		string(gatewayv1.GatewayClassReasonSupportedVersion), "Gateway API CRD version is supported", gen)
	ci.status = gatewayv1.GatewayClassStatus{
		Conditions:        []metav1.Condition{accepted, version},
		SupportedFeatures: supportedFeatureStatus(),
	}
	return ci
}

// classParamsProblem says why a class's parametersRef does not resolve,
// or may not configure a class.
func (idx *Index) classParamsProblem(c *gatewayv1.GatewayClass) string {
	p, err := params.ResolveClass(c, idx.paramsByKey)
	if err != nil {
		return err.Error()
	}
	if p == nil {
		return ""
	}
	if why, tenant := idx.tenantNS[p.Namespace]; tenant {
		return fmt.Sprintf("GatewayParameters %s/%s may not configure a class: %s", p.Namespace, p.Name, why)
	}
	return ""
}

func condition(typ string, ok bool, reason, msg string, gen int64) metav1.Condition {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen}
}
