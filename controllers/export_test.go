package controllers

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Write is write, for the tests that run it against a real apiserver.
var Write = write

// RetryPruned and IsRetrySchemaError are the ProviderHost controller's
// tests of a route written on a CRD without rules[].retry.
var (
	RetryPruned        = retryPruned
	IsRetrySchemaError = isRetrySchemaError
)

// IPServiceUpToDate is the ProviderLeasedIP controller's test of whether a
// leased-IP Service needs writing.
var IPServiceUpToDate = ipServiceUpToDate

// ProviderLeasedIPServiceIndex and IPServiceIndex are the ProviderLeasedIP
// controller's cache index of the Service each produces.
const ProviderLeasedIPServiceIndex = providerLeasedIPServiceIndex

var IPServiceIndex = ipServiceIndex

// DeleteOrphan is the ProviderLeasedIP controller's orphan check and
// delete of the Service nn, run by a reconciler that reads c (a client of
// a cache with IPServiceIndex) and live (the apiserver), for
// ProviderLeasedIPs in namespace.
func DeleteOrphan(ctx context.Context, c client.Client, live client.Reader, namespace string, nn types.NamespacedName) error {
	r := &ProviderLeasedIPReconciler{Client: c, Namespace: namespace, Log: logr.Discard(), live: live,
		services: map[types.NamespacedName]types.NamespacedName{}, applied: map[types.UID]bool{}}
	return r.deleteOrphan(ctx, nn)
}
