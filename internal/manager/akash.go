package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shardgate/shardgate/controllers"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// akashResources are the Akash CRDs Akash mode reads.
var akashResources = []string{"manifests", "providerhosts", "providerleasedips"}

// errAkashCRDs: akash.enabled is set but the cluster does not serve the
// Akash CRDs. Start-up waits for them (not ready, saying so), instead of
// exiting into a crash loop.
var errAkashCRDs = errors.New("akash.enabled is true but the cluster does not serve the Akash CRDs")

// checkAkashCRDs fails with errAkashCRDs, naming the missing resources,
// unless the apiserver serves every Akash resource Akash mode reads.
func checkAkashCRDs(rc *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return fmt.Errorf("akash: discovery client: %w", err)
	}
	list, err := dc.ServerResourcesForGroupVersion(akashv1.GroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("akash: discover %s: %w", akashv1.GroupVersion, err)
	}
	var missing []string
	for _, want := range akashResources {
		if list == nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want }) {
			missing = append(missing, want+"."+akashv1.GroupVersion.Group)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w (%s %s missing): install the Akash provider's CRDs (or crds/akash), or set akash.enabled: false", errAkashCRDs, akashv1.GroupVersion.Version, strings.Join(missing, ", "))
	}
	return nil
}

// setUpAkash registers Akash mode's controllers and API server on mgr,
// sharing the LeaseHost controller's hostname engine.
func (p *process) setUpAkash(mgr crmanager.Manager, leaseHosts *controllers.LeaseHostReconciler) error {
	cfg, log := p.cfg, p.log
	if err := (&controllers.ProviderHostReconciler{
		Client:     mgr.GetClient(),
		LeaseHosts: leaseHosts,
		Namespace:  cfg.Akash.Namespace,
		Recorder:   countingRecorder{EventRecorder: mgr.GetEventRecorder("shardgate"), lead: p.lead},
		Log:        log.WithName("akash-providerhost"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up ProviderHost controller: %w", err)
	}
	if err := (&controllers.ProviderLeasedIPReconciler{
		Client:    mgr.GetClient(),
		Namespace: cfg.Akash.Namespace,
		Pool:      cfg.Akash.MetalLBPool,
		Policy:    p.tenancy.Policy,
		Recorder:  countingRecorder{EventRecorder: mgr.GetEventRecorder("shardgate"), lead: p.lead},
		Log:       log.WithName("akash-providerleasedip"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up ProviderLeasedIP controller: %w", err)
	}
	if addr := cfg.Akash.APIAddress; addr != "" && addr != "0" {
		api := &controllers.AkashAPI{Reader: mgr.GetCache(), Namespace: cfg.Akash.Namespace, MetalLBPool: cfg.Akash.MetalLBPool, Log: log.WithName("akash-api")}
		if err := mgr.Add(&controllers.AkashAPIServer{API: api, Address: addr}); err != nil {
			return fmt.Errorf("add Akash API server: %w", err)
		}
	}
	return nil
}

// waitForAkash is the start-up step of Akash mode: wait, not ready, until
// the Akash CRDs are served.
func (p *process) waitForAkash(ctx context.Context) error {
	if !p.cfg.Akash.Enabled {
		return nil
	}
	return p.untilStarted(ctx, func(context.Context) error { return checkAkashCRDs(p.opts.RestConfig) })
}
