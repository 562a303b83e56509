package status

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Publish outcomes: the xDS server reports, per Gateway, why the config it
// was given is not in force (refused before publishing, or rejected by a
// proxy). The writer merges that into the Gateway's desired status itself,
// so an outcome costs a status write, never a new translation.

// ListenerPendingPrefix starts the Programmed message of a listener whose
// Gateway is not programmed.
const ListenerPendingPrefix = "Gateway is not programmed: "

// SetPublishErrors replaces the publish outcomes (Gateway → why its config
// is not in force; a Gateway absent is fine) and queues every Gateway whose
// outcome changed.
func (w *Writer) SetPublishErrors(errs map[types.NamespacedName]string) {
	next := maps.Clone(errs)
	var dirty []Key
	w.mu.Lock()
	for nn, msg := range next {
		if w.publish[nn] != msg {
			dirty = append(dirty, Key{Kind: KindGateway, NamespacedName: nn})
		}
	}
	for nn := range w.publish {
		if _, still := next[nn]; !still {
			dirty = append(dirty, Key{Kind: KindGateway, NamespacedName: nn})
		}
	}
	w.publish = next
	w.mu.Unlock()
	w.enqueue(dirty, nil)
}

// desiredGateway is the translation's desired status of nn with its publish
// outcome merged in. Call with w.mu held.
func (w *Writer) desiredGateway(nn types.NamespacedName, desired gatewayv1.GatewayStatus) gatewayv1.GatewayStatus {
	msg, ok := w.publish[nn]
	if !ok || msg == "" {
		return desired
	}
	return WithPublishError(desired, msg)
}

// WithPublishError returns st as it reads when the Gateway's config is not
// in force for the reason msg:
//
//   - an Accepted Gateway is Programmed=False with reason Invalid and msg;
//   - each of its listeners that would be programmed, or waits for the
//     Gateway (Programmed=False, Pending), is Programmed=False, Pending,
//     "Gateway is not programmed: <msg>".
//
// A Gateway that is not Accepted, and listeners that are invalid or
// conflicted, keep their conditions: those explain more than the publish
// outcome does. st is not modified.
func WithPublishError(st gatewayv1.GatewayStatus, msg string) gatewayv1.GatewayStatus {
	if !isTrue(st.Conditions, string(gatewayv1.GatewayConditionAccepted)) {
		return st
	}
	out := st
	out.Conditions = replaced(st.Conditions, string(gatewayv1.GatewayConditionProgrammed), func(c *metav1.Condition) {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(gatewayv1.GatewayReasonInvalid), msg
	})
	out.Listeners = make([]gatewayv1.ListenerStatus, len(st.Listeners))
	for i, l := range st.Listeners {
		l.Conditions = replaced(l.Conditions, string(gatewayv1.ListenerConditionProgrammed), func(c *metav1.Condition) {
			if c.Status == metav1.ConditionTrue || c.Reason == string(gatewayv1.ListenerReasonPending) {
				c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(gatewayv1.ListenerReasonPending), ListenerPendingPrefix+msg
			}
		})
		out.Listeners[i] = l
	}
	return out
}

func isTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// replaced returns a copy of conds with edit applied to the condition of
// type typ.
func replaced(conds []metav1.Condition, typ string, edit func(*metav1.Condition)) []metav1.Condition {
	out := make([]metav1.Condition, len(conds))
	copy(out, conds)
	for i := range out {
		if out[i].Type == typ {
			edit(&out[i])
		}
	}
	return out
}
