package sharding

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// ValidCondition computes the Valid condition of every GatewayParameters
// that has a shard section: False with the first problem's reason when a
// Gateway using it cannot be a shard, or has no listener able to carry
// *.domain (NoListenerForDomain); True otherwise. The message names every
// problem and the Gateways concerned, so an operator sees why a shard
// serves no tenant.
func ValidCondition(controllerName string, classes []*gatewayv1.GatewayClass, gateways []*gatewayv1.Gateway, params []*shardgatev1alpha1.GatewayParameters, placement Placement) map[types.NamespacedName]metav1.Condition {
	_, problems := Discover(controllerName, classes, gateways, params, placement)
	byGateway := map[types.NamespacedName][]Problem{}
	for _, p := range problems {
		byGateway[p.Gateway] = append(byGateway[p.Gateway], p)
	}
	classByName := map[string]*gatewayv1.GatewayClass{}
	for _, c := range classes {
		classByName[c.Name] = c
	}
	paramsByKey := map[types.NamespacedName]*shardgatev1alpha1.GatewayParameters{}
	for _, p := range params {
		paramsByKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	users := map[types.NamespacedName][]*gatewayv1.Gateway{}
	for _, gw := range gateways {
		class := classByName[string(gw.Spec.GatewayClassName)]
		if class == nil || string(class.Spec.ControllerName) != controllerName || gw.DeletionTimestamp != nil {
			continue
		}
		p, err := parametersFor(gw, class, paramsByKey)
		if err != nil || p == nil {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		users[key] = append(users[key], gw)
	}

	out := map[types.NamespacedName]metav1.Condition{}
	for _, p := range params {
		if p.Spec.Shard == nil {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		var found []Problem
		var names []string
		for _, gw := range users[key] {
			nn := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
			names = append(names, nn.String())
			found = append(found, byGateway[nn]...)
			if !ListenerCovers(gw, p.Spec.Shard.Domain) {
				found = append(found, Problem{Gateway: nn, Reason: shardgatev1alpha1.ReasonNoListenerForDomain,
					Message: fmt.Sprintf("no HTTP or HTTPS listener accepting HTTPRoutes has a hostname covering *.%s, so no tenant host of this shard can attach", p.Spec.Shard.Domain)})
			}
		}
		sort.Strings(names)
		c := metav1.Condition{Type: shardgatev1alpha1.ConditionValid, ObservedGeneration: p.Generation}
		switch {
		case len(found) > 0:
			sort.SliceStable(found, func(i, j int) bool { return found[i].Gateway.String() < found[j].Gateway.String() })
			msgs := make([]string, len(found))
			for i, pr := range found {
				msgs[i] = pr.String()
			}
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, found[0].Reason, strings.Join(msgs, "; ")
		case len(names) == 0:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Valid", "no Gateway of ours uses these parameters yet"
		default:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Valid", "shard for "+strings.Join(names, ", ")
		}
		out[key] = c
	}
	return out
}
