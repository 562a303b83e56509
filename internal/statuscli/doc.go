// Package statuscli implements `shardgate status`: it lists LeaseHosts and
// prints one row per entry in status.shards[], the multi-shard view of which
// shard serves which host and whether that shard admitted it.
//
// The package reads; it never writes to the apiserver. Run does the work
// against any controller-runtime client (the tests use the real apiserver of
// internal/testenv), Render is pure, and Execute is the whole command as the
// binary runs it: the connection from kubectl's flags (package kubeflags:
// kubeconfig, --server, --token, --as, ...), Run (or Watch),
// and the exit status.
// Tables, jsonpath and custom-columns are printed by kubectl's printers
// (k8s.io/cli-runtime), not by code of its own.
package statuscli
