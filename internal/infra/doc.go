// Package infra builds, as pure functions, the Envoy data plane that
// shardgate provisions for each Gateway of its classes: the
// objects, the Envoy bootstrap, and the decisions around them
// (is an object up to date, is a client certificate due for reissue, which
// GatewayParameters apply). It never talks to the apiserver: the infra
// controller (controllers/infra.go) reads, calls Build, and applies.
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
//
// (the last also selects the pods), over the Gateway's
// spec.infrastructure.labels; the Gateway's spec.infrastructure.annotations
// are set too, from an allow-list (metadata.go AllowedAnnotation): keys
// without a prefix, and those under Options.AnnotationPrefixes (the
// config's envoy.annotationPrefixes), never those under shardgate.io/,
// metallb.io/ and metallb.universe.tf/, so no other load-balancer or IPAM
// controller's address annotation gets through by default. The pod template carries both, so
// changing them rolls the pods. The names are:
//
//	ServiceAccount  shardgate-<gw>
//	Deployment      shardgate-<gw>
//	Service         shardgate-<gw>              type LoadBalancer
//	ConfigMap       shardgate-<gw>-bootstrap    key envoy.yaml
//	Secret          shardgate-<gw>-xds-client   kubernetes.io/tls: tls.crt, tls.key, ca.crt
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
//     envoy.image setting, else envoyproxy/envoy:v1.37.0. Replicas:
//     spec.envoy.replicas (default 1; 0 is honoured). Resources:
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
//     connect there. Ports 19000 and 19001 are reserved: a Gateway listener
//     may not use them.
//   - Shutdown: the preStop hook POSTs /healthcheck/fail (readiness turns
//     503) and /drain_listeners?graceful to the admin interface, then sleeps
//     15 s (the drain time) before the kubelet sends SIGTERM;
//     terminationGracePeriodSeconds is 30. The envoyproxy/envoy image has
//     bash but no curl, so the hook speaks HTTP through bash's /dev/tcp. A
//     distroless Envoy image has no shell: with one, the hook fails
//     harmlessly (the kubelet logs it) and Envoy stops without draining.
//   - Security: runAsNonRoot as the image's envoy user (uid/gid 101), no
//     privilege escalation, read-only root filesystem (an emptyDir on
//     /tmp), every capability dropped but NET_BIND_SERVICE, seccomp
//     RuntimeDefault, no service account token. Gateway listeners bind
//     their own ports (80, 443, ...) inside the pod; since a non-root
//     process gets no effective capabilities from the container's list
//     alone, the pod also sets the namespaced "safe" sysctl
//     net.ipv4.ip_unprivileged_port_start=0.
//   - The Service has one TCP port per distinct listener port, named
//     "<protocol lowercased>-<port>" (for example http-80, https-443), with
//     targetPort equal to the port. The container declares only the
//     readiness port: listener ports come and go through LDS and must not
//     roll the pods.
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
// ServiceAccounts, ConfigMaps, Secrets, Services and Deployments in the
// Gateways' namespaces, and to set owner references on Gateways
// (gateways/finalizers update, for clusters that enforce
// OwnerReferencesPermissionEnforcement). MetalLB (or any LoadBalancer
// implementation) assigns the Service's address; Envoy's Programmed status
// follows it. Provisioning runs on the elected leader only.
package infra
