package addresses

import (
	"math"
	"sort"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
)

// PoolUsage is one IPAddressPool's usage, as MetalLB reports it in the
// pool's status.
type PoolUsage struct {
	// Namespace and Name name the IPAddressPool.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Assigned and Available are the IPv4 and IPv6 counts added up
	// (saturating: MetalLB reports a huge IPv6 range as 2^63-1).
	Assigned  int64 `json:"assigned"`
	Available int64 `json:"available"`
	// The per-family counts from status.
	AssignedIPv4  int64 `json:"assignedIPv4"`
	AssignedIPv6  int64 `json:"assignedIPv6"`
	AvailableIPv4 int64 `json:"availableIPv4"`
	AvailableIPv6 int64 `json:"availableIPv6"`
}

// UsageOf is p's usage.
func UsageOf(p *metallbv1beta1.IPAddressPool) PoolUsage {
	s := p.Status
	return PoolUsage{
		Namespace: p.Namespace, Name: p.Name,
		Assigned:     addSat(s.AssignedIPv4, s.AssignedIPv6),
		Available:    addSat(s.AvailableIPv4, s.AvailableIPv6),
		AssignedIPv4: s.AssignedIPv4, AssignedIPv6: s.AssignedIPv6,
		AvailableIPv4: s.AvailableIPv4, AvailableIPv6: s.AvailableIPv6,
	}
}

// Usage is the usage of every pool, sorted by name, then namespace.
func Usage(pools []metallbv1beta1.IPAddressPool) []PoolUsage {
	out := make([]PoolUsage, 0, len(pools))
	for i := range pools {
		out = append(out, UsageOf(&pools[i]))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
