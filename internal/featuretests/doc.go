// Package featuretests holds feature tests only: tests of what a proxy is
// served after Kubernetes objects change, through the production code, in
// one process, without an apiserver (in the manner of Contour's
// internal/featuretests).
//
// A test applies objects to the tier. The tier does what an informer does
// with a watch event: it puts the object into that kind's informer store, a
// client-go SharedIndexInformer's own indexer, and calls the event handler
// the Gateway API controller registers for the kind
// (controllers.GatewayAPIReconciler.Watches: the Store's handler, the
// EndpointSlice handler, the LeaseHost handler), with the queue of a real
// controller-runtime controller. That controller runs the production
// GatewayAPIReconciler.Reconcile, which reads the stores (the LeaseHosts
// through the same GetInformer as on the manager's cache), translates, and
// publishes to the production xDS server (xds/server.Server), which serves
// on a loopback port over mTLS with credentials from internal/pki. Tests
// read the result with the shared ADS clients (internal/xdstest), as a
// proxy of the Gateway subscribes, and assert what a visitor would get.
//
// What is not real, and why: there is no apiserver, so no reflector fills
// the informers; the tier fills their stores instead, and assigns what the
// apiserver would (UID, resourceVersion, generation, creationTimestamp).
// Nothing in the production code knows a test is running: the reconciler,
// handlers, store, translator and server take the same paths as in the
// controller. Status is computed and handed to the status writer, which is
// never started (it writes only on the leader, through the apiserver); the
// controllers that write objects (the LeaseHost controller's generated
// HTTPRoutes, Envoy provisioning) need the apiserver and are not part of
// the tier: a test applies the generated route as leasehosts.RouteFor
// makes it.
package featuretests
