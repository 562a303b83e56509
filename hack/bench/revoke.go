package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/tenancy"
)

// The revoke phase: a provider holding many names adds one block-list entry
// that covers half of them, and waits until every covered name is revoked,
// meaning its generated HTTPRoute is gone and its LeaseHost says
// Reserved=False Blocked. It is timed from the config file's rename to
// the moment the bench's own watches have seen the last of those changes.
//
// Shape: revokeNamespaces tenant namespaces, each marked with its own owner
// and holding one Service, with names/revokeNamespaces LeaseHosts of one
// explicit hostname each (one name per LeaseHost: the most objects per
// name, so the most writes). Half the names of each namespace are under
// ".half.revoke.test", the other half under ".keep.revoke.test". One shard
// (Gateway "revoke" with GatewayParameters, domain revoke.test) selects
// them all. With every name held, and before the block, the LeaseHost flow
// is sampled (leasehost.go).
var (
	revokeNames        = flag.Int("revoke-names", 0, "names held in the revoke phase, one per LeaseHost; a block covers half (default 10000; 40 when the memory phase is smoke-sized)")
	revokeCPUProfile   = flag.String("revoke-cpu-profile", "", "save shardgate's CPU profile over the first 10 s of the revocation to this file")
	revokeFloorWorkers = flag.Int("revoke-floor-workers", controllers.DefaultLeaseHostWorkers, "concurrent writers of the revoke phase's floor measurement (default: the LeaseHost controller's workers)")
)

const (
	revokeNamespaces = 100
	revokeGateway    = "revoke"
	revokeDomain     = "revoke.test"
	revokeSuffix     = ".half." + revokeDomain
	revokeTarget     = 10 * time.Second
	revokeService    = "web"
)

// revoke restarts shardgate with a config file (its block list is re-read
// when the file changes), loads the names, blocks half and times the
// revocation.
func (b *bench) revoke(ctx context.Context) error {
	names := *revokeNames
	if names <= 0 {
		names = 10000
		if b.cfg.MemoryRoutes < 1000 {
			names = 40
		}
	}
	// At least two LeaseHosts a namespace, so that each has a name blocked
	// and one kept.
	nss := max(min(revokeNamespaces, names/2), 1)
	perNS := max(names/nss, 2)
	names = perNS * nss
	blocked := 0
	for j := range perNS {
		if j%2 == 0 {
			blocked++
		}
	}
	blocked *= nss

	dir, err := os.MkdirTemp("", "shardgate-bench-revoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := writeBlockList(cfgPath); err != nil {
		return err
	}
	if err := b.restartWithConfig(ctx, cfgPath); err != nil {
		return err
	}
	if err := b.revokeShard(ctx); err != nil {
		return err
	}

	w, err := b.watchRevocation(ctx)
	if err != nil {
		return err
	}
	defer w.stop()

	b.logf("revoke: creating %d LeaseHosts (%d namespaces × %d, one name each)", names, nss, perNS)
	for k := range nss {
		ns := revokeNS(k)
		if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Annotations: map[string]string{tenancy.OwnerKey: revokeOwner(k)}}}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: revokeService, Namespace: ns},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": revokeService},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		if err := b.c.Create(ctx, svc); err != nil {
			return fmt.Errorf("create service in %s: %w", ns, err)
		}
	}
	created := time.Now()
	err = parallel(ctx, names, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		k, j := i/perNS, i%perNS
		lh := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("lh-%d", j), Namespace: revokeNS(k)},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:    shardgatev1alpha1.LeaseRef{Owner: revokeOwner(k), DSeq: uint64(j + 1), GSeq: 1, OSeq: 1},
				Hostname: revokeHost(k, j),
				Service:  shardgatev1alpha1.ServiceRef{Name: revokeService, Port: 80},
				Path:     "/",
			},
		}
		return b.c.Create(ctx, lh)
	}, func(done int) { b.logf("revoke: %d LeaseHosts created", done) })
	if err != nil {
		return fmt.Errorf("create LeaseHosts: %w", err)
	}
	b.logf("revoke: %d LeaseHosts created in %s", names, time.Since(created).Round(time.Millisecond))

	held := func(s revokeState) bool {
		return s.reserved == names && s.halfRoutes == blocked && s.keepRoutes == names-blocked && s.pendingReady == 0
	}
	if err := w.wait(ctx, 30*time.Minute, "every name held, with its route and Ready reported", held, b); err != nil {
		return err
	}
	b.logf("revoke: all %d names held with routes %s after the first create", names, time.Since(created).Round(time.Millisecond))
	if err := b.quiet(ctx); err != nil {
		return err
	}
	if err := b.leaseHostFlow(ctx, w, names, nss, perNS, held); err != nil {
		return fmt.Errorf("LeaseHost flow: %w", err)
	}
	if err := b.quiet(ctx); err != nil {
		return err
	}

	b.logf("revoke: adding block-list entry %q (covers %d of %d names)", revokeSuffix, blocked, names)
	before, _ := b.requests(ctx)
	cpu := b.cpuNow()
	var profiled sync.WaitGroup
	if *revokeCPUProfile != "" {
		profiled.Go(func() {
			if err := b.saveProfile(ctx, "/debug/pprof/profile?seconds=10", *revokeCPUProfile); err != nil {
				b.logf("revoke: CPU profile: %v", err)
				return
			}
			b.logf("revoke: CPU profile (10 s) saved to %s", *revokeCPUProfile)
		})
	}
	w.arm(blocked)
	at := time.Now()
	if err := writeBlockList(cfgPath, revokeSuffix); err != nil {
		return err
	}
	revoked := func(s revokeState) bool {
		return s.blocked == blocked && s.halfRoutes == 0 && s.reserved == names-blocked && s.keepRoutes == names-blocked
	}
	werr := w.wait(ctx, 10*time.Minute, "every covered name revoked", revoked, b)
	routesGone, statusBlocked := w.times(at)
	took := max(routesGone, statusBlocked)
	b.logf("revoke: %s", b.cpuSince(cpu))
	profiled.Wait()
	after, _ := b.requests(ctx)
	writes := ""
	if before != nil && after != nil {
		writes = "; shardgate's apiserver requests and its writes by kind: " + requestsDelta(before, after)
	}
	if werr != nil {
		s := w.state()
		return fmt.Errorf("%w (after %s: %d Blocked, %d covered routes left)", werr, time.Since(at).Round(time.Millisecond), s.blocked, s.halfRoutes)
	}
	fmt.Fprintf(b.out, "\nrevoke: %d names held (%d namespaces × %d LeaseHosts, one name each), a block covering %d → all routes gone and all statuses Blocked: %s (routes gone %s, statuses Blocked %s%s)  target ≤ %s  %s\n\n",
		names, nss, perNS, blocked, ms(took), ms(routesGone), ms(statusBlocked), writes, revokeTarget, verdict(true, took <= revokeTarget))
	ferr := b.revokeFloor(ctx, nss)
	// The phase loop expects shardgate running.
	if err := b.restartWithConfig(ctx, cfgPath); err != nil {
		return errors.Join(ferr, err)
	}
	if ferr != nil {
		return fmt.Errorf("floor: %w", ferr)
	}
	return nil
}

// revokeFloor measures what the apiserver alone needs for the writes a
// revocation cannot do without, on objects of the same shape: with
// shardgate stopped, the bench deletes the kept names' generated routes and
// writes their LeaseHosts' status Reserved=False Blocked, one name per
// task, with as many workers as shardgate's LeaseHost controller has
// (-revoke-floor-workers). No
// Events, no route status, no reads. A revocation of as many names cannot
// finish sooner than this on the same machine, whatever the controller
// does.
func (b *bench) revokeFloor(ctx context.Context, nss int) error {
	if b.proc != nil {
		if err := b.proc.Stop(30 * time.Second); err != nil {
			b.logf("revoke: floor: stopping shardgate: %v", err)
		}
		b.proc = nil
	}
	type task struct {
		lh    *shardgatev1alpha1.LeaseHost
		route *gatewayv1.HTTPRoute
	}
	var tasks []task
	for k := range nss {
		ns := revokeNS(k)
		var lhs shardgatev1alpha1.LeaseHostList
		if err := b.c.List(ctx, &lhs, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("list LeaseHosts in %s: %w", ns, err)
		}
		var routes gatewayv1.HTTPRouteList
		if err := b.c.List(ctx, &routes, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("list routes in %s: %w", ns, err)
		}
		byHost := map[string]*gatewayv1.HTTPRoute{}
		for i := range routes.Items {
			if r := &routes.Items[i]; len(r.Spec.Hostnames) > 0 {
				byHost[string(r.Spec.Hostnames[0])] = r
			}
		}
		for i := range lhs.Items {
			lh := &lhs.Items[i]
			if r := byHost[lh.Spec.Hostname]; r != nil && !strings.HasSuffix(lh.Spec.Hostname, revokeSuffix) {
				tasks = append(tasks, task{lh: lh, route: r})
			}
		}
	}
	if len(tasks) == 0 {
		return errors.New("no held name with a route left to measure on")
	}
	workers := max(*revokeFloorWorkers, 1)
	start := time.Now()
	err := parallel(ctx, len(tasks), workers, func(ctx context.Context, i int) error {
		t := tasks[i]
		if err := b.c.Delete(ctx, t.route, client.Preconditions{UID: &t.route.UID}); err != nil {
			return fmt.Errorf("delete route %s/%s: %w", t.route.Namespace, t.route.Name, err)
		}
		meta.SetStatusCondition(&t.lh.Status.Conditions, metav1.Condition{Type: shardgatev1alpha1.ConditionReserved,
			Status: metav1.ConditionFalse, Reason: "Blocked", Message: "floor measurement", ObservedGeneration: t.lh.Generation})
		if err := b.c.Status().Update(ctx, t.lh); err != nil {
			return fmt.Errorf("status of LeaseHost %s/%s: %w", t.lh.Namespace, t.lh.Name, err)
		}
		return nil
	}, nil)
	took := time.Since(start)
	if err != nil {
		return err
	}
	rate := float64(2*len(tasks)) / took.Seconds()
	fmt.Fprintf(b.out, "revoke floor: the writes a revocation needs, for %d names, by the bench alone (shardgate stopped, %d workers; a route DELETE and a LeaseHost status PUT per name, nothing else): %s, %.0f writes/s\n\n",
		len(tasks), workers, ms(took), rate)
	return nil
}

// requestsDelta lists what grew from before to after, two readings of
// requests.
func requestsDelta(before, after map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, d))
		}
	}
	return strings.Join(parts, ", ")
}

// requests reads shardgate's rest_client_requests_total by method and
// code, and its shardgate_kube_writes_total by kind and verb.
func (b *bench) requests(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	label := func(line, name string) string {
		_, rest, ok := strings.Cut(line, name+`="`)
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(rest, `"`)
		return v
	}
	for s.Scan() {
		line := s.Text()
		var key string
		switch {
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			key = label(line, "method") + " " + label(line, "code")
		case strings.HasPrefix(line, "shardgate_kube_writes_total{"):
			key = label(line, "kind") + " " + label(line, "verb")
		default:
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		out[key] += v
	}
	return out, s.Err()
}

func revokeNS(k int) string    { return fmt.Sprintf("revoke-t%d", k) }
func revokeOwner(k int) string { return fmt.Sprintf("akash1revoke%d", k) }

// revokeHost is the name of LeaseHost lh-j of namespace k: even ones are
// under the part the block covers.
func revokeHost(k, j int) string {
	part := "keep"
	if j%2 == 0 {
		part = "half"
	}
	return fmt.Sprintf("n%d.t%d.%s.%s", j, k, part, revokeDomain)
}

func writeBlockList(path string, blocked ...string) error {
	data := "blockedHostnames:\n"
	if len(blocked) == 0 {
		data = "blockedHostnames: []\n"
	}
	for _, e := range blocked {
		data += fmt.Sprintf("  - %q\n", e)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// restartWithConfig replaces the running shardgate with one that reads
// cfgPath, on the same addresses.
func (b *bench) restartWithConfig(ctx context.Context, cfgPath string) error {
	if b.proc != nil {
		if err := b.proc.Stop(30 * time.Second); err != nil {
			b.logf("revoke: stopping shardgate: %v", err)
		}
		b.proc = nil
	}
	mport := strings.TrimSuffix(strings.TrimPrefix(b.metrics, "http://"), "/metrics")
	args := []string{"--config=" + cfgPath,
		"--metrics-address=" + mport,
		"--metrics-secure=false",
		"--health-address=0",
		"--xds-address=" + b.xdsAddr,
		"--log-format=text"}
	if b.pprof != "" {
		args = append(args, "--pprof-address="+strings.TrimPrefix(b.pprof, "http://"))
	}
	proc, err := b.env.StartShardgate("shardgate-revoke", args...)
	if err != nil {
		return err
	}
	b.proc = proc
	b.logf("revoke: shardgate pid %d with --config, log %s", proc.PID(), proc.LogPath)
	return b.waitFor(ctx, 60*time.Second, "shardgate metrics endpoint", func() (bool, error) {
		_, err := scrape(ctx, b.metrics)
		return err == nil, nil
	})
}

// revokeShard creates the shard every LeaseHost of the phase lands on, in
// the bench's provider namespace.
func (b *bench) revokeShard(ctx context.Context) error {
	params := &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Name: revokeGateway, Namespace: benchNS},
		Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: revokeDomain}},
	}
	if err := b.c.Create(ctx, params); err != nil {
		return fmt.Errorf("create GatewayParameters: %w", err)
	}
	hostname := gatewayv1.Hostname("*." + revokeDomain)
	from := gatewayv1.NamespacesFromAll
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: revokeGateway, Namespace: benchNS},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: "shardgate.io", Kind: "GatewayParameters", Name: revokeGateway,
			}},
			Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: &hostname,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}},
			}},
		},
	}
	if err := b.c.Create(ctx, gw); err != nil {
		return fmt.Errorf("create Gateway: %w", err)
	}
	return nil
}

// quiet waits until shardgate's work queues are empty and no reconcile ran
// for a second, so that only the block-list change is measured.
func (b *bench) quiet(ctx context.Context) error {
	last, since := -1.0, time.Now()
	return b.poll(ctx, 10*time.Minute, 100*time.Millisecond, "shardgate's queues to drain", func() (bool, error) {
		m, err := scrape(ctx, b.metrics)
		if err != nil {
			return false, err
		}
		total := m["controller_runtime_reconcile_total"]
		if m["workqueue_depth"] != 0 || m["controller_runtime_active_workers"] != 0 || total != last {
			last, since = total, time.Now()
			return false, nil
		}
		return time.Since(since) >= time.Second, nil
	})
}

// revokeState is what the bench's watches have seen of the phase's
// objects.
type revokeState struct {
	reserved, blocked      int // LeaseHosts by Reserved condition
	pendingReady           int // LeaseHosts whose Ready the Gateway has not settled
	halfRoutes, keepRoutes int // generated routes by hostname suffix
}

// revokeWatch keeps revokeState from informers on LeaseHosts and
// HTTPRoutes (of every namespace; only the phase's are counted). Counts are
// kept incrementally, so that the bench spends little CPU per event while
// it measures.
type revokeWatch struct {
	mu     sync.Mutex
	lhs    map[string]string // ns/name → Reserved status/reason, "+pending" while Ready is
	routes map[string]bool   // ns/name → under the blocked suffix
	s      revokeState
	// accepted are the routes (ns/name) whose Accepted by the shard
	// Gateway is awaited, each with the channel that receives the time it
	// was first seen.
	accepted map[string]chan time.Time
	// created: the routes (ns/name) whose creation is awaited, each with
	// the channel that receives the time the watch saw it.
	created map[string]chan time.Time
	// Once armed, the first moments the covered routes are all gone and
	// wantBlocked LeaseHosts are Blocked are stamped.
	armed                    bool
	wantBlocked              int
	routesGone, statusesDone time.Time
	signal                   chan struct{}
	cancel                   context.CancelFunc
}

func (b *bench) watchRevocation(ctx context.Context) (*revokeWatch, error) {
	// The bench's informers log nothing; say so, so that controller-runtime
	// does not warn about it.
	ctrllog.SetLogger(logr.Discard())
	c, err := cache.New(b.env.Config, cache.Options{Scheme: b.env.Scheme})
	if err != nil {
		return nil, fmt.Errorf("bench cache: %w", err)
	}
	w := &revokeWatch{lhs: map[string]string{}, routes: map[string]bool{}, accepted: map[string]chan time.Time{}, created: map[string]chan time.Time{}, signal: make(chan struct{}, 1)}
	lhInf, err := c.GetInformer(ctx, &shardgatev1alpha1.LeaseHost{})
	if err != nil {
		return nil, err
	}
	rInf, err := c.GetInformer(ctx, &gatewayv1.HTTPRoute{})
	if err != nil {
		return nil, err
	}
	key := func(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }
	ours := func(o metav1.Object) bool { return strings.HasPrefix(o.GetNamespace(), "revoke-t") }
	unwrap := func(obj any) any {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			return d.Obj
		}
		return obj
	}
	lhEvent := func(obj any) {
		if lh, ok := unwrap(obj).(*shardgatev1alpha1.LeaseHost); ok && ours(lh) {
			w.setLeaseHost(key(lh), leaseHostState(lh))
		}
	}
	if _, err := lhInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    lhEvent,
		UpdateFunc: func(_, obj any) { lhEvent(obj) },
		DeleteFunc: func(obj any) {
			if lh, ok := unwrap(obj).(*shardgatev1alpha1.LeaseHost); ok && ours(lh) {
				w.setLeaseHost(key(lh), "")
			}
		},
	}); err != nil {
		return nil, err
	}
	if _, err := rInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if r, ok := obj.(*gatewayv1.HTTPRoute); ok && ours(r) {
				half := len(r.Spec.Hostnames) > 0 && strings.HasSuffix(string(r.Spec.Hostnames[0]), revokeSuffix)
				w.setRoute(key(r), true, half)
				w.routeCreated(key(r))
				w.routeStatus(key(r), r)
			}
		},
		UpdateFunc: func(_, obj any) {
			if r, ok := obj.(*gatewayv1.HTTPRoute); ok && ours(r) {
				w.routeStatus(key(r), r)
			}
		},
		DeleteFunc: func(obj any) {
			if r, ok := unwrap(obj).(*gatewayv1.HTTPRoute); ok && ours(r) {
				w.setRoute(key(r), false, false)
			}
		},
	}); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() { _ = c.Start(cctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("bench cache did not sync")
	}
	return w, nil
}

func (w *revokeWatch) stop() { w.cancel() }

// leaseHostState is lh's Reserved status/reason, with "+pending" while
// its Ready is not settled.
func leaseHostState(lh *shardgatev1alpha1.LeaseHost) string {
	v := "none"
	if c := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved); c != nil {
		v = string(c.Status) + "/" + c.Reason
	}
	if c := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReady); c == nil || c.Reason == shardgatev1alpha1.ReasonPending {
		v += "+pending"
	}
	return v
}

// count adds d times the contribution of a LeaseHost state v.
func (s *revokeState) count(v string, d int) {
	reason, pending := strings.CutSuffix(v, "+pending")
	if pending {
		s.pendingReady += d
	}
	switch reason {
	case "True/" + shardgatev1alpha1.ReasonReserved:
		s.reserved += d
	case "False/" + shardgatev1alpha1.ReasonBlocked:
		s.blocked += d
	}
}

// setLeaseHost records k's state v ("" when deleted).
func (w *revokeWatch) setLeaseHost(k, v string) {
	w.mu.Lock()
	if old, ok := w.lhs[k]; ok {
		w.s.count(old, -1)
	}
	if v == "" {
		delete(w.lhs, k)
	} else {
		w.lhs[k] = v
		w.s.count(v, 1)
	}
	w.stampLocked()
	w.mu.Unlock()
	w.wake()
}

// setRoute records whether route k exists, and whether it is under the
// blocked suffix.
func (w *revokeWatch) setRoute(k string, exists, half bool) {
	w.mu.Lock()
	if old, ok := w.routes[k]; ok {
		if old {
			w.s.halfRoutes--
		} else {
			w.s.keepRoutes--
		}
		delete(w.routes, k)
	}
	if exists {
		w.routes[k] = half
		if half {
			w.s.halfRoutes++
		} else {
			w.s.keepRoutes++
		}
	}
	w.stampLocked()
	w.mu.Unlock()
	w.wake()
}

// expectAccepted registers route k (ns/name) before the change that
// should bring it; the channel receives the time it was first seen
// Accepted by the shard Gateway.
func (w *revokeWatch) expectAccepted(k string) <-chan time.Time { return w.expect(w.accepted, k) }

// expectCreated registers route k (ns/name) before the change that
// should create it; the channel receives the time the watch saw it.
func (w *revokeWatch) expectCreated(k string) <-chan time.Time { return w.expect(w.created, k) }

func (w *revokeWatch) expect(awaited map[string]chan time.Time, k string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	w.mu.Lock()
	awaited[k] = ch
	w.mu.Unlock()
	return ch
}

// stampAwaited sends at to route k's channel in awaited, if it is awaited,
// and stops awaiting it. Call with w.mu held.
func stampAwaited(awaited map[string]chan time.Time, k string, at time.Time) {
	if ch, ok := awaited[k]; ok {
		ch <- at
		delete(awaited, k)
	}
}

// routeCreated stamps route k's creation when it is awaited.
func (w *revokeWatch) routeCreated(k string) {
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	stampAwaited(w.created, k, at)
}

// forgetAccepted drops every route still awaited (Accepted or created).
func (w *revokeWatch) forgetAccepted() {
	w.mu.Lock()
	clear(w.accepted)
	clear(w.created)
	w.mu.Unlock()
}

// routeStatus stamps route k's Accepted when it is awaited.
func (w *revokeWatch) routeStatus(k string, r *gatewayv1.HTTPRoute) {
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, awaited := w.accepted[k]; awaited && acceptedBy(r, revokeGateway) {
		stampAwaited(w.accepted, k, at)
	}
}

func (w *revokeWatch) stampLocked() {
	if !w.armed {
		return
	}
	now := time.Now()
	if w.s.halfRoutes == 0 && w.routesGone.IsZero() {
		w.routesGone = now
	}
	if w.s.blocked == w.wantBlocked && w.statusesDone.IsZero() {
		w.statusesDone = now
	}
}

func (w *revokeWatch) wake() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// arm starts stamping: from now on, the first moments the covered routes
// are all gone and blocked LeaseHosts are Blocked are recorded.
func (w *revokeWatch) arm(blocked int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.wantBlocked = true, blocked
	w.stampLocked()
}

func (w *revokeWatch) state() revokeState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s
}

// wait blocks until cond holds of the watched state. While waiting for
// the revocation, it stamps when the covered routes were first all gone and
// the Blocked statuses first all there.
func (w *revokeWatch) wait(ctx context.Context, timeout time.Duration, what string, cond func(revokeState) bool, b *bench) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	progress := time.NewTicker(2 * time.Second)
	defer progress.Stop()
	for {
		s := w.state()
		if cond(s) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("timed out after %s waiting for %s (reserved %d, blocked %d, Ready pending %d, covered routes %d, other routes %d)",
				timeout, what, s.reserved, s.blocked, s.pendingReady, s.halfRoutes, s.keepRoutes)
		case <-progress.C:
			b.logf("revoke: waiting for %s: reserved %d, blocked %d, Ready pending %d, covered routes %d, other routes %d",
				what, s.reserved, s.blocked, s.pendingReady, s.halfRoutes, s.keepRoutes)
			if exited, werr := b.proc.Exited(); exited {
				return fmt.Errorf("waiting for %s: shardgate exited (%v); log tail:\n%s", what, werr, b.proc.Tail(30))
			}
		case <-w.signal:
		}
	}
}

// times are how long after at the covered routes were all gone and the
// covered LeaseHosts all Blocked, as stamped once armed.
func (w *revokeWatch) times(at time.Time) (routesGone, statusesBlocked time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.routesGone.Sub(at), w.statusesDone.Sub(at)
}
