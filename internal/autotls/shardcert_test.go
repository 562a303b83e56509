/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testcert"
)

func TestSANCovers(t *testing.T) {
	for _, tc := range []struct {
		san, host string
		want      bool
	}{
		{"a.example", "a.example", true},
		{"A.Example", "a.example", true},
		{"*.example", "a.example", true},
		{"*.example", "a.b.example", false},
		{"*.example", "example", false},
		{"*.b.example", "a.b.example", true},
		{"b.example", "a.b.example", false},
		{"*.example", ".example", false},
	} {
		if got := SANCovers(tc.san, tc.host); got != tc.want {
			t.Errorf("SANCovers(%q, %q) = %v, want %v", tc.san, tc.host, got, tc.want)
		}
	}
}

// pemCert is a self-signed PEM certificate for names.
func pemCert(t *testing.T, names ...string) []byte {
	crt, _ := testcert.Pair(t, names...)
	return crt
}

func TestShardState(t *testing.T) {
	const domain = "shard.example"
	hn := func(h string) *gatewayv1.Hostname { v := gatewayv1.Hostname(h); return &v }
	https := func(name, host, secret string) gatewayv1.Listener {
		l := gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(secret)}}}}
		if host != "" {
			l.Hostname = hn(host)
		}
		return l
	}
	gw := func(ls ...gatewayv1.Listener) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "shard"},
			Spec: gatewayv1.GatewaySpec{Listeners: append([]gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}}, ls...)}}
	}
	secrets := map[types.NamespacedName]*corev1.Secret{}
	put := func(name string, names ...string) {
		secrets[types.NamespacedName{Namespace: "infra", Name: name}] = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: name, ResourceVersion: "1"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: pemCert(t, names...)}}
	}
	put("wildcard", "*."+domain)
	put("deep", "*.b."+domain)
	reads := 0
	c := &ShardCertificates{Secret: func(k types.NamespacedName) *corev1.Secret { reads++; return secrets[k] }}
	for _, tc := range []struct {
		name   string
		gw     *gatewayv1.Gateway
		host   string
		ok     bool
		reason string // a part of the message
	}{
		{"one label under the wildcard", gw(https("https", "*."+domain, "wildcard")), "a." + domain, true, "Secret infra/wildcard"},
		{"two labels under a one-label wildcard", gw(https("https", "*."+domain, "wildcard")), "a.b." + domain, false, "covers one label only"},
		{"a deeper listener covers them", gw(https("https", "*."+domain, "wildcard"), https("deep", "*.b."+domain, "deep")), "a.b." + domain, true, "Secret infra/deep"},
		{"no HTTPS listener", gw(), "a." + domain, false, "no HTTPS listener whose hostname matches"},
		{"a listener for other names", gw(https("https", "other.example", "wildcard")), "a." + domain, false, "no HTTPS listener whose hostname matches"},
		{"a hostless HTTPS listener", gw(https("https", "", "wildcard")), "a." + domain, true, "listener https"},
		{"a missing Secret", gw(https("https", "*."+domain, "nothing")), "a." + domain, false, "covers one label only"},
		{"no Gateway", nil, "a." + domain, false, "not known yet"},
	} {
		st := c.ShardState(tc.gw, domain, tc.host)
		want := metav1.ConditionFalse
		reason := shardgatev1alpha1.ReasonNoShardCertificate
		if tc.ok {
			want, reason = metav1.ConditionTrue, shardgatev1alpha1.ReasonShardCertificate
		}
		if st.Status != want || st.Reason != reason || !strings.Contains(st.Message, tc.reason) {
			t.Errorf("%s: %+v, want %s %s with %q", tc.name, st, want, reason, tc.reason)
		}
	}
	// Each Secret is parsed once per resourceVersion, not per question.
	before := reads
	c.ShardState(gw(https("https", "*."+domain, "wildcard")), domain, "x."+domain)
	if reads != before+1 {
		t.Fatalf("%d reads for one question", reads-before)
	}
	if got := len(c.names); got != 2 {
		t.Fatalf("%d Secrets parsed, want 2 (wildcard, deep)", got)
	}
}
