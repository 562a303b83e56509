package leasehosts

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/autotls"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/sharding"
)

// TestStatusCertificateReady: on a shard with tls, a held name gets
// CertificateReady (ShardCertificate under the shard's domain, else the
// certificate controller's state, Pending until it has one); a shard
// without tls, or a name not held, has none, and loses one it had.
func TestStatusCertificateReady(t *testing.T) {
	tlsA := shardA
	tlsA.TLS = &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "le"}}
	tlsB := shardB
	tlsB.TLS = tlsA.TLS
	issued := autotls.State{Status: metav1.ConditionTrue, Reason: shardgatev1alpha1.ReasonCertificateIssued, Message: "issued"}
	certs := map[string]autotls.State{"tenant/shop.example.test": issued}
	obs := Observed{ServiceExists: true, ControllerName: shardgatev1alpha1.ControllerName,
		Certificate: func(ns, host string) (autotls.State, bool) { s, ok := certs[ns+"/"+host]; return s, ok }}
	certReady := func(st shardgatev1alpha1.LeaseHostStatus, shard string) *metav1.Condition {
		for _, e := range st.Shards {
			if e.Name == shard {
				return meta.FindStatusCondition(e.Conditions, shardgatev1alpha1.ConditionCertificateReady)
			}
		}
		t.Fatalf("no entry for %s", shard)
		return nil
	}

	// Subdomain: under each shard's domain.
	lh := subdomainLH("web")
	p := PlanFor(lh, []sharding.Shard{tlsA, shardB})
	st := StatusFor(lh, p, map[string]hostnames.Decision{"web.a.example.test": held, "web.b.example.test": held}, obs)
	if c := certReady(st, "shard-a"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != shardgatev1alpha1.ReasonShardCertificate || c.ObservedGeneration != 3 {
		t.Fatalf("shard-a: %+v", c)
	}
	if c := certReady(st, "shard-b"); c != nil {
		t.Fatalf("shard-b has no tls, yet %+v", c)
	}
	// What the shard's own listeners present decides it (Observed.
	// ShardCertificate), when the controller says.
	var asked []string
	obs.ShardCertificate = func(s sharding.Shard, host string) autotls.State {
		asked = append(asked, s.Name+" "+host)
		return autotls.State{Status: metav1.ConditionFalse, Reason: shardgatev1alpha1.ReasonNoShardCertificate, Message: "none covers it"}
	}
	st = StatusFor(lh, p, map[string]hostnames.Decision{"web.a.example.test": held, "web.b.example.test": held}, obs)
	if c := certReady(st, "shard-a"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != shardgatev1alpha1.ReasonNoShardCertificate || c.Message != "none covers it" {
		t.Fatalf("shard-a without a covering certificate: %+v", c)
	}
	if len(asked) != 1 || asked[0] != "shard-a web.a.example.test" {
		t.Fatalf("asked %q", asked)
	}
	obs.ShardCertificate = nil

	// Explicit hostname: the controller's state; unknown: Pending.
	lh = subdomainLH("")
	lh.Spec.Hostname = "shop.example.test"
	p = PlanFor(lh, []sharding.Shard{tlsA, tlsB})
	st = StatusFor(lh, p, map[string]hostnames.Decision{"shop.example.test": held}, obs)
	if c := certReady(st, "shard-a"); c == nil || c.Status != issued.Status || c.Reason != issued.Reason || c.Message != "issued" {
		t.Fatalf("shard-a: %+v", c)
	}
	delete(certs, "tenant/shop.example.test")
	st = StatusFor(lh, p, map[string]hostnames.Decision{"shop.example.test": held}, obs)
	if c := certReady(st, "shard-b"); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != shardgatev1alpha1.ReasonPending {
		t.Fatalf("undecided: %+v", c)
	}

	// The name is revoked: the condition goes.
	lh.Status = st
	st = StatusFor(lh, p, map[string]hostnames.Decision{"shop.example.test": {Reason: hostnames.ReasonBlocked, Message: "blocked"}}, obs)
	if c := certReady(st, "shard-a"); c != nil {
		t.Fatalf("a blocked name keeps %+v", c)
	}
}
