// Package status owns writing Gateway API status: it takes the translator's
// desired status, compares it with what the cluster holds, and writes only
// what changed, once per object per batch.
//
// It writes only this controller's parts: a route's status.parents entries
// and a BackendTLSPolicy's status.ancestors entries whose controllerName is
// ours (others' entries are kept verbatim), and the whole status of
// GatewayClasses and Gateways of our classes. It runs only
// on the elected leader; other replicas keep their latest desired status
// queued so that a new leader starts writing at once.
//
// Our entries keep their place in status.parents, so that two controllers
// appending their own entries never reorder each other's. A status that
// someone else overwrites is restored, the first time at once and then
// with growing delays, so the writer never loops against another
// controller. While routes are still arriving, few writes are in flight at
// a time, leaving the apiserver to the Creates.
//
// It must never write an object whose status already matches, and never
// touch another controller's status.parents entry.
package status
