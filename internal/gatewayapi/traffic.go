/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/params"
)

// Traffic is the IR of a GatewayParameters spec.traffic: the defaults
// (ir.DefaultTraffic) for what it leaves unset. nil spec is every default.
func Traffic(spec *shardgatev1alpha1.TrafficSpec) *ir.Traffic {
	t := ir.DefaultTraffic()
	if spec == nil {
		return t
	}
	if spec.IdleTimeout != nil {
		t.IdleTimeout = metav1.Duration{Duration: max(spec.IdleTimeout.Duration, 0)}
	}
	t.WebSocketsAll = spec.WebSockets != shardgatev1alpha1.WebSocketsAppProtocol
	t.TrustedHops = uint32(max(spec.TrustedHops, 0))
	t.ProxyProtocol = spec.ProxyProtocol
	if a := spec.AccessLog; a != nil {
		switch a.Format {
		case shardgatev1alpha1.AccessLogOff:
			t.AccessLog = nil
		case shardgatev1alpha1.AccessLogText:
			if a.Text != "" {
				t.AccessLog = &ir.AccessLog{Text: a.Text}
			}
		default:
			if len(a.JSON) > 0 {
				t.AccessLog = &ir.AccessLog{JSON: maps.Clone(a.JSON)}
			}
		}
	}
	return t
}

// gatewayTraffic is the traffic settings of gw: those of the
// GatewayParameters its parametersRef names, else its class's; nil (the
// defaults, ir.TrafficOf) when they set none. A reference that does not
// resolve leaves the defaults (the Gateway is then not Accepted and
// serves nothing anyway).
func (idx *Index) gatewayTraffic(gw *gatewayv1.Gateway) *ir.Traffic {
	if p := idx.gatewayParams(gw); p != nil && p.Spec.Traffic != nil {
		return Traffic(p.Spec.Traffic)
	}
	return nil
}

// gatewayParams is the GatewayParameters that apply to gw, or nil.
func (idx *Index) gatewayParams(gw *gatewayv1.Gateway) *shardgatev1alpha1.GatewayParameters {
	var class *gatewayv1.GatewayClass
	if ci := idx.classes[string(gw.Spec.GatewayClassName)]; ci != nil {
		class = ci.class
	}
	p, _ := params.Resolve(gw, class, idx.paramsByKey)
	return p
}

// paramsByKey looks up a GatewayParameters (params.Get).
func (idx *Index) paramsByKey(k types.NamespacedName) *shardgatev1alpha1.GatewayParameters {
	return idx.params[k]
}
