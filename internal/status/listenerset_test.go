package status_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/status"
)

// listenerSet creates a ListenerSet in ns naming Gateway gw and waits for
// the cache to hold it.
func (e *writerEnv) listenerSet(t *testing.T, ns, name string) types.NamespacedName {
	t.Helper()
	ls := &gatewayv1.ListenerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.ListenerSetSpec{
			ParentRef: gatewayv1.ParentGatewayReference{Name: "gw"},
			Listeners: []gatewayv1.ListenerEntry{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
				Hostname: ptr(gatewayv1.Hostname("a.example.test"))}},
		},
	}
	if err := e.api.Create(e.ctx, ls); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	NewWithT(t).Eventually(func() error { return e.cache.Get(e.ctx, key, &gatewayv1.ListenerSet{}) }).
		WithTimeout(30 * time.Second).Should(Succeed())
	return key
}

// lsOutput is a translation whose only desired status is the ListenerSet
// key's: Accepted with msg, one listener with attached routes.
func lsOutput(key types.NamespacedName, msg string, attached int32) *gatewayapi.Output {
	out := output(nil)
	out.ListenerSetStatus = map[types.NamespacedName]gatewayv1.ListenerSetStatus{key: {
		Conditions: []metav1.Condition{
			{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: msg, ObservedGeneration: 1},
			{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", Message: "ok", ObservedGeneration: 1},
		},
		Listeners: []gatewayv1.ListenerEntryStatus{{
			Name: "http", AttachedRoutes: attached, SupportedKinds: []gatewayv1.RouteGroupKind{{Kind: "HTTPRoute"}},
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "ok", ObservedGeneration: 1}},
		}},
	}}
	return out
}

// lsMessage reads the Accepted message and attached routes of the
// ListenerSet key from the apiserver.
func (e *writerEnv) lsMessage(key types.NamespacedName) func() (string, error) {
	return func() (string, error) {
		var ls gatewayv1.ListenerSet
		if err := e.api.Get(e.ctx, key, &ls); err != nil {
			return "", err
		}
		for _, c := range ls.Status.Conditions {
			if c.Type == "Accepted" && c.Status == metav1.ConditionTrue {
				n := int32(-1)
				if len(ls.Status.Listeners) == 1 {
					n = ls.Status.Listeners[0].AttachedRoutes
				}
				return fmt.Sprintf("%s/%d", c.Message, n), nil
			}
		}
		return "", nil
	}
}

// listenerSetOnChange: a ListenerSet's status is written when its desired
// status changes, and not again for the same desired status or for an
// update that leaves its status alone; the transition time of an unchanged
// condition is kept.
func listenerSetOnChange(t *testing.T, e *writerEnv) {
	g := NewWithT(t)
	ns := e.namespace(t, "ls-on-change")
	key := e.listenerSet(t, ns, "ls")
	w := e.writer(t, e.cachedClient(t))
	e.start(t, w)
	before := writes(status.KindListenerSet)
	w.Submit(e.snapshot(t, ns), lsOutput(key, "one", 1))
	g.Eventually(e.lsMessage(key)).WithTimeout(30 * time.Second).Should(Equal("one/1"))
	g.Eventually(func() string {
		var ls gatewayv1.ListenerSet
		if e.cache.Get(e.ctx, key, &ls) != nil || len(ls.Status.Listeners) != 1 {
			return ""
		}
		return ls.Status.Conditions[0].Message
	}).WithTimeout(30 * time.Second).Should(Equal("one"))
	g.Expect(writes(status.KindListenerSet) - before).To(Equal(1))
	var first gatewayv1.ListenerSet
	g.Expect(e.api.Get(e.ctx, key, &first)).To(Succeed())

	for range 5 {
		w.Submit(e.snapshot(t, ns), lsOutput(key, "one", 1))
	}
	var ls gatewayv1.ListenerSet
	g.Expect(e.api.Get(e.ctx, key, &ls)).To(Succeed())
	ls.Labels = map[string]string{"touched": "yes"}
	g.Expect(e.api.Update(e.ctx, &ls)).To(Succeed())
	g.Consistently(func() int { return writes(status.KindListenerSet) - before }).WithTimeout(quietly).Should(Equal(1),
		"an unchanged desired status must not be written again")

	// The listener's attached routes change: one write; Programmed,
	// unchanged, keeps its transition time.
	w.Submit(e.snapshot(t, ns), lsOutput(key, "one", 2))
	g.Eventually(e.lsMessage(key)).WithTimeout(30 * time.Second).Should(Equal("one/2"))
	g.Consistently(func() int { return writes(status.KindListenerSet) - before }).WithTimeout(quietly).Should(Equal(2))
	g.Expect(e.api.Get(e.ctx, key, &ls)).To(Succeed())
	g.Expect(ls.Status.Conditions[1].LastTransitionTime).To(Equal(first.Status.Conditions[1].LastTransitionTime))
}

// listenerSetConflict: another writer changes the ListenerSet between our
// read and our update; the write is retried against the apiserver and the
// other change stays.
func listenerSetConflict(t *testing.T, e *writerEnv) {
	g := NewWithT(t)
	ns := e.namespace(t, "ls-conflict")
	key := e.listenerSet(t, ns, "ls")
	var raced atomic.Bool
	c := interceptor.NewClient(e.cachedClient(t), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*gatewayv1.ListenerSet); ok && !raced.Swap(true) {
				var ls gatewayv1.ListenerSet
				if err := e.api.Get(ctx, key, &ls); err != nil {
					return err
				}
				ls.Labels = map[string]string{"raced": "yes"}
				if err := e.api.Update(ctx, &ls); err != nil {
					return err
				}
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	w := e.writer(t, c)
	e.start(t, w)
	before := writes(status.KindListenerSet)
	w.Submit(e.snapshot(t, ns), lsOutput(key, "after a conflict", 1))
	g.Eventually(e.lsMessage(key)).WithTimeout(30 * time.Second).Should(Equal("after a conflict/1"))
	g.Expect(raced.Load()).To(BeTrue())
	var ls gatewayv1.ListenerSet
	g.Expect(e.api.Get(e.ctx, key, &ls)).To(Succeed())
	g.Expect(ls.Labels).To(HaveKeyWithValue("raced", "yes"), "the other writer's change must stay")
	g.Consistently(func() int { return writes(status.KindListenerSet) - before }).WithTimeout(quietly).Should(Equal(2),
		"one refused write and one retry")
}
