package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/testenv"
)

// The peer is another Gateway API controller run on the same workload as
// shardgate, after it, against a fresh harness apiserver, so that the
// ratios of the two are measured on the same machine in the same run.
// Contour is the only peer: its binary and CRDs are installed by
// `make contour` into bin/contour/ (hack/versions.env pins the version).
const (
	peerContour = "contour"
	// contourController is the controllerName of the GatewayClass Contour
	// serves in Gateway API mode.
	contourController = "projectcontour.io/gateway-controller"
	contourClass      = "contour"
)

// PeerResults are the peer's figures, and the figures of both that only
// the peer run measures.
type PeerResults struct {
	Name    string // "contour"
	Version string // what `<peer> version` prints, on one line
	// Flood: N route Creates (FloodWorkers at a time, each route's
	// Service and EndpointSlice present), with the peer running, per
	// round; FloodAccepted: from the last Create until every route is
	// Accepted by the peer and attachedRoutes = N.
	Flood         []time.Duration
	FloodAccepted []time.Duration
	// Memory: the peer's RSS, settled, at N and at P routes.
	Memory []MemoryFigure
	// Propagation: route only (each route's Service present), route
	// Create → its hostname in the peer's RouteConfiguration "http-80".
	Propagation SampleSet
	// VersionRSS: peak RSS (VmHWM) of `<binary> version`, the peer's and
	// shardgate's; VersionAnon: its anonymous RSS as it exits (without
	// the binary's file pages, which vary with the page cache).
	VersionRSS, ShardgateVersionRSS   int64
	VersionAnon, ShardgateVersionAnon int64
}

// peerDir is where `make contour` installs Contour: the binary and its CRDs.
func peerDir() (string, error) {
	root, err := testenv.Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "contour"), nil
}

// peerAssets returns the peer's binary and CRD file in dir, or an error
// saying how to install them.
func peerAssets(dir string) (bin, crds string, err error) {
	bin, crds = filepath.Join(dir, "contour"), filepath.Join(dir, "01-crds.yaml")
	for _, f := range []string{bin, crds} {
		if _, err := os.Stat(f); err != nil {
			return "", "", fmt.Errorf("peer %s: %s missing: run `make contour`", peerContour, f)
		}
	}
	return bin, crds, nil
}

// versionRSS runs `bin version` five times and returns the medians of its
// peak RSS and of its anonymous RSS at exit, and what it printed on one
// line.
func versionRSS(ctx context.Context, bin string) (peak, anon int64, printed string, err error) {
	var peaks, anons []int64
	var first string
	for range 5 {
		if err := dropPageCache(bin); err != nil {
			return 0, 0, "", err
		}
		pm, out, err := peakRSS(ctx, bin, "version")
		if err != nil {
			return 0, 0, "", fmt.Errorf("%s version: %w", bin, err)
		}
		peaks, anons = append(peaks, pm.HWM), append(anons, pm.Anon)
		var lines []string
		for l := range strings.Lines(out) {
			if !strings.HasPrefix(l, "time=") { // Contour's start-up log line
				lines = append(lines, l)
			}
		}
		first = strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
	}
	slices.Sort(peaks)
	slices.Sort(anons)
	return peaks[len(peaks)/2], anons[len(anons)/2], first, nil
}

// peakRSS runs bin with args to its end and returns its memory as it exits
// (HWM: its peak RSS) and its output. The kernel's ru_maxrss cannot tell it: Go starts a child
// with vfork, and exec records the bench's own peak in the child's. So the
// child runs traced, and VmHWM is read from /proc when it stops on its way
// out (PTRACE_EVENT_EXIT), its memory still mapped.
func peakRSS(ctx context.Context, bin string, args ...string) (procMem, string, error) {
	out, err := os.CreateTemp("", "bench-peak-rss-")
	if err != nil {
		return procMem{}, "", err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	// Every ptrace request must come from the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return procMem{}, "", err
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Release() // reaped by Wait4 below, not cmd.Wait
	var peak procMem
	var ws syscall.WaitStatus
	for first := true; ; first = false {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			_ = cmd.Process.Kill()
			return procMem{}, "", fmt.Errorf("wait: %w", err)
		}
		if ws.Exited() || ws.Signaled() {
			break
		}
		if !ws.Stopped() {
			continue
		}
		sig := 0
		switch {
		case first: // the stop after exec
			if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT); err != nil {
				_ = cmd.Process.Kill()
				return procMem{}, "", fmt.Errorf("ptrace: %w", err)
			}
		case ws.StopSignal() == syscall.SIGTRAP && ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			pm, err := procMemory(pid)
			if err != nil {
				_ = cmd.Process.Kill()
				return procMem{}, "", err
			}
			peak = pm
		default:
			sig = int(ws.StopSignal()) // deliver what stopped it
		}
		if err := syscall.PtraceCont(pid, sig); err != nil {
			_ = cmd.Process.Kill()
			return procMem{}, "", fmt.Errorf("ptrace: %w", err)
		}
		if ctx.Err() != nil {
			_ = cmd.Process.Kill()
		}
	}
	text, _ := os.ReadFile(out.Name())
	if ws.Signaled() || ws.ExitStatus() != 0 {
		return procMem{}, "", fmt.Errorf("exit status %d (signal %v): %s", ws.ExitStatus(), ws.Signal(), text)
	}
	if peak.HWM <= 0 {
		return procMem{}, "", errors.New("no peak RSS read before it exited")
	}
	return peak, string(text), nil
}

// runPeer measures the peer on the workload run measured shardgate on:
// the same Gateway (one HTTP listener on port 80, routes from every
// namespace), N+ExtraServices Services with EndpointSlices, FloodRounds
// timed floods of N route Creates, RSS settled at N and at P routes, and
// route-only propagation at P over the peer's xDS. It fills res.Peer as
// far as it got.
func runPeer(ctx context.Context, cfg Config, out io.Writer, res *Results) error {
	p := &PeerResults{Name: peerContour}
	res.Peer = p
	dir := cfg.PeerDir
	if dir == "" {
		var err error
		if dir, err = peerDir(); err != nil {
			return err
		}
	}
	dir, err := filepath.Abs(dir) // the processes run in the harness's directory
	if err != nil {
		return err
	}
	bin, crds, err := peerAssets(dir)
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, out: out, res: &Results{}, gw: types.NamespacedName{Namespace: benchNS, Name: gwName}}
	sg, err := testenv.BuildShardgate()
	if err != nil {
		return err
	}
	if p.ShardgateVersionRSS, p.ShardgateVersionAnon, _, err = versionRSS(ctx, sg); err != nil {
		return err
	}
	if p.VersionRSS, p.VersionAnon, p.Version, err = versionRSS(ctx, bin); err != nil {
		return err
	}
	b.logf("peer: `version` peak RSS: shardgate %s (anonymous at exit %s), %s %s (anonymous at exit %s; %s)",
		mib(p.ShardgateVersionRSS), mib(p.ShardgateVersionAnon), p.Name, mib(p.VersionRSS), mib(p.VersionAnon), p.Version)

	b.logf("peer: booting a fresh kube-apiserver + etcd with %s's CRDs", p.Name)
	env, err := testenv.Start(ctx, testenv.Options{ExtraCRDPaths: []string{crds}})
	if err != nil {
		return err
	}
	defer func() {
		b.stopPeer()
		if err := env.Stop(); err != nil {
			b.logf("peer: stopping the harness: %v", err)
		}
	}()
	b.env, b.c = env, env.Client
	if err := b.startContour(ctx, bin); err != nil {
		return err
	}
	if err := b.peerSetup(ctx); err != nil {
		return err
	}
	if err := b.peerFlood(ctx, p); err != nil {
		return fmt.Errorf("flood: %w", err)
	}
	if err := b.peerMemory(ctx, p); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if len(cfg.Phases) > 0 && !slices.Contains(cfg.Phases, "memory") && !slices.Contains(cfg.Phases, "propagation") {
		return nil
	}
	if size := max(cfg.PropagationRoutes, cfg.FloodRoutes); size > b.routes {
		if err := b.growTo(ctx, size); err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if err := b.peerMemory(ctx, p); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	if len(cfg.Phases) > 0 && !slices.Contains(cfg.Phases, "propagation") {
		return nil
	}
	return b.peerPropagation(ctx, p)
}

// startContour runs `contour serve` against the harness: Gateway API mode
// for Gateway bench/bench, xDS without TLS on loopback, no leader
// election, and without the informers of kinds whose served versions
// differ between its Gateway API release and ours (TLSRoute, TCPRoute,
// BackendTLSPolicy; the workload has none). Like shardgate, it runs with
// no GOMEMLIMIT and the default GOGC, and with shardgate's client limits.
func (b *bench) startContour(ctx context.Context, bin string) error {
	ports := make([]int, 4)
	for i := range ports {
		var err error
		if ports[i], err = testenv.FreePort(); err != nil {
			return err
		}
	}
	xport, mport, hport, dport := ports[0], ports[1], ports[2], ports[3]
	conf := filepath.Join(b.env.Dir, "contour.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "gateway:\n  gatewayRef:\n    namespace: %s\n    name: %s\n", benchNS, gwName), 0o600); err != nil {
		return err
	}
	b.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	b.xdsAddr = fmt.Sprintf("127.0.0.1:%d", xport)
	if err := dropPageCache(bin); err != nil {
		return err
	}
	var err error
	b.proc, err = b.env.StartProcess("contour", bin, []string{"serve",
		"--kubeconfig=" + b.env.Kubeconfig,
		"--config-path=" + conf,
		"--insecure",
		"--xds-address=127.0.0.1", fmt.Sprintf("--xds-port=%d", xport),
		"--http-address=127.0.0.1", fmt.Sprintf("--http-port=%d", mport),
		"--health-address=127.0.0.1", fmt.Sprintf("--health-port=%d", hport),
		"--debug-http-address=127.0.0.1", fmt.Sprintf("--debug-http-port=%d", dport),
		"--disable-leader-election",
		// shardgate's own client limits (--kube-api-qps, --kube-api-burst
		// defaults): client-go's 5 QPS would hold back Contour's status writes.
		"--kubernetes-client-qps=2000", "--kubernetes-client-burst=4000",
		"--disable-feature=tlsroutes", "--disable-feature=tcproutes", "--disable-feature=backendtlspolicies",
	}, []string{"GOMEMLIMIT=off", "GOGC=100"})
	if err != nil {
		return err
	}
	b.logf("peer: contour pid %d, metrics %s, xDS %s, log %s", b.proc.PID(), b.metrics, b.xdsAddr, b.proc.LogPath)
	return b.waitFor(ctx, 60*time.Second, "contour metrics endpoint", func() (bool, error) {
		_, err := scrape(ctx, b.metrics)
		return err == nil, nil
	})
}

// peerSetup is setup with the peer's GatewayClass: the namespace, the
// class, the same Gateway, the Services no route names, then the flood
// routes' Services and EndpointSlices; it waits for the listener status.
func (b *bench) peerSetup(ctx context.Context) error {
	if err := b.createGateway(ctx, contourClass, contourController, false); err != nil {
		return err
	}
	n := b.cfg.FloodRoutes
	if err := parallel(ctx, n, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return b.createBackend(ctx, serviceName(i), i)
	}, nil); err != nil {
		return err
	}
	b.services += n
	return b.waitFor(ctx, 60*time.Second, "Gateway listener status", func() (bool, error) {
		n, ok, err := b.attached(ctx)
		return ok && n == 0, err
	})
}

// peerFlood times N route Creates with the peer running, as flood does
// with shardgate running, FloodRounds times, and from the last Create
// until all are Accepted by the peer and attached. The last round's routes
// stay.
func (b *bench) peerFlood(ctx context.Context, p *PeerResults) error {
	n := b.cfg.FloodRoutes
	rounds := max(b.cfg.FloodRounds, 1)
	for round := range rounds {
		if err := b.peerQuiet(ctx); err != nil {
			return err
		}
		cpu := b.cpuNow()
		d, _, err := b.floodCreates(ctx)
		if err != nil {
			return err
		}
		created := time.Now()
		p.Flood = append(p.Flood, d)
		after := b.cpuNow()
		b.logf("peer flood %d: %d Creates with %s running took %s (CPU: %s %s, the machine %s)", round+1, n, p.Name, ms(d),
			p.Name, ms(after.shardgate-cpu.shardgate), ms(after.machine-cpu.machine))
		at, err := b.peerAccepted(ctx, n)
		if err != nil {
			return err
		}
		p.FloodAccepted = append(p.FloodAccepted, at.Sub(created))
		b.logf("peer flood %d: all Accepted by %s and attached %s after the last Create", round+1, p.Name, ms(at.Sub(created)))
		if round == rounds-1 {
			b.routes = n
			return nil
		}
		if err := b.deleteFlood(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// peerAccepted polls until attachedRoutes = n and every route of the
// Gateway is Accepted by the peer, and returns when it first saw that.
func (b *bench) peerAccepted(ctx context.Context, n int) (time.Time, error) {
	var at time.Time
	err := b.poll(ctx, 5*time.Minute, 50*time.Millisecond, fmt.Sprintf("%d routes Accepted by the peer", n), func() (bool, error) {
		got, _, err := b.attached(ctx)
		if err != nil || got != n {
			return false, err
		}
		var list gatewayv1.HTTPRouteList
		if err := b.c.List(ctx, &list, client.InNamespace(benchNS)); err != nil {
			return false, err
		}
		accepted := 0
		for i := range list.Items {
			if peerAcceptedRoute(&list.Items[i]) {
				accepted++
			}
		}
		if accepted < n {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	return at, err
}

// peerAcceptedRoute reports whether r has the peer's Accepted=True parent
// status for the bench's Gateway.
func peerAcceptedRoute(r *gatewayv1.HTTPRoute) bool {
	for _, s := range r.Status.Parents {
		if s.ControllerName == contourController && string(s.ParentRef.Name) == gwName &&
			meta.IsStatusConditionTrue(s.Conditions, string(gatewayv1.RouteConditionAccepted)) {
			return true
		}
	}
	return false
}

// peerQuiet waits until no route or Gateway in the bench namespace has
// changed for 1 s (at most 30 s): the peer's status writes have settled.
func (b *bench) peerQuiet(ctx context.Context) error {
	version := func() (string, error) {
		var routes gatewayv1.HTTPRouteList
		if err := b.c.List(ctx, &routes, client.InNamespace(benchNS)); err != nil {
			return "", err
		}
		var gw gatewayv1.Gateway
		if err := b.c.Get(ctx, b.gw, &gw); err != nil {
			return "", err
		}
		var newest int64
		for i := range routes.Items {
			rv, _ := strconv.ParseInt(routes.Items[i].ResourceVersion, 10, 64)
			newest = max(newest, rv)
		}
		return fmt.Sprintf("%d/%s/%d", len(routes.Items), gw.ResourceVersion, newest), nil
	}
	last, err := version()
	if err != nil {
		return err
	}
	stable, deadline := time.Now(), time.Now().Add(30*time.Second)
	for time.Since(stable) < time.Second && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		v, err := version()
		if err != nil {
			return err
		}
		if v != last {
			last, stable = v, time.Now()
		}
	}
	return nil
}

// peerMemory lets the peer settle (its status writes still for 1 s, then
// 5 s, as measureMemory waits for shardgate) and reads its RSS.
func (b *bench) peerMemory(ctx context.Context, p *PeerResults) error {
	if err := b.peerQuiet(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
	}
	pm, err := procMemory(b.proc.PID())
	if err != nil {
		return err
	}
	f := MemoryFigure{Routes: b.routes, Services: b.services, RSS: pm.RSS, PeakRSS: pm.HWM, Anon: pm.Anon, File: pm.File}
	p.Memory = append(p.Memory, f)
	b.logf("peer memory: %d routes, %d Services: %s RSS %s (peak %s; anonymous %s, the binary's mapped file pages %s)",
		f.Routes, f.Services, p.Name, mib(f.RSS), mib(f.PeakRSS), mib(f.Anon), mib(f.File))
	return nil
}

// peerPropagation samples route-only propagation over the peer's xDS, as
// propagation does over shardgate's: Samples new routes propagationGap
// apart, each route's Service and EndpointSlice created beforehand.
func (b *bench) peerPropagation(ctx context.Context, p *PeerResults) error {
	w, err := b.dialPeerRDS(ctx)
	if err != nil {
		return err
	}
	b.rds = w
	if b.routes > 0 {
		select {
		case <-w.expect(hostName(b.routes - 1)):
		case <-w.done:
			return fmt.Errorf("peer xDS stream ended: %w", w.err)
		case <-time.After(60 * time.Second):
			return fmt.Errorf("peer xDS client saw no RouteConfiguration %q with all %d routes in 60 s (%d responses)", routeTable, b.routes, w.responses.Load())
		}
	}
	b.logf("peer: xDS client connected; RouteConfiguration %q has %d virtual hosts", routeTable, w.vhosts.Load())
	n, base := b.cfg.Samples, b.routes
	if err := parallel(ctx, n, b.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return b.createBackend(ctx, serviceName(base+i), base+i)
	}, nil); err != nil {
		return err
	}
	b.services += n
	if err := b.peerQuiet(ctx); err != nil {
		return err
	}
	p.Propagation, err = b.sample(ctx, w, n, propagationGap, false)
	if err != nil {
		return err
	}
	p.Propagation.Translations, p.Propagation.TranslateMean = 0, 0 // shardgate's metric; the peer has none
	b.logf("peer propagation: %d routes present, %s", p.Propagation.Routes, summary(p.Propagation.Samples))
	return nil
}

// dialPeerRDS connects the bench's ADS client to the peer's xDS (no TLS),
// subscribed to RouteConfiguration "http-80": Contour names the route
// table of a Gateway's HTTP listener by protocol and port, as shardgate
// does.
func (b *bench) dialPeerRDS(ctx context.Context) (*rdsWatch, error) {
	cc, err := grpc.NewClient(b.xdsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return nil, fmt.Errorf("peer xDS client: %w", err)
	}
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		_ = cc.Close()
		return nil, fmt.Errorf("peer xDS stream: %w", err)
	}
	w := &rdsWatch{
		cc: cc, stream: stream,
		node:    &core.Node{Id: "bench", Cluster: "bench", UserAgentName: "envoy"},
		waiting: map[string]chan time.Time{},
		leaving: map[string]chan time.Time{},
		done:    make(chan struct{}),
	}
	if err := stream.Send(&discovery.DiscoveryRequest{Node: w.node, TypeUrl: routeTypeURL, ResourceNames: []string{routeTable}}); err != nil {
		_ = cc.Close()
		return nil, fmt.Errorf("peer xDS request: %w", err)
	}
	go w.receive()
	return w, nil
}

// ratioRow compares a shardgate figure with the peer's: the ratio
// shardgate / peer, whose target is ≤ 1.00.
func ratioRow(figure, peer string, ours, theirs float64, unit func(float64) string, measured bool) row {
	if !measured || theirs <= 0 {
		return row{figure, "not measured for both", "≤ 1.00×", verdict(false, false)}
	}
	r := ours / theirs
	return row{figure, fmt.Sprintf("shardgate %s, %s %s: %.2f×", unit(ours), peer, unit(theirs), r), "≤ 1.00×", verdict(true, r <= 1.0)}
}

// peerRows are the peer comparison's rows: each figure measured for both,
// as shardgate's over the peer's.
func peerRows(cfg Config, r *Results) []row {
	p := r.Peer
	if p == nil {
		return nil
	}
	durMS := func(v float64) string { return ms(time.Duration(v)) }
	bytesMiB := func(v float64) string { return mib(int64(v)) }
	n := cfg.FloodRoutes
	vs := "vs " + p.Name
	out := []row{
		ratioRow(fmt.Sprintf("%s: %d route Creates, controller running (mean)", vs, n), p.Name,
			float64(mean(r.FloodWith)), float64(mean(p.Flood)), durMS, len(r.FloodWith) > 0 && len(p.Flood) > 0),
		ratioRow(fmt.Sprintf("%s: all %d Accepted after the last Create (worst)", vs, n), p.Name,
			float64(slices.Max(append([]time.Duration{0}, r.FloodAccepted...))), float64(slices.Max(append([]time.Duration{0}, p.FloodAccepted...))),
			durMS, len(r.FloodAccepted) > 0 && len(p.FloodAccepted) > 0),
	}
	for _, pm := range p.Memory {
		i := slices.IndexFunc(r.Memory, func(m MemoryFigure) bool { return m.Routes == pm.Routes })
		var ours int64
		if i >= 0 {
			ours = r.Memory[i].RSS
		}
		out = append(out, ratioRow(fmt.Sprintf("%s: RSS settled, %d routes + %d Services/EndpointSlices", vs, pm.Routes, pm.Services), p.Name,
			float64(ours), float64(pm.RSS), bytesMiB, i >= 0 && ours > 0))
		// RSS counts the binary's mapped file pages, which vary from run
		// to run with the page cache; the anonymous part (heap, stacks,
		// runtime) is what the objects cost.
		var oursAnon int64
		if i >= 0 {
			oursAnon = r.Memory[i].Anon
		}
		out = append(out, ratioRow(fmt.Sprintf("%s: anonymous RSS settled (without the binary's file pages), %d routes", vs, pm.Routes), p.Name,
			float64(oursAnon), float64(pm.Anon), bytesMiB, oursAnon > 0 && pm.Anon > 0))
	}
	out = append(out, ratioRow(vs+": `version` peak RSS", p.Name, float64(p.ShardgateVersionRSS), float64(p.VersionRSS), bytesMiB,
		p.ShardgateVersionRSS > 0 && p.VersionRSS > 0),
		ratioRow(vs+": `version` anonymous RSS at exit", p.Name, float64(p.ShardgateVersionAnon), float64(p.VersionAnon), bytesMiB,
			p.ShardgateVersionAnon > 0 && p.VersionAnon > 0))
	if len(p.Propagation.Samples) > 0 {
		ours, theirs := r.Propagation, p.Propagation
		same := ours.Routes == theirs.Routes && len(ours.Samples) > 0
		o50, o99, _ := stats(ours.Samples)
		t50, t99, _ := stats(theirs.Samples)
		out = append(out,
			ratioRow(fmt.Sprintf("%s: propagation, route only (%d routes): route Create → RDS p50", vs, theirs.Routes), p.Name, float64(o50), float64(t50), durMS, same),
			ratioRow(fmt.Sprintf("%s: propagation, route only (%d routes): route Create → RDS p99", vs, theirs.Routes), p.Name, float64(o99), float64(t99), durMS, same))
		if theirs.Late > 0 {
			out[len(out)-1].value += fmt.Sprintf(" (%s: %d timed out)", p.Name, theirs.Late)
		}
	}
	if p.Version != "" {
		out = append(out, row{vs + ": version", p.Version, "—", "info"})
	}
	return out
}

// stopPeer closes the xDS client and stops the peer's process.
func (b *bench) stopPeer() {
	if b.rds != nil {
		b.rds.Close()
		b.rds = nil
	}
	if b.proc != nil {
		if err := b.proc.Stop(10 * time.Second); err != nil {
			b.logf("peer: stopping it: %v", err)
		}
		b.proc = nil
	}
}
