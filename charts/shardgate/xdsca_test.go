package shardgate_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/internal/manager"
)

// TestXDSCAFromCertManager: xds.certManager.enabled renders a cert-manager
// CA Certificate into the very Secret the controller reads its xDS CA from
// (in its leader-election namespace), with the key form the controller
// parses, a self-signed Issuer unless issuerRef names one, and a mount that
// holds the Pods back until the Secret exists. Off by default.
func TestXDSCAFromCertManager(t *testing.T) {
	g := NewWithT(t)
	rel := mustRender(t, "edge", "edge-system", nil)
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("Certificate"))
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("Issuer"))
	g.Expect(rel.notes).NotTo(ContainSubstring("cert-manager"))
	d := find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate")
	for _, v := range d.Spec.Template.Spec.Volumes {
		g.Expect(v.Name).NotTo(Equal("xds-ca"))
	}

	rel = mustRender(t, "edge", "edge-system", map[string]any{"xds": map[string]any{"certManager": map[string]any{"enabled": true}}})
	cfg, _ := controllerConfig(t, rel)
	cert := findUnstructured(t, rel, "Certificate", "edge-shardgate-xds-ca")
	g.Expect(cert.GetAPIVersion()).To(Equal("cert-manager.io/v1"))
	g.Expect(cert.GetNamespace()).To(Equal(cfg.LeaderElection.Namespace), "the controller reads its CA in its leader-election namespace")
	spec, _, _ := unstructured.NestedMap(cert.Object, "spec")
	g.Expect(spec).To(HaveKeyWithValue("secretName", manager.XDSCASecret))
	g.Expect(spec).To(HaveKeyWithValue("isCA", true))
	g.Expect(spec).To(HaveKeyWithValue("duration", "87600h"))
	g.Expect(spec).NotTo(HaveKey("renewBefore"))
	g.Expect(spec).To(HaveKeyWithValue("privateKey", map[string]any{
		// internal/pki ParseCA: x509.ParseECPrivateKey, SEC1 ("EC PRIVATE KEY").
		"algorithm": "ECDSA", "size": float64(256), "encoding": "PKCS1", "rotationPolicy": "Never",
	}))
	g.Expect(spec["usages"]).To(ContainElement("cert sign"))
	g.Expect(spec).To(HaveKeyWithValue("issuerRef", map[string]any{"name": "edge-shardgate-xds-selfsigned", "kind": "Issuer", "group": "cert-manager.io"}))
	issuer := findUnstructured(t, rel, "Issuer", "edge-shardgate-xds-selfsigned")
	g.Expect(issuer.GetNamespace()).To(Equal("edge-system"))
	g.Expect(issuer.Object["spec"]).To(Equal(map[string]any{"selfSigned": map[string]any{}}))

	g.Expect(rel.notes).To(ContainSubstring("xDS CA: issued by cert-manager (Certificate edge-shardgate-xds-ca into Secret shardgate-xds-ca)"))
	g.Expect(rel.notes).To(ContainSubstring("kubectl -n edge-system rollout restart deployment edge-shardgate"))

	// The Pods wait for the Secret: a mount that is not optional.
	d = find[appsv1.Deployment](t, rel, "Deployment", "edge-shardgate")
	var mounted bool
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name != "xds-ca" {
			continue
		}
		mounted = true
		g.Expect(v.Secret).NotTo(BeNil())
		g.Expect(v.Secret.SecretName).To(Equal(manager.XDSCASecret))
		g.Expect(v.Secret.Optional == nil || !*v.Secret.Optional).To(BeTrue())
		g.Expect(v.Secret.Items).To(HaveLen(1), "the CA certificate only, not its key")
		g.Expect(v.Secret.Items[0].Key).To(Equal("tls.crt"))
	}
	g.Expect(mounted).To(BeTrue(), "no xds-ca volume")
	g.Expect(d.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(HaveField("Name", "xds-ca")))

	// The controller may read the Secret (its Role in the release namespace).
	role := find[rbacv1.Role](t, rel, "Role", "edge-shardgate")
	var reads bool
	for _, r := range role.Rules {
		if contains(r.Resources, "secrets") && contains(r.ResourceNames, manager.XDSCASecret) && contains(r.Verbs, "get") {
			reads = true
		}
	}
	g.Expect(reads).To(BeTrue(), "the Role does not grant get on the CA Secret: %+v", role.Rules)

	// An issuer of the provider's: no Issuer of the chart.
	rel = mustRender(t, "edge", "edge-system", map[string]any{"xds": map[string]any{"certManager": map[string]any{
		"enabled": true, "issuerRef": map[string]any{"name": "org-ca", "kind": "ClusterIssuer"},
		"duration": "43800h", "renewBefore": "8760h", "keySize": 384,
	}}})
	g.Expect(kinds(rel.objects)).NotTo(HaveKey("Issuer"))
	spec, _, _ = unstructured.NestedMap(findUnstructured(t, rel, "Certificate", "edge-shardgate-xds-ca").Object, "spec")
	g.Expect(spec).To(HaveKeyWithValue("issuerRef", map[string]any{"name": "org-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}))
	g.Expect(spec).To(HaveKeyWithValue("duration", "43800h"))
	g.Expect(spec).To(HaveKeyWithValue("renewBefore", "8760h"))
	g.Expect(spec["privateKey"]).To(HaveKeyWithValue("size", float64(384)))

	// The schema refuses what cert-manager or the controller would.
	for _, bad := range []map[string]any{
		{"enabled": true, "keySize": 2048},
		{"enabled": true, "duration": "10y"},
		{"enabled": true, "renewBefore": "1 day"},
		{"enabled": true, "issuerRef": map[string]any{"kind": "ClusterIssuer"}},
		{"enabled": true, "rotationPolicy": "Always"},
	} {
		_, err := render("edge", "edge-system", map[string]any{"xds": map[string]any{"certManager": bad}})
		g.Expect(err).To(HaveOccurred(), "xds.certManager %v rendered", bad)
		g.Expect(err.Error()).To(ContainSubstring("/xds/certManager"))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
