package manager

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	ctrlrecorder "sigs.k8s.io/controller-runtime/pkg/recorder"
)

// kubeWrites counts every write this replica sends to the apiserver, so that
// "only the leader writes" can be checked from the outside: a
// follower's leader="false" series must stay at zero.
//
// What is counted:
//   - every write of the manager's client (Create, Update, Patch, Apply,
//     Delete, DeleteAllOf), including its subresource forms, whose verb is
//     "<verb>/<subresource>" (for example "update/status");
//   - every Event emitted through the recorder the manager hands to
//     controllers (verb "create", kind "Event"): events go through a
//     recorder with a client of its own, so the client wrapper does not see
//     them;
//   - the xDS CA bootstrap (xdsCredentials), which runs before the manager
//     starts and so before any election: it counts with leader="false" when
//     leader election is enabled. It creates the Secret only when it is
//     absent, so on a fleet whose CA already exists no replica writes it.
//
// What is not counted: the leader election Lease and the election's own
// Events (every candidate must try to acquire the Lease; that is how
// election works). Attempts are counted, not successes (a write is counted
// before it is sent, whatever becomes of it), so a follower that even tried
// to write shows up.
var kubeWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shardgate_kube_writes_total",
	Help: "Writes sent to the apiserver, by verb (\"<verb>/<subresource>\" for subresources), kind, and whether this replica was the elected leader at the time (\"true\"/\"false\"; without leader election a replica is the leader).",
}, []string{"verb", "kind", "leader"})

func init() { ctrlmetrics.Registry.MustRegister(kubeWrites) }

// leadership answers "does this replica hold the leader Lease right now?"
// for the write counter. Without leader election every replica is the
// leader. With it, the answer comes from the Lease lock itself (see
// observedLock): true from the moment a Create or Update of the Lease with
// this replica's identity succeeds, which is before controller-runtime
// starts the leader-only runnables, so their first writes are counted as
// the leader's (mgr.Elected() closes only after those runnables started,
// and a status write queued while following can beat it). controller-runtime
// exits the process when the lease is lost, so the answer goes back to
// false only when the Lease is released at shutdown.
type leadership struct {
	electionEnabled bool
	held            atomic.Bool
}

func newLeadership(electionEnabled bool) *leadership {
	return &leadership{electionEnabled: electionEnabled}
}

func (l *leadership) label() string {
	if !l.electionEnabled || l.held.Load() {
		return "true"
	}
	return "false"
}

func (l *leadership) count(verb, kind string) {
	kubeWrites.WithLabelValues(verb, kind, l.label()).Inc()
}

// newCountingClient is ctrl.Options.NewClient: the default client, with
// every write counted in kubeWrites.
func newCountingClient(lead *leadership) func(*rest.Config, client.Options) (client.Client, error) {
	return func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, opts)
		if err != nil {
			return nil, err
		}
		return countWrites(c, lead), nil
	}
}

// countWrites wraps c so that every write is counted before it is sent.
func countWrites(c client.WithWatch, lead *leadership) client.WithWatch {
	kindOf := func(c client.WithWatch, obj runtime.Object) string {
		gvk, err := c.GroupVersionKindFor(obj)
		if err != nil || gvk.Kind == "" {
			return "unknown"
		}
		return gvk.Kind
	}
	applyKind := func(obj runtime.ApplyConfiguration) string {
		switch k := obj.(type) {
		case interface{ GetKind() *string }: // typed apply configurations
			if k.GetKind() != nil && *k.GetKind() != "" {
				return *k.GetKind()
			}
		case interface{ GetKind() string }: // client.ApplyConfigurationFromUnstructured
			if k.GetKind() != "" {
				return k.GetKind()
			}
		}
		return "unknown"
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			lead.count("create", kindOf(c, obj))
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			lead.count("update", kindOf(c, obj))
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			lead.count("patch", kindOf(c, obj))
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			lead.count("apply", applyKind(obj))
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			lead.count("delete", kindOf(c, obj))
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			lead.count("deletecollection", kindOf(c, obj))
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			lead.count("create/"+sub, subKind(c, obj))
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			lead.count("update/"+sub, subKind(c, obj))
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			lead.count("patch/"+sub, subKind(c, obj))
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			lead.count("apply/"+sub, applyKind(obj))
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

func subKind(c client.Client, obj runtime.Object) string {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil || gvk.Kind == "" {
		return "unknown"
	}
	return gvk.Kind
}

// countingRecorder counts every Event emitted as a write of kind Event.
type countingRecorder struct {
	events.EventRecorder
	lead *leadership
}

func (r countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.lead.count("create", "Event")
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// observedLock is the leader election lock, telling leadership whether this
// replica holds the Lease after every successful write of it.
type observedLock struct {
	resourcelock.Interface
	lead *leadership
}

func (l observedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	if err == nil {
		l.lead.held.Store(ler.HolderIdentity == l.Identity())
	}
	return err
}

func (l observedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	if err == nil {
		l.lead.held.Store(ler.HolderIdentity == l.Identity())
	}
	return err
}

// newLeaderLock builds the Lease lock as controller-runtime would
// (leaderelection.NewResourceLock: identity "<hostname>_<uuid>", a client
// timeout of RenewDeadline/2), wrapped in observedLock. The election's own
// Events ("... became leader") go through a broadcaster of their own, which
// stops with ctx; like the Lease itself they are not counted as writes.
func newLeaderLock(ctx context.Context, rc *rest.Config, namespace, id string, lead *leadership) (resourcelock.Interface, error) {
	cs, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(rc), "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("leader election events client: %w", err)
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	lock, err := leaderelection.NewResourceLock(rc, electionRecorders{b}, leaderelection.Options{
		LeaderElection:          true,
		LeaderElectionNamespace: namespace,
		LeaderElectionID:        id,
		RenewDeadline:           RenewDeadline,
	})
	if err != nil {
		b.Shutdown()
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	return observedLock{Interface: lock, lead: lead}, nil
}

// electionRecorders gives the lock its (legacy API) event recorder.
type electionRecorders struct{ b record.EventBroadcaster }

func (p electionRecorders) GetEventRecorderFor(name string) record.EventRecorder {
	return p.b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: name})
}

// GetEventRecorder is not used by the lock.
func (electionRecorders) GetEventRecorder(string) ctrlrecorder.EventRecorder { return nil }
