package testenv

import (
	"fmt"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Counter reads the counter name{label=value} from the controller-runtime
// metrics registry, which an in-process manager registers its metrics
// with; 0 when that series does not exist yet.
func Counter(name, label, value string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, fmt.Errorf("gather metrics: %w", err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue(), nil
				}
			}
		}
	}
	return 0, nil
}
