package manager

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/events"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// publishOutcomeChanged is the xDS server's OnOutcome: the status writer
// merges the outcomes into the Gateways' Programmed conditions (no new
// translation), and the Gateway gets an Event for the refused config or
// the NACK.
func (p *process) publishOutcomeChanged() {
	if w := p.status.Load(); w != nil {
		w.SetPublishErrors(p.xds.PublishErrors())
	}
	p.emitGatewayEvents()
}

// emitGatewayEvents emits an Event on every Gateway whose publish problem
// changed since the last call (internal/events.Gateway): one per change,
// never one per translation. Only a replica that may write emits; every
// replica keeps its record current, so a new leader does not repeat its
// predecessor's Events.
func (p *process) emitGatewayEvents() {
	p.gatewayEventsMu.Lock()
	defer p.gatewayEventsMu.Unlock()
	next := map[string]string{}
	for nn, msg := range p.xds.PublishErrors() {
		next[nn.String()] = msg
	}
	prev := p.gatewayProblems
	p.gatewayProblems = next
	if p.lead.label() != "true" {
		return
	}
	m := p.mgr.Load()
	if m == nil {
		return
	}
	mgr := *m
	rec := countingRecorder{EventRecorder: mgr.GetEventRecorder("shardgate"), lead: p.lead}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for key, ev := range events.Gateway(prev, next, xdsserver.RefusedPrefix) {
		ns, name, _ := strings.Cut(key, "/")
		var gw gatewayv1.Gateway
		if err := mgr.GetClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &gw); err != nil {
			p.log.V(1).Info("no Event for a Gateway that cannot be read", "gateway", key, "error", err.Error())
			continue
		}
		rec.Eventf(&gw, nil, ev.Type, ev.Reason, ev.Action, "%s", ev.Message)
	}
}
