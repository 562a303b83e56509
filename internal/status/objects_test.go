package status_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/status"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/testwait"
)

var objectWriterRuns atomic.Int64

// The ObjectWriter against the real apiserver: one control plane for all
// cases, each in its own namespace and with its own metric kind.
func TestObjectWriter(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	c := env.Client
	ctx := context.Background()
	// Each case counts its writes under a metric kind of its own, which a
	// later run of this test in the same process (-count) must not share.
	round := objectWriterRuns.Add(1)
	kind := func(name string) status.Kind { return status.Kind(fmt.Sprintf("%s%d", name, round)) }

	t.Run("writes only on change", func(t *testing.T) {
		ns := namespace(t, c, "only-on-change")
		p := params(t, c, ns, "p")
		w, stop := start(t, string(kind("ObjOnChange")), c, c, status.ObjectWriterOptions{})
		defer stop()

		w.Write(p, setValid("Ready", "first"))
		testwait.For(t, "the first status", func() bool { return validMessage(t, c, p) == "first" })
		testwait.For(t, "the writer to settle", w.Settled)
		if n := writes(kind("ObjOnChange")); n != 1 {
			t.Fatalf("writes after the first status: %v, want 1", n)
		}
		rv := get(t, c, p).ResourceVersion

		// The same status again, many times: nothing to write.
		for range 20 {
			w.Write(p, setValid("Ready", "first"))
		}
		testwait.For(t, "the writer to settle", w.Settled)
		if n := writes(kind("ObjOnChange")); n != 1 {
			t.Errorf("writes after an unchanged status: %v, want 1", n)
		}
		if got := get(t, c, p).ResourceVersion; got != rv {
			t.Errorf("resourceVersion changed from %s to %s by an unchanged status", rv, got)
		}

		w.Write(p, setValid("Ready", "second"))
		testwait.For(t, "the second status", func() bool { return validMessage(t, c, p) == "second" })
		testwait.For(t, "the writer to settle", w.Settled)
		if n := writes(kind("ObjOnChange")); n != 2 {
			t.Errorf("writes after a changed status: %v, want 2", n)
		}
	})

	t.Run("an idle writer holds no goroutine", func(t *testing.T) {
		ns := namespace(t, c, "idle")
		var ps []*shardgatev1alpha1.GatewayParameters
		for i := range 20 {
			ps = append(ps, params(t, c, ns, fmt.Sprintf("p-%d", i)))
		}
		w, stop := start(t, string(kind("ObjIdle")), c, c, status.ObjectWriterOptions{})
		defer stop()
		idle := func() bool { return status.WriteGoroutines() == 0 }
		for _, msg := range []string{"first", "second"} {
			for _, p := range ps {
				w.Write(p, setValid("Ready", msg))
			}
			for _, p := range ps {
				testwait.For(t, msg+" status of "+p.Name, func() bool { return validMessage(t, c, p) == msg })
			}
			testwait.For(t, "the writer to settle", w.Settled)
			testwait.For(t, "no write goroutine after the "+msg+" writes", idle)
		}
	})

	t.Run("coalesces a burst into one write of the latest", func(t *testing.T) {
		ns := namespace(t, c, "coalesce")
		p := params(t, c, ns, "p")
		w := status.NewObjectWriter(string(kind("ObjCoalesce")), c, c, newParams, status.ObjectWriterOptions{})
		// Given before the writer runs, as on a replica that is not the
		// leader yet: all but the latest are superseded.
		for i := range 50 {
			w.Write(p, setValid("Ready", fmt.Sprintf("burst-%d", i)))
		}
		stop := run(t, w)
		defer stop()
		testwait.For(t, "the latest status", func() bool { return validMessage(t, c, p) == "burst-49" })
		testwait.For(t, "the writer to settle", w.Settled)
		if n := writes(kind("ObjCoalesce")); n != 1 {
			t.Errorf("writes for a burst of 50: %v, want 1", n)
		}
	})

	t.Run("retries a conflict on the stored object, keeping what another writer wrote", func(t *testing.T) {
		ns := namespace(t, c, "conflict")
		p := params(t, c, ns, "p")
		// The writer's cached reads return the object as it was before
		// another writer changed its status, as a lagging cache does.
		stale := get(t, c, p)
		other := get(t, c, p)
		meta.SetStatusCondition(&other.Status.Conditions, metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Elsewhere", Message: "kept"})
		if err := c.Status().Update(ctx, other); err != nil {
			t.Fatal(err)
		}
		lagging := laggingCache{Client: c, stale: stale}
		w, stop := start(t, string(kind("ObjConflict")), lagging, c, status.ObjectWriterOptions{})
		defer stop()
		w.Write(p, setValid("Ready", "after conflict"))
		testwait.For(t, "the status after the conflict", func() bool { return validMessage(t, c, p) == "after conflict" })
		testwait.For(t, "the writer to settle", w.Settled)
		got := get(t, c, p)
		if cond := meta.FindStatusCondition(got.Status.Conditions, "Other"); cond == nil || cond.Message != "kept" {
			t.Errorf("the other writer's condition was lost: %+v", got.Status.Conditions)
		}
		// The stale write was refused (409), then written once more from
		// the apiserver's copy.
		if n := writes(kind("ObjConflict")); n != 2 {
			t.Errorf("writes: %v, want 2 (the conflicting one and its retry)", n)
		}
	})

	t.Run("never writes a status to another object that took the name", func(t *testing.T) {
		ns := namespace(t, c, "replaced")
		old := params(t, c, ns, "p")
		w := status.NewObjectWriter(string(kind("ObjReplaced")), c, c, newParams, status.ObjectWriterOptions{})
		w.Write(old, setValid("Ready", "for the old object"))
		if err := c.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, "the old object to go", func() bool { return !exists(t, c, old) })
		replacement := params(t, c, ns, "p")
		stop := run(t, w)
		defer stop()
		testwait.For(t, "the writer to settle", w.Settled)
		if got := get(t, c, replacement); len(got.Status.Conditions) != 0 {
			t.Errorf("the replacement got the old object's status: %+v", got.Status)
		}
		if n := writes(kind("ObjReplaced")); n != 0 {
			t.Errorf("writes: %v, want 0", n)
		}

		// A status for an object that is gone is dropped, not retried.
		gone := params(t, c, ns, "gone")
		if err := c.Delete(ctx, gone); err != nil {
			t.Fatal(err)
		}
		w.Write(gone, setValid("Ready", "too late"))
		testwait.For(t, "the writer to settle", w.Settled)
	})
}

// laggingCache serves one stale copy of an object from Get, as an informer
// cache that has not seen the latest write yet; everything else goes to the
// real apiserver.
type laggingCache struct {
	client.Client
	stale *shardgatev1alpha1.GatewayParameters
}

func (l laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if p, ok := obj.(*shardgatev1alpha1.GatewayParameters); ok && key == client.ObjectKeyFromObject(l.stale) {
		l.stale.DeepCopyInto(p)
		return nil
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

func newParams() *shardgatev1alpha1.GatewayParameters { return &shardgatev1alpha1.GatewayParameters{} }

// setValid sets the Valid condition only, as the GatewayParameters
// reconciler does.
func setValid(reason, msg string) func(*shardgatev1alpha1.GatewayParameters) {
	return func(p *shardgatev1alpha1.GatewayParameters) {
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
			Type: shardgatev1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: reason, Message: msg,
			ObservedGeneration: p.Generation,
		})
	}
}

func start(t *testing.T, kind string, c client.Client, reader client.Reader, opts status.ObjectWriterOptions) (*status.ObjectWriter[*shardgatev1alpha1.GatewayParameters], func()) {
	t.Helper()
	w := status.NewObjectWriter(kind, c, reader, newParams, opts)
	return w, run(t, w)
}

func run(t *testing.T, w *status.ObjectWriter[*shardgatev1alpha1.GatewayParameters]) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func namespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func params(t *testing.T, c client.Client, ns, name string) *shardgatev1alpha1.GatewayParameters {
	t.Helper()
	p := &shardgatev1alpha1.GatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t *testing.T, c client.Client, p *shardgatev1alpha1.GatewayParameters) *shardgatev1alpha1.GatewayParameters {
	t.Helper()
	out := newParams()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func exists(t *testing.T, c client.Client, p *shardgatev1alpha1.GatewayParameters) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(p), newParams())
	if err != nil && client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

func validMessage(t *testing.T, c client.Client, p *shardgatev1alpha1.GatewayParameters) string {
	t.Helper()
	if cond := meta.FindStatusCondition(get(t, c, p).Status.Conditions, shardgatev1alpha1.ConditionValid); cond != nil {
		return cond.Message
	}
	return ""
}
