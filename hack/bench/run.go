package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Config sizes one run.
type Config struct {
	// FloodRoutes (N) are created at once, FloodWorkers at a time, for
	// the flood figures; the memory and tenant-flow figures are then
	// taken at N routes.
	FloodRoutes  int
	FloodWorkers int
	// FloodRounds: the flood is timed this many times with shardgate
	// stopped and as many with it running, alternately.
	FloodRounds int
	// ExtraServices, each with an EndpointSlice, are named by no route
	// (a provider's other workloads): N routes come with N+ExtraServices
	// Services.
	ExtraServices int
	// LoadWorkers create the objects of a growth step concurrently.
	LoadWorkers int
	// PropagationRoutes (P) are present while propagation and the second
	// tenant flow are sampled; memory is measured there too.
	PropagationRoutes int
	// MemoryRoutes (M), each with its own Service and EndpointSlice, are
	// loaded for the last memory figure; 0 skips it.
	MemoryRoutes int
	// Samples per propagation or tenant-flow phase.
	Samples int
	// ChurnDuration is the least time the churn phase lasts; its samples
	// are spread over it.
	ChurnDuration time.Duration
	// ChurnRate is route updates per second during churn.
	ChurnRate int
	// SampleTimeout bounds the wait for one propagation sample.
	SampleTimeout time.Duration
	// Phases run, of "flood", "memory", "tenant", "propagation" and
	// "revoke"; empty
	// runs all. Sizes grow whichever run.
	Phases []string
	// HeapProfile, when set, is where the last memory figure saves
	// shardgate's heap profile (from its /debug/pprof/heap).
	HeapProfile string
	// CPUProfile, when set, is where the route-only propagation phase
	// saves shardgate's CPU profile over its samples (from
	// /debug/pprof/profile).
	CPUProfile string
	// AllocProfile, when set, is where the same phase saves shardgate's
	// allocations over its samples (a delta of /debug/pprof/allocs).
	AllocProfile string
	// FloodCPUProfile, when set, is where the last flood round saves
	// shardgate's CPU profile, from its first Create for FloodProfileTime.
	FloodCPUProfile string
	// Peer, when "contour", measures Contour on the same workload after
	// shardgate (peer.go); PeerDir holds its binary and CRDs (default
	// bin/contour, from `make contour`).
	Peer, PeerDir string
}

func fullConfig() Config {
	return Config{
		FloodRoutes: 1000, FloodWorkers: 32, FloodRounds: 2, ExtraServices: 100,
		LoadWorkers:       32,
		PropagationRoutes: 3000, MemoryRoutes: 10000,
		Samples:       100,
		ChurnDuration: 20 * time.Second, ChurnRate: 10,
		SampleTimeout: 10 * time.Second,
	}
}

func smokeConfig() Config {
	c := fullConfig()
	c.FloodRoutes, c.FloodRounds, c.ExtraServices = 50, 1, 5
	c.PropagationRoutes, c.MemoryRoutes, c.Samples = 100, 250, 20
	c.ChurnDuration = 5 * time.Second
	return c
}

// Results are the figures of one run. A zero figure was not measured.
type Results struct {
	// Flood, per round.
	FloodWithout []time.Duration // N Creates, shardgate stopped
	FloodWith    []time.Duration // N Creates, shardgate running
	// FloodAccepted: from the last Create returning to every route
	// Accepted by us and attachedRoutes = N.
	FloodAccepted []time.Duration
	FloodWrites   []float64 // shardgate_status_writes_total delta
	// FloodFloorStatus: N status writes by the bench alone, after the
	// Creates with shardgate stopped.
	FloodFloorStatus []time.Duration
	Attached         int // attachedRoutes when settled (last round)
	Accepted         int // routes with our Accepted=True (last round)

	Memory []MemoryFigure

	Tenant []SampleSet
	// TenantB2B: the same, each lease's Service Create as soon as the
	// previous lease's route reached RDS.
	TenantB2B []SampleSet

	// Propagation (route only, each route's Service already present).
	Propagation SampleSet
	// PropagationB2B: the same, each Create as soon as the previous
	// sample's route reached RDS.
	PropagationB2B SampleSet
	Churn          SampleSet
	// PropagationLarge: route only at M routes; PropagationLargeB2B back
	// to back.
	PropagationLarge    SampleSet
	PropagationLargeB2B SampleSet
	ChurnUpdates        int64 // route updates made by the churn goroutine
	ChurnUpdateError    int64

	// LeaseHostFlow: a new lease's Service, EndpointSlice and LeaseHost
	// (revoke phase, every name held).
	LeaseHostFlow LeaseHostFlow

	// Peer: the peer's figures (peer.go), nil when none ran.
	Peer *PeerResults

	// Errors of phases that could not finish.
	Errors []string
}

// MemoryFigure is shardgate's memory with Routes HTTPRoutes and Services
// Services (each with an EndpointSlice) present.
type MemoryFigure struct {
	Routes, Services int
	RSS              int64 // VmRSS, bytes
	PeakRSS          int64 // VmHWM, bytes
	Anon, File       int64 // RssAnon, RssFile: RSS split, bytes
	HeapInuse        int64 // go_memstats_heap_inuse_bytes
}

// SampleSet is one sampling phase: create → RDS received.
type SampleSet struct {
	Routes  int // routes present when it began
	Samples []time.Duration
	// FromService: for tenant-flow samples, from the Service's Create
	// (the first of the three) to RDS received.
	FromService []time.Duration
	Late        int // samples that timed out (counted as SampleTimeout)
	// Translations (shardgate_translate_duration_seconds) during the
	// phase: how many, and their mean duration.
	Translations  int
	TranslateMean time.Duration
	// Elapsed: from the first sample's start to the last one's end (back
	// to back, the mean time per sample is what sets the rate of Creates).
	Elapsed time.Duration
}

const (
	benchNS  = "bench"
	gwName   = "bench"
	domain   = "bench.test"
	phaseKey = "bench.shardgate.io/phase"
)

type bench struct {
	cfg     Config
	out     io.Writer
	env     *testenv.Env
	c       client.Client
	proc    *testenv.Process
	metrics string // http://127.0.0.1:<port>/metrics
	pprof   string // http://127.0.0.1:<port>, Go's pprof (--pprof-address)
	xdsAddr string
	gw      types.NamespacedName
	res     *Results
	rds     *rdsWatch // connected to proc, or nil
	// routes is the number of HTTPRoutes of the Gateway now present:
	// r-0 … r-(routes-1), each on Service s-<same index>. services counts
	// the Services present (s-* and x-*).
	routes, services int
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// run boots the harness and shardgate, measures every figure, and stops
// everything again. Results are returned even when a phase failed.
func run(ctx context.Context, cfg Config, out io.Writer) (*Results, error) {
	b := &bench{cfg: cfg, out: out, res: &Results{}, gw: types.NamespacedName{Namespace: benchNS, Name: gwName}}
	b.logf("building shardgate and booting kube-apiserver + etcd (testenv)")
	if _, err := testenv.BuildShardgate(); err != nil {
		return nil, err
	}
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return nil, err
	}
	defer func() {
		b.stopShardgate()
		if err := env.Stop(); err != nil {
			b.logf("stopping the harness: %v", err)
		}
	}()
	b.env, b.c = env, env.Client
	if err := b.startShardgate(ctx); err != nil {
		return b.res, err
	}
	if err := b.setup(ctx); err != nil {
		return b.res, err
	}
	// Sizes only grow: N routes (flood, memory, tenant flow), then P
	// (memory, propagation, tenant flow), then M (memory, route-only
	// propagation, tenant flow). A phase left
	// out still has its sizes loaded for the phases after it.
	n, p, m := cfg.FloodRoutes, max(cfg.PropagationRoutes, cfg.FloodRoutes), cfg.MemoryRoutes
	type step struct {
		phase string
		f     func(context.Context) error
	}
	steps := []step{
		{"flood", b.flood},
		{"", func(ctx context.Context) error { return b.growTo(ctx, n) }},
		{"memory", b.measureMemory},
		{"tenant", b.tenantFlow},
		{"", func(ctx context.Context) error { return b.growTo(ctx, p) }},
		{"memory", b.measureMemory},
		{"propagation", b.propagation},
		{"tenant", b.tenantFlow},
	}
	if m > p {
		steps = append(steps,
			step{"", func(ctx context.Context) error { return b.growTo(ctx, m) }},
			step{"memory", b.measureMemory},
			step{"propagation", b.propagationLarge},
			step{"tenant", b.tenantFlow})
	}
	if len(cfg.Phases) > 0 && !slices.Contains(cfg.Phases, "memory") && !slices.Contains(cfg.Phases, "propagation") && !slices.Contains(cfg.Phases, "tenant") {
		steps = steps[:1] // nothing after the flood needs the larger sizes
	}
	// Revocation runs last, on its own namespaces and LeaseHosts.
	steps = append(steps, step{"revoke", b.revoke})
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return b.res, err
		}
		if st.phase != "" && len(cfg.Phases) > 0 && !slices.Contains(cfg.Phases, st.phase) {
			continue
		}
		if err := st.f(ctx); err != nil {
			name := st.phase
			if name == "" {
				name = "load"
			}
			b.res.Errors = append(b.res.Errors, name+": "+err.Error())
			b.logf("%s: %v", name, err)
			if st.phase == "" {
				return b.res, nil // later phases need the sizes
			}
		}
		if b.proc == nil {
			return b.res, errors.New("shardgate is not running")
		}
		if exited, werr := b.proc.Exited(); exited {
			return b.res, fmt.Errorf("shardgate exited (%v); log tail:\n%s", werr, b.proc.Tail(30))
		}
	}
	return b.res, nil
}

// startShardgate runs the built binary as its own process, with no
// GOMEMLIMIT and the default GOGC, and waits for its metrics endpoint.
func (b *bench) startShardgate(ctx context.Context) error {
	mport, err := testenv.FreePort()
	if err != nil {
		return err
	}
	xport, err := testenv.FreePort()
	if err != nil {
		return err
	}
	bin, err := testenv.BuildShardgate()
	if err != nil {
		return err
	}
	if err := dropPageCache(bin); err != nil {
		return err
	}
	b.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	b.xdsAddr = fmt.Sprintf("127.0.0.1:%d", xport)
	args := []string{"controller",
		"--kubeconfig=" + b.env.Kubeconfig,
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", mport),
		"--metrics-secure=false",
		"--health-address=0",
		"--xds-address=" + b.xdsAddr,
		"--log-format=text"}
	// pprof only when a profile is asked for: as a provider runs it,
	// shardgate does not sample heap profiles without it, and that is
	// part of what the memory figures measure.
	b.pprof = ""
	if b.wantsProfiles() {
		pport, err := testenv.FreePort()
		if err != nil {
			return err
		}
		b.pprof = fmt.Sprintf("http://127.0.0.1:%d", pport)
		args = append(args, fmt.Sprintf("--pprof-address=127.0.0.1:%d", pport))
	}
	b.proc, err = b.env.StartProcess("shardgate", bin, args, []string{"GOMEMLIMIT=off", "GOGC=100"})
	if err != nil {
		return err
	}
	b.logf("shardgate pid %d, metrics %s, xDS %s, log %s", b.proc.PID(), b.metrics, b.xdsAddr, b.proc.LogPath)
	return b.waitFor(ctx, 60*time.Second, "shardgate metrics endpoint", func() (bool, error) {
		_, err := scrape(ctx, b.metrics)
		return err == nil, nil
	})
}

// wantsProfiles reports whether a profile of shardgate is asked for, and
// so whether it serves pprof.
func (b *bench) wantsProfiles() bool {
	return b.cfg.HeapProfile != "" || b.cfg.CPUProfile != "" || b.cfg.AllocProfile != "" ||
		b.cfg.FloodCPUProfile != "" || *leaseHostCPUProfile != "" || *revokeCPUProfile != ""
}

// stopShardgate stops the process and closes the xDS client of it.
func (b *bench) stopShardgate() {
	if b.rds != nil {
		b.rds.Close()
		b.rds = nil
	}
	if b.proc != nil {
		if err := b.proc.Stop(10 * time.Second); err != nil {
			b.logf("stopping shardgate: %v", err)
		}
		b.proc = nil
	}
}

// createGateway creates the bench namespace, the GatewayClass (className,
// controller; an existing one is kept when mayExist), the Gateway (one HTTP
// listener on port 80 for *.domain, routes from every namespace) and the
// Services no route names.
func (b *bench) createGateway(ctx context.Context, className, controller string, mayExist bool) error {
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}); err != nil {
		return err
	}
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)},
	}
	err := b.c.Create(ctx, class)
	if mayExist {
		err = client.IgnoreAlreadyExists(err)
	}
	if err != nil {
		return err
	}
	hostname := gatewayv1.Hostname("*." + domain)
	from := gatewayv1.NamespacesFromAll
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: gwName, Namespace: benchNS},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(className),
			Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: &hostname,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}},
			}},
		},
	}
	if err := b.c.Create(ctx, gw); err != nil {
		return err
	}
	if err := parallel(ctx, b.cfg.ExtraServices, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return b.createBackend(ctx, fmt.Sprintf("x-%d", i), 100000+i)
	}, nil); err != nil {
		return err
	}
	b.services += b.cfg.ExtraServices
	return nil
}

// setup creates the GatewayClass, the Gateway (one HTTP listener on port
// 80) and the Services no route names, and waits for the Gateway's
// listener status.
func (b *bench) setup(ctx context.Context) error {
	if err := b.createGateway(ctx, "shardgate", shardgatev1alpha1.ControllerName, true); err != nil {
		return err
	}
	return b.waitFor(ctx, 60*time.Second, "Gateway listener status", func() (bool, error) {
		n, ok, err := b.attached(ctx)
		return ok && n == 0, err
	})
}

// createBackend creates Service name with its EndpointSlice.
func (b *bench) createBackend(ctx context.Context, name string, i int) error {
	svc := service(name)
	if err := b.c.Create(ctx, svc); err != nil {
		return fmt.Errorf("create Service %s: %w", name, err)
	}
	if err := b.c.Create(ctx, endpointSlice(svc, i)); err != nil {
		return fmt.Errorf("create EndpointSlice of %s: %w", name, err)
	}
	return nil
}

// routeName, serviceName and hostName name route k, its Service and its
// hostname.
func routeName(k int) string   { return fmt.Sprintf("r-%d", k) }
func serviceName(k int) string { return fmt.Sprintf("s-%d", k) }
func hostName(k int) string    { return fmt.Sprintf("r-%d.%s", k, domain) }

// growTo creates routes up to n, each with its own Service and
// EndpointSlice (created first), and waits for attachedRoutes = n.
func (b *bench) growTo(ctx context.Context, n int) error {
	if n <= b.routes {
		return nil
	}
	base, more := b.routes, n-b.routes
	progress := func(what string) func(int) {
		return func(done int) { b.logf("load: %s %d/%d", what, done, more) }
	}
	b.logf("load: %d routes present; creating %d Services, EndpointSlices and routes", base, more)
	if err := parallel(ctx, more, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return b.createBackend(ctx, serviceName(base+i), base+i)
	}, progress("Services+EndpointSlices")); err != nil {
		return err
	}
	b.services += more
	if err := parallel(ctx, more, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		k := base + i
		return b.c.Create(ctx, route(routeName(k), "load", hostName(k), serviceName(k)))
	}, progress("HTTPRoutes")); err != nil {
		return err
	}
	b.routes = n
	return b.poll(ctx, 10*time.Minute, 100*time.Millisecond, fmt.Sprintf("attachedRoutes=%d", n), func() (bool, error) {
		got, _, err := b.attached(ctx)
		return err == nil && got == n, err
	})
}

// attached returns the Gateway's attachedRoutes of listener "http".
func (b *bench) attached(ctx context.Context) (int, bool, error) {
	var gw gatewayv1.Gateway
	if err := b.c.Get(ctx, b.gw, &gw); err != nil {
		return 0, false, err
	}
	n := attachedOf(&gw)
	return max(n, 0), n >= 0, nil
}

// attachedOf returns a Gateway's attachedRoutes of listener "http", or -1
// when it has no status for it.
func attachedOf(gw *gatewayv1.Gateway) int {
	for _, l := range gw.Status.Listeners {
		if l.Name == "http" {
			return int(l.AttachedRoutes)
		}
	}
	return -1
}

func (b *bench) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	return b.poll(ctx, timeout, 20*time.Millisecond, what, cond)
}

func (b *bench) poll(ctx context.Context, timeout, every time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if b.proc == nil {
			// shardgate is stopped on purpose (the flood's baseline).
		} else if exited, werr := b.proc.Exited(); exited {
			return fmt.Errorf("waiting for %s: shardgate exited (%v); log tail:\n%s", what, werr, b.proc.Tail(30))
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("timed out after %s waiting for %s (last error: %w)", timeout, what, last)
			}
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// parallel runs f(0..n-1) on workers goroutines and stops at the first
// error. progress, when set, is called every 2 s with the count done.
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error, progress func(done int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, done atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				done.Add(1)
			}
		})
	}
	if progress != nil {
		stop := make(chan struct{})
		go func() {
			t := time.NewTicker(2 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					progress(int(done.Load()))
				}
			}
		}()
		defer close(stop)
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func route(name, phase, host, svc string) *gatewayv1.HTTPRoute {
	port := gatewayv1.PortNumber(80)
	prefix := gatewayv1.PathMatchPathPrefix
	path := "/"
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNS, Labels: map[string]string{phaseKey: phase}},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gwName}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svc), Port: &port},
				}}},
			}},
		},
	}
}

func service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNS},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// endpointSlice is the EndpointSlice the EndpointSlice controller writes for
// svc (created, so that it has its UID) with three ready Pods: its labels,
// trigger-time annotation and owner reference, and each endpoint's Pod
// reference, node and zone. The addresses are in the Pod range and never
// dialled (the apiserver refuses loopback endpoint addresses).
func endpointSlice(svc *corev1.Service, i int) *discoveryv1.EndpointSlice {
	pname, pnum, tcp := "http", int32(8080), corev1.ProtocolTCP
	ready, serving, terminating := true, true, false
	eps := make([]discoveryv1.Endpoint, 3)
	for k := range eps {
		node, zone := fmt.Sprintf("node-%d", (i+k)%50), fmt.Sprintf("zone-%c", 'a'+(i+k)%3)
		eps[k] = discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 244+k, i/250%256, i%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: svc.Namespace, Name: fmt.Sprintf("%s-7d9c8b6f5-%05d", svc.Name, i*3+k),
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i*3+k))},
			NodeName: &node,
			Zone:     &zone,
		}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name + "-x", GenerateName: svc.Name + "-", Namespace: svc.Namespace,
			Labels:      map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &pnum, Protocol: &tcp}},
		Endpoints:   eps,
	}
}

// ourAccepted reports whether r has our Accepted=True parent status for
// the bench's Gateway.
func ourAccepted(r *gatewayv1.HTTPRoute) bool { return acceptedBy(r, gwName) }

// acceptedBy reports whether r has our Accepted=True parent status for the
// Gateway named gw (the bench's Gateways are all in its namespace).
func acceptedBy(r *gatewayv1.HTTPRoute, gw string) bool {
	for _, p := range r.Status.Parents {
		if p.ControllerName == shardgatev1alpha1.ControllerName && string(p.ParentRef.Name) == gw &&
			meta.IsStatusConditionTrue(p.Conditions, string(gatewayv1.RouteConditionAccepted)) {
			return true
		}
	}
	return false
}

// statusWrites sums shardgate_status_writes_total over its labels.
func (b *bench) statusWrites(ctx context.Context) (float64, error) {
	m, err := scrape(ctx, b.metrics)
	if err != nil {
		return 0, err
	}
	return m[statusWritesMetric], nil
}

// settledWrites waits until the status write counter has not moved for 1 s
// (at most 15 s) and returns it.
func (b *bench) settledWrites(ctx context.Context) (float64, error) {
	last, err := b.statusWrites(ctx)
	if err != nil {
		return 0, err
	}
	stable := time.Now()
	deadline := time.Now().Add(15 * time.Second)
	for time.Since(stable) < time.Second && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		v, err := b.statusWrites(ctx)
		if err != nil {
			return 0, err
		}
		if v != last {
			last, stable = v, time.Now()
		}
	}
	return last, nil
}
