// Package infra builds, as pure functions, the Envoy data plane that
// shardgate provisions for each Gateway of its classes: the
// objects, the Envoy bootstrap, and the decisions around them
// (is an object up to date, is a client certificate due for reissue;
// which GatewayParameters apply is internal/params'). It never talks to the apiserver: the infra
// controller (controllers/infra.go) reads, calls Build, and applies.
//
// The bootstrap is defined once, as go-control-plane protos (Bootstrap, in
// test code); the controller renders it from bootstrap.yaml.tmpl, which
// TestBootstrapTemplate generates from them (-update) and checks, so the
// running controller never initialises those protobuf types.
//
// # Objects (a public contract)
//
// For Gateway <ns>/<gw>, every object lives in namespace <ns>, carries a
// controller owner reference to the Gateway (so the garbage collector
// removes them all with it), and the labels
//
//	app.kubernetes.io/name: envoy
//	app.kubernetes.io/managed-by: shardgate
//	gateway.networking.k8s.io/gateway-name: <gw>
//	shardgate.io/gateway: <gw>
//
// with the Gateway's spec.infrastructure.labels over them, except those
// under shardgate.io/ and gateway.networking.k8s.io/gateway-name, which
// are not copied (metadata.go). An infrastructure label may therefore
// replace app.kubernetes.io/name — Akash's per-lease NetworkPolicy admits
// only pods labelled app.kubernetes.io/name: ingress-nginx — or
// app.kubernetes.io/managed-by. The Gateway's spec.infrastructure.annotations
// are set too, from an allow-list (metadata.go AllowedAnnotation): keys
// without a prefix, and those under Options.AnnotationPrefixes (the
// config's envoy.annotationPrefixes), never those under shardgate.io/,
// metallb.io/ and metallb.universe.tf/, so no other load-balancer or IPAM
// controller's address annotation gets through by default. The pod
// template carries both, so changing them rolls the pods. The names are:
//
//	ServiceAccount       shardgate-<gw>
//	Deployment           shardgate-<gw>              spec.envoy.kind Deployment (default)
//	DaemonSet            shardgate-<gw>              spec.envoy.kind DaemonSet
//	PodDisruptionBudget  shardgate-<gw>              with spec.envoy.podDisruptionBudget
//	Service              shardgate-<gw>              type LoadBalancer
//	ConfigMap            shardgate-<gw>-bootstrap    key envoy.yaml
//	Secret               shardgate-<gw>-xds-client   kubernetes.io/tls: tls.crt, tls.key, ca.crt
//
// # Selecting the pods
//
// The workload, the Service and the PodDisruptionBudget select the pods by
// shardgate.io/gateway: <gw> alone (SelectorLabels), a label no
// infrastructure label can change, so no Gateway edit ever changes a
// selector. A workload's spec.selector is immutable. Deployments created
// before this label existed select app.kubernetes.io/name: envoy,
// app.kubernetes.io/managed-by: shardgate and the gateway-name label
// (LegacySelectorLabels); such a Deployment keeps that selector, and the
// Service and PodDisruptionBudget select by it too, as long as the pods
// still carry those labels, so an upgrade rolls the pods in place
// (AdoptSelector). When an infrastructure label replaces one of them, the
// pods first roll to a template with the old selector's labels and
// shardgate.io/gateway; once every pod has it, the Deployment is deleted
// with its ReplicaSets orphaned and created again selecting
// shardgate.io/gateway, which adopts the running ReplicaSet and rolls it to
// the final labels: the pods keep serving throughout, behind a Service
// that selects them all.
//
// A name that would not be a DNS-1035 label of at most 63 characters (a
// long Gateway name, or one with dots) is shortened: "shardgate-<gw>" with
// every character outside [a-z0-9-] replaced by '-', cut to fit, then "-",
// the first 8 hex digits of SHA-256(<gw>), then the suffix ("",
// "-bootstrap" or "-xds-client"). For example a 70-character Gateway name
// gives "shardgate-<first 44 characters>-1a2b3c4d". A Gateway name longer
// than 63 characters gets the same treatment in the gateway-name label
// value (first 54 characters, "-", hash). Name, BootstrapName,
// ClientCertName and GatewayLabelValue compute them.
//
// # The Envoy pods
//
//   - Image: GatewayParameters spec.envoy.image, else the controller's
//     envoy.image setting, else envoyproxy/envoy:v1.37.0. Replicas (kind
//     Deployment): spec.envoy.replicas (default 1; 0 is honoured). Resources:
//     spec.envoy.resources. Log level: spec.envoy.logLevel (default info).
//   - Arguments: -c /etc/envoy/envoy.yaml --service-node $(POD_NAME)
//     --log-level <level> --drain-time-s 15. The bootstrap sets node.id and
//     node.cluster to "<ns>/<gw>"; Envoy applies --service-node over
//     node.id, so every replica is its own node in the Gateway's node group
//     (node.cluster), which is what the xDS server keys on.
//   - xDS: ADS over gRPC (HTTP/2) to the static cluster "shardgate-xds",
//     STRICT_DNS to <xds host>:<xds port> (default
//     shardgate-xds.shardgate-system.svc:18000), with mutual TLS: the client
//     certificate and key, and the CA that checks the server, come from the
//     Secret mounted at /etc/shardgate/xds; SNI and the required server DNS
//     SAN are the xDS host. The certificate names the Gateway in a URI SAN
//     (pki.GatewayURI), so the xDS server can tell which node group a
//     connection may ask for. The controller issues it once and reissues it
//     only when it is missing, unreadable, from another CA, or within 30
//     days of expiry; the pod template carries a hash of it, so a reissue
//     rolls the pods (Envoy reads the files at start only).
//   - Admin: 127.0.0.1:19000 only — it can drain and stop Envoy, so nothing
//     outside the pod may reach it. The kubelet cannot probe loopback, so
//     the bootstrap has a static listener "shardgate-ready" on
//     0.0.0.0:19001 whose health_check filter answers GET /ready with 200
//     while Envoy is healthy and 503 once health checks are failed; the
//     readiness probe is an HTTP GET there and the liveness probe a TCP
//     connect there. Ports 19000, 19001 and 19002 (metrics) are reserved: a
//     Gateway listener on one of them cannot bind.
//   - Shutdown: the preStop hook POSTs /healthcheck/fail (readiness turns
//     503) and /drain_listeners?graceful to the admin interface, then sleeps
//     15 s (the drain time) before the kubelet sends SIGTERM;
//     terminationGracePeriodSeconds is 30. The envoyproxy/envoy image has
//     bash but no curl, so the hook speaks HTTP through bash's /dev/tcp. A
//     distroless Envoy image has no shell: with one, the hook fails
//     harmlessly (the kubelet logs it) and Envoy stops without draining.
//   - Security (hostNetwork differs, see Workload kinds): runAsNonRoot as
//     the image's envoy user (uid/gid 101), no privilege escalation, read-only root filesystem (an emptyDir on
//     /tmp), every capability dropped but NET_BIND_SERVICE, seccomp
//     RuntimeDefault, no service account token. Gateway listeners bind
//     their own ports (80, 443, ...) inside the pod; since a non-root
//     process gets no effective capabilities from the container's list
//     alone, the pod also sets the namespaced "safe" sysctl
//     net.ipv4.ip_unprivileged_port_start=0.
//   - The Service has one TCP port per distinct listener port, named
//     "<protocol lowercased>-<port>" (for example http-80, https-443), with
//     targetPort equal to the port. The container declares the readiness
//     port ("ready", 19001) and the metrics port ("metrics", 19002), and
//     listener ports only when they are host ports (below): listener ports
//     come and go through LDS and must not roll the pods.
//   - externalTrafficPolicy of the Service: spec.envoy.service.
//     externalTrafficPolicy, default Local. Local keeps the client's
//     address (kube-proxy does not SNAT), so Envoy appends the real client
//     to X-Forwarded-For; the load balancer sends traffic only to nodes
//     with a ready Envoy pod (their healthCheckNodePort answers), so a
//     Deployment's replicas should be spread over nodes, and traffic is
//     balanced per node, not per pod. Cluster balances over every pod
//     through any node, but Envoy then sees a node's address.
//
// # Workload kinds
//
//   - Deployment (default): spec.envoy.replicas pods.
//   - DaemonSet: one pod on each node that spec.envoy.nodeSelector,
//     affinity and tolerations admit. With hostPorts, every listener port
//     is also a hostPort of the same number (adding a listener port rolls
//     the pods). With hostNetwork, the pods run in the node's network
//     namespace with dnsPolicy ClusterFirstWithHostNet; the admin (19000,
//     still on loopback: anything on the node reaches it), readiness
//     (19001), metrics (19002) and listener ports are then the node's and
//     are all declared as host ports. The kubelet refuses net.* sysctls
//     there and uid 101 gets no effective capability, so Envoy runs as
//     root with every capability dropped but NET_BIND_SERVICE. Declared
//     host ports make the scheduler keep two pods needing one port off the
//     same node: the second Gateway's pod stays Pending there, and a
//     DaemonSet that should run somewhere but has no available pod
//     anywhere makes its Gateway Programmed=False with reason NoResources
//     (DaemonSetUnavailable). A DaemonSet holding host ports updates with
//     maxSurge 0 (the old pod must free the ports first).
//   - nodeSelector, tolerations, affinity and topologySpreadConstraints
//     apply to either kind.
//   - Switching kind: the new workload is applied, and the other one is
//     deleted once the new one has an available pod (a DaemonSet no node
//     admits never has one; a Deployment of 0 replicas needs none); both
//     select shardgate.io/gateway, so the Service keeps serving from the
//     old pods meanwhile.
//   - The Service stays of type LoadBalancer for both kinds: the Gateway's
//     status.addresses are its load-balancer addresses, and Programmed
//     follows them. With host ports the nodes' own addresses reach Envoy
//     as well; they are not reported.
//   - spec.envoy.podDisruptionBudget ({minAvailable} or {maxUnavailable})
//     gives the pods a PodDisruptionBudget; without it none exists (the
//     controller deletes the one it made).
//
// # Metrics
//
// The bootstrap has a static listener "shardgate-metrics" on 0.0.0.0:19002
// whose only route, GET with the exact path /stats/prometheus (a query
// string is passed on), goes to the static cluster "shardgate-admin"
// (127.0.0.1:19000); anything else gets 404, so the rest of the admin
// interface stays out of reach. stats_config.stats_matcher keeps only
// StatsInclusions: server, cluster manager, listener manager, control
// plane, runtime and overload statistics, each listener's connection
// counters, each HTTP connection manager's request totals by code class
// with connection and byte counters and request time, and 10 statistics per
// cluster (StatsPerCluster): upstream_rq_total, upstream_rq_2xx..5xx,
// upstream_cx_rx_bytes_total, upstream_cx_tx_bytes_total,
// upstream_cx_connect_fail, upstream_rq_timeout and membership_healthy.
// Each lease's Service port is a cluster "<ns>/<service>/<port>", so 10,000
// leases are 100,000 per-cluster series per pod instead of about 289 times
// 10,000 (testdata/envoy-cluster-stats.txt lists them, from Envoy's
// cluster_stats.rst). Envoy compiles the matcher before its runtime exists,
// so each regex stays within RE2's default program size of 100: one small
// regex per statistic.
//   - Addresses (internal/addresses): the Service carries
//     metallb.io/address-pool from GatewayParameters spec.addresses.pool and
//     metallb.io/loadBalancerIPs from the Gateway's spec.addresses of type
//     IPAddress (an unset type counts as IPAddress). An entry without a
//     value adds no IP: MetalLB assigns any address of the pool.
//
// # Running on a real cluster
//
// The shardgate controller runs in its namespace (leaderElection.namespace,
// default shardgate-system) behind a Service named "shardgate-xds" that
// exposes its xDS port (xds.address, default 18000); the xDS server's
// certificate must carry the DNS SAN shardgate-xds.<namespace>.svc. The
// xDS CA lives in the Secret shardgate-xds-ca in that namespace, created on
// first use. The controller needs RBAC to create, patch and watch
// ServiceAccounts, ConfigMaps, Secrets, Services, Deployments, DaemonSets
// and PodDisruptionBudgets in the Gateways' namespaces (and to delete the
// last three), and to set owner references on Gateways
// (gateways/finalizers update, for clusters that enforce
// OwnerReferencesPermissionEnforcement). MetalLB (or any LoadBalancer
// implementation) assigns the Service's address; Envoy's Programmed status
// follows it. Provisioning runs on the elected leader only.
package infra
