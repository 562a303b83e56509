// Package status owns writing Gateway API status: it takes the translator's
// desired status, compares it with what the cluster holds, and writes only
// what changed, once per object per batch.
//
// It writes only this controller's parts: a route's status.parents entries
// whose controllerName is ours (others' entries are kept verbatim), and the
// whole status of GatewayClasses and Gateways of our classes. It runs only
// on the elected leader; other replicas keep their latest desired status
// queued so that a new leader starts writing at once.
//
// It must never write an object whose status already matches, and never
// touch another controller's status.parents entry.
package status
