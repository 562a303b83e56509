// Package config owns the shardgate controller's configuration file (the
// --config flag; docs/configuration.md): its schema, its defaults, its validation and
// its live reload.
//
// The file is YAML (JSON works too). Its keys are a public contract:
//
//	blockedHostnames: ["example.com", ".blocked.example"]
//	controllerName: shardgate.io/gateway-controller
//	xds:
//	  address: ":18000"
//	  tls: {certFile: "", keyFile: "", caFile: ""}   # all or none
//	  debugEndpoint: false   # /debug/xds on the metrics address
//	  limits:                # per client; read at start
//	    streamsPerIdentity: 128
//	    streamsPerCertificate: 64
//	    resourceNamesPerStream: 40000
//	    maxRequestBytes: 2097152
//	envoy:
//	  image: envoyproxy/envoy:v1.37.0
//	metricsAddress: ":8080"
//	healthAddress: ":8081"
//	leaderElection:
//	  enabled: false
//	  namespace: shardgate-system
//	  id: shardgate.io-leader
//	namespaceOwnerAnnotation: ""     # an extra owner key, read after shardgate.io/owner
//	requireNamespaceOwner: true      # unmarked namespaces claim nothing
//	shardNamespaces: []              # empty: any namespace without an owner marking
//	akash:
//	  enabled: false                 # Akash's lease owner label counts as an owner marking
//	  metalLBPool: default           # the MetalLB pool of leased IPs (annotated unless "default")
//	shards:
//	  tenantLimits:                  # per tenant, per shard; live
//	    routes: 500
//	    rules: 1000
//	    matches: 2000
//	    regularExpressions: 100
//
// # What the package owns
//
//   - The Config type and Default.
//   - Parse and Load: strict decoding. An unknown key anywhere, a duplicate
//     key, a value of the wrong YAML type or an invalid value is an error
//     naming its key path ("unknown key \"xds.tlss\"",
//     "blockedHostnames[2]: ..."); all problems are reported at once. Absent,
//     null and empty-string values take the default; an empty file is
//     Default().
//   - Normalising the block list (as every requested name is): entries are trimmed,
//     lowercased and lose a trailing dot; "example.com" is an exact entry and
//     ".example.com" a suffix entry; "*.example.com" is rejected in favour of
//     ".example.com". The result is deduplicated and sorted. Matching
//     hostnames against the list is not this package's job (see
//     internal/hostnames).
//   - Watcher: the current configuration behind an atomic pointer, reloaded
//     when the file changes (fsnotify on the file's directory, which sees
//     editor rename-replace saves and ConfigMap "..data" symlink swaps, plus a
//     periodic re-stat fallback). Subscribers are told only when the parsed
//     configuration actually changes. Which changes take effect live is the
//     consumer's decision; the block list at least always does.
//
// # What it must never do
//
//   - Exit the process, panic on bad input, or call log.Fatal: a broken file
//     at start-up is an error returned to the caller, and a broken file
//     during a reload is logged (one line, "config reload failed", with the
//     file and the error), counted (Watcher.LastError,
//     Watcher.ReloadFailures, and the gauges
//     shardgate_config_last_reload_successful and
//     shardgate_config_last_reload_success_timestamp_seconds in
//     controller-runtime's metrics registry, metrics.go) and otherwise
//     ignored: the last good configuration stays in force.
//   - Write, create, chmod or delete the config file or anything in its
//     directory. It only reads and watches.
//   - Block the reload loop on a slow subscriber.
//   - Talk to the Kubernetes API; the file is its only input.
package config
