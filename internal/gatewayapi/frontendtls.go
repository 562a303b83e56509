/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// clientCASecretPrefix starts the IR name of a port's client CA bundle:
// "client-ca:<port>". It cannot collide with a certificate's
// "namespace/name".
const clientCASecretPrefix = "client-ca:"

// frontendValidation is the client certificate validation that applies to
// the HTTPS listeners on port: spec.tls.frontend's perPort entry for the
// port, else its default; nil when none asks for validation.
func frontendValidation(gw *gatewayv1.Gateway, port int32) *gatewayv1.FrontendTLSValidation {
	if gw.Spec.TLS == nil || gw.Spec.TLS.Frontend == nil {
		return nil
	}
	f := gw.Spec.TLS.Frontend
	for i := range f.PerPort {
		if int32(f.PerPort[i].Port) == port {
			return f.PerPort[i].TLS.Validation
		}
	}
	return f.Default.Validation
}

// frontendCARefs lists what a Gateway's spec.tls.frontend names, for the
// Store's reverse indexes: the Secrets and ConfigMaps (any kind it could
// resolve) and the namespaces other than its own it refers into.
func frontendCARefs(gw *gatewayv1.Gateway) (secrets, cms []types.NamespacedName, grantNS []string) {
	if gw.Spec.TLS == nil || gw.Spec.TLS.Frontend == nil {
		return nil, nil, nil
	}
	f := gw.Spec.TLS.Frontend
	vals := []*gatewayv1.FrontendTLSValidation{f.Default.Validation}
	for i := range f.PerPort {
		vals = append(vals, f.PerPort[i].TLS.Validation)
	}
	for _, v := range vals {
		if v == nil {
			continue
		}
		for _, ref := range v.CACertificateRefs {
			ns := gw.Namespace
			if ref.Namespace != nil && *ref.Namespace != "" {
				ns = string(*ref.Namespace)
			}
			if ref.Group != "" {
				continue
			}
			switch string(ref.Kind) {
			case kindConfigMap:
				cms = append(cms, nn(ns, string(ref.Name)))
			case kindSecret:
				secrets = append(secrets, nn(ns, string(ref.Name)))
			default:
				continue
			}
			if ns != gw.Namespace {
				grantNS = append(grantNS, ns)
			}
		}
	}
	return secrets, cms, grantNS
}

// listenerClientValidation resolves the frontend validation of an HTTPS
// listener: every caCertificateRef must be a core ConfigMap or Secret
// (else InvalidCACertificateKind), in the Gateway's namespace or permitted
// by a ReferenceGrant (else RefNotPermitted), exist and hold at least one
// PEM certificate under ca.crt (else InvalidCACertificateRef). Any invalid
// ref makes ResolvedRefs False with the first failure; when none is valid
// the listener is Accepted=False NoValidCACertificate and not served.
// The valid refs' certificates, in ref order, become the port's CA bundle
// in secrets, and the listener validates clients against it.
func (idx *Index) listenerClientValidation(gw *gatewayv1.Gateway, ls *listenerState, secrets map[string]*ir.Secret) {
	v := frontendValidation(gw, ls.port)
	if v == nil {
		return
	}
	var bundle bytes.Buffer
	valid := 0
	fail := func(reason, msg string) {
		if ls.refsReason == "" {
			ls.refsReason, ls.refsMsg = reason, msg
		}
	}
	for _, ref := range v.CACertificateRefs {
		ns := gw.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		kind := string(ref.Kind)
		if ref.Group != "" || (kind != kindConfigMap && kind != kindSecret) {
			fail(string(gatewayv1.ListenerReasonInvalidCACertificateKind),
				fmt.Sprintf("caCertificateRef %s/%s %s: only core ConfigMaps and Secrets are supported", ref.Group, ref.Kind, ref.Name))
			continue
		}
		if ns != gw.Namespace && !idx.granted(groupGateway, kindGateway, gw.Namespace, "", kind, ns, string(ref.Name)) {
			fail(string(gatewayv1.ListenerReasonRefNotPermitted),
				fmt.Sprintf("%s %s/%s is not permitted by any ReferenceGrant", kind, ns, ref.Name))
			continue
		}
		var data []byte
		found := false
		if kind == kindConfigMap {
			if cm, ok := idx.configMaps[nn(ns, string(ref.Name))]; ok {
				found = true
				data = []byte(cm.Data[corev1.ServiceAccountRootCAKey])
			}
		} else if sec, ok := idx.secrets[nn(ns, string(ref.Name))]; ok {
			found = true
			data = sec.Data[corev1.ServiceAccountRootCAKey]
		}
		if !found {
			fail(string(gatewayv1.ListenerReasonInvalidCACertificateRef), fmt.Sprintf("%s %s/%s not found", kind, ns, ref.Name))
			continue
		}
		certs := pemCertificates(data)
		if len(certs) == 0 {
			fail(string(gatewayv1.ListenerReasonInvalidCACertificateRef),
				fmt.Sprintf("%s %s/%s has no PEM certificate under %s", kind, ns, ref.Name, corev1.ServiceAccountRootCAKey))
			continue
		}
		bundle.Write(certs)
		valid++
	}
	if valid == 0 {
		ls.accepted = false
		ls.acceptedReason = string(gatewayv1.ListenerReasonNoValidCACertificate)
		ls.acceptedMsg = "no valid CA certificate for client certificate validation: " + ls.refsMsg
		return
	}
	name := clientCASecretPrefix + strconv.Itoa(int(ls.port))
	if _, ok := secrets[name]; !ok {
		secrets[name] = &ir.Secret{Name: name, CA: bundle.Bytes()}
	}
	ls.clientValidation = &ir.ClientValidation{
		CA:               ir.SecretRef{Name: name},
		InsecureFallback: v.Mode == gatewayv1.AllowInsecureFallback,
	}
}

// pemCertificates are the CERTIFICATE blocks of data, re-encoded; other
// blocks and text between them are dropped.
func pemCertificates(data []byte) []byte {
	var out bytes.Buffer
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out.Bytes()
		}
		if b.Type == "CERTIFICATE" && len(b.Headers) == 0 {
			_ = pem.Encode(&out, &pem.Block{Type: b.Type, Bytes: b.Bytes})
		}
	}
}
