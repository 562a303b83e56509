// Package manager assembles the shardgate controller process: the
// controller-runtime manager (leader election, metrics, health probes), the
// config-file watcher and every controller. It owns wiring only; business
// rules live in the packages it wires together.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shardgate/shardgate/controllers"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/hostnames"
	"github.com/shardgate/shardgate/internal/infra"
	"github.com/shardgate/shardgate/internal/pki"
	"github.com/shardgate/shardgate/internal/scheme"
	"github.com/shardgate/shardgate/internal/status"
	xdsserver "github.com/shardgate/shardgate/xds/server"
	"github.com/shardgate/shardgate/xds/translate"
)

// Leader election timings. A new leader takes over writes within
// LeaseDuration of the old one dying (DESIGN §3a: at most 15 s).
const (
	LeaseDuration = 10 * time.Second
	RenewDeadline = 7 * time.Second
	RetryPeriod   = 2 * time.Second
	// TranslationHoldOff delays a translation after the first event of a
	// burst. Zero: a lone change is translated at once, and the events that
	// arrive while a translation runs are folded into the next one (the
	// work queue holds the key once), which batches a burst by itself.
	TranslationHoldOff = 0
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
	// EnableProfiling serves pprof under /debug/pprof/ on the metrics
	// address.
	EnableProfiling bool
	Log             logr.Logger

	// Test hooks (nil in the controller): see
	// controllers.GatewayAPIReconciler.MutateInput and
	// xdsserver.Options.Decorate.
	MutateInput func(*gatewayapi.Input)
	DecorateXDS func(group string, res *translate.Resources)
	// OnXDSServer receives the xDS server once built, so tests can read
	// its NACK records and address.
	OnXDSServer func(*xdsserver.Server)
	// OnXDSCredentials receives the xDS server's credentials, so tests can
	// rotate them.
	OnXDSCredentials func(*xdsserver.Credentials)
}

// Run runs the controller until ctx ends. It returns nil after a clean
// shutdown.
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
	} else if cfg.ControllerName == "" {
		cfg = config.Default()
	}
	applyOverrides(&cfg, opts)

	var xdsDebug atomic.Pointer[xdsserver.Server]
	extra := map[string]http.Handler{
		// What each Gateway's proxies are served (names and versions).
		"/debug/xds": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s := xdsDebug.Load(); s != nil {
				s.DebugHandler().ServeHTTP(w, r)
				return
			}
			http.Error(w, "xDS server not started", http.StatusServiceUnavailable)
		}),
	}
	if opts.EnableProfiling {
		extra["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		extra["/debug/pprof/cmdline"] = http.HandlerFunc(pprof.Cmdline)
		extra["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		extra["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
		extra["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	mgr, err := ctrl.NewManager(opts.RestConfig, ctrl.Options{
		Scheme:                        scheme.New(),
		Logger:                        log,
		Cache:                         cacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: cfg.MetricsAddress, ExtraHandlers: extra},
		HealthProbeBindAddress:        cfg.HealthAddress,
		LeaderElection:                cfg.LeaderElection.Enabled,
		LeaderElectionID:              cfg.LeaderElection.ID,
		LeaderElectionNamespace:       cfg.LeaderElection.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr(LeaseDuration),
		RenewDeadline:                 ptr(RenewDeadline),
		RetryPeriod:                   ptr(RetryPeriod),
		GracefulShutdownTimeout:       ptr(15 * time.Second),
		// Controller names are checked process-wide; a process runs one
		// manager, except tests that restart one in-process.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", cacheSynced(mgr)); err != nil {
		return fmt.Errorf("add readyz: %w", err)
	}
	blocked, err := hostnames.NewBlockList(cfg.BlockedHostnames...)
	if err != nil {
		return fmt.Errorf("config blockedHostnames: %w", err)
	}
	leaseHosts := &controllers.LeaseHostReconciler{
		Client:         mgr.GetClient(),
		Engine:         hostnames.New(blocked),
		ControllerName: cfg.ControllerName,
		Recorder:       mgr.GetEventRecorder("shardgate"),
		Log:            log.WithName("leasehost"),
	}
	leaseHosts.SetNamespaceOwnerAnnotation(cfg.NamespaceOwnerAnnotation)
	if err := leaseHosts.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up LeaseHost controller: %w", err)
	}
	if err := (&controllers.LeasedIPReconciler{Client: mgr.GetClient(), Log: log.WithName("leasedip")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up LeasedIP controller: %w", err)
	}
	if err := (&controllers.GatewayParametersReconciler{Client: mgr.GetClient(), ControllerName: cfg.ControllerName}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up GatewayParameters controller: %w", err)
	}
	writer := status.New(mgr.GetClient(), mgr.GetAPIReader(), cfg.ControllerName, log.WithName("status"))
	if err := mgr.Add(writer); err != nil {
		return fmt.Errorf("add status writer: %w", err)
	}
	gatewayAPI := &controllers.GatewayAPIReconciler{
		Cache:          mgr.GetCache(),
		ControllerName: cfg.ControllerName,
		Status:         writer,
		HoldOff:        TranslationHoldOff,
		Log:            log.WithName("gatewayapi"),
	}
	xdsCreds, ca, err := xdsCredentials(ctx, opts.RestConfig, cfg, log.WithName("xds-credentials"))
	if err != nil {
		return err
	}
	if err := mgr.Add(xdsCreds); err != nil { // renews and reloads
		return fmt.Errorf("add xDS credentials: %w", err)
	}
	if opts.OnXDSCredentials != nil {
		opts.OnXDSCredentials(xdsCreds)
	}
	_ = ca // the infra controller issues Envoy client certificates from it
	xdsServer := xdsserver.New(xdsserver.Options{
		Address:        cfg.XDS.Address,
		TLS:            xdsCreds.TLSConfig(),
		Log:            log.WithName("xds"),
		OnStatusChange: gatewayAPI.Trigger,
		Decorate:       opts.DecorateXDS,
	})
	xdsDebug.Store(xdsServer)
	if opts.OnXDSServer != nil {
		opts.OnXDSServer(xdsServer)
	}
	gatewayAPI.MutateInput = opts.MutateInput
	if err := mgr.Add(xdsServer); err != nil {
		return fmt.Errorf("add xDS server: %w", err)
	}
	if err := mgr.AddReadyzCheck("xds", func(*http.Request) error {
		if !xdsServer.Serving() {
			return errors.New("xDS server not serving")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("add readyz: %w", err)
	}
	gatewayRuntime := &controllers.GatewayRuntimeSource{
		Client:         mgr.GetClient(),
		ControllerName: cfg.ControllerName,
		Trigger:        gatewayAPI.Trigger,
		Log:            log.WithName("gateway-runtime"),
	}
	if err := gatewayRuntime.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up Gateway runtime source: %w", err)
	}
	infraReconciler := &controllers.InfraReconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		ControllerName: cfg.ControllerName,
		Options:        infra.ControllerOptions(cfg.Envoy.Image, cfg.LeaderElection.Namespace, cfg.XDS.Address),
		CA:             ca,
		Log:            log.WithName("infra"),
	}
	if ca == nil {
		infraReconciler.LoadCA = func(context.Context) (*pki.CA, error) {
			return nil, errors.New("xds.tls files are configured, so there is no CA key to issue Envoy client certificates from")
		}
	}
	if err := infraReconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up infra controller: %w", err)
	}
	gatewayAPI.Publisher = xdsServer
	gatewayAPI.Runtime = runtimeSource{addresses: gatewayRuntime, xds: xdsServer}
	if err := gatewayAPI.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up Gateway API controller: %w", err)
	}
	if watcher != nil {
		if err := mgr.Add(configRunnable{watcher: watcher, updates: updates, leaseHosts: leaseHosts, log: log.WithName("config")}); err != nil {
			return fmt.Errorf("add config watcher: %w", err)
		}
	}
	log.Info("starting shardgate controller",
		"controllerName", cfg.ControllerName,
		"metricsAddress", cfg.MetricsAddress, "healthAddress", cfg.HealthAddress,
		"xdsAddress", cfg.XDS.Address, "leaderElection", cfg.LeaderElection.Enabled,
		"blockedHostnames", len(cfg.BlockedHostnames))
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	log.Info("shardgate controller stopped")
	return nil
}

// cacheOptions keep the informer caches small: no managedFields anywhere
// (nothing reads them), the data of Secrets that are not TLS Secrets dropped
// (the translator only reports their type), and Envoy Deployments,
// ConfigMaps and ServiceAccounts cached only when shardgate manages them,
// instead of every one in the cluster.
func cacheOptions() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{infra.LabelManagedBy: infra.LabelManagedByValue})
	strip := cache.TransformStripManagedFields()
	return cache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:     {Label: ours},
			&corev1.ConfigMap{}:      {Label: ours},
			&corev1.ServiceAccount{}: {Label: ours},
			&corev1.Secret{}: {Transform: func(in any) (any, error) {
				if s, ok := in.(*corev1.Secret); ok && s.Type != corev1.SecretTypeTLS {
					for k := range s.Data {
						s.Data[k] = nil
					}
				}
				return strip(in)
			}},
		},
	}
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

// configRunnable runs the config watcher on every replica (it needs no
// leadership: it only reads a file) and applies what may change live: the
// block list.
type configRunnable struct {
	watcher    *config.Watcher
	updates    <-chan config.Config
	leaseHosts *controllers.LeaseHostReconciler
	log        logr.Logger
}

func (r configRunnable) Start(ctx context.Context) error {
	go func() {
		for c := range r.updates { // closed when the watcher stops
			b, err := hostnames.NewBlockList(c.BlockedHostnames...)
			if err != nil {
				r.log.Error(err, "reloaded block list refused; keeping the previous one")
				continue
			}
			r.log.Info("config reloaded", "blockedHostnames", b.Len(), "namespaceOwnerAnnotation", c.NamespaceOwnerAnnotation)
			r.leaseHosts.SetBlockList(b)
			r.leaseHosts.SetNamespaceOwnerAnnotation(c.NamespaceOwnerAnnotation)
		}
	}()
	return r.watcher.Run(ctx)
}

func (configRunnable) NeedLeaderElection() bool { return false }

func ptr[T any](v T) *T { return &v }

// runtimeSource joins what the translator needs to know from outside the
// Gateway API objects: Envoy Service addresses (addresses, may be nil) and
// the xDS server's publish results.
type runtimeSource struct {
	addresses controllers.RuntimeSource
	xds       *xdsserver.Server
}

func (r runtimeSource) Runtime() map[types.NamespacedName]gatewayapi.GatewayRuntime {
	out := map[types.NamespacedName]gatewayapi.GatewayRuntime{}
	if r.addresses != nil {
		for k, v := range r.addresses.Runtime() {
			out[k] = v
		}
	}
	for k, msg := range r.xds.PublishErrors() {
		rt := out[k]
		rt.PublishError = msg
		out[k] = rt
	}
	return out
}

// XDSCASecret holds the xDS CA, in the leader-election namespace.
const XDSCASecret = "shardgate-xds-ca"

// xdsCredentials returns the xDS server's mTLS credentials: from the config
// file's xds.tls files when set (re-read periodically), else from a CA kept
// in a Secret (created on first start, shared by every replica and restart)
// with a server certificate it issues and renews. Client certificates are
// always required and verified; the trusted CAs are re-read too.
func xdsCredentials(ctx context.Context, rc *rest.Config, cfg config.Config, log logr.Logger) (*xdsserver.Credentials, *pki.CA, error) {
	if cfg.XDS.TLS.Enabled() {
		creds, err := xdsserver.NewCredentials(ctx, xdsserver.FileSource(cfg.XDS.TLS.CertFile, cfg.XDS.TLS.KeyFile, cfg.XDS.TLS.CAFile), log)
		return creds, nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, fmt.Errorf("xds CA: %w", err)
	}
	ns := cfg.LeaderElection.Namespace
	ca, err := pki.LoadOrCreate(ctx, c, ns, XDSCASecret)
	if err != nil {
		return nil, nil, fmt.Errorf("xds CA in namespace %s (create the namespace, or set leaderElection.namespace): %w", ns, err)
	}
	names := []string{"localhost", "shardgate-xds", "shardgate-xds." + ns, "shardgate-xds." + ns + ".svc", "shardgate-xds." + ns + ".svc.cluster.local"}
	src := &pki.ServerSource{Reader: c, Secret: types.NamespacedName{Namespace: ns, Name: XDSCASecret}, DNSNames: names}
	creds, err := xdsserver.NewCredentials(ctx, src.Load, log)
	return creds, ca, err
}
