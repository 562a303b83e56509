package manager

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Test hooks for the external test package (which uses internal/testenv,
// itself an importer of this package).

type Leadership = leadership

func NewLeadership(electionEnabled bool) *Leadership { return newLeadership(electionEnabled) }
func (l *leadership) Label() string                  { return l.label() }
func (l *leadership) SetHeld(held bool)              { l.held.Store(held) }

func CountWrites(c client.WithWatch, lead *Leadership) client.WithWatch { return countWrites(c, lead) }

func NewLeaderLock(ctx context.Context, rc *rest.Config, namespace, id string, lead *Leadership) (resourcelock.Interface, error) {
	return newLeaderLock(ctx, rc, namespace, id, lead)
}

func ResetWrites() { kubeWrites.Reset() }

func Writes(verb, kind, leader string) float64 {
	var m dto.Metric
	if err := kubeWrites.WithLabelValues(verb, kind, leader).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func WriteSeries() int {
	ch := make(chan prometheus.Metric, 100)
	kubeWrites.Collect(ch)
	close(ch)
	return len(ch)
}
