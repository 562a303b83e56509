package manager

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/scheme"
)

func writes(verb, kind, leader string) float64 {
	var m dto.Metric
	if err := kubeWrites.WithLabelValues(verb, kind, leader).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func series() int {
	ch := make(chan prometheus.Metric, 100)
	kubeWrites.Collect(ch)
	close(ch)
	return len(ch)
}

func TestCountWritesByVerbKindAndLeadership(t *testing.T) {
	ctx := context.Background()
	kubeWrites.Reset()
	lead := newLeadership(true)
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}}
	base := fake.NewClientBuilder().WithScheme(scheme.New()).WithStatusSubresource(route).Build()
	c := countWrites(base, lead)

	// A follower's writes count as leader="false".
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if got := writes("create", "ConfigMap", "false"); got != 1 {
		t.Fatalf("follower create: got %v, want 1", got)
	}

	lead.held.Store(true) // as observedLock does once the Lease is ours
	if err := c.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	route.Status.Parents = []gatewayv1.RouteParentStatus{}
	if err := c.Status().Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Patch(ctx, route, client.RawPatch(types.MergePatchType, []byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"a": "b"}
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"c":"d"}}`))); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "applied"},
	}}
	// The fake client may or may not support apply; the write is counted
	// either way, because attempts are counted.
	_ = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"))
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ verb, kind string }{
		{"create", "HTTPRoute"}, {"update/status", "HTTPRoute"}, {"patch/status", "HTTPRoute"},
		{"update", "ConfigMap"}, {"patch", "ConfigMap"}, {"apply", "ConfigMap"},
		{"delete", "ConfigMap"}, {"deletecollection", "ConfigMap"},
	} {
		if got := writes(w.verb, w.kind, "true"); got != 1 {
			t.Errorf("%s %s leader=true: got %v, want 1", w.verb, w.kind, got)
		}
	}
	if got := writes("create", "ConfigMap", "false"); got != 1 {
		t.Errorf("the follower's count changed after election: %v", got)
	}
	// Reads are not writes.
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if n := series(); n != 9 {
		t.Errorf("got %d series, want 9", n)
	}
}

func TestLeadershipWithoutElection(t *testing.T) {
	l := newLeadership(false)
	if got := l.label(); got != "true" {
		t.Fatalf("without leader election a replica is the leader, got %q", got)
	}
	l = newLeadership(true)
	if got := l.label(); got != "false" {
		t.Fatalf("before the manager exists an electing replica is a follower, got %q", got)
	}
}

// fakeLock is a resourcelock.Interface that accepts every write.
type fakeLock struct{ resourcelock.Interface }

func (fakeLock) Identity() string { return "me" }
func (fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return nil
}
func (fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return nil
}

func TestObservedLockTracksTheLease(t *testing.T) {
	ctx := context.Background()
	l := newLeadership(true)
	lock := observedLock{Interface: fakeLock{}, lead: l}
	if err := lock.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if l.label() != "true" {
		t.Fatal("acquiring the Lease makes the replica the leader")
	}
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: ""}); err != nil {
		t.Fatal(err)
	}
	if l.label() != "false" {
		t.Fatal("releasing the Lease ends leadership")
	}
}
