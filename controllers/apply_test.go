package controllers_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestWrite runs controllers.Write against a real apiserver: what a reconciler whose
// cache lags behind the apiserver writes over, and what a later write of
// fewer fields leaves behind.
func TestWrite(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	ctx := context.Background()
	c := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "write-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	ours := func(name string, labels map[string]string, ports ...int32) *corev1.Service {
		svc := &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: labels},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}},
		}
		for _, p := range ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "p" + string(rune('a'+p%26)), Port: p})
		}
		return svc
	}
	get := func(name string) *corev1.Service {
		t.Helper()
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, &svc); err != nil {
			t.Fatal(err)
		}
		return &svc
	}
	foreign := func(name string) *corev1.Service {
		t.Helper()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: map[string]string{"made-by": "someone-else"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
		if err := c.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	dropsFields := func(t *testing.T, c client.Client, name string) {
		t.Helper()
		if err := controllers.Write(ctx, c, env.Client, ours(name, map[string]string{"a": "1", "b": "2"}, 80, 81), nil); err != nil {
			t.Fatal(err)
		}
		if err := controllers.Write(ctx, c, env.Client, ours(name, map[string]string{"a": "1"}, 80), get(name)); err != nil {
			t.Fatal(err)
		}
		got := get(name)
		if _, ok := got.Labels["b"]; ok || len(got.Spec.Ports) != 1 {
			t.Fatalf("a field the second write dropped is still there: labels %v, ports %v", got.Labels, got.Spec.Ports)
		}
		for _, m := range got.ManagedFields {
			if m.Manager == shardgatev1alpha1.FieldOwner && m.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("shardgate holds fields under a %s entry", m.Operation)
			}
		}
	}

	t.Run("a created object loses the fields a later write drops", func(t *testing.T) {
		dropsFields(t, c, "created")
	})

	t.Run("fields are handed over though another writer changed the object first", func(t *testing.T) {
		// Another writer changes the object between its Create and the
		// patch that hands its fields over, as MetalLB does with status.
		var raced atomic.Int32
		withWatch, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		racing := interceptor.NewClient(withWatch, interceptor.Funcs{
			Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if raced.Add(1) == 1 {
					other := get(obj.GetName())
					other.Annotations = map[string]string{"other": "writer"}
					if err := cl.Update(ctx, other); err != nil {
						t.Fatal(err)
					}
				}
				return cl.Patch(ctx, obj, patch, opts...)
			},
		})
		dropsFields(t, racing, "raced")
		if raced.Load() < 2 {
			t.Fatalf("the hand-over patch ran %d times; the first was made to fail", raced.Load())
		}
		if got := get("raced"); got.Annotations["other"] != "writer" {
			t.Errorf("the other writer's change is gone: %v", got.Annotations)
		}
	})

	t.Run("fields a create could not hand over are handed over by the next write", func(t *testing.T) {
		// Another writer wins every attempt of the hand-over after the
		// Create: the create fails, and its fields stay under shardgate's
		// Update entry until the next write of the object.
		withWatch, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		losing := interceptor.NewClient(withWatch, interceptor.Funcs{
			Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				return apierrors.NewConflict(schema.GroupResource{Resource: "services"}, obj.GetName(), errors.New("another writer"))
			},
		})
		if err := controllers.Write(ctx, losing, env.Client, ours("lost", map[string]string{"a": "1", "b": "2"}, 80, 81), nil); !apierrors.IsConflict(err) {
			t.Fatalf("create whose hand-over always conflicts: %v, want the conflict", err)
		}
		held := false
		for _, m := range get("lost").ManagedFields {
			held = held || m.Manager == shardgatev1alpha1.FieldOwner && m.Operation == metav1.ManagedFieldsOperationUpdate
		}
		if !held {
			t.Fatal("the failed hand-over left no Update entry: the case is not set up")
		}
		if err := controllers.Write(ctx, c, env.Client, ours("lost", map[string]string{"a": "1"}, 80), get("lost")); err != nil {
			t.Fatal(err)
		}
		got := get("lost")
		if _, ok := got.Labels["b"]; ok || len(got.Spec.Ports) != 1 {
			t.Fatalf("a field the write dropped is still there: labels %v, ports %v", got.Labels, got.Spec.Ports)
		}
		for _, m := range got.ManagedFields {
			if m.Manager == shardgatev1alpha1.FieldOwner && m.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("shardgate still holds fields under a %s entry", m.Operation)
			}
		}
	})

	t.Run("a name the cache has not seen taken is refused, not taken over", func(t *testing.T) {
		theirs := foreign("taken")
		err := controllers.Write(ctx, c, env.Client, ours("taken", map[string]string{"a": "1"}, 80), nil)
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("write over a foreign object: %v, want AlreadyExists", err)
		}
		if got := get("taken"); got.ResourceVersion != theirs.ResourceVersion {
			t.Errorf("the foreign object was written: %v", got.Labels)
		}
	})

	t.Run("an object made again by someone else since it was read is refused", func(t *testing.T) {
		if err := controllers.Write(ctx, c, env.Client, ours("replaced", nil, 80), nil); err != nil {
			t.Fatal(err)
		}
		read := get("replaced")
		if err := c.Delete(ctx, read); err != nil {
			t.Fatal(err)
		}
		theirs := foreign("replaced")
		err := controllers.Write(ctx, c, env.Client, ours("replaced", map[string]string{"a": "1"}, 80), read)
		if err == nil {
			t.Fatal("write with the UID read before the object was made again succeeded")
		}
		if got := get("replaced"); got.ResourceVersion != theirs.ResourceVersion {
			t.Errorf("the foreign object was written: %v", got.Labels)
		}
	})
}
