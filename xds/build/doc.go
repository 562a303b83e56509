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
//     listener and per cluster, the messages it built, and hands out the
//     very same message for a unit that did not change.
//   - Checker (checker.go) validates what changed (go-control-plane's
//     ValidateAll and the referential checks of translate) and keeps the
//     checked serializations; wire.go publishes a route table as the
//     concatenation of its virtual hosts' checked bytes, so the bytes sent
//     are the bytes checked.
//
// It never talks to Kubernetes or serves a stream: the xDS server
// (xds/server) publishes what it builds.
package build
