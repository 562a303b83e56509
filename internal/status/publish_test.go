package status

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
)

const testController = "shardgate.io/gateway-controller"

// publishInput is one Gateway with a valid HTTP listener and one of an
// unsupported protocol; addressed says whether its Service has an address.
func publishInput(addressed bool) (*gatewayapi.Input, types.NamespacedName) {
	nn := types.NamespacedName{Namespace: "default", Name: "gw"}
	in := &gatewayapi.Input{ControllerName: testController}
	in.GatewayClasses = []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "shardgate", Generation: 1},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: testController}}}
	in.Gateways = []*gatewayv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name, Generation: 1},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
			{Name: "udp", Port: 53, Protocol: gatewayv1.UDPProtocolType},
		}}}}
	if addressed {
		in.Runtime = map[types.NamespacedName]gatewayapi.GatewayRuntime{nn: {
			Addresses: []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.10"}}}}
	}
	return in, nn
}

func conditionOf(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// A publish outcome reads on the Gateway as the translator reported it
// before outcomes went straight to the writer: Programmed=False Invalid with
// the message, listeners that were or would be programmed Pending with
// "Gateway is not programmed: <message>", invalid listeners unchanged.
func TestWithPublishError(t *testing.T) {
	const msg = "config not published: validate: cluster \"x\" not found"
	for _, addressed := range []bool{true, false} {
		in, nn := publishInput(addressed)
		base := gatewayapi.Translate(in).GatewayStatus[nn]
		if len(base.Listeners) != 2 {
			t.Fatalf("want two listener statuses, got %+v", base.Listeners)
		}
		got := WithPublishError(base, msg)
		p := conditionOf(got.Conditions, string(gatewayv1.GatewayConditionProgrammed))
		if p.Status != metav1.ConditionFalse || p.Reason != string(gatewayv1.GatewayReasonInvalid) || p.Message != msg || p.ObservedGeneration != 1 {
			t.Fatalf("addressed=%v: Programmed %+v", addressed, p)
		}
		if a := conditionOf(got.Conditions, string(gatewayv1.GatewayConditionAccepted)); a != conditionOf(base.Conditions, a.Type) {
			t.Fatalf("Accepted changed: %+v", a)
		}
		for i, l := range got.Listeners {
			lp := conditionOf(l.Conditions, string(gatewayv1.ListenerConditionProgrammed))
			was := conditionOf(base.Listeners[i].Conditions, lp.Type)
			switch l.Name {
			case "http":
				if lp.Status != metav1.ConditionFalse || lp.Reason != string(gatewayv1.ListenerReasonPending) || lp.Message != ListenerPendingPrefix+msg {
					t.Fatalf("addressed=%v: http listener Programmed %+v", addressed, lp)
				}
			default:
				if lp != was {
					t.Fatalf("invalid listener changed: %+v, was %+v", lp, was)
				}
			}
		}
		// The translation's status is not modified.
		if conditionOf(base.Conditions, string(gatewayv1.GatewayConditionProgrammed)).Message == msg {
			t.Fatal("WithPublishError modified its input")
		}
	}
	// A Gateway that is not Accepted keeps its status.
	st := gatewayv1.GatewayStatus{Conditions: []metav1.Condition{
		{Type: string(gatewayv1.GatewayConditionAccepted), Status: metav1.ConditionFalse, Reason: "InvalidParameters"},
		{Type: string(gatewayv1.GatewayConditionProgrammed), Status: metav1.ConditionFalse, Reason: "Invalid", Message: "Gateway is not accepted"},
	}}
	if got := WithPublishError(st, msg); conditionOf(got.Conditions, "Programmed").Message != "Gateway is not accepted" {
		t.Fatalf("not-Accepted Gateway got the publish error: %+v", got)
	}
}

// The writer merges outcomes into what it compares and writes, without a
// new translation.
func TestSetPublishErrorsMakesTheGatewayDiffer(t *testing.T) {
	in, nn := publishInput(true)
	out := gatewayapi.Translate(in)
	w := New(nil, nil, testController, logr.Discard())
	now := time.Now()
	gw := in.Gateways[0].DeepCopy()
	gw.Status, _ = MergeGateway(gw.Status, out.GatewayStatus[nn], now)
	w.Submit(in, out)
	w.mu.Lock()
	_, differs := w.differs(gw, now, true)
	w.mu.Unlock()
	if differs {
		t.Fatal("a Gateway whose status matches differs")
	}
	w.SetPublishErrors(map[types.NamespacedName]string{nn: "proxy e1 rejected RouteConfiguration version 1: bad"})
	w.mu.Lock()
	_, differs = w.differs(gw, now, true)
	w.mu.Unlock()
	if !differs {
		t.Fatal("a publish error did not make the Gateway's status differ")
	}
	obj, merge := w.object(Key{Kind: KindGateway, NamespacedName: nn})
	written := obj.(*gatewayv1.Gateway)
	written.Status = gw.Status
	if !merge(now) {
		t.Fatal("merging the publish error changed nothing")
	}
	if p := conditionOf(written.Status.Conditions, "Programmed"); p.Reason != "Invalid" || p.Status != metav1.ConditionFalse {
		t.Fatalf("written Programmed %+v", p)
	}
	w.SetPublishErrors(nil)
	w.mu.Lock()
	_, differs = w.differs(gw, now, true)
	w.mu.Unlock()
	if differs {
		t.Fatal("after recovery the Gateway still differs from its translated status")
	}
}
