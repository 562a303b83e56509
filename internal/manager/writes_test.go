package manager_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/testenv"
)

// startEnv boots the harness's kube-apiserver for one test.
func startEnv(t *testing.T) *testenv.Env {
	t.Helper()
	testenv.Require(t)
	env, err := testenv.Start(context.Background(), testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}

// One apiserver for the package's tests.
func TestWrites(t *testing.T) {
	env := startEnv(t)
	t.Run("CountWritesByVerbKindAndLeadership", func(t *testing.T) { testCountWrites(t, env) })
	t.Run("ObservedLockTracksTheLease", func(t *testing.T) { testObservedLock(t, env) })
	t.Run("StatusWriteKeepsAnnotationsTheCacheDrops", func(t *testing.T) { testStatusKeepsAnnotations(t, env) })
}

// The cache drops kubectl's copy of an object (its last-applied
// annotation); a status write of the cached object must leave it on the
// object, as the apiserver keeps metadata on status writes.
func testStatusKeepsAnnotations(t *testing.T, env *testenv.Env) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}); err != nil {
		t.Fatal(err)
	}
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "kept", Name: "r",
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"HTTPRoute"}`}}}
	if err := env.Client.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Annotations = nil // as cached
	r.Status.Parents = []gatewayv1.RouteParentStatus{{
		ParentRef:      gatewayv1.ParentReference{Name: "gw"},
		ControllerName: "shardgate.io/gateway-controller",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
			LastTransitionTime: metav1.Now()}},
	}}
	if err := env.Client.Status().Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	var got gatewayv1.HTTPRoute
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Parents) != 1 || got.Annotations[corev1.LastAppliedConfigAnnotation] == "" {
		t.Fatalf("after a status write without it: annotations %v, %d parent statuses", got.Annotations, len(got.Status.Parents))
	}
}

func testCountWrites(t *testing.T, env *testenv.Env) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}); err != nil {
		t.Fatal(err)
	}
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	manager.ResetWrites()
	lead := manager.NewLeadership(true)
	c := manager.CountWrites(base, lead)

	// A follower's writes count as leader="false".
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if got := manager.Writes("create", "ConfigMap", "false"); got != 1 {
		t.Fatalf("follower create: got %v, want 1", got)
	}

	lead.SetHeld(true) // as the observed Lease lock does once the Lease is ours
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}}
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
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test")); err != nil {
		t.Fatal(err)
	}
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
		if got := manager.Writes(w.verb, w.kind, "true"); got != 1 {
			t.Errorf("%s %s leader=true: got %v, want 1", w.verb, w.kind, got)
		}
	}
	if got := manager.Writes("create", "ConfigMap", "false"); got != 1 {
		t.Errorf("the follower's count changed after election: %v", got)
	}
	// Reads are not writes.
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if n := manager.WriteSeries(); n != 9 {
		t.Errorf("got %d series, want 9", n)
	}
}

func TestLeadershipWithoutElection(t *testing.T) {
	l := manager.NewLeadership(false)
	if got := l.Label(); got != "true" {
		t.Fatalf("without leader election a replica is the leader, got %q", got)
	}
	l = manager.NewLeadership(true)
	if got := l.Label(); got != "false" {
		t.Fatalf("before the manager exists an electing replica is a follower, got %q", got)
	}
}

// The real Lease lock, on the apiserver: taking the Lease makes the replica
// the leader, releasing it ends that.
func testObservedLock(t *testing.T, env *testenv.Env) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := manager.NewLeadership(true)
	lock, err := manager.NewLeaderLock(ctx, env.Config, testenv.SystemNamespace, "writes-test", l)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: lock.Identity(), LeaseDurationSeconds: 8, AcquireTime: now, RenewTime: now}
	if err := lock.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if l.Label() != "true" {
		t.Fatal("acquiring the Lease makes the replica the leader")
	}
	if _, _, err := lock.Get(ctx); err != nil { // Update needs the lock's view of the Lease
		t.Fatal(err)
	}
	rec.HolderIdentity = ""
	if err := lock.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if l.Label() != "false" {
		t.Fatal("releasing the Lease ends leadership")
	}
}
