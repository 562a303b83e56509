package status_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/status"
)

func ancestor(ctrl, gw, msg string, at time.Time) gatewayv1.PolicyAncestorStatus {
	g, k := gatewayv1.Group(gatewayv1.GroupName), gatewayv1.Kind("Gateway")
	ns := gatewayv1.Namespace("btls")
	return gatewayv1.PolicyAncestorStatus{
		AncestorRef:    gatewayv1.ParentReference{Group: &g, Kind: &k, Namespace: &ns, Name: gatewayv1.ObjectName(gw)},
		ControllerName: gatewayv1.GatewayController(ctrl),
		Conditions: []metav1.Condition{{Type: string(gatewayv1.PolicyConditionAccepted), Status: metav1.ConditionTrue,
			Reason: string(gatewayv1.PolicyReasonAccepted), Message: msg, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(at)}},
	}
}

func TestMergeAncestors(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	theirs1 := ancestor(theirs, "gw", "theirs", t0)
	existing := []gatewayv1.PolicyAncestorStatus{ancestor(ours, "gw", "old", t0), theirs1, ancestor(ours, "gone", "stale", t0)}
	desired := []gatewayv1.PolicyAncestorStatus{ancestor(ours, "new", "added", time.Time{}), ancestor(ours, "gw", "same status", time.Time{})}
	out, changed := status.MergeAncestors(existing, desired, ours, t1)
	g.Expect(changed).To(BeTrue())
	g.Expect(out).To(HaveLen(3))
	// Ours keeps its place, another controller's entry is untouched, the
	// stale entry of ours is gone, the new one is appended.
	g.Expect(string(out[0].AncestorRef.Name)).To(Equal("gw"))
	g.Expect(out[0].Conditions[0].Message).To(Equal("same status"))
	g.Expect(out[0].Conditions[0].LastTransitionTime.Time).To(Equal(t0), "same condition status keeps its transition time")
	g.Expect(out[1]).To(Equal(theirs1))
	g.Expect(string(out[2].AncestorRef.Name)).To(Equal("new"))
	g.Expect(out[2].Conditions[0].LastTransitionTime.Time).To(Equal(t1))
	// Merging again changes nothing.
	again, changed := status.MergeAncestors(out, desired, ours, t1.Add(time.Hour))
	g.Expect(changed).To(BeFalse())
	g.Expect(again).To(Equal(out))
	// Nothing desired: only ours go.
	none, changed := status.MergeAncestors(out, nil, ours, t1)
	g.Expect(changed).To(BeTrue())
	g.Expect(none).To(Equal([]gatewayv1.PolicyAncestorStatus{theirs1}))
	// Another controller's policy with no entry of ours is left alone.
	_, changed = status.MergeAncestors([]gatewayv1.PolicyAncestorStatus{theirs1}, nil, ours, t1)
	g.Expect(changed).To(BeFalse())
}

// The writer writes a BackendTLSPolicy's ancestors of ours on a real
// apiserver: once per change, never touching another controller's entry,
// and removes ours when the policy no longer applies.
func TestWriterBackendTLSPolicy(t *testing.T) {
	e := startWriterEnv(t)
	g := NewWithT(t)
	ns := e.namespace(t, "btls")
	if _, err := e.cache.GetInformer(e.ctx, &gatewayv1.BackendTLSPolicy{}); err != nil {
		t.Fatal(err)
	}
	system := gatewayv1.WellKnownCACertificatesSystem
	p := &gatewayv1.BackendTLSPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: gatewayv1.BackendTLSPolicySpec{
			TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: "svc"}}},
			Validation: gatewayv1.BackendTLSPolicyValidation{WellKnownCACertificates: &system, Hostname: "backend.example.com"},
		},
	}
	g.Expect(e.api.Create(e.ctx, p)).To(Succeed())
	theirsEntry := ancestor(theirs, "gw", "theirs", time.Now().Truncate(time.Second))
	p.Status.Ancestors = []gatewayv1.PolicyAncestorStatus{theirsEntry}
	g.Expect(e.api.Status().Update(e.ctx, p)).To(Succeed())
	key := types.NamespacedName{Namespace: ns, Name: "p"}
	ancestors := func() ([]gatewayv1.PolicyAncestorStatus, error) {
		var got gatewayv1.BackendTLSPolicy
		err := e.api.Get(e.ctx, key, &got)
		return got.Status.Ancestors, err
	}
	snapshot := func(rvAtLeast string) *gatewayapi.Input {
		var got gatewayv1.BackendTLSPolicy
		g.Eventually(func() bool {
			if e.cache.Get(e.ctx, key, &got) != nil {
				return false
			}
			have, _ := strconv.Atoi(got.ResourceVersion)
			want, _ := strconv.Atoi(rvAtLeast)
			return have >= want
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		return &gatewayapi.Input{ControllerName: ours, BackendTLSPolicies: []*gatewayv1.BackendTLSPolicy{&got}}
	}
	out := func(msg string) *gatewayapi.Output {
		o := output(nil)
		if msg != "" {
			o.BackendTLSPolicyStatus = gatewayapi.PolicyStatuses{key: {ancestor(ours, "gw", msg, time.Time{})}}
		}
		return o
	}
	w := status.New(e.cachedClient(t), e.api, ours, logr.Discard())
	e.start(t, w)

	before := writes(status.KindBackendTLSPolicy)
	w.Submit(snapshot(p.ResourceVersion), out("one"))
	g.Eventually(ancestors).WithTimeout(30 * time.Second).Should(HaveLen(2))
	got, err := ancestors()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got[0].ControllerName).To(BeEquivalentTo(theirs))
	g.Expect(got[0].Conditions[0].Message).To(Equal("theirs"), "another controller's entry is left alone")
	g.Expect(got[1].ControllerName).To(BeEquivalentTo(ours))
	g.Expect(got[1].Conditions[0].Message).To(Equal("one"))
	g.Expect(writes(status.KindBackendTLSPolicy) - before).To(Equal(1))

	// The same desired status again: no write.
	var cur gatewayv1.BackendTLSPolicy
	g.Expect(e.api.Get(e.ctx, key, &cur)).To(Succeed())
	for range 3 {
		w.Submit(snapshot(cur.ResourceVersion), out("one"))
	}
	g.Consistently(func() int { return writes(status.KindBackendTLSPolicy) - before }).WithTimeout(quietly).Should(Equal(1),
		"an unchanged desired status must not be written again")

	// The policy no longer applies to a Gateway of ours: our entry goes,
	// theirs stays.
	w.Submit(snapshot(cur.ResourceVersion), out(""))
	g.Eventually(ancestors).WithTimeout(30 * time.Second).Should(HaveLen(1))
	got, err = ancestors()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got[0].ControllerName).To(BeEquivalentTo(theirs))
	g.Expect(got[0].Conditions[0].Message).To(Equal("theirs"))
}
