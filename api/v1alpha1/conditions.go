/*
Copyright The shardgate Authors.
*/

package v1alpha1

// Condition types. They are kept in one place so that the controllers, the
// status subcommand and the tests cannot drift apart on a spelling.
const (
	// ConditionReserved on a LeaseHost says whether its name is claimed for
	// its lease. It is the ownership decision; a False here means no route.
	ConditionReserved = "Reserved"

	// ConditionReady on a LeaseHost says whether traffic for its names
	// reaches the Service on every shard that selects it (each shard entry's
	// Admitted is True).
	ConditionReady = "Ready"

	// ConditionAdmitted on a LeaseHost shard entry mirrors the HTTPRoute's
	// parent status for that shard's Gateway.
	ConditionAdmitted = "Admitted"

	// ConditionAllocated on a LeasedIP says whether an IP is assigned.
	ConditionAllocated = "Allocated"

	// ConditionCertificateReady on a LeaseHost shard entry says whether the
	// shard serves the name over HTTPS with a certificate for it (shards
	// with automatic HTTPS, GatewayParameters spec.shard.tls).
	ConditionCertificateReady = "CertificateReady"

	// ConditionValid on a GatewayParameters says whether the controller can
	// use it; a Gateway referencing an invalid one is not programmed from it.
	ConditionValid = "Valid"
)

// Condition reasons. Tenants and tools match on these, so they are API:
// rename one only with a new API version.
const (
	// ReasonReserved: the name is held by this LeaseHost's lease.
	ReasonReserved = "Reserved"

	// ReasonBlocked: the name matches the provider's block list.
	ReasonBlocked = "Blocked"

	// ReasonHostnameInUse: another owner holds the name. The message never
	// names that owner.
	ReasonHostnameInUse = "HostnameInUse"

	// ReasonWithheld: another deployment of the same owner holds the name;
	// takeover moves it.
	ReasonWithheld = "Withheld"

	// ReasonTransferredAway: this LeaseHost held the name until a takeover
	// moved it to another deployment of the same owner.
	ReasonTransferredAway = "TransferredAway"

	// ReasonInvalidHostname: the requested hostname is not acceptable even
	// though it passed schema validation.
	ReasonInvalidHostname = "InvalidHostname"

	// ReasonInvalidHost: a composed host (subdomain.domain) is not a valid
	// DNS name, for example because it is too long.
	ReasonInvalidHost = "InvalidHost"

	// ReasonPending: the work is accepted but not finished, for example a
	// LoadBalancer IP not yet assigned.
	ReasonPending = "Pending"

	// ReasonPoolExhausted: the MetalLB pool has no free address.
	ReasonPoolExhausted = "PoolExhausted"

	// ReasonSelectorNotFound: a referenced selector target, such as the
	// workload Service, does not exist.
	ReasonSelectorNotFound = "SelectorNotFound"

	// ReasonAddressConflict: the requested address cannot be shared with the
	// Services already on it.
	ReasonAddressConflict = "AddressConflict"

	// ReasonAllocated: an IP is assigned.
	ReasonAllocated = "Allocated"

	// ReasonRouteGenerated: the HTTPRoute for the LeaseHost is written.
	ReasonRouteGenerated = "RouteGenerated"

	// ReasonBackendNotFound: the referenced Service does not exist; the route
	// exists anyway and reports ResolvedRefs=False.
	ReasonBackendNotFound = "BackendNotFound"

	// ReasonAdmitted: the shard's Gateway accepted the route.
	ReasonAdmitted = "Admitted"

	// ReasonNotAdmitted: the shard's Gateway did not accept the route; the
	// message carries the Gateway's reason.
	ReasonNotAdmitted = "NotAdmitted"

	// ReasonPartiallyAdmitted: Ready is False because some of the shards
	// that select the LeaseHost admitted its route and others refused it;
	// the shard entries say which and why.
	ReasonPartiallyAdmitted = "PartiallyAdmitted"

	// ReasonPartiallyReserved: some of the LeaseHost's names (one per shard)
	// are held and some are refused; the shard entries say which.
	ReasonPartiallyReserved = "PartiallyReserved"

	// ReasonNoShards: no shard selects this LeaseHost, so its route is
	// attached to no Gateway (and a subdomain composes no name).
	ReasonNoShards = "NoShards"

	// ReasonRouteConflict: an HTTPRoute with the generated route's name
	// exists and is not controlled by this LeaseHost; it is left alone.
	ReasonRouteConflict = "RouteConflict"

	// ReasonNamespaceOwnerMismatch: the object's namespace carries an owner
	// marking (shardgate.io/owner, or another configured key) that names a
	// different owner than its spec.lease.owner (for a LeaseHost, or its
	// shardgate.io/lease-owner label). A LeaseHost claims no name and gets
	// no route; a LeasedIP gets no LoadBalancer Service, and one it had is
	// deleted. The message never names the namespace's owner.
	ReasonNamespaceOwnerMismatch = "NamespaceOwnerMismatch"

	// ReasonNamespaceOwnerMissing: the object's namespace carries no owner
	// marking and the config requires one (requireNamespaceOwner, the
	// default). A LeaseHost claims no name and gets no route; a LeasedIP
	// gets no LoadBalancer Service, and one it had is deleted.
	ReasonNamespaceOwnerMissing = "NamespaceOwnerMissing"

	// ReasonShardInTenantNamespace: a Gateway whose parameters make it a
	// shard lives in a namespace that carries an owner marking, that is a
	// tenant's namespace, which never holds a shard. Reported on the
	// GatewayParameters (Valid=False) and as a Warning Event on the
	// Gateway, which is not Accepted (InvalidParameters).
	ReasonShardInTenantNamespace = "ShardInTenantNamespace"

	// ReasonGatewayInTenantNamespace: a Gateway of one of shardgate's
	// classes lives in a namespace that carries an owner marking, that is
	// a tenant's namespace. Such a Gateway gets no provider resources: it
	// is Accepted=False with this reason, nothing is served for it, and no
	// Envoy Deployment, Service (pool, addresses), bootstrap or xDS client
	// certificate is provisioned for it; those it had are deleted.
	ReasonGatewayInTenantNamespace = "GatewayInTenantNamespace"

	// ReasonShardNamespaceNotAllowed: a Gateway whose parameters make it a
	// shard lives in a namespace the config's shardNamespaces does not
	// list. Reported like ReasonShardInTenantNamespace.
	ReasonShardNamespaceNotAllowed = "ShardNamespaceNotAllowed"

	// ReasonNoListenerForDomain: the shard's Gateway has no listener whose
	// hostname matches the composed host.
	ReasonNoListenerForDomain = "NoListenerForDomain"
)

// Labels on generated objects (HTTPRoutes, Services). They carry the lease so
// that objects can be selected per lease without reading their owners.
const (
	LabelLeaseOwner = "shardgate.io/lease-owner"
	LabelLeaseDSeq  = "shardgate.io/lease-dseq"
	LabelLeaseGSeq  = "shardgate.io/lease-gseq"
	LabelLeaseOSeq  = "shardgate.io/lease-oseq"
)

const (
	// ControllerName is the GatewayClass spec.controllerName shardgate
	// implements, and the controllerName it writes into status.parents[]; it
	// only ever touches entries carrying this name.
	ControllerName = "shardgate.io/gateway-controller"

	// FieldOwner is the server-side apply field manager, so that re-applying
	// unchanged objects is a no-op and other managers' fields are left alone.
	FieldOwner = "shardgate"
)

// Gateway API route condition reasons shardgate uses where the Gateway API
// requires a condition but names no reason. They appear in HTTPRoute and
// GRPCRoute status.parents[] entries written by shardgate.
const (
	// ReasonRouteHostnameConflict: an HTTPRoute and a GRPCRoute attached to
	// one listener claim intersecting hostnames. The Gateway API accepts
	// exactly one of them (the oldest, then alphabetical namespace/name) and
	// the other gets Accepted=False with this reason.
	ReasonRouteHostnameConflict = "HostnameConflict"

	// ReasonHostnameNotOwned: a route's parent entry on a shard is refused
	// (Accepted=False) because the route may not serve a hostname it would
	// serve there: it is not the route shardgate generated for a name its
	// LeaseHost holds, and (with GatewayParameters shard.routes: Owned) the
	// name is not held by the owner of the route's namespace, or is a
	// wildcard whose domain is not wholly that owner's. Nothing of the entry
	// is served.
	ReasonHostnameNotOwned = "HostnameNotOwned"

	// ReasonPortNotOwned: a TCPRoute's parent entry on a shard is refused
	// (Accepted=False) because the route lives in an owner-marked (tenant)
	// namespace. A TCPRoute has no hostname to hold, so it would take the
	// listener's whole port: on a shard only TCPRoutes in the provider's
	// own (unmarked) namespaces are served, whatever the listener's
	// allowedRoutes say. Nothing of the entry is served.
	ReasonPortNotOwned = "PortNotOwned"

	// ReasonTenantLimitExceeded: a route's parent entry on a shard is
	// refused (Accepted=False) because serving it would take its tenant
	// (the owner of its namespace, or the namespace when unmarked) over one
	// of the shard's per-tenant limits (routes, rules, matches, regular
	// expressions; controller config shards.tenantLimits). A tenant's
	// routes are admitted oldest first (creationTimestamp, then UID), so a
	// new route never displaces an older one. The message names the limit.
	// Nothing of the entry is served.
	ReasonTenantLimitExceeded = "TenantLimitExceeded"
)

// LeasedIP condition reasons beyond the shared ones above (Allocated,
// Pending, PoolExhausted, SelectorNotFound, AddressConflict). They appear
// in a LeasedIP's Allocated condition.
const (
	// ReasonPoolNotFound: spec.pool names an IPAddressPool that does not
	// exist. No LoadBalancer Service is created until it does.
	ReasonPoolNotFound = "PoolNotFound"

	// ReasonServiceConflict: a Service with the LoadBalancer Service's name
	// exists and is not controlled by this LeasedIP; it is left alone.
	ReasonServiceConflict = "ServiceConflict"
)

// Gateway Event reasons. Gateway conditions use the Gateway API's own
// reasons (Programmed=False Invalid); these name the xDS decisions behind
// them in the Events shardgate emits on the Gateway.
const (
	// ReasonConfigRefused: the Gateway's translated config failed
	// validation and was not published; its proxies keep the last good
	// config.
	ReasonConfigRefused = "ConfigRefused"

	// ReasonConfigNACKed: a proxy of the Gateway rejected (NACKed) the
	// published config; it is not sent to that proxy again.
	ReasonConfigNACKed = "ConfigNACKed"

	// ReasonConfigPublished: the Gateway's config is published and no
	// proxy rejects it, after a refusal or a NACK.
	ReasonConfigPublished = "ConfigPublished"
)

// CertificateReady reasons (automatic HTTPS, GatewayParameters
// spec.shard.tls), in a LeaseHost shard entry's CertificateReady condition
// and in the Events on the LeaseHost or Akash ProviderHost. A False that
// cert-manager explains carries cert-manager's own reason instead (the
// Certificate's Ready condition), with its message.
const (
	// ReasonCertificateIssued (True): the shard serves the name on 443 with
	// the certificate cert-manager issued for it.
	ReasonCertificateIssued = "Issued"

	// ReasonShardCertificate (True): the name is under the shard's domain
	// and is served with the shard's own certificate; none is issued.
	ReasonShardCertificate = "ShardCertificate"

	// ReasonNoShardCertificate (False): the name is under the shard's
	// domain, so none is issued for it, but no HTTPS listener of the
	// shard's Gateway presents a certificate covering it (none matches the
	// name, or its certificate's wildcard covers one label and the name
	// has more under the domain).
	ReasonNoShardCertificate = "NoShardCertificate"

	// ReasonCertificateQueued (False): the name waits for its turn under
	// the issuer's rate limits (orders per account, certificates per
	// registered domain); the message says which limit and until when.
	ReasonCertificateQueued = "Queued"

	// ReasonCertificateIssuing (False): the Certificate is written and
	// cert-manager is issuing it.
	ReasonCertificateIssuing = "Issuing"

	// ReasonCertificateBackoff (False): issuance failed; the next attempt
	// waits, and is queued behind names that never failed. The message has
	// cert-manager's failure and the time of the next attempt.
	ReasonCertificateBackoff = "Backoff"

	// ReasonCertManagerNotInstalled (False): the cluster serves no
	// cert-manager.io/v1 Certificate: nothing can be issued.
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"

	// ReasonCertificateConflict (False): a Certificate, or a Secret, named
	// like the one shardgate would write for the name (shardgate-tls.<host>)
	// is in the namespace and was not written by shardgate (no
	// shardgate.io/auto-tls label); shardgate leaves it alone and writes no
	// Certificate for the name.
	ReasonCertificateConflict = "CertificateConflict"

	// ReasonCertificateRevoked (an Event only): the name is no longer held
	// on a shard with automatic HTTPS; shardgate deleted its Certificate and
	// Secret.
	ReasonCertificateRevoked = "CertificateRevoked"
)
