package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// The LeaseHost flow: what a hosting provider does for every new lease. It
// creates the lease's Service, its EndpointSlice and a LeaseHost naming the
// Service, one after the other; shardgate decides that the LeaseHost holds
// its name, generates its HTTPRoute, and serves the name in the shard
// Gateway's RouteConfiguration. It is sampled in the revoke phase once
// every name of the phase is held, before the block-list entry: each
// sample is timed from just before the LeaseHost's Create to an xDS client
// of the shard Gateway receiving the RouteConfiguration with the new name.
//
// Each sample is a new lease in one of the phase's namespaces, in turn,
// with a name of its own under ".keep.revoke.test" (lease<i>.t<k>): the
// block does not cover it. The samples are deleted again afterwards, and
// the bench waits until their routes are gone and their names are no
// longer served, so that the revocation runs on the same objects as it
// would without them.

var leaseHostCPUProfile = flag.String("leasehost-cpu-profile", "", "save shardgate's CPU profile over the LeaseHost flow's samples (revoke phase) to this file")

// LeaseHostFlow is the LeaseHost flow's figures.
type LeaseHostFlow struct {
	LeaseHosts int // LeaseHosts present, each holding its name, when it began
	// Samples: from just before the LeaseHost's Create to the shard's
	// RouteConfiguration with its hostname received.
	Samples []time.Duration
	// FromService: from the Service's Create (the first of the three) to
	// the same response.
	FromService []time.Duration
	// Accepted: from just before the LeaseHost's Create to its generated
	// HTTPRoute seen Accepted by the shard Gateway (the bench's watch).
	Accepted []time.Duration
	// Route: from just before the LeaseHost's Create to its generated
	// HTTPRoute seen by the bench's watch (shardgate's LeaseHost
	// controller decided the name and wrote the route); the rest of
	// Samples is the route's way to RDS.
	Route []time.Duration
	// Late: samples whose hostname did not arrive within SampleTimeout
	// (counted as SampleTimeout); AcceptedLate: samples whose route was
	// not seen Accepted within it (not counted).
	Late, AcceptedLate int
	// CPU and MachineCPU: what shardgate and the whole machine used over
	// the samples.
	CPU, MachineCPU time.Duration
	// Translations (shardgate_translate_duration_seconds) over the
	// samples: how many, and their mean duration.
	Translations  int
	TranslateMean time.Duration
}

func (f LeaseHostFlow) String() string {
	out := fmt.Sprintf("%d LeaseHosts present, %s", f.LeaseHosts, summary(f.Samples))
	if f.Late > 0 {
		out += fmt.Sprintf(" (%d timed out)", f.Late)
	}
	out += "; from the Service's Create: " + summary(f.FromService)
	out += "; generated route seen: " + summary(f.Route)
	out += "; generated route Accepted: " + summary(f.Accepted)
	if f.AcceptedLate > 0 {
		out += fmt.Sprintf(" (%d not seen)", f.AcceptedLate)
	}
	return out + fmt.Sprintf("; %d translations, mean %s; CPU: shardgate %s, the machine %s",
		f.Translations, ms(f.TranslateMean), ms(f.CPU), ms(f.MachineCPU))
}

// leaseEndpoints offsets the samples' EndpointSlice addresses from the
// other phases' (endpointSlice).
const leaseEndpoints = 300000

// leaseHostFlow samples the LeaseHost flow Samples times, with lhs
// LeaseHosts of the revoke phase present in nss namespaces (perNS each),
// then deletes the samples and waits until w's state is settled again and
// the sampled names are no longer served.
func (b *bench) leaseHostFlow(ctx context.Context, w *revokeWatch, lhs, nss, perNS int, settled func(revokeState) bool) error {
	gw := types.NamespacedName{Namespace: benchNS, Name: revokeGateway}
	rds, err := b.dialRDS(ctx, gw)
	if err != nil {
		return fmt.Errorf("xDS client of %s: %w", gw, err)
	}
	defer rds.Close()
	// Every name of the phase is held and shardgate is quiet: the first
	// response carries them all. A few of them, of both kinds, say the
	// stream is up. (A response only answers the hosts expected before it
	// arrived: all are registered first.)
	first := []string{revokeHost(0, 0), revokeHost(0, 1), revokeHost(nss-1, perNS-2), revokeHost(nss-1, perNS-1)}
	held := make([]<-chan time.Time, len(first))
	for i, host := range first {
		held[i] = rds.expect(host)
	}
	for i, ch := range held {
		if err := awaitRDS(ctx, rds, ch, 60*time.Second, fmt.Sprintf("RouteConfiguration %q of %s with %s", routeTable, gw, first[i])); err != nil {
			return err
		}
	}
	b.logf("leasehost flow: xDS client connected as %s; RouteConfiguration %q has %d virtual hosts", gw, routeTable, rds.vhosts.Load())

	n := b.cfg.Samples
	f := LeaseHostFlow{LeaseHosts: lhs}
	type sampled struct {
		ns, name, host string
	}
	var made []sampled
	tr := b.translations(ctx)
	cpu := b.cpuNow()
	var profiled sync.WaitGroup
	if *leaseHostCPUProfile != "" {
		// The samples' planned time; slow samples run past it.
		secs := int((time.Duration(n)*tenantGap + time.Second - 1) / time.Second)
		profiled.Go(func() {
			if err := b.saveProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), *leaseHostCPUProfile); err != nil {
				b.logf("leasehost flow: CPU profile: %v", err)
				return
			}
			b.logf("leasehost flow: CPU profile (%d s) saved to %s", secs, *leaseHostCPUProfile)
		})
	}
	for i := range n {
		k := i % nss
		s := sampled{ns: revokeNS(k), name: fmt.Sprintf("lease-%d", i), host: fmt.Sprintf("lease%d.t%d.keep.%s", i, k, revokeDomain)}
		began := time.Now()
		seen := rds.expect(s.host)
		accepted := w.expectAccepted(s.ns + "/" + s.name)
		routeSeen := w.expectCreated(s.ns + "/" + s.name)
		svc := service(s.name)
		svc.Namespace = s.ns
		if err := b.c.Create(ctx, svc); err != nil {
			return fmt.Errorf("create Service %s/%s: %w", s.ns, s.name, err)
		}
		made = append(made, s)
		eps := endpointSlice(svc, leaseEndpoints+i)
		if err := b.c.Create(ctx, eps); err != nil {
			return fmt.Errorf("create EndpointSlice of %s/%s: %w", s.ns, s.name, err)
		}
		lh := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				// A lease of its own: a deployment sequence after the
				// namespace's other LeaseHosts'.
				Lease:    shardgatev1alpha1.LeaseRef{Owner: revokeOwner(k), DSeq: uint64(perNS + 1 + i), GSeq: 1, OSeq: 1},
				Hostname: s.host,
				Service:  shardgatev1alpha1.ServiceRef{Name: s.name, Port: 80},
				Path:     "/",
			},
		}
		created := time.Now()
		if err := b.c.Create(ctx, lh); err != nil {
			return fmt.Errorf("create LeaseHost %s/%s: %w", s.ns, s.name, err)
		}
		timeout := time.NewTimer(b.cfg.SampleTimeout)
		gotRDS, gotAccepted, gotRoute := false, false, false
	wait:
		for !gotRDS || !gotAccepted || !gotRoute {
			select {
			case at := <-routeSeen:
				gotRoute = true
				f.Route = append(f.Route, at.Sub(created))
			case at := <-seen:
				gotRDS = true
				f.Samples = append(f.Samples, at.Sub(created))
				f.FromService = append(f.FromService, at.Sub(began))
			case at := <-accepted:
				gotAccepted = true
				f.Accepted = append(f.Accepted, at.Sub(created))
			case <-rds.done:
				timeout.Stop()
				return fmt.Errorf("xDS stream ended: %w", rds.err)
			case <-timeout.C:
				if !gotRDS {
					f.Late++
					f.Samples = append(f.Samples, b.cfg.SampleTimeout)
				}
				if !gotAccepted {
					f.AcceptedLate++
				}
				break wait
			case <-ctx.Done():
				timeout.Stop()
				return ctx.Err()
			}
		}
		timeout.Stop()
		// Like the tenant flow: at most one new lease every tenantGap
		// (ten a second). Closer together, the leases' translations
		// (each lease brings at least two: its LeaseHost's and its
		// route's) outrun the translation limiter's 50 a second, and
		// the figure measures the limiter.
		if rest := tenantGap - time.Since(began); rest > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(rest):
			}
		}
	}
	profiled.Wait()
	now := b.cpuNow()
	f.CPU, f.MachineCPU = now.shardgate-cpu.shardgate, now.machine-cpu.machine
	f.Translations, f.TranslateMean = tr()
	w.forgetAccepted()
	b.res.LeaseHostFlow = f
	b.logf("leasehost flow: %s", f)

	// Remove the samples: LeaseHosts first (shardgate deletes their
	// routes), then their Services and EndpointSlices.
	gone := make([]<-chan time.Time, len(made))
	for i, s := range made {
		gone[i] = rds.expectGone(s.host)
	}
	for _, s := range made {
		lh := &shardgatev1alpha1.LeaseHost{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns}}
		if err := client.IgnoreNotFound(b.c.Delete(ctx, lh)); err != nil {
			return fmt.Errorf("delete LeaseHost %s/%s: %w", s.ns, s.name, err)
		}
	}
	for _, s := range made {
		for _, o := range []client.Object{
			&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: s.name + "-x", Namespace: s.ns}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns}},
		} {
			if err := client.IgnoreNotFound(b.c.Delete(ctx, o)); err != nil {
				return fmt.Errorf("delete %T %s/%s: %w", o, s.ns, o.GetName(), err)
			}
		}
	}
	if err := w.wait(ctx, 5*time.Minute, "the sampled LeaseHosts and their routes gone", settled, b); err != nil {
		return err
	}
	for i, ch := range gone {
		if err := awaitRDS(ctx, rds, ch, 60*time.Second, fmt.Sprintf("RouteConfiguration %q of %s without %s", routeTable, gw, made[i].host)); err != nil {
			return err
		}
	}
	b.logf("leasehost flow: samples deleted; RouteConfiguration %q has %d virtual hosts", routeTable, rds.vhosts.Load())
	return nil
}

// awaitRDS waits for ch, a channel of rds's expect or expectGone.
func awaitRDS(ctx context.Context, rds *rdsWatch, ch <-chan time.Time, timeout time.Duration, what string) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-rds.done:
		return fmt.Errorf("waiting for %s: xDS stream ended: %w", what, rds.err)
	case <-t.C:
		return fmt.Errorf("timed out after %s waiting for %s (%d responses)", timeout, what, rds.responses.Load())
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}
