package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// floodProfileSeconds is how long -flood-cpu-profile profiles: a flood's
// Creates and its statuses take 3–4 s on 2 cores.
const floodProfileSeconds = 4

// flood times N route Creates (FloodWorkers at a time, each route on its
// own Service and EndpointSlice, created beforehand) with shardgate stopped
// and with it running, FloodRounds times each, alternately. With shardgate
// running it also times, from the last Create returning, until every route
// is Accepted by us and attachedRoutes = N, and counts the status writes.
// The last round's routes stay: they are routes r-0 … r-(N-1).
func (b *bench) flood(ctx context.Context) error {
	n := b.cfg.FloodRoutes
	b.logf("flood: creating %d Services and EndpointSlices", n)
	if err := parallel(ctx, n, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return b.createBackend(ctx, serviceName(i), i)
	}, nil); err != nil {
		return err
	}
	b.services += n
	for round := range max(b.cfg.FloodRounds, 1) {
		last := round == max(b.cfg.FloodRounds, 1)-1

		// Baseline: shardgate stopped, nothing else watching routes.
		b.stopShardgate()
		cpu := b.cpuNow()
		d, floodRoutes, err := b.floodCreates(ctx)
		if err != nil {
			return err
		}
		b.res.FloodWithout = append(b.res.FloodWithout, d)
		b.logf("flood %d: %d Creates with shardgate stopped took %s (%s)", round+1, n, ms(d), b.cpuSince(cpu))
		// The floor: the status writes the routes need, one each,
		// made by the bench alone after the Creates.
		w, err := b.floodStatusFloor(ctx, floodRoutes)
		if err != nil {
			return err
		}
		b.res.FloodFloorStatus = append(b.res.FloodFloorStatus, w)
		b.logf("flood %d: floor: %d status writes by the bench alone took %s (%.0f writes/s); Creates and status writes together %s",
			round+1, n, ms(w), float64(n)/w.Seconds(), ms(d+w))
		if err := b.deleteFlood(ctx, false); err != nil {
			return err
		}

		if err := b.startShardgate(ctx); err != nil {
			return err
		}
		if err := b.waitFor(ctx, 60*time.Second, "attachedRoutes=0 after the restart", func() (bool, error) {
			got, ok, err := b.attached(ctx)
			return ok && got == 0, err
		}); err != nil {
			return err
		}
		before, err := b.settledWrites(ctx)
		if err != nil {
			return err
		}
		var profiled sync.WaitGroup
		if last && b.cfg.FloodCPUProfile != "" {
			profiled.Go(func() {
				if err := b.saveProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", floodProfileSeconds), b.cfg.FloodCPUProfile); err != nil {
					b.logf("flood: CPU profile: %v", err)
					return
				}
				b.logf("flood: CPU profile (%d s) saved to %s", floodProfileSeconds, b.cfg.FloodCPUProfile)
			})
		}
		cpu = b.cpuNow()
		reqs, _ := b.requests(ctx)
		m0, _ := scrape(ctx, b.metrics)
		d, _, err = b.floodCreates(ctx)
		if err != nil {
			return err
		}
		created := time.Now()
		b.res.FloodWith = append(b.res.FloodWith, d)
		m1, _ := scrape(ctx, b.metrics)
		b.logf("flood %d: %d Creates with shardgate running took %s (%s); during them: %.0f status writes, %s",
			round+1, n, ms(d), b.cpuSince(cpu), m1[statusWritesMetric]-before, translations(m0, m1))
		cpu = b.cpuNow()
		at, err := b.waitAccepted(ctx, n)
		if err != nil {
			return err
		}
		lag := at.Sub(created)
		b.logf("flood %d: from the last Create until all Accepted: %s", round+1, b.cpuSince(cpu))
		if after, err := b.requests(ctx); err == nil && reqs != nil {
			b.logf("flood %d: shardgate's apiserver requests and writes by kind over the round: %s", round+1, requestsDelta(reqs, after))
		}
		profiled.Wait()
		b.res.FloodAccepted = append(b.res.FloodAccepted, lag)
		after, err := b.settledWrites(ctx)
		if err != nil {
			return err
		}
		b.res.FloodWrites = append(b.res.FloodWrites, after-before)
		b.logf("flood %d: all Accepted and attached %s after the last Create; %.0f status writes (%.3f per route)",
			round+1, ms(lag), after-before, (after-before)/float64(n))
		if last {
			b.routes = n
			return nil
		}
		if err := b.deleteFlood(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// floodCreates creates routes r-0 … r-(N-1) and returns how long that took,
// and the routes as created.
func (b *bench) floodCreates(ctx context.Context) (time.Duration, []*gatewayv1.HTTPRoute, error) {
	routes := make([]*gatewayv1.HTTPRoute, b.cfg.FloodRoutes)
	start := time.Now()
	err := parallel(ctx, b.cfg.FloodRoutes, b.cfg.FloodWorkers, func(ctx context.Context, i int) error {
		routes[i] = route(routeName(i), "flood", hostName(i), serviceName(i))
		return b.c.Create(ctx, routes[i])
	}, nil)
	return time.Since(start), routes, err
}

// floodStatusFloor writes, with shardgate stopped and FloodWorkers at a
// time, the one status each flood route needs (our parent entry, Accepted
// and ResolvedRefs, as shardgate writes it: a PUT of the route as created,
// no read first), and returns how long the apiserver took. With the
// Creates' own time it is the least time the apiserver needs for a flood,
// whoever makes the writes.
func (b *bench) floodStatusFloor(ctx context.Context, routes []*gatewayv1.HTTPRoute) (time.Duration, error) {
	now := metav1.Now()
	start := time.Now()
	err := parallel(ctx, len(routes), b.cfg.FloodWorkers, func(ctx context.Context, i int) error {
		r := routes[i]
		cond := func(t gatewayv1.RouteConditionType, reason gatewayv1.RouteConditionReason) metav1.Condition {
			return metav1.Condition{Type: string(t), Status: metav1.ConditionTrue, Reason: string(reason),
				ObservedGeneration: r.Generation, LastTransitionTime: now}
		}
		r.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      r.Spec.ParentRefs[0],
			ControllerName: shardgatev1alpha1.ControllerName,
			Conditions: []metav1.Condition{
				cond(gatewayv1.RouteConditionAccepted, gatewayv1.RouteReasonAccepted),
				cond(gatewayv1.RouteConditionResolvedRefs, gatewayv1.RouteReasonResolvedRefs),
			},
		}}
		if err := b.c.Status().Update(ctx, r); err != nil {
			return fmt.Errorf("status of %s: %w", r.Name, err)
		}
		return nil
	}, nil)
	return time.Since(start), err
}

// waitAccepted waits until attachedRoutes = n and every flood route has our
// Accepted=True, and returns when the last of those changes arrived. It
// follows watches of the flood's routes and of the Gateway, opened after
// the Creates (the baseline's Creates had no watcher either): polling a
// list of every route every few milliseconds would take from the
// apiserver, while it writes the statuses, much of what the measurement
// waits for. A watch opened without a resourceVersion first delivers
// every existing object, so nothing written before it opened is missed.
func (b *bench) waitAccepted(ctx context.Context, n int) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	wc, err := client.NewWithWatch(b.env.Config, client.Options{Scheme: b.env.Scheme})
	if err != nil {
		return time.Time{}, fmt.Errorf("watch client: %w", err)
	}
	accepted := map[string]bool{}
	attached, count := -1, 0
	for {
		routes, err := wc.Watch(ctx, &gatewayv1.HTTPRouteList{}, client.InNamespace(benchNS), client.MatchingLabels{phaseKey: "flood"})
		if err != nil {
			return time.Time{}, fmt.Errorf("watch the flood's routes: %w", err)
		}
		gws, err := wc.Watch(ctx, &gatewayv1.GatewayList{}, client.InNamespace(b.gw.Namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", b.gw.Name)})
		if err != nil {
			routes.Stop()
			return time.Time{}, fmt.Errorf("watch the Gateway: %w", err)
		}
		at, done, err := func() (time.Time, bool, error) {
			defer routes.Stop()
			defer gws.Stop()
			for {
				select {
				case <-ctx.Done():
					return time.Time{}, false, fmt.Errorf("waiting for attachedRoutes and Accepted: %w (attached %d, accepted %d of %d)", ctx.Err(), attached, count, n)
				case ev, ok := <-routes.ResultChan():
					if !ok {
						return time.Time{}, false, nil // closed: watch again
					}
					r, isRoute := ev.Object.(*gatewayv1.HTTPRoute)
					if !isRoute {
						continue // a watch error event: watch again
					}
					was := accepted[r.Name]
					now := ev.Type != watch.Deleted && ourAccepted(r)
					accepted[r.Name] = now
					if now != was {
						if now {
							count++
						} else {
							count--
						}
					}
				case ev, ok := <-gws.ResultChan():
					if !ok {
						return time.Time{}, false, nil
					}
					if gw, isGW := ev.Object.(*gatewayv1.Gateway); isGW && ev.Type != watch.Deleted {
						attached = attachedOf(gw)
					}
				}
				b.res.Accepted = count
				if attached == n && count == n {
					b.res.Attached = attached
					return time.Now(), true, nil
				}
			}
		}()
		if err != nil || done {
			return at, err
		}
	}
}

// deleteFlood deletes the flood's routes and waits until they are gone
// (and, with shardgate running, until attachedRoutes = 0).
func (b *bench) deleteFlood(ctx context.Context, running bool) error {
	if err := b.c.DeleteAllOf(ctx, &gatewayv1.HTTPRoute{}, client.InNamespace(benchNS), client.MatchingLabels{phaseKey: "flood"}); err != nil {
		return fmt.Errorf("delete the flood's routes: %w", err)
	}
	return b.poll(ctx, 2*time.Minute, 50*time.Millisecond, "the flood's routes gone", func() (bool, error) {
		var list gatewayv1.HTTPRouteList
		if err := b.c.List(ctx, &list, client.InNamespace(benchNS), client.MatchingLabels{phaseKey: "flood"}); err != nil || len(list.Items) > 0 {
			return false, err
		}
		if !running {
			return true, nil
		}
		got, _, err := b.attached(ctx)
		return err == nil && got == 0, err
	})
}
