/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"bytes"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/shardgate/shardgate/internal/ir"
)

// A Gateway's client-certificate validation may name a ConfigMap in
// another namespace (a tenant's) only with a ReferenceGrant there that
// lets Gateways of the Gateway's namespace read exactly that kind and
// name: otherwise the listener is RefNotPermitted / NoValidCACertificate,
// nothing of the ConfigMap reaches the IR, and Envoy gets no listener
// trusting it.
func TestFrontendCAFromATenantNeedsAReferenceGrant(t *testing.T) {
	crt, key := tlsPEM(t)
	tenantCA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "tenant-ca"}, Data: map[string]string{"ca.crt": string(crt)}}
	grant := func(fromNS, kind, name string) *gatewayv1beta1.ReferenceGrant {
		g := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "g"}}
		g.Spec.From = []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: gatewayv1beta1.Namespace(fromNS)}}
		to := gatewayv1beta1.ReferenceGrantTo{Group: "", Kind: gatewayv1beta1.Kind(kind)}
		if name != "" {
			to.Name = ptrTo(gatewayv1beta1.ObjectName(name))
		}
		g.Spec.To = []gatewayv1beta1.ReferenceGrantTo{to}
		return g
	}
	setup := func(grants ...*gatewayv1beta1.ReferenceGrant) *Input {
		in := hostileInput()
		gw := in.Gateways[0]
		gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{
			Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}},
		})
		gw.Spec.TLS = &gatewayv1.GatewayTLSConfig{Frontend: &gatewayv1.FrontendTLSConfig{Default: gatewayv1.TLSConfig{
			Validation: &gatewayv1.FrontendTLSValidation{CACertificateRefs: []gatewayv1.ObjectReference{
				{Kind: "ConfigMap", Name: "tenant-ca", Namespace: ptrTo(gatewayv1.Namespace("other"))},
			}},
		}}}
		in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cert"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": crt, "tls.key": key}})
		in.ConfigMaps = append(in.ConfigMaps, tenantCA)
		in.ReferenceGrants = append(in.ReferenceGrants, grants...)
		return in
	}
	refused := func(t *testing.T, in *Input) {
		t.Helper()
		out := Translate(in)
		if got := listenerCond(t, out, "https", "ResolvedRefs"); got != "False/RefNotPermitted" {
			t.Errorf("ResolvedRefs = %s", got)
		}
		if got := listenerCond(t, out, "https", "Accepted"); got != "False/NoValidCACertificate" {
			t.Errorf("Accepted = %s", got)
		}
		if got := listenerCond(t, out, "http", "Programmed"); got != "True/Programmed" {
			t.Errorf("the HTTP listener is affected: Programmed = %s", got)
		}
		for _, gw := range out.Gateways {
			for _, s := range gw.Secrets {
				if len(s.CA) > 0 || bytes.Contains(s.Cert, crt[:40]) && s.Name != "default/cert" {
					t.Fatalf("the tenant's CA reached the IR as %s", s.Name)
				}
			}
			for _, l := range gw.Listeners {
				if l.Protocol == ir.ProtocolHTTPS {
					t.Fatalf("the HTTPS listener is served: %+v", l)
				}
			}
		}
		envoyValid(t, out)
	}
	t.Run("no grant", func(t *testing.T) { refused(t, setup()) })
	t.Run("grant from another namespace", func(t *testing.T) { refused(t, setup(grant("elsewhere", "ConfigMap", ""))) })
	t.Run("grant for Secrets", func(t *testing.T) { refused(t, setup(grant("default", "Secret", ""))) })
	t.Run("grant for another ConfigMap", func(t *testing.T) { refused(t, setup(grant("default", "ConfigMap", "public-ca"))) })
	t.Run("granted", func(t *testing.T) {
		out := Translate(setup(grant("default", "ConfigMap", "tenant-ca")))
		if got := listenerCond(t, out, "https", "ResolvedRefs"); got != "True/ResolvedRefs" {
			t.Fatalf("ResolvedRefs = %s", got)
		}
		if len(out.Gateways) != 1 {
			t.Fatal("no IR")
		}
		var ca []byte
		for _, s := range out.Gateways[0].Secrets {
			if s.Name == "client-ca:443" {
				ca = s.CA
			}
		}
		if !bytes.Equal(ca, crt) {
			t.Fatalf("CA bundle = %q, want the tenant's certificate", ca)
		}
		res := envoyValid(t, out)
		found := false
		for _, l := range res[0].Listeners {
			for _, fc := range l.FilterChains {
				var ctx tlsv3.DownstreamTlsContext
				if fc.TransportSocket == nil || fc.TransportSocket.GetTypedConfig().UnmarshalTo(&ctx) != nil {
					continue
				}
				if ctx.GetCommonTlsContext().GetValidationContextSdsSecretConfig().GetName() == "client-ca:443" && ctx.GetRequireClientCertificate().GetValue() {
					found = true
				}
			}
		}
		if !found {
			t.Fatal("no Envoy filter chain requires a client certificate validated by client-ca:443")
		}
	})
}
