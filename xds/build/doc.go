/*
Copyright The shardgate Authors.
*/

// Package build is the incremental layer between the IR (internal/ir) and
// the xDS server: it turns one Gateway's IR, published again and again with
// small changes, into the Envoy resources to serve, at the cost of what
// changed. It calls the pure per-unit functions of xds/translate and owns
// everything that remembers across publishes:
//
//   - Memo (memo.go) remembers, per route table and virtual host, per HTTP
//     listener, per HTTPS listener and filter chain (TLS server), per
//     cluster and per secret, the messages it built, and hands out the
//     very same message for a unit that did not change (a whole route
//     table, or HTTPS listener, when the IR's change names none of it).
//     It keeps the route table list it last handed out (memo_tables.go):
//     an IR whose change names a few virtual hosts builds their tables
//     again in that list, and looks at no other (a shard with automatic
//     HTTPS has a table per name it serves).
//   - Builder (builder.go), one per Gateway, is what the xDS server calls:
//     Build takes the Gateway's IR and returns a Config, a validated
//     go-control-plane snapshot with its versions and what else the
//     server publishes. It adds the clusters that left the config and stay
//     published for a while (retain.go), and assembles and versions the
//     snapshot from the previous one (snapshot.go: only what changed is
//     indexed and versioned again).
//   - Checker (checker.go) validates what changed (go-control-plane's
//     ValidateAll and the referential checks of translate) and keeps the
//     checked serializations (a table or listener handed out again is not
//     walked again; a listener of many filter chains is validated chain by
//     chain, its new chains only; the route tables and secrets that are
//     the last passed check's very messages are not looked at, and their
//     name sets are updated, not rebuilt: checker_tables.go); wire.go
//     publishes a route table as the
//     concatenation of its virtual hosts' checked bytes, so the bytes sent
//     are the bytes checked.
//
// What changed comes from the IR (ir.Gateway.Change): the virtual hosts and
// clusters the Gateway API layer's patch named, relative to the IR the
// Builder built last; an IR without such a change has each unit compared
// with the IR it was last built from (virtual hosts by content), and
// built again where it differs. Beyond that comparison, the IR's slices
// and pointers are never taken as a signal. Below the IR, the
// Checker and the snapshot assembly recognise the messages the memo hands
// out again by identity: those are the Builder's own, never modified once
// built, and a message seen before is one already checked and versioned.
//
// Validation happens as a config is built, before anything is handed out;
// the memo then adopts the checked wire forms (Memo.adopt), so what is
// published is exactly what was validated.
//
// It never talks to Kubernetes or serves a stream: the xDS server
// (xds/server) publishes what it builds.
package build
