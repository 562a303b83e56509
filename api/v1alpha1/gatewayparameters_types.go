/*
Copyright The shardgate Authors.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ShardSpec makes a Gateway a shard: it serves LeaseHosts' subdomains under
// one domain and advertises one canonical name for tenants' CNAMEs.
type ShardSpec struct {
	// domain is the shard's DNS domain; a LeaseHost subdomain s is served
	// as s.<domain>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self.split('.').all(l, l.size() <= 63)",message="each DNS label must be at most 63 characters"
	Domain string `json:"domain"`

	// canonicalHostname is the shard's router name, reported in LeaseHost
	// status. Unset, the controller uses router-<gateway name>.<domain>; that
	// default depends on the Gateway, so it is applied by the controller, not
	// stored by the apiserver.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self.split('.').all(l, l.size() <= 63)",message="each DNS label must be at most 63 characters"
	CanonicalHostname string `json:"canonicalHostname,omitempty"`

	// leaseSelector selects LeaseHosts by their labels. Unset places no
	// restriction on labels.
	// +optional
	LeaseSelector *metav1.LabelSelector `json:"leaseSelector,omitempty"`

	// namespaceSelector selects LeaseHosts by their namespace's labels. Unset
	// places no restriction on namespaces.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// routes says which routes attached to the shard it serves. Generated
	// (the default) serves only the HTTPRoutes shardgate generates for
	// LeaseHosts, for the names they hold. Owned also serves routes that
	// tenants write (HTTPRoute, GRPCRoute, TLSRoute), for names held by the
	// owner of the route's namespace: an exact name held through a
	// LeaseHost, or a wildcard whose domain that owner holds, with no name
	// under it held by another owner and none blocked. Any other parent
	// entry on a shard is Accepted=False with reason HostnameNotOwned and
	// serves nothing. TCPRoutes, which have no hostname, are served in
	// either mode from the provider's namespaces only (no owner marking);
	// a tenant's is Accepted=False with reason PortNotOwned.
	// +optional
	// +kubebuilder:default=Generated
	Routes ShardRoutes `json:"routes,omitempty"`

	// tls turns on automatic HTTPS: every name the shard admits that is not
	// under its domain is served on port 443 with a certificate for exactly
	// that name, issued by cert-manager from issuerRef (HTTP-01) into a
	// Secret of the lease's namespace, and only while the name is held.
	// Names under the domain keep the shard's own certificate (its HTTPS
	// listener's) and are never issued one. Each shard entry of a LeaseHost
	// reports the CertificateReady condition.
	// +optional
	TLS *ShardTLS `json:"tls,omitempty"`
}

// ShardTLS is a shard's automatic HTTPS.
type ShardTLS struct {
	// issuerRef is the cert-manager issuer that signs the names' certificates.
	// +required
	IssuerRef IssuerReference `json:"issuerRef"`

	// redirectHTTP answers plain HTTP requests for a name with a 301 to
	// https:// once its certificate is served. Requests under
	// /.well-known/acme-challenge/ are not redirected.
	// +optional
	RedirectHTTP bool `json:"redirectHTTP,omitempty"`
}

// IssuerReference names a cert-manager issuer, as a Certificate's
// spec.issuerRef does.
type IssuerReference struct {
	// group is the issuer's API group: cert-manager.io for cert-manager's
	// own issuers, another group for an external issuer.
	// +optional
	// +kubebuilder:default=cert-manager.io
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`

	// kind is the issuer's kind. ClusterIssuer (the default) serves every
	// lease namespace; Issuer means an issuer of that name in each lease's
	// own namespace.
	// +optional
	// +kubebuilder:default=ClusterIssuer
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`

	// name is the issuer's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ShardRoutes says which routes a shard serves.
// +kubebuilder:validation:Enum=Generated;Owned
type ShardRoutes string

const (
	// ShardRoutesGenerated: only the routes shardgate generates for
	// LeaseHosts.
	ShardRoutesGenerated ShardRoutes = "Generated"
	// ShardRoutesOwned: also routes tenants write, for names the owner of
	// the route's namespace holds.
	ShardRoutesOwned ShardRoutes = "Owned"
)

// EnvoySpec tunes the Envoy fleet provisioned for a Gateway. Unset fields take
// the controller's configured defaults.
// +kubebuilder:validation:XValidation:rule="!(has(self.hostPorts) && self.hostPorts) || (has(self.kind) && self.kind == 'DaemonSet')",message="hostPorts needs kind DaemonSet"
// +kubebuilder:validation:XValidation:rule="!(has(self.hostNetwork) && self.hostNetwork) || (has(self.kind) && self.kind == 'DaemonSet')",message="hostNetwork needs kind DaemonSet"
// +kubebuilder:validation:XValidation:rule="!(has(self.hostPorts) && self.hostPorts && has(self.hostNetwork) && self.hostNetwork)",message="set one of hostPorts and hostNetwork"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.kind) || self.kind != 'DaemonSet'",message="replicas applies to kind Deployment only"
type EnvoySpec struct {
	// image is the Envoy container image.
	// +optional
	Image string `json:"image,omitempty"`

	// replicas is the Envoy Deployment's replica count. It is a pointer so
	// that 0 (scale to nothing) differs from unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// resources are the Envoy container's requests and limits.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// logLevel is Envoy's --log-level.
	// +optional
	// +kubebuilder:validation:Enum=trace;debug;info;warning;error;critical;off
	LogLevel string `json:"logLevel,omitempty"`

	// kind is the workload that runs Envoy: Deployment (the default;
	// replicas pods behind the Service) or DaemonSet (one pod on every node
	// nodeSelector, affinity and tolerations admit). Switching kind
	// removes the other workload once the new one has an available pod.
	// +optional
	// +kubebuilder:default=Deployment
	Kind EnvoyKind `json:"kind,omitempty"`

	// hostPorts publishes each Gateway listener port as a hostPort of the
	// same number on the node (DaemonSet only). Two Gateways with a common
	// port cannot both run on one node: the second one's pod stays
	// Pending there, and the Gateway's Programmed condition says so.
	// +optional
	HostPorts bool `json:"hostPorts,omitempty"`

	// hostNetwork runs the Envoy pods in the node's network namespace
	// (DaemonSet only): listeners bind the node's addresses directly, with
	// dnsPolicy ClusterFirstWithHostNet. The admin (19000, on loopback),
	// readiness (19001) and metrics (19002) ports are then the node's too,
	// so such a pod declares them, with the listener ports, as host ports:
	// the scheduler keeps two of them off one node.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`

	// nodeSelector constrains the Envoy pods to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the Envoy pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the Envoy pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints of the Envoy pods. Their labelSelector
	// should select the pods by shardgate.io/gateway: <gateway name>.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// podDisruptionBudget, when set, gives the Envoy pods a
	// PodDisruptionBudget (named like the workload, owned by the Gateway);
	// unset, none exists.
	// +optional
	PodDisruptionBudget *EnvoyPodDisruptionBudget `json:"podDisruptionBudget,omitempty"`

	// service tunes the Envoy Service.
	// +optional
	Service *EnvoyServiceSpec `json:"service,omitempty"`
}

// EnvoyKind is the workload kind of an Envoy fleet.
// +kubebuilder:validation:Enum=Deployment;DaemonSet
type EnvoyKind string

const (
	EnvoyKindDeployment EnvoyKind = "Deployment"
	EnvoyKindDaemonSet  EnvoyKind = "DaemonSet"
)

// EnvoyPodDisruptionBudget bounds voluntary disruptions of the Envoy pods.
// Exactly one of minAvailable and maxUnavailable is set.
// +kubebuilder:validation:XValidation:rule="has(self.minAvailable) != has(self.maxUnavailable)",message="exactly one of minAvailable and maxUnavailable must be set"
type EnvoyPodDisruptionBudget struct {
	// minAvailable pods (a number or a percentage).
	// +optional
	// +kubebuilder:validation:XIntOrString
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// maxUnavailable pods (a number or a percentage).
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// EnvoyServiceSpec tunes the Envoy Service. The Service is of type
// LoadBalancer whatever the workload kind: the Gateway's addresses are its
// load-balancer addresses.
type EnvoyServiceSpec struct {
	// externalTrafficPolicy of the Service. Local (the default) sends
	// external traffic only to Envoy pods on the node it arrived at, so
	// Envoy sees the client's address (and X-Forwarded-For is right);
	// nodes without a ready Envoy pod fail the load balancer's health check
	// and get none. Cluster spreads traffic over every pod, through any
	// node, at the cost of the client address (Envoy sees a node's).
	// +optional
	// +kubebuilder:default=Local
	ExternalTrafficPolicy EnvoyExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
}

// EnvoyExternalTrafficPolicy is the Envoy Service's externalTrafficPolicy.
// +kubebuilder:validation:Enum=Local;Cluster
type EnvoyExternalTrafficPolicy string

const (
	EnvoyExternalTrafficPolicyLocal   EnvoyExternalTrafficPolicy = "Local"
	EnvoyExternalTrafficPolicyCluster EnvoyExternalTrafficPolicy = "Cluster"
)

// AddressesSpec places a Gateway's LoadBalancer Service in MetalLB.
type AddressesSpec struct {
	// pool is the MetalLB IPAddressPool for the Gateway's Service.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pool string `json:"pool,omitempty"`
}

// TrafficSpec is how the Gateway's proxies treat the requests they carry.
// Every field has a default that gives a tenant's visitors at least what
// ingress-nginx gives them by default.
type TrafficSpec struct {
	// idleTimeout ends a request when neither the client nor the backend
	// has sent a byte for this long (ingress-nginx's proxy-read-timeout and
	// proxy-send-timeout). It is the only timeout a request without
	// timeouts of its own gets: no cap applies to a whole response, so a
	// stream or a long download runs as long as bytes flow. A route's
	// shardgate.io/idle-timeout annotation overrides it. 0 disables it.
	// Default 60s.
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// webSockets says which HTTP routes may upgrade a connection to a
	// WebSocket. All (the default), as ingress-nginx does: every route.
	// AppProtocol: only the routes shardgate generates (for LeaseHosts and
	// Akash), routes annotated shardgate.io/websocket: "true", and routes
	// to a Service port whose appProtocol is kubernetes.io/ws or
	// kubernetes.io/wss.
	// +optional
	// +kubebuilder:default=All
	WebSockets WebSocketsMode `json:"webSockets,omitempty"`

	// trustedHops is how many proxies in front of the Gateway's proxies
	// are trusted to append to X-Forwarded-For (Envoy's
	// xff_num_trusted_hops). 0 (the default) trusts none: the client
	// address is the peer of the connection (or the PROXY protocol's
	// source), which the proxy appends to X-Forwarded-For and passes as
	// X-Envoy-External-Address. Set it to the number of load balancers
	// that sit in front of the proxies and append their client's address.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	TrustedHops int32 `json:"trustedHops,omitempty"`

	// proxyProtocol makes every listener of the Gateway expect the PROXY
	// protocol (v1 or v2) from a load balancer in front of it, and take the
	// client address from it. A connection without a PROXY header is
	// refused, so turn it on only together with the load balancer.
	// +optional
	ProxyProtocol bool `json:"proxyProtocol,omitempty"`

	// accessLog is the access log of the Gateway's HTTP listeners,
	// written to the proxies' standard output. Default: JSON with the
	// fields listed in the documentation.
	// +optional
	AccessLog *AccessLogSpec `json:"accessLog,omitempty"`
}

// WebSocketsMode says which routes may upgrade to a WebSocket.
// +kubebuilder:validation:Enum=All;AppProtocol
type WebSocketsMode string

const (
	// WebSocketsAll: every HTTP route may upgrade.
	WebSocketsAll WebSocketsMode = "All"
	// WebSocketsAppProtocol: generated routes, routes annotated
	// shardgate.io/websocket: "true", and routes to WebSocket Service
	// ports.
	WebSocketsAppProtocol WebSocketsMode = "AppProtocol"
)

// AccessLogSpec is an access log format.
// +kubebuilder:validation:XValidation:rule="self.format != 'Text' || has(self.text)",message="format Text needs text"
// +kubebuilder:validation:XValidation:rule="self.format != 'JSON' || !has(self.text)",message="text applies to format Text only"
// +kubebuilder:validation:XValidation:rule="self.format == 'JSON' || !has(self.json)",message="json applies to format JSON only"
type AccessLogSpec struct {
	// format is JSON (the default), Text, or Off (no access log).
	// +optional
	// +kubebuilder:default=JSON
	Format AccessLogFormat `json:"format,omitempty"`

	// text is the line format for format Text, in Envoy's command
	// operators (for example "%START_TIME% %REQ(:METHOD)% %RESPONSE_CODE%\n").
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Text string `json:"text,omitempty"`

	// json replaces the default JSON fields for format JSON: each key is a
	// field name, each value Envoy's command operators.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	JSON map[string]string `json:"json,omitempty"`
}

// AccessLogFormat is how access log lines are written.
// +kubebuilder:validation:Enum=JSON;Text;Off
type AccessLogFormat string

const (
	AccessLogJSON AccessLogFormat = "JSON"
	AccessLogText AccessLogFormat = "Text"
	AccessLogOff  AccessLogFormat = "Off"
)

// GatewayParametersSpec holds per-Gateway settings. Every section is optional;
// a Gateway whose parameters have a shard section is a shard.
type GatewayParametersSpec struct {
	// shard makes the Gateway a shard.
	// +optional
	Shard *ShardSpec `json:"shard,omitempty"`

	// envoy tunes the Gateway's Envoy fleet.
	// +optional
	Envoy *EnvoySpec `json:"envoy,omitempty"`

	// addresses configures the Gateway's addresses.
	// +optional
	Addresses *AddressesSpec `json:"addresses,omitempty"`

	// traffic is how the Gateway's proxies treat requests: timeouts,
	// WebSockets, client addresses and the access log.
	// +optional
	Traffic *TrafficSpec `json:"traffic,omitempty"`
}

// GatewayParametersStatus is the observed state of a GatewayParameters.
type GatewayParametersStatus struct {
	// conditions are Valid.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GatewayParameters holds per-Gateway settings. A Gateway references it with
// spec.infrastructure.parametersRef; a GatewayClass parametersRef may point to
// one as the class default.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=gwp
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.shard.domain`
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.addresses.pool`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewayParameters struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec GatewayParametersSpec `json:"spec,omitempty"`

	// +optional
	Status GatewayParametersStatus `json:"status,omitempty"`
}

// GatewayParametersList is a list of GatewayParameters.
//
// +kubebuilder:object:root=true
type GatewayParametersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayParameters `json:"items"`
}

func init() {
	register(&GatewayParameters{}, &GatewayParametersList{})
}
