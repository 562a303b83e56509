// Package manager assembles the shardgate controller process: the
// controller-runtime manager (leader election, metrics, health probes), the
// config-file watcher and every controller. It owns wiring only; business
// rules live in the packages it wires together.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/fanout"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/scheme"
	"github.com/shardgate/shardgate/internal/status"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// Leader election timings. A new leader takes over writes within
// LeaseDuration of the old one dying (the target: at most 15 s).
const (
	LeaseDuration = 8 * time.Second
	RenewDeadline = 6 * time.Second
	RetryPeriod   = 1500 * time.Millisecond
)

// Options are the process's settings after flags and the config file merged.
type Options struct {
	// RestConfig reaches the apiserver.
	RestConfig *rest.Config
	// ConfigPath is the config file; empty means defaults and no reloads.
	ConfigPath string
	// Config is used when ConfigPath is empty, and overrides nothing else.
	Config config.Config
	// Overrides from flags; empty means "take the config file's value".
	MetricsAddress string
	HealthAddress  string
	XDSAddress     string
	LeaderElect    *bool
	// EnableDebugXDS, when set, overrides the config's xds.debugEndpoint.
	EnableDebugXDS *bool
	// MetricsInsecure serves the metrics endpoint (and /debug/config_dump)
	// over plain HTTP without authentication, for local use. By default
	// they are served over HTTPS, and every request must carry a bearer
	// token the apiserver authenticates (TokenReview) and authorizes for
	// its path (SubjectAccessReview on the non-resource URL, verb get),
	// as kubebuilder's projects do.
	MetricsInsecure bool
	// MetricsCertDir holds tls.crt and tls.key for the metrics endpoint;
	// empty means a self-signed certificate generated at start.
	MetricsCertDir string
	// PprofAddress serves Go's pprof profiles under /debug/pprof/ on its
	// own address (controller-runtime's PprofBindAddress); "" or "0" is
	// off, the default.
	PprofAddress string
	// EnableProfiling is the older switch for pprof: it serves it on
	// DefaultPprofAddress unless PprofAddress is set.
	EnableProfiling bool
	Log             logr.Logger

	// OnXDSServer receives the xDS server once built, so tests can read
	// its NACK records and address.
	OnXDSServer func(*xdsserver.Server)
	// OnXDSCredentials receives the xDS server's credentials, so tests can
	// rotate them.
	OnXDSCredentials func(*xdsserver.Credentials)
	// XDSPhaseTwoTimeout is the xDS server's Options.PhaseTwoTimeout;
	// zero takes its default.
	XDSPhaseTwoTimeout time.Duration
}

// Run runs the controller until ctx ends. It returns nil after a clean
// shutdown.
//
// The process has two layers. The xDS server, its credentials (renewed and
// reloaded in the background), the config
// watcher, the health probes and the leader election lock live as long as
// the process. The controller-runtime manager (informers, controllers,
// status writer, metrics server) runs on top of them, and is replaced when it loses the leader
// Lease: controller-runtime stops a manager that lost its lease (it cancels
// every controller, so no write of the old term goes out after it) and has
// no way to step down and stay. Exiting instead, as controller-runtime's
// callers usually do, would also close every xDS stream of the replica, so
// an apiserver outage longer than RenewDeadline would cost the leader's
// Envoys their control plane, and a single replica all of them. With the
// two layers, xDS keeps serving the last good config while the new manager
// syncs its caches again and rejoins the election (with the same identity,
// so it takes the Lease back at once once the apiserver answers, if nobody
// else has taken it meanwhile).
func Run(ctx context.Context, opts Options) error {
	log := opts.Log
	var watcher *config.Watcher
	var updates <-chan config.Config
	cfg := opts.Config
	if opts.ConfigPath != "" {
		w, err := config.NewWatcher(opts.ConfigPath, log.WithName("config"))
		if err != nil {
			return err
		}
		// Subscribe before reading Current, so no change falls between.
		updates = w.Subscribe()
		watcher, cfg = w, w.Current()
	} else {
		if cfg.ControllerName == "" {
			cfg = config.Default()
		}
		config.RecordStaticLoad()
	}
	applyOverrides(&cfg, opts)
	blocked, err := hostnames.NewBlockList(cfg.BlockedHostnames...)
	if err != nil {
		return fmt.Errorf("config blockedHostnames: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &process{opts: opts, cfg: cfg, log: log}
	p.blocked.Store(blocked)
	limits := tenantLimits(cfg)
	p.tenantLimits.Store(&limits)
	p.tenancy.Set(cfg.OwnerPolicy(), cfg.ShardNamespaces)
	// Every write of this replica is counted with whether it held the
	// leader Lease at the time (writes.go): followers must write nothing.
	p.lead = newLeadership(cfg.LeaderElection.Enabled)
	// One scheme for every client of the process (the managers one after
	// another, the xDS CA's): it is only read once built.
	p.scheme = scheme.New()
	if p.http, err = rest.HTTPClientFor(opts.RestConfig); err != nil {
		return fmt.Errorf("apiserver HTTP client: %w", err)
	}
	if p.mapper, err = apiutil.NewDynamicRESTMapper(opts.RestConfig, p.http); err != nil {
		return fmt.Errorf("REST mapper: %w", err)
	}

	// The process-long parts. One that fails ends the process.
	var wg sync.WaitGroup
	failed := make(chan error, 2)
	background := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				failed <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	// The probes come first: while start-up waits for the apiserver
	// (startup.go), /healthz says alive and /readyz not ready.
	if addr := cfg.HealthAddress; addr != "" && addr != "0" {
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("health probes: listen %s: %w", addr, err)
		}
		background("health probes", func(ctx context.Context) error { return p.serveProbes(ctx, lis) })
	}
	abort := func(err error) error {
		cancel()
		wg.Wait()
		return err
	}
	if cfg.LeaderElection.Enabled {
		if p.lock, err = newLeaderLock(ctx, opts.RestConfig, cfg.LeaderElection.Namespace, cfg.LeaderElection.ID, p.lead); err != nil {
			return abort(err)
		}
	}
	var xdsCreds *xdsserver.Credentials
	err = p.untilStarted(ctx, func(ctx context.Context) (err error) {
		xdsCreds, p.ca, err = xdsCredentials(ctx, opts.RestConfig, p.clientOptions(), cfg, p.lead, log.WithName("xds-credentials"))
		return err
	})
	if err != nil {
		return abort(err)
	}
	if err := p.waitForAkash(ctx); err != nil {
		return abort(err)
	}
	if opts.OnXDSCredentials != nil {
		opts.OnXDSCredentials(xdsCreds)
	}
	p.xds = xdsserver.New(xdsserver.Options{
		Address:   cfg.XDS.Address,
		TLS:       xdsCreds.TLSConfig(),
		Log:       log.WithName("xds"),
		OnOutcome: p.publishOutcomeChanged,
		// Zero: the default.
		PhaseTwoTimeout: opts.XDSPhaseTwoTimeout,
		Limits: xdsserver.Limits{
			StreamsPerIdentity:     cfg.XDS.Limits.StreamsPerIdentity,
			StreamsPerCertificate:  cfg.XDS.Limits.StreamsPerCertificate,
			ResourceNamesPerStream: cfg.XDS.Limits.ResourceNamesPerStream,
			MaxRequestBytes:        cfg.XDS.Limits.MaxRequestBytes,
		},
	})
	p.xdsBuilt.Store(true) // after p.xds is set: the probes read it from now on
	if opts.OnXDSServer != nil {
		opts.OnXDSServer(p.xds)
	}
	background("xDS credentials", xdsCreds.Start) // renews and reloads
	background("xDS server", p.xds.Start)
	if watcher != nil {
		background("config watcher", watcher.Run)
		go p.applyConfig(updates) // ends when the watcher closes updates
	}
	stop := func(err error) error {
		cancel()
		wg.Wait()
		select {
		case ferr := <-failed:
			return errors.Join(err, ferr)
		default:
			return err
		}
	}

	log.Info("starting shardgate controller",
		"controllerName", cfg.ControllerName,
		"metricsAddress", cfg.MetricsAddress, "healthAddress", cfg.HealthAddress,
		"xdsAddress", cfg.XDS.Address, "leaderElection", cfg.LeaderElection.Enabled,
		"blockedHostnames", len(cfg.BlockedHostnames))
	replacement := false
	for {
		started, err := p.runManager(ctx)
		if ctx.Err() == nil && leadershipLost(err) {
			p.lead.held.Store(false)
			log.Info("leader election lost: this replica stopped writing; xDS keeps serving the last good config while a new manager rejoins the election")
			replacement = true
			continue
		}
		if ctx.Err() == nil && replacement && !started {
			// Setting up a manager may need the apiserver (discovery
			// for the field indexes), which may still be away, and
			// starting one the old one's metrics port, which may still
			// be closing. The first manager's errors stop the
			// process, as before.
			log.Info("cannot set up a new manager yet; retrying", "error", err.Error())
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if err != nil {
			return stop(err)
		}
		if err := stop(nil); err != nil {
			return err
		}
		log.Info("shardgate controller stopped")
		return nil
	}
}

// leadershipLost reports whether a manager stopped because it lost the
// leader Lease (controller-runtime's error has no type of its own).
func leadershipLost(err error) bool {
	return err != nil && strings.Contains(err.Error(), "leader election lost")
}

// process is what outlives one manager: see Run.
type process struct {
	opts Options
	cfg  config.Config
	log  logr.Logger
	lead *leadership
	lock resourcelock.Interface
	ca   *pki.CA
	xds  *xdsserver.Server
	// scheme is the one scheme of every client of the process; http and
	// mapper its one apiserver HTTP client and REST mapper (the xDS CA's
	// client and each manager in turn): the mapper holds the discovery of
	// every API group it looked up, once.
	scheme *runtime.Scheme
	http   *http.Client
	mapper meta.RESTMapper

	// blocked is the current block list; leaseHosts the current manager's
	// LeaseHost reconciler, which a config reload updates.
	blocked    atomic.Pointer[hostnames.BlockList]
	leaseHosts atomic.Pointer[controllers.LeaseHostReconciler]
	// infra is the current manager's Envoy provisioning reconciler.
	infra atomic.Pointer[controllers.InfraReconciler]
	// tenantLimits are the config's shards.tenantLimits, which a reload
	// updates.
	tenantLimits atomic.Pointer[gatewayapi.TenantLimits]
	// tenancy is the config's tenancy settings, shared by the controllers.
	tenancy controllers.Tenancy
	// trigger re-translates in the current manager.
	trigger atomic.Pointer[func()]
	// status is the current manager's status writer, which gets the xDS
	// server's publish outcomes.
	status atomic.Pointer[status.Writer]
	// mgr is the current manager.
	mgr atomic.Pointer[crmanager.Manager]
	// synced: some manager of this process had its caches synced, so the
	// xDS server holds a config translated from a complete view.
	synced atomic.Bool
	// xdsBuilt: xds is set (start-up got past the apiserver).
	xdsBuilt atomic.Bool
	mu       sync.Mutex
	// gatewayProblems: the publish problem per Gateway at the last
	// emitGatewayEvents (events.go).
	gatewayEventsMu sync.Mutex
	gatewayProblems map[string]string
}

// serveProbes serves /healthz (the process is alive) and /readyz (caches
// synced and xDS serving, never leadership) for as long as the process
// runs, across managers. A manager that replaced one which lost the Lease
// counts as synced while it syncs again: the xDS server keeps serving the
// config its predecessor translated from synced caches, and an apiserver
// outage must not make every replica unready (or, through a failing
// liveness probe, restart it) at once.
func (p *process) serveProbes(ctx context.Context, lis net.Listener) error {
	ready := healthz.Handler{Checks: map[string]healthz.Checker{
		"informers": func(req *http.Request) error {
			if p.synced.Load() {
				return nil
			}
			if m := p.mgr.Load(); m != nil {
				return cacheSynced(*m)(req)
			}
			return errors.New("informer caches not synced")
		},
		"xds": func(*http.Request) error {
			if !p.xdsBuilt.Load() {
				return errors.New("starting: waiting for the apiserver (see the log)")
			}
			if !p.xds.Serving() {
				return errors.New("xDS server not serving")
			}
			return nil
		},
	}}
	live := healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	mux := http.NewServeMux()
	for path, h := range map[string]http.Handler{"/readyz": &ready, "/healthz": &live} {
		mux.Handle(path, http.StripPrefix(path, h))
		mux.Handle(path+"/", http.StripPrefix(path, h))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// syncMarker records, on every replica, that the manager's caches synced.
type syncMarker struct {
	mgr    crmanager.Manager
	synced *atomic.Bool
}

func (m syncMarker) Start(ctx context.Context) error {
	if m.mgr.GetCache().WaitForCacheSync(ctx) {
		m.synced.Store(true)
	}
	return nil
}

func (syncMarker) NeedLeaderElection() bool { return false }

func (p *process) triggerTranslation() {
	if f := p.trigger.Load(); f != nil {
		(*f)()
	}
}

// tenantLimits are the translator's limits of a configuration.
func tenantLimits(c config.Config) gatewayapi.TenantLimits {
	l := c.Shards.TenantLimits
	return gatewayapi.TenantLimits{Routes: l.Routes, Rules: l.Rules, Matches: l.Matches, RegularExpressions: l.RegularExpressions}
}

// applyConfig applies what may change live, the block list, on every
// replica (it needs no leadership: it only reads a file).
func (p *process) applyConfig(updates <-chan config.Config) {
	for c := range updates {
		b, err := hostnames.NewBlockList(c.BlockedHostnames...)
		if err != nil {
			p.log.Error(err, "reloaded block list refused; keeping the previous one")
			continue
		}
		policy := c.OwnerPolicy()
		p.log.Info("config reloaded", "blockedHostnames", b.Len(), "ownerKeys", policy.Keys,
			"requireNamespaceOwner", policy.RequireOwner, "shardNamespaces", c.ShardNamespaces)
		p.mu.Lock()
		p.blocked.Store(b)
		limits := tenantLimits(c)
		p.tenantLimits.Store(&limits)
		tenancyChanged := p.tenancy.Set(policy, c.ShardNamespaces)
		if r := p.leaseHosts.Load(); r != nil {
			r.SetBlockList(b)
			if tenancyChanged {
				r.TenancyChanged()
			}
		}
		if r := p.infra.Load(); r != nil && tenancyChanged {
			r.TenancyChanged()
		}
		// Where shards may live, and which names they may serve (the
		// block list is an ownership fact).
		p.triggerTranslation()
		p.mu.Unlock()
	}
}

// runManager builds one controller-runtime manager on the process's xDS
// server and runs it until ctx ends or it loses the leader Lease. started
// reports whether it got as far as starting the manager.
func (p *process) runManager(ctx context.Context) (started bool, _ error) {
	cfg, log := p.cfg, p.log
	mgr, err := p.newManager()
	if err != nil {
		return false, err
	}
	p.mgr.Store(&mgr)
	if err := mgr.Add(syncMarker{mgr: mgr, synced: &p.synced}); err != nil {
		return false, fmt.Errorf("add sync marker: %w", err)
	}
	leaseHosts := &controllers.LeaseHostReconciler{
		Client:         mgr.GetClient(),
		Engine:         hostnames.New(p.blocked.Load()),
		ControllerName: cfg.ControllerName,
		Recorder:       countingRecorder{EventRecorder: mgr.GetEventRecorder("shardgate"), lead: p.lead},
		Log:            log.WithName("leasehost"),
		Tenancy:        &p.tenancy,
	}
	if err := leaseHosts.SetupWithManager(mgr); err != nil {
		return false, fmt.Errorf("set up LeaseHost controller: %w", err)
	}
	p.mu.Lock()
	p.leaseHosts.Store(leaseHosts)
	if b := p.blocked.Load(); b != leaseHosts.Engine.BlockList() {
		leaseHosts.SetBlockList(b) // a reload raced with the set-up
	}
	p.mu.Unlock()
	if cfg.Akash.Enabled {
		if err := p.setUpAkash(mgr, leaseHosts); err != nil {
			return false, err
		}
	}
	if err := (&controllers.LeasedIPReconciler{
		Client:   mgr.GetClient(),
		Log:      log.WithName("leasedip"),
		Policy:   p.tenancy.Policy,
		Recorder: countingRecorder{EventRecorder: mgr.GetEventRecorder("shardgate"), lead: p.lead},
	}).SetupWithManager(mgr); err != nil {
		return false, fmt.Errorf("set up LeasedIP controller: %w", err)
	}
	if err := (&controllers.GatewayParametersReconciler{Client: mgr.GetClient(), ControllerName: cfg.ControllerName,
		Tenancy: &p.tenancy, Recorder: countingRecorder{EventRecorder: mgr.GetEventRecorder("shardgate"), lead: p.lead}}).SetupWithManager(mgr); err != nil {
		return false, fmt.Errorf("set up GatewayParameters controller: %w", err)
	}
	writer := status.New(mgr.GetClient(), mgr.GetAPIReader(), cfg.ControllerName, log.WithName("status"))
	if err := mgr.Add(writer); err != nil {
		return false, fmt.Errorf("add status writer: %w", err)
	}
	p.status.Store(writer)
	writer.SetPublishErrors(p.xds.PublishErrors()) // outcomes from before this manager
	gatewayAPI := &controllers.GatewayAPIReconciler{
		Cache:          mgr.GetCache(),
		ControllerName: cfg.ControllerName,
		Status:         writer,
		Log:            log.WithName("gatewayapi"),
		Tenancy:        &p.tenancy,
		Blocked:        p.blocked.Load,
		TenantLimits:   func() gatewayapi.TenantLimits { return *p.tenantLimits.Load() },
	}
	if cfg.Akash.Enabled {
		gatewayAPI.AkashNamespace = cfg.Akash.Namespace
	}
	certificates := &controllers.CertificateReconciler{
		Client:   mgr.GetClient(),
		Recorder: countingRecorder{EventRecorder: mgr.GetEventRecorder("shardgate"), lead: p.lead},
		Limits:   cfg.Certificates.Limits(),
		Log:      log.WithName("certificates"),
		Changed:  leaseHosts.CertificatesChanged,
	}
	if cfg.Akash.Enabled {
		certificates.AkashNamespace = cfg.Akash.Namespace
	}
	if err := certificates.SetupWithManager(mgr); err != nil {
		return false, fmt.Errorf("set up certificate controller: %w", err)
	}
	leaseHosts.Certificates = certificates
	gatewayAPI.Certificates = certificates
	trigger := gatewayAPI.Trigger
	p.trigger.Store(&trigger)
	gatewayRuntime := &controllers.GatewayRuntimeSource{
		Client:         mgr.GetClient(),
		ControllerName: cfg.ControllerName,
		Trigger:        gatewayAPI.Trigger,
		Log:            log.WithName("gateway-runtime"),
	}
	if err := gatewayRuntime.SetupWithManager(mgr); err != nil {
		return false, fmt.Errorf("set up Gateway runtime source: %w", err)
	}
	infraReconciler := &controllers.InfraReconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		ControllerName: cfg.ControllerName,
		Options:        infraOptions(cfg),
		Tenancy:        &p.tenancy,
		CA:             p.ca,
		Log:            log.WithName("infra"),
	}
	if p.ca == nil {
		infraReconciler.LoadCA = func(context.Context) (*pki.CA, error) {
			return nil, errors.New("xds.tls files are configured, so there is no CA key to issue Envoy client certificates from")
		}
	}
	if err := infraReconciler.SetupWithManager(mgr); err != nil {
		return false, fmt.Errorf("set up infra controller: %w", err)
	}
	p.infra.Store(infraReconciler)
	gatewayAPI.Publisher = p.xds
	gatewayAPI.Runtime = gatewayRuntime
	if err := gatewayAPI.SetupWithManager(mgr); err != nil {
		return false, fmt.Errorf("set up Gateway API controller: %w", err)
	}
	if err := mgr.Start(ctx); err != nil {
		// A manager replacing one that lost its lease may find that one's
		// metrics port still closing: it never started, and is retried.
		return !addressInUse(err), fmt.Errorf("run manager: %w", err)
	}
	return true, nil
}

// addressInUse reports whether err is a listener's bind refused because
// the address is still taken.
func addressInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// metricsHandlers are what the metrics server serves besides /metrics,
// behind the same authentication and authorization.
func (p *process) metricsHandlers() map[string]http.Handler {
	extra := map[string]http.Handler{
		// The resources themselves, per Gateway (`shardgate config dump`).
		ConfigDumpPath:       p.configDumpHandler(),
		ConfigDumpPath + "/": p.configDumpHandler(),
	}
	if p.cfg.XDS.DebugEndpoint {
		// What each Gateway's proxies are served (names and versions). It
		// names every tenant's clusters and Secrets: off by default, and
		// behind the metrics server's authentication when on.
		extra["/debug/xds"] = p.xds.DebugHandler()
	}
	return extra
}

// newManager creates the controller-runtime manager. A manager replacing
// one that lost its lease may find the old one's metrics and probe ports
// still closing; it retries for a few seconds.
func (p *process) newManager() (crmanager.Manager, error) {
	cfg := p.cfg
	deadline := time.Now().Add(5 * time.Second)
	for {
		mgr, err := ctrl.NewManager(p.opts.RestConfig, ctrl.Options{
			Scheme: p.scheme,
			MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
				return p.mapper, nil
			},
			Logger:    p.log,
			NewClient: newCountingClient(p.lead),
			Cache:     cacheOptions(),
			// One event handler registration per informer, shared by
			// every controller that watches its kind.
			NewCache: func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
				c, err := cache.New(config, opts)
				if err != nil {
					return nil, err
				}
				return fanout.Cache(c), nil
			},
			Metrics: p.metricsOptions(),
			// Off unless asked for (PprofAddress, EnableProfiling).
			PprofBindAddress: p.pprofAddress(),
			// The process serves the probes (Run): they must answer while
			// one manager replaces another.
			HealthProbeBindAddress:  "0",
			LeaderElection:          cfg.LeaderElection.Enabled,
			LeaderElectionID:        cfg.LeaderElection.ID,
			LeaderElectionNamespace: cfg.LeaderElection.Namespace,
			// The same Lease lock controller-runtime would build, observed
			// so that writes are labelled by whether this replica holds
			// it, and kept across managers (one identity per process).
			LeaderElectionResourceLockInterface: p.lock,
			LeaderElectionReleaseOnCancel:       true,
			LeaseDuration:                       ptr(LeaseDuration),
			RenewDeadline:                       ptr(RenewDeadline),
			RetryPeriod:                         ptr(RetryPeriod),
			GracefulShutdownTimeout:             ptr(15 * time.Second),
			// Controller names are checked process-wide; a process runs
			// one manager at a time, and replaces it after a lost lease.
			Controller: ctrlconfig.Controller{SkipNameValidation: ptr(true)},
		})
		if err == nil {
			return mgr, nil
		}
		if !addressInUse(err) || time.Now().After(deadline) {
			return nil, fmt.Errorf("create manager: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cacheOptions keep the informer caches small: no managedFields anywhere
// (nothing reads them), the data of Secrets that are not TLS Secrets dropped
// but for ca.crt (the translator only reports their type, or reads a CA
// bundle a Gateway's client certificate validation names), Envoy
// Deployments, DaemonSets, PodDisruptionBudgets and ServiceAccounts cached
// only when shardgate provisioned them (labelled shardgate.io/gateway),
// instead of every one in the cluster, and of the ConfigMaps shardgate does
// not manage only ca.crt (any may be named as a Gateway's CA; the rest of
// their data, binaryData and annotations are dropped), of EndpointSlices
// only what the endpoint table reads (slimEndpointSlice), and of the
// Services nothing provisioned or manages (tenants' backends, one per
// route) only what their readers read (slimService); every other Service
// is cached whole.
func cacheOptions() cache.Options {
	// Every object shardgate provisions carries shardgate.io/gateway, which
	// no infrastructure label can change (app.kubernetes.io/managed-by
	// can). Objects an earlier version created without it are read from
	// the apiserver until their next apply labels them.
	hasGateway, err := labels.NewRequirement(infra.LabelOwnGateway, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	ours := labels.NewSelector().Add(*hasGateway)
	strip := stripUnread(cache.TransformStripManagedFields())
	return cache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:            {Label: ours},
			&appsv1.DaemonSet{}:             {Label: ours},
			&policyv1.PodDisruptionBudget{}: {Label: ours},
			&corev1.ServiceAccount{}:        {Label: ours},
			&corev1.ConfigMap{}: {Transform: func(in any) (any, error) {
				if c, ok := in.(*corev1.ConfigMap); ok && !ours.Matches(labels.Set(c.Labels)) {
					keepCAOnly(c)
				}
				return strip(in)
			}},
			&discoveryv1.EndpointSlice{}: {Transform: func(in any) (any, error) {
				if s, ok := in.(*discoveryv1.EndpointSlice); ok {
					slimEndpointSlice(s)
				}
				return strip(in)
			}},
			&corev1.Service{}: {Transform: func(in any) (any, error) {
				if s, ok := in.(*corev1.Service); ok && !serviceCachedWhole(s) {
					slimService(s)
				}
				return strip(in)
			}},
			&corev1.Secret{}: {Transform: func(in any) (any, error) {
				if s, ok := in.(*corev1.Secret); ok && s.Type != corev1.SecretTypeTLS {
					for k := range s.Data {
						if k != pki.KeyCA {
							s.Data[k] = nil
						}
					}
				}
				return strip(in)
			}},
		},
	}
}

// stripUnread drops from every cached object, after managedFields (strip),
// the copy of the object that kubectl apply keeps in an annotation: nothing
// reads it, and on an object written with kubectl apply it is most of the
// object. shardgate never writes a cached object back whole (it applies,
// patches, and writes status, which keeps the stored annotations), so the
// annotation stays on the object itself.
func stripUnread(strip func(any) (any, error)) func(any) (any, error) {
	return func(in any) (any, error) {
		out, err := strip(in)
		if o, ok := out.(metav1.Object); ok && err == nil {
			if a := o.GetAnnotations(); a != nil {
				if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
					delete(a, corev1.LastAppliedConfigAnnotation)
					if len(a) == 0 {
						o.SetAnnotations(nil)
					}
				}
			}
		}
		return out, err
	}
}

// slimEndpointSlice drops from an EndpointSlice what nothing in shardgate
// reads: its annotations, owner references and every label but the Service
// name, and of each endpoint all but its addresses and its ready condition
// (the Pod reference, node, zone, hostname, hints, and the serving and
// terminating conditions). The EndpointSlice controller writes all of
// these; they were most of a cached slice. A reader of any of them must be
// added here first.
func slimEndpointSlice(s *discoveryv1.EndpointSlice) {
	s.Annotations, s.OwnerReferences, s.GenerateName = nil, nil, ""
	if svc, ok := s.Labels[discoveryv1.LabelServiceName]; !ok {
		s.Labels = nil
	} else if len(s.Labels) > 1 {
		s.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
	}
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		*e = discoveryv1.Endpoint{Addresses: e.Addresses, Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready}}
	}
}

// keepCAOnly drops everything of a ConfigMap the translator does not read:
// every data key but ca.crt, binaryData and annotations.
func keepCAOnly(c *corev1.ConfigMap) {
	if ca, ok := c.Data[pki.KeyCA]; ok {
		c.Data = map[string]string{pki.KeyCA: ca}
	} else {
		c.Data = nil
	}
	c.BinaryData = nil
	c.Annotations = nil
}

func applyOverrides(cfg *config.Config, opts Options) {
	if opts.MetricsAddress != "" {
		cfg.MetricsAddress = opts.MetricsAddress
	}
	if opts.HealthAddress != "" {
		cfg.HealthAddress = opts.HealthAddress
	}
	if opts.XDSAddress != "" {
		cfg.XDS.Address = opts.XDSAddress
	}
	if opts.LeaderElect != nil {
		cfg.LeaderElection.Enabled = *opts.LeaderElect
	}
	if opts.EnableDebugXDS != nil {
		cfg.XDS.DebugEndpoint = *opts.EnableDebugXDS
	}
}

// cacheSynced is ready once every informer the manager started has synced.
func cacheSynced(mgr crmanager.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches not synced")
		}
		return nil
	}
}

func ptr[T any](v T) *T { return &v }

// XDSCASecret holds the xDS CA, in the leader-election namespace.
const XDSCASecret = "shardgate-xds-ca"

// xdsCredentials returns the xDS server's mTLS credentials: from the config
// file's xds.tls files when set (watched: a rotated file applies to the
// next handshake), else from a CA kept in a Secret (created on first start,
// shared by every replica and restart) with a server certificate it issues
// and renews. Client certificates are
// always required and verified; the trusted CAs are re-read too.
//
// The CA bootstrap runs before the manager starts, so before any election,
// on every replica: it creates the Secret only if it is absent (and a racing
// create loses with AlreadyExists and loads the winner's CA). Its client
// counts into shardgate_kube_writes_total like the manager's, with
// leader="false" when leader election is enabled, so a replica that creates
// the CA shows it honestly as a write made while not (yet) leader. Replicas
// started once the CA exists only read it.
func xdsCredentials(ctx context.Context, rc *rest.Config, co client.Options, cfg config.Config, lead *leadership, log logr.Logger) (*xdsserver.Credentials, *pki.CA, error) {
	if cfg.XDS.TLS.Enabled() {
		creds, err := xdsserver.NewFileCredentials(ctx, xdsserver.FileTLS{CertFile: cfg.XDS.TLS.CertFile, KeyFile: cfg.XDS.TLS.KeyFile, CAFile: cfg.XDS.TLS.CAFile}, log)
		return creds, nil, err
	}
	wc, err := client.NewWithWatch(rc, co)
	if err != nil {
		return nil, nil, fmt.Errorf("xds CA: %w", err)
	}
	c := countWrites(wc, lead)
	ns := cfg.LeaderElection.Namespace
	ca, err := pki.LoadOrCreate(ctx, c, ns, XDSCASecret)
	if err != nil {
		return nil, nil, fmt.Errorf("xds CA Secret %s/%s: %w", ns, XDSCASecret, err)
	}
	names := []string{"localhost", "shardgate-xds", "shardgate-xds." + ns, "shardgate-xds." + ns + ".svc", "shardgate-xds." + ns + ".svc.cluster.local"}
	src := &pki.ServerSource{Reader: c, Secret: types.NamespacedName{Namespace: ns, Name: XDSCASecret}, DNSNames: names}
	creds, err := xdsserver.NewCredentials(ctx, src.Load, log)
	return creds, ca, err
}

// clientOptions are the process's scheme, HTTP client and REST mapper,
// for a client of its own.
func (p *process) clientOptions() client.Options {
	return client.Options{Scheme: p.scheme, HTTPClient: p.http, Mapper: p.mapper}
}

// infraOptions are the Envoy provisioning options of cfg.
func infraOptions(cfg config.Config) infra.Options {
	o := infra.ControllerOptions(cfg.Envoy.Image, cfg.LeaderElection.Namespace, cfg.XDS.Address)
	o.AnnotationPrefixes = cfg.Envoy.AnnotationPrefixes
	return o
}
