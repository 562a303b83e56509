package tenancy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ns(ann, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: ann, Labels: labels}}
}

func TestCheck(t *testing.T) {
	def := DefaultPolicy()
	lax := Policy{RequireOwner: false}
	akash := Policy{Keys: []string{OwnerKey, AkashOwnerLabel}, RequireOwner: true}
	cases := []struct {
		name   string
		p      Policy
		ns     *corev1.Namespace
		owner  string
		verdct Verdict
	}{
		{"annotation matches", def, ns(map[string]string{OwnerKey: "alice"}, nil), "alice", Allowed},
		{"label matches", def, ns(nil, map[string]string{OwnerKey: "alice"}), "alice", Allowed},
		{"annotation wins over label", def, ns(map[string]string{OwnerKey: "bob"}, map[string]string{OwnerKey: "alice"}), "alice", Mismatch},
		{"other owner", def, ns(map[string]string{OwnerKey: "bob"}, nil), "alice", Mismatch},
		{"empty marking matches nobody", def, ns(map[string]string{OwnerKey: ""}, nil), "", Mismatch},
		{"unmarked, required", def, ns(nil, nil), "alice", Missing},
		{"nil namespace, required", def, nil, "alice", Missing},
		{"unmarked, not required", lax, ns(nil, nil), "alice", Allowed},
		{"marked, not required, mismatch", lax, ns(map[string]string{OwnerKey: "bob"}, nil), "alice", Mismatch},
		{"akash label", akash, ns(nil, map[string]string{AkashOwnerLabel: "akash1x"}), "akash1x", Allowed},
		{"akash label other owner", akash, ns(nil, map[string]string{AkashOwnerLabel: "akash1y"}), "akash1x", Mismatch},
		{"akash label ignored without the key", def, ns(nil, map[string]string{AkashOwnerLabel: "akash1x"}), "akash1x", Missing},
	}
	for _, c := range cases {
		if got := c.p.Check(c.ns, c.owner); got != c.verdct {
			t.Errorf("%s: Check = %v, want %v", c.name, got, c.verdct)
		}
	}
}

func TestSameOwner(t *testing.T) {
	p := DefaultPolicy()
	a := ns(map[string]string{OwnerKey: "alice"}, nil)
	a2 := ns(nil, map[string]string{OwnerKey: "alice"})
	b := ns(map[string]string{OwnerKey: "bob"}, nil)
	empty := ns(map[string]string{OwnerKey: ""}, nil)
	if !p.SameOwner(a, a2) {
		t.Error("two namespaces marked alice are one owner")
	}
	if p.SameOwner(a, b) {
		t.Error("alice and bob are not one owner")
	}
	if p.SameOwner(ns(nil, nil), ns(nil, nil)) {
		t.Error("unmarked namespaces are never one owner")
	}
	if p.SameOwner(empty, empty) {
		t.Error("an empty marking is nobody's")
	}
}

func TestTenantNamespace(t *testing.T) {
	def := DefaultPolicy()
	lax := Policy{RequireOwner: false}
	akash := Policy{Keys: []string{OwnerKey, AkashOwnerLabel}, RequireOwner: true}
	cases := []struct {
		name   string
		p      Policy
		ns     *corev1.Namespace
		tenant bool
		why    string
	}{
		{"annotation", def, ns(map[string]string{OwnerKey: "alice"}, nil), true, "carries an owner marking (shardgate.io/owner)"},
		{"label", def, ns(nil, map[string]string{OwnerKey: "alice"}), true, "owner marking"},
		{"empty marking is still a tenant's", def, ns(map[string]string{OwnerKey: ""}, nil), true, "owner marking"},
		{"akash label", akash, ns(nil, map[string]string{AkashOwnerLabel: "akash1x"}), true, "(akash.network/lease.id.owner)"},
		{"unknown namespace", def, nil, true, "not known yet"},
		{"unmarked is the provider's", def, ns(nil, nil), false, ""},
		{"unmarked is the provider's without RequireOwner", lax, ns(nil, nil), false, ""},
		{"marked is a tenant's without RequireOwner", lax, ns(map[string]string{OwnerKey: "bob"}, nil), true, "owner marking"},
		{"akash label ignored without the key", def, ns(nil, map[string]string{AkashOwnerLabel: "akash1x"}), false, ""},
	}
	for _, c := range cases {
		why, tenant := c.p.TenantNamespace("n", c.ns)
		if tenant != c.tenant || !strings.Contains(why, c.why) {
			t.Errorf("%s: TenantNamespace = %q, %v; want %v containing %q", c.name, why, tenant, c.tenant, c.why)
		}
		if strings.Contains(why, "alice") || strings.Contains(why, "bob") || strings.Contains(why, "akash1x") {
			t.Errorf("%s: the message names the owner: %q", c.name, why)
		}
	}
}
