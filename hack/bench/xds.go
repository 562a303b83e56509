package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/testenv"
)

const (
	routeTypeURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	routeTable   = "http-80"
)

// rdsWatch is an ADS stream subscribed to a Gateway's RouteConfiguration
// "http-80" over mTLS, as that Gateway's node. It ACKs every response and
// records when a hostname it was asked to expect first appears, or first
// is absent.
type rdsWatch struct {
	cc     *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *core.Node

	mu      sync.Mutex
	waiting map[string]chan time.Time
	leaving map[string]chan time.Time
	// table is the serialized route table of the last response accepted,
	// received at; nil before the first.
	table []byte
	at    time.Time

	responses atomic.Int64
	vhosts    atomic.Int64
	done      chan struct{}
	err       error
}

// dialRDS connects an xDS client as Gateway gw's node.
func (b *bench) dialRDS(ctx context.Context, gw types.NamespacedName) (*rdsWatch, error) {
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: testenv.SystemNamespace, Name: "shardgate-xds-ca"}
	if err := b.waitFor(ctx, 30*time.Second, "Secret "+key.String(), func() (bool, error) {
		err := b.c.Get(ctx, key, &secret)
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		return nil, err
	}
	ca, err := pki.ParseCA(secret.Data["tls.crt"], secret.Data["tls.key"])
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.IssueGateway(gw)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	creds := credentials.NewTLS(&tls.Config{
		ServerName: "localhost", RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	})
	cc, err := grpc.NewClient(b.xdsAddr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return nil, err
	}
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		_ = cc.Close()
		return nil, err
	}
	w := &rdsWatch{
		cc: cc, stream: stream,
		node:    &core.Node{Id: "bench", Cluster: gw.String(), UserAgentName: "envoy"},
		waiting: map[string]chan time.Time{},
		leaving: map[string]chan time.Time{},
		done:    make(chan struct{}),
	}
	if err := stream.Send(&discovery.DiscoveryRequest{Node: w.node, TypeUrl: routeTypeURL, ResourceNames: []string{routeTable}}); err != nil {
		_ = cc.Close()
		return nil, err
	}
	go w.receive()
	return w, nil
}

func (w *rdsWatch) Close() {
	_ = w.cc.Close()
	<-w.done
}

// expect registers host before the change that should bring it; the
// channel receives the time the first response containing it arrived (the
// last one received, when that holds it already).
func (w *rdsWatch) expect(host string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	w.mu.Lock()
	if w.table != nil && hasDomain(w.table, host) {
		ch <- w.at
	} else {
		w.waiting[host] = ch
	}
	w.mu.Unlock()
	return ch
}

// expectGone registers host before the change that should remove it; the
// channel receives the time the first response without it arrived (the
// last one received, when that lacks it already).
func (w *rdsWatch) expectGone(host string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	w.mu.Lock()
	if w.table != nil && !hasDomain(w.table, host) {
		ch <- w.at
	} else {
		w.leaving[host] = ch
	}
	w.mu.Unlock()
	return ch
}

// receive reads the stream until it ends. Each response's route table is
// read from its serialization (tableDomains) rather than decoded into
// messages: the client runs on the machine it measures, and decoding a
// table of 3000 virtual hosts into messages costs it 5–7 ms of CPU
// and 4.5 MB of garbage per response, which shardgate and the apiserver
// would otherwise share the two cores with.
func (w *rdsWatch) receive() {
	defer close(w.done)
	// seen: the hostnames awaited to leave that the response still has.
	seen := map[string]bool{}
	for {
		resp, err := w.stream.Recv()
		at := time.Now()
		if err != nil {
			w.err = err
			return
		}
		w.responses.Add(1)
		var table []byte
		var nack string
		vhosts := 0
		w.mu.Lock()
		clear(seen)
		var arrived []string // awaited hosts the response has
		for _, a := range resp.GetResources() {
			n, isTable, err := tableDomains(a.GetValue(), func(d []byte) {
				if _, ok := w.waiting[string(d)]; ok {
					arrived = append(arrived, string(d))
				}
				if _, ok := w.leaving[string(d)]; ok {
					seen[string(d)] = true
				}
			})
			if err != nil {
				nack = err.Error()
				break
			}
			if isTable {
				table, vhosts = a.GetValue(), n
			}
		}
		if nack == "" {
			for _, host := range arrived {
				if ch, ok := w.waiting[host]; ok {
					ch <- at
					delete(w.waiting, host)
				}
			}
			if table == nil {
				table = []byte{} // a response without the table: every host is gone
			}
			w.table, w.at = table, at
			for host, ch := range w.leaving {
				if !seen[host] {
					ch <- at
					delete(w.leaving, host)
				}
			}
		}
		w.mu.Unlock()
		w.vhosts.Store(int64(vhosts))
		ack := &discovery.DiscoveryRequest{
			Node: w.node, TypeUrl: routeTypeURL, ResourceNames: []string{routeTable},
			VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(),
		}
		if nack != "" {
			// A response we cannot read is NACKed; the previous version stays.
			ack.VersionInfo = ""
			ack.ErrorDetail = &status.Status{Code: 3, Message: nack} // INVALID_ARGUMENT
		}
		if err := w.stream.Send(ack); err != nil {
			w.err = err
			return
		}
	}
}

// RouteConfiguration's and VirtualHost's field numbers the client reads.
const (
	routeConfigName    protowire.Number = 1 // RouteConfiguration.name
	routeConfigVHosts  protowire.Number = 2 // RouteConfiguration.virtual_hosts
	virtualHostDomains protowire.Number = 2 // VirtualHost.domains
)

// tableDomains reads a serialized RouteConfiguration without decoding it
// into messages. When it is the table the client watches (routeTable), it
// calls fn with each virtual host's domain, any port cut off (a slice of
// buf, valid during the call), and returns the number of virtual hosts;
// isTable reports whether it was. A serialization that does not parse is
// an error.
func tableDomains(buf []byte, fn func(domain []byte)) (vhosts int, isTable bool, err error) {
	// Two passes, so that nothing is kept between them: the name (which
	// may come anywhere), then the virtual hosts.
	err = walkFields(buf, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == routeConfigName && typ == protowire.BytesType {
			isTable = string(v) == routeTable
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("RouteConfiguration: %w", err)
	}
	if !isTable {
		return 0, false, nil
	}
	err = walkFields(buf, func(num protowire.Number, typ protowire.Type, vh []byte) error {
		if num != routeConfigVHosts || typ != protowire.BytesType {
			return nil
		}
		vhosts++
		err := walkFields(vh, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if num == virtualHostDomains && typ == protowire.BytesType {
				if i := bytes.IndexByte(v, ':'); i >= 0 {
					v = v[:i]
				}
				fn(v)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("virtual host %d: %w", vhosts-1, err)
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("RouteConfiguration %q: %w", routeTable, err)
	}
	return vhosts, true, nil
}

// walkFields calls fn with each field of the serialized message buf: its
// number, wire type and, for a length-delimited field, its bytes.
func walkFields(buf []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(buf) > 0 {
		num, typ, n := protowire.ConsumeTag(buf)
		if n < 0 {
			return protowire.ParseError(n)
		}
		buf = buf[n:]
		var v []byte
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(buf)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, buf)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		buf = buf[n:]
		if err := fn(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}

// hasDomain reports whether the serialized route table buf has a virtual
// host with domain host (any port cut off).
func hasDomain(buf []byte, host string) bool {
	found := false
	_, _, _ = tableDomains(buf, func(d []byte) {
		found = found || string(d) == host
	})
	return found
}

// rdsClient returns an xDS client of the running shardgate, dialling one
// when there is none, and waits until its route table holds every route
// present.
func (b *bench) rdsClient(ctx context.Context) (*rdsWatch, error) {
	if b.rds != nil {
		select {
		case <-b.rds.done:
			b.rds = nil
		default:
			return b.rds, nil
		}
	}
	w, err := b.dialRDS(ctx, b.gw)
	if err != nil {
		return nil, fmt.Errorf("xDS client: %w", err)
	}
	if b.routes > 0 {
		last := w.expect(hostName(b.routes - 1))
		select {
		case <-last:
		case <-w.done:
			return nil, fmt.Errorf("xDS stream ended: %w", w.err)
		case <-time.After(60 * time.Second):
			w.Close()
			return nil, fmt.Errorf("xDS client saw no RouteConfiguration %q with all %d routes in 60 s (%d responses)", routeTable, b.routes, w.responses.Load())
		}
	}
	b.logf("xDS client connected as %s; RouteConfiguration %q has %d virtual hosts", b.gw, routeTable, w.vhosts.Load())
	b.rds = w
	return w, nil
}

// propagation measures route create → RouteConfiguration with its hostname
// received, with each new route's Service and EndpointSlice created
// beforehand: first quietly, the samples propagationGap apart, then back to
// back (each Create as soon as the previous route reached RDS, as a
// provider's new leases come: on no schedule), then while ChurnRate other
// routes are updated per second.
func (b *bench) propagation(ctx context.Context) error {
	w, err := b.rdsClient(ctx)
	if err != nil {
		return err
	}
	n, base := b.cfg.Samples, b.routes
	if err := b.sampleBackends(ctx, 3*n); err != nil {
		return err
	}
	// The profiles cover the samples' planned time; a slow sample runs
	// past it.
	secs := int((time.Duration(n)*propagationGap + time.Second - 1) / time.Second)
	var profiled sync.WaitGroup
	if dst := b.cfg.CPUProfile; dst != "" {
		profiled.Go(func() {
			if err := b.saveProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), dst); err != nil {
				b.logf("propagation: CPU profile: %v", err)
				return
			}
			b.logf("propagation: CPU profile (%d s) saved to %s", secs, dst)
		})
	}
	// The allocations over the samples: two heap profiles (which carry
	// the allocation counts too), each after a collection (gc=1, which
	// only the heap endpoint takes), so that each counts every allocation
	// made until it is taken. A delta profile (?seconds=) counts to the
	// last collection before each end instead, and so may cover seconds
	// before the samples.
	allocs := func(dst string) {
		if b.cfg.AllocProfile == "" {
			return
		}
		if err := b.saveProfile(ctx, "/debug/pprof/heap?gc=1", dst); err != nil {
			b.logf("propagation: allocation profile: %v", err)
		}
	}
	allocs(b.cfg.AllocProfile + ".base")
	reqs, _ := b.requests(ctx)
	mem, _ := scrape(ctx, b.metrics)
	b.res.Propagation, err = b.sample(ctx, w, n, propagationGap, false)
	memAfter, memErr := scrape(ctx, b.metrics)
	allocs(b.cfg.AllocProfile)
	profiled.Wait()
	if err != nil {
		return err
	}
	if b.cfg.AllocProfile != "" {
		b.logf("propagation: allocations over the samples: go tool pprof -sample_index=alloc_space -base %s.base %s", b.cfg.AllocProfile, b.cfg.AllocProfile)
	}
	b.logf("propagation: %s", b.res.Propagation)
	if memErr == nil && mem != nil {
		b.logf("propagation: shardgate over the samples: %s", allocated(mem, memAfter, n))
	}
	if after, err := b.requests(ctx); err == nil && reqs != nil {
		b.logf("propagation: shardgate's apiserver requests and writes by kind over the samples: %s", requestsDelta(reqs, after))
	}
	if b.res.PropagationB2B, err = b.sample(ctx, w, n, 0, false); err != nil {
		return err
	}
	b.logf("propagation, back to back: %s", b.res.PropagationB2B)

	// Churn: ChurnRate updates per second, round-robin over 10 of the
	// routes, each changing the route's path (so its xDS content changes).
	churnCtx, stopChurn := context.WithCancel(ctx)
	var churnDone sync.WaitGroup
	churnDone.Go(func() {
		t := time.NewTicker(time.Second / time.Duration(b.cfg.ChurnRate))
		defer t.Stop()
		for k := 0; ; k++ {
			select {
			case <-churnCtx.Done():
				return
			case <-t.C:
			}
			j := k % min(10, base)
			r := &gatewayv1.HTTPRoute{}
			r.Namespace, r.Name = benchNS, routeName(j)
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"rules": []any{map[string]any{
				"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": fmt.Sprintf("/churn-%d", k)}}},
				"backendRefs": []any{map[string]any{"name": serviceName(j), "port": 80}},
			}}}})
			if err := b.c.Patch(churnCtx, r, client.RawPatch(types.MergePatchType, patch)); err != nil {
				if churnCtx.Err() == nil {
					b.res.ChurnUpdateError++
				}
				continue
			}
			b.res.ChurnUpdates++
		}
	})
	churnGap := b.cfg.ChurnDuration / time.Duration(max(n, 1))
	b.logf("propagation: churn (%d route updates/s), %d samples %s apart", b.cfg.ChurnRate, n, churnGap)
	b.res.Churn, err = b.sample(ctx, w, n, churnGap, false)
	stopChurn()
	churnDone.Wait()
	if err != nil {
		return err
	}
	b.logf("propagation under churn: %s; %d churn updates (%d failed)", b.res.Churn, b.res.ChurnUpdates, b.res.ChurnUpdateError)
	return nil
}

// propagationGap separates route-only propagation samples: 50 new routes
// a second.
const propagationGap = 20 * time.Millisecond

// propagationLarge measures route-only propagation at the largest size:
// routes created propagationGap apart, then back to back, each route's
// Service and EndpointSlice created beforehand (no churn).
func (b *bench) propagationLarge(ctx context.Context) error {
	w, err := b.rdsClient(ctx)
	if err != nil {
		return err
	}
	n := b.cfg.Samples
	if err := b.sampleBackends(ctx, 2*n); err != nil {
		return err
	}
	b.res.PropagationLarge, err = b.sample(ctx, w, n, propagationGap, false)
	if err != nil {
		return err
	}
	b.logf("propagation: %s", b.res.PropagationLarge)
	if b.res.PropagationLargeB2B, err = b.sample(ctx, w, n, 0, false); err != nil {
		return err
	}
	b.logf("propagation, back to back: %s", b.res.PropagationLargeB2B)
	return nil
}

// sampleBackends creates the Services and EndpointSlices of the next n
// routes, before the routes themselves are sampled, and waits until
// shardgate's status writes have settled.
func (b *bench) sampleBackends(ctx context.Context, n int) error {
	base := b.routes
	if err := parallel(ctx, n, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return b.createBackend(ctx, serviceName(base+i), base+i)
	}, nil); err != nil {
		return err
	}
	b.services += n
	_, err := b.settledWrites(ctx)
	return err
}

// tenantGap separates tenant-flow samples: ten new leases a second.
const tenantGap = 100 * time.Millisecond

// tenantFlow measures what a new lease does: its Service, EndpointSlice and
// route created one after the other, route create → RouteConfiguration
// with its hostname received; the leases tenantGap apart, then back to
// back.
func (b *bench) tenantFlow(ctx context.Context) error {
	w, err := b.rdsClient(ctx)
	if err != nil {
		return err
	}
	if _, err := b.settledWrites(ctx); err != nil {
		return err
	}
	set, err := b.sample(ctx, w, b.cfg.Samples, tenantGap, true)
	b.res.Tenant = append(b.res.Tenant, set)
	if err != nil {
		return err
	}
	b.logf("tenant flow: %s", set)
	set, err = b.sample(ctx, w, b.cfg.Samples, 0, true)
	b.res.TenantB2B = append(b.res.TenantB2B, set)
	if err != nil {
		return err
	}
	b.logf("tenant flow, back to back: %s", set)
	return nil
}

func (s SampleSet) String() string {
	out := fmt.Sprintf("%d routes present, %s", s.Routes, summary(s.Samples))
	if len(s.FromService) > 0 {
		out += "; from the Service's Create: " + summary(s.FromService)
	}
	return out + fmt.Sprintf("; %d translations, mean %s; %d samples in %s", s.Translations, ms(s.TranslateMean), len(s.Samples), ms(s.Elapsed))
}

// sample creates n routes one at a time, each time measuring from the
// route's create returning to the RouteConfiguration with its hostname
// arriving. With tenant set, each route's Service and EndpointSlice are
// created just before it; otherwise they exist already. Each sample starts
// gap after the previous one started (at least); with gap zero, as soon as
// the previous route reached RDS (back to back).
func (b *bench) sample(ctx context.Context, w *rdsWatch, n int, gap time.Duration, tenant bool) (set SampleSet, err error) {
	set = SampleSet{Routes: b.routes}
	tr := b.translations(ctx)
	start := time.Now()
	defer func() {
		set.Translations, set.TranslateMean = tr()
		set.Elapsed = time.Since(start)
	}()
	for range n {
		began := time.Now()
		k := b.routes
		seen := w.expect(hostName(k))
		if tenant {
			if err := b.createBackend(ctx, serviceName(k), k); err != nil {
				return set, err
			}
			b.services++
		}
		if err := b.c.Create(ctx, route(routeName(k), "sample", hostName(k), serviceName(k))); err != nil {
			return set, err
		}
		created := time.Now()
		b.routes++
		select {
		case at := <-seen:
			// The response can beat the create's HTTP answer home.
			set.Samples = append(set.Samples, max(at.Sub(created), 0))
			if tenant {
				set.FromService = append(set.FromService, at.Sub(began))
			}
		case <-w.done:
			return set, fmt.Errorf("xDS stream ended: %w", w.err)
		case <-time.After(b.cfg.SampleTimeout):
			set.Late++
			set.Samples = append(set.Samples, b.cfg.SampleTimeout)
		case <-ctx.Done():
			return set, ctx.Err()
		}
		if rest := gap - time.Since(began); rest > 0 {
			time.Sleep(rest)
		}
	}
	if w.err != nil {
		return set, w.err
	}
	return set, nil
}

// translations starts counting shardgate's translations; the returned
// function gives how many ran since, and their mean duration (zero when
// the metric cannot be read).
func (b *bench) translations(ctx context.Context) func() (int, time.Duration) {
	read := func() (float64, float64) {
		m, err := scrape(ctx, b.metrics)
		if err != nil {
			return 0, 0
		}
		return m["shardgate_translate_duration_seconds_count"], m["shardgate_translate_duration_seconds_sum"]
	}
	c0, s0 := read()
	return func() (int, time.Duration) {
		c1, s1 := read()
		n := c1 - c0
		if n <= 0 {
			return 0, 0
		}
		return int(n), time.Duration((s1 - s0) / n * float64(time.Second))
	}
}
