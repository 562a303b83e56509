package akash_test

import (
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/akash"
	"github.com/shardgate/shardgate/internal/infra"
)

// providerPolicy is the per-lease NetworkPolicy the Akash provider writes
// when network policies are on (its "akash-deployment-restrictions", built
// as the provider's cluster builder builds it): ingress from the lease's own
// namespace, from pods labelled app.kubernetes.io/name: ingress-nginx in a
// namespace labelled the same (ingress mode), and, in Gateway API mode,
// from the namespace AP_GATEWAY_NAMESPACE names.
func providerPolicy(leaseNS, ingressMode, gatewayNamespace string) *networkingv1.NetworkPolicy {
	const ingressLabel, ingressValue = "app.kubernetes.io/name", "ingress-nginx"
	rules := []networkingv1.NetworkPolicyIngressRule{
		{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"akash.network/namespace": leaseNS}}}}},
		{From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ingressLabel: ingressValue}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{ingressLabel: ingressValue}},
		}}},
	}
	if ingressMode == "gateway-api" && gatewayNamespace != "" {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": gatewayNamespace}},
		}}})
	}
	udp, tcp, dns := corev1.ProtocolUDP, corev1.ProtocolTCP, intstrPort(53)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "akash-deployment-restrictions", Namespace: leaseNS},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     rules,
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"akash.network/namespace": leaseNS}}}}},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
					To: []networkingv1.NetworkPolicyPeer{{
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
					}}},
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"}}}}},
			},
		},
	}
}

// TestProviderNetworkPolicyAdmitsShardEnvoy evaluates the provider's own
// per-lease policy, with a NetworkPolicy engine, against the Envoy pods
// shardgate provisions for a shard, as docs/akash.md sets them up: in
// ingress mode, the shard Gateway's infrastructure labels and its
// namespace's label make the pods look like ingress-nginx's; in Gateway API
// mode, the shard lives in the namespace the provider names
// (AP_GATEWAY_NAMESPACE). Without that set-up the policy drops the
// traffic, which is why the guide asks for it.
func TestProviderNetworkPolicyAdmitsShardEnvoy(t *testing.T) {
	lease := akash.Lease{Owner: "akash1qqzwc5d7hynl67nsmn9jukvwqp3vzdl6j2t7lk", DSeq: 7, GSeq: 1, OSeq: 1, Provider: "akash1q7spv2cw06yszgfp4f9ed59lkka6ytn8g4tkjf"}
	leaseNS := lease.Namespace()
	tenantPod := &matcher.TrafficPeer{IP: "10.244.0.20", Internal: &matcher.InternalPeer{
		Namespace:       leaseNS,
		NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": leaseNS, "akash.network/namespace": leaseNS, "akash.network": "true"},
		PodLabels:       map[string]string{"akash.network": "true", "akash.network/manifest-service": "web"},
	}}
	ingressNS := map[string]string{"app.kubernetes.io/name": "ingress-nginx"}
	ingressLabels := map[gatewayv1.LabelKey]gatewayv1.LabelValue{"app.kubernetes.io/name": "ingress-nginx"}

	envoy := func(t *testing.T, ns string, nsLabels map[string]string, labels map[gatewayv1.LabelKey]gatewayv1.LabelValue) *matcher.TrafficPeer {
		t.Helper()
		gw := &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge", UID: "gw-uid"},
			Spec: gatewayv1.GatewaySpec{
				GatewayClassName: "shardgate",
				Listeners:        []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}},
			},
		}
		if labels != nil {
			gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{Labels: labels}
		}
		objs, err := infra.Build(gw, nil, infra.ControllerOptions("", "shardgate-system", ":18000"), infra.ClientCert{})
		if err != nil {
			t.Fatal(err)
		}
		all := map[string]string{"kubernetes.io/metadata.name": ns}
		for k, v := range nsLabels {
			all[k] = v
		}
		return &matcher.TrafficPeer{IP: "10.244.1.5", Internal: &matcher.InternalPeer{
			Namespace: ns, NamespaceLabels: all, PodLabels: objs.Deployment.Spec.Template.Labels,
		}}
	}

	for _, tc := range []struct {
		name            string
		mode, gatewayNS string
		source          func(t *testing.T) *matcher.TrafficPeer
		want            bool
	}{
		{"ingress mode: shard pods labelled as ingress-nginx, in a namespace so labelled", "ingress", "",
			func(t *testing.T) *matcher.TrafficPeer { return envoy(t, "ingress", ingressNS, ingressLabels) }, true},
		{"ingress mode: shard pods without the label", "ingress", "",
			func(t *testing.T) *matcher.TrafficPeer { return envoy(t, "ingress", ingressNS, nil) }, false},
		{"ingress mode: the namespace not labelled", "ingress", "",
			func(t *testing.T) *matcher.TrafficPeer { return envoy(t, "ingress", nil, ingressLabels) }, false},
		{"gateway-api mode: the shard in AP_GATEWAY_NAMESPACE", "gateway-api", "akash-gateway",
			func(t *testing.T) *matcher.TrafficPeer { return envoy(t, "akash-gateway", nil, nil) }, true},
		{"gateway-api mode: a shard in another namespace", "gateway-api", "akash-gateway",
			func(t *testing.T) *matcher.TrafficPeer { return envoy(t, "ingress", nil, nil) }, false},
		{"a pod of another lease labelled as ingress-nginx", "ingress", "",
			func(t *testing.T) *matcher.TrafficPeer {
				other := akash.Lease{Owner: lease.Owner, DSeq: 8, GSeq: 1, OSeq: 1, Provider: lease.Provider}.Namespace()
				return &matcher.TrafficPeer{IP: "10.244.2.7", Internal: &matcher.InternalPeer{
					Namespace: other, NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": other, "akash.network/namespace": other},
					PodLabels: map[string]string{"app.kubernetes.io/name": "ingress-nginx"},
				}}
			}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := matcher.BuildNetworkPolicies(true, []*networkingv1.NetworkPolicy{providerPolicy(leaseNS, tc.mode, tc.gatewayNS)})
			traffic := &matcher.Traffic{Source: tc.source(t), Destination: tenantPod, ResolvedPort: 8080, Protocol: corev1.ProtocolTCP}
			if got := policy.IsTrafficAllowed(traffic).IsAllowed(); got != tc.want {
				t.Errorf("allowed = %v, want %v\n%s", got, tc.want, policy.IsTrafficAllowed(traffic).Table())
			}
		})
	}
}

func intstrPort(p int32) intstr.IntOrString { return intstr.FromInt32(p) }
