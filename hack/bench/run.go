package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Config sizes one run.
type Config struct {
	// AttachRoutes (N) are applied at once for the attach figure.
	AttachRoutes int
	// AttachWorkers create them concurrently.
	AttachWorkers int
	// MemoryObjects (M) HTTPRoutes and Services (each with an
	// EndpointSlice) are loaded for the memory figure.
	MemoryObjects int
	// LoadWorkers create them concurrently.
	LoadWorkers int
	// PropagationRoutes (P) are present while propagation is sampled.
	PropagationRoutes int
	// Samples per propagation phase.
	Samples int
	// ChurnDuration is the least time the churn phase lasts; its samples
	// are spread over it.
	ChurnDuration time.Duration
	// ChurnRate is route updates per second during churn.
	ChurnRate int
	// SampleTimeout bounds the wait for one propagation sample.
	SampleTimeout time.Duration
	// Phases run, of "attach", "propagation" and "memory"; empty runs all.
	Phases []string
	// HeapProfile, when set, is where the memory phase saves shardgate's
	// heap profile (from its /debug/pprof/heap).
	HeapProfile string
}

func fullConfig() Config {
	return Config{
		AttachRoutes: 1000, AttachWorkers: 32,
		MemoryObjects: 10000, LoadWorkers: 64,
		PropagationRoutes: 3000, Samples: 100,
		ChurnDuration: 20 * time.Second, ChurnRate: 10,
		SampleTimeout: 10 * time.Second,
	}
}

func smokeConfig() Config {
	c := fullConfig()
	c.AttachRoutes, c.MemoryObjects, c.PropagationRoutes, c.Samples = 50, 100, 100, 20
	c.ChurnDuration = 5 * time.Second
	return c
}

// Results are the figures of one run. A zero figure was not measured.
type Results struct {
	// Attach.
	Attached       int           // attachedRoutes when settled
	Accepted       int           // routes with our Accepted=True parent status
	AttachCreate   time.Duration // creating the N routes
	AttachTotal    time.Duration // first create → all Accepted and attachedRoutes=N
	StatusWrites   float64       // shardgate_status_writes_total delta
	WritesPerRoute float64
	Teardown       time.Duration // delete → attachedRoutes=0

	// Propagation.
	Propagation      []time.Duration
	PropagationLate  int // samples that timed out (counted as SampleTimeout)
	Churn            []time.Duration
	ChurnLate        int
	ChurnUpdates     int64 // route updates made by the churn goroutine
	ChurnUpdateError int64
	// Translations (shardgate_translate_duration_seconds) during each
	// sampling phase: how many, and their mean duration.
	PropagationTranslations, ChurnTranslations   int
	PropagationTranslateMean, ChurnTranslateMean time.Duration

	// Memory.
	MemoryRoutes   int
	MemoryServices int
	MemoryLoad     time.Duration
	RSS            int64 // VmRSS, bytes
	PeakRSS        int64 // VmHWM, bytes
	HeapInuse      int64 // go_memstats_heap_inuse_bytes

	// Errors of phases that could not finish.
	Errors []string
}

const (
	benchNS  = "bench"
	gwName   = "bench"
	domain   = "bench.test"
	svcName  = "web"
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
	// routes is the number of HTTPRoutes of the Gateway now present.
	routes int
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
		if b.proc != nil {
			_ = b.proc.Stop(10 * time.Second)
		}
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
	// Sizes grow from phase to phase: N routes come and go, then P routes
	// stay for propagation, then the total is topped up to M for memory.
	phases := []struct {
		name string
		f    func(context.Context) error
	}{
		{"attach", b.attach},
		{"propagation", b.propagation},
		{"memory", b.memory},
		{"revoke", b.revoke},
	}
	for _, p := range phases {
		if err := ctx.Err(); err != nil {
			return b.res, err
		}
		if len(cfg.Phases) > 0 && !slices.Contains(cfg.Phases, p.name) {
			continue
		}
		if err := p.f(ctx); err != nil {
			b.res.Errors = append(b.res.Errors, p.name+": "+err.Error())
			b.logf("%s: %v", p.name, err)
		}
		if exited, werr := b.proc.Exited(); exited {
			return b.res, fmt.Errorf("shardgate exited (%v); log tail:\n%s", werr, b.proc.Tail(30))
		}
	}
	return b.res, nil
}

func (b *bench) startShardgate(ctx context.Context) error {
	mport, err := testenv.FreePort()
	if err != nil {
		return err
	}
	xport, err := testenv.FreePort()
	if err != nil {
		return err
	}
	pport, err := testenv.FreePort()
	if err != nil {
		return err
	}
	b.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	b.pprof = fmt.Sprintf("http://127.0.0.1:%d", pport)
	b.xdsAddr = fmt.Sprintf("127.0.0.1:%d", xport)
	b.proc, err = b.env.StartShardgate("shardgate",
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", mport),
		"--metrics-secure=false",
		"--health-address=0",
		"--xds-address="+b.xdsAddr,
		fmt.Sprintf("--pprof-address=127.0.0.1:%d", pport),
		"--log-format=text")
	if err != nil {
		return err
	}
	b.logf("shardgate pid %d, metrics %s, xDS %s, log %s", b.proc.PID(), b.metrics, b.xdsAddr, b.proc.LogPath)
	return b.waitFor(ctx, 60*time.Second, "shardgate metrics endpoint", func() (bool, error) {
		_, err := scrape(ctx, b.metrics)
		return err == nil, nil
	})
}

// setup creates the GatewayClass, the Gateway (one HTTP listener on port
// 80), the Service every small route points at, and waits for the Gateway's
// listener status.
func (b *bench) setup(ctx context.Context) error {
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}); err != nil {
		return err
	}
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}
	if err := client.IgnoreAlreadyExists(b.c.Create(ctx, class)); err != nil {
		return err
	}
	hostname := gatewayv1.Hostname("*." + domain)
	from := gatewayv1.NamespacesFromAll
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: gwName, Namespace: benchNS},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: &hostname,
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}},
			}},
		},
	}
	if err := b.c.Create(ctx, gw); err != nil {
		return err
	}
	if err := b.c.Create(ctx, service(svcName, 0)); err != nil {
		return err
	}
	if err := b.c.Create(ctx, endpointSlice(svcName, 0)); err != nil {
		return err
	}
	return b.waitFor(ctx, 60*time.Second, "Gateway listener status", func() (bool, error) {
		n, ok, err := b.attached(ctx)
		return ok && n == 0, err
	})
}

// attached returns the Gateway's attachedRoutes of listener "http".
func (b *bench) attached(ctx context.Context) (int, bool, error) {
	var gw gatewayv1.Gateway
	if err := b.c.Get(ctx, b.gw, &gw); err != nil {
		return 0, false, err
	}
	for _, l := range gw.Status.Listeners {
		if l.Name == "http" {
			return int(l.AttachedRoutes), true, nil
		}
	}
	return 0, false, nil
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
		if exited, werr := b.proc.Exited(); exited {
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

func service(name string, _ int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNS},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// endpointSlice has three Pod-range endpoints (never dialled; the
// apiserver refuses loopback endpoint addresses).
func endpointSlice(svc string, i int) *discoveryv1.EndpointSlice {
	pname, pnum := "http", int32(8080)
	ready := true
	eps := make([]discoveryv1.Endpoint, 3)
	for k := range eps {
		eps[k] = discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 244+k, i/250%256, i%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc + "-x", Namespace: benchNS, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &pnum}},
		Endpoints:   eps,
	}
}

// ourAccepted reports whether r has our Accepted=True parent status.
func ourAccepted(r *gatewayv1.HTTPRoute) bool {
	for _, p := range r.Status.Parents {
		if p.ControllerName == shardgatev1alpha1.ControllerName && string(p.ParentRef.Name) == gwName &&
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
	return m["shardgate_status_writes_total"], nil
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

// attach applies N routes with AttachWorkers concurrent creates, times
// until attachedRoutes=N and every route is Accepted by us, counts status
// writes, then deletes them and times until attachedRoutes=0.
func (b *bench) attach(ctx context.Context) error {
	n := b.cfg.AttachRoutes
	before, err := b.settledWrites(ctx)
	if err != nil {
		return err
	}
	b.logf("attach: creating %d HTTPRoutes with %d workers", n, b.cfg.AttachWorkers)
	start := time.Now()
	if err := parallel(ctx, n, b.cfg.AttachWorkers, func(ctx context.Context, i int) error {
		return b.c.Create(ctx, route(fmt.Sprintf("a-%d", i), "attach", fmt.Sprintf("a-%d.%s", i, domain), svcName))
	}, nil); err != nil {
		return err
	}
	b.res.AttachCreate = time.Since(start)
	b.logf("attach: created in %s; waiting for attachedRoutes=%d and all Accepted", b.res.AttachCreate.Round(time.Millisecond), n)
	allAccepted := false
	err = b.poll(ctx, 120*time.Second, 10*time.Millisecond, "attachedRoutes and Accepted", func() (bool, error) {
		got, _, err := b.attached(ctx)
		if err != nil || got != n {
			return false, err
		}
		if !allAccepted {
			var list gatewayv1.HTTPRouteList
			if err := b.c.List(ctx, &list, client.InNamespace(benchNS), client.MatchingLabels{phaseKey: "attach"}); err != nil {
				return false, err
			}
			accepted := 0
			for i := range list.Items {
				if ourAccepted(&list.Items[i]) {
					accepted++
				}
			}
			b.res.Accepted = accepted
			allAccepted = accepted == n
		}
		if allAccepted {
			b.res.Attached = got
		}
		return allAccepted, nil
	})
	if err != nil {
		return err
	}
	b.res.AttachTotal = time.Since(start)
	b.logf("attach: all %d Accepted and attached after %s", n, b.res.AttachTotal.Round(time.Millisecond))
	after, err := b.settledWrites(ctx)
	if err != nil {
		return err
	}
	b.res.StatusWrites = after - before
	b.res.WritesPerRoute = b.res.StatusWrites / float64(n)
	b.logf("attach: %.0f status writes (%.3f per route)", b.res.StatusWrites, b.res.WritesPerRoute)

	start = time.Now()
	if err := b.c.DeleteAllOf(ctx, &gatewayv1.HTTPRoute{}, client.InNamespace(benchNS), client.MatchingLabels{phaseKey: "attach"}); err != nil {
		return err
	}
	if err := b.poll(ctx, 120*time.Second, 10*time.Millisecond, "attachedRoutes=0", func() (bool, error) {
		got, _, err := b.attached(ctx)
		return err == nil && got == 0, err
	}); err != nil {
		return err
	}
	b.res.Teardown = time.Since(start)
	b.logf("attach: teardown (delete all → attachedRoutes=0) %s", b.res.Teardown.Round(time.Millisecond))
	return nil
}

// memory tops the Gateway's routes up to M, adds M Services with one
// EndpointSlice each, waits until attachedRoutes says all are in, lets the
// process settle and reads its RSS and Go heap.
func (b *bench) memory(ctx context.Context) error {
	m := b.cfg.MemoryObjects
	start := time.Now()
	progress := func(what string, total int) func(int) {
		return func(done int) { b.logf("memory: %s %d/%d", what, done, total) }
	}
	b.logf("memory: creating %d Services and EndpointSlices with %d workers", m, b.cfg.LoadWorkers)
	if err := parallel(ctx, m, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("svc-%d", i)
		if err := b.c.Create(ctx, service(name, i)); err != nil {
			return err
		}
		return b.c.Create(ctx, endpointSlice(name, i))
	}, progress("Services+EndpointSlices", m)); err != nil {
		return err
	}
	b.res.MemoryServices = m + 1
	more := max(m-b.routes, 0)
	base := b.routes
	b.logf("memory: %d routes present; creating %d more, each to its own Service", base, more)
	if err := parallel(ctx, more, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		k := base + i
		return b.c.Create(ctx, route(fmt.Sprintf("m-%d", k), "memory", fmt.Sprintf("m-%d.%s", k, domain), fmt.Sprintf("svc-%d", k)))
	}, progress("HTTPRoutes", more)); err != nil {
		return err
	}
	b.routes += more
	b.res.MemoryRoutes = b.routes
	if err := b.poll(ctx, 10*time.Minute, 250*time.Millisecond, fmt.Sprintf("attachedRoutes=%d", b.routes), func() (bool, error) {
		got, _, err := b.attached(ctx)
		return err == nil && got == b.routes, err
	}); err != nil {
		return err
	}
	b.res.MemoryLoad = time.Since(start)
	b.logf("memory: %d routes, %d Services loaded and attached in %s; settling 5 s", b.routes, b.res.MemoryServices, b.res.MemoryLoad.Round(time.Second))
	if _, err := b.settledWrites(ctx); err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	rss, hwm, err := procMemory(b.proc.PID())
	if err != nil {
		return err
	}
	mets, err := scrape(ctx, b.metrics)
	if err != nil {
		return err
	}
	b.res.RSS, b.res.PeakRSS, b.res.HeapInuse = rss, hwm, int64(mets["go_memstats_heap_inuse_bytes"])
	b.logf("memory: RSS %s (peak %s), Go heap in use %s", mib(b.res.RSS), mib(b.res.PeakRSS), mib(b.res.HeapInuse))
	if b.cfg.HeapProfile != "" {
		if err := b.saveHeapProfile(ctx); err != nil {
			b.logf("memory: heap profile: %v", err)
		}
	}
	if b.res.HeapInuse == 0 {
		return errors.New("go_memstats_heap_inuse_bytes missing from shardgate's metrics")
	}
	return nil
}

func mib(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }

// saveHeapProfile fetches shardgate's heap profile (after a GC) into
// cfg.HeapProfile.
func (b *bench) saveHeapProfile(ctx context.Context) error {
	url := b.pprof + "/debug/pprof/heap?gc=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(b.cfg.HeapProfile)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	b.logf("memory: heap profile saved to %s", b.cfg.HeapProfile)
	return f.Close()
}
