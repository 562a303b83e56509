/*
Copyright The shardgate Authors.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseRef names the Akash lease an object belongs to. Hostname claims are
// keyed by (owner, dseq, gseq): leases that differ only in oseq are the same
// deployment, so oseq never decides who holds a name.
type LeaseRef struct {
	// owner is the tenant's account address. Ownership rules compare it
	// verbatim, so two spellings of one account are two owners.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Owner string `json:"owner"`

	// dseq is the deployment sequence.
	// ---
	// The apiserver decodes integers as int64, so values above 2^63-1 are
	// refused even though the Go type is uint64.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DSeq uint64 `json:"dseq,omitempty"`

	// gseq is the group sequence within the deployment.
	// ---
	// Format is int64 on purpose: controller-gen emits int32 for uint32, and
	// the apiserver enforces int32 as a signed range (and then rejects the
	// 4294967295 maximum itself as out of range, failing every object).
	// +optional
	// +kubebuilder:validation:Format=int64
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	GSeq uint32 `json:"gseq,omitempty"`

	// oseq is the order sequence within the group.
	// ---
	// Format is int64 for the same reason as gseq's.
	// +optional
	// +kubebuilder:validation:Format=int64
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	OSeq uint32 `json:"oseq,omitempty"`

	// provider is the provider's account address. It is informational:
	// ownership does not depend on it.
	// +optional
	Provider string `json:"provider,omitempty"`
}

// ServiceRef is a Service port in the LeaseHost's own namespace. Cross-namespace
// references are deliberately impossible, so a tenant can only route to its
// own workloads.
type ServiceRef struct {
	// name is the Service's name (an RFC 1035 label, as Service names are).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// port is the Service port (not the target port) that traffic goes to.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// LeaseHostSpec asks for one name, either a full hostname or a subdomain
// composed per shard, routed to one Service port.
//
// +kubebuilder:validation:XValidation:rule="has(self.hostname) != has(self.subdomain)",message="exactly one of hostname and subdomain must be set"
type LeaseHostSpec struct {
	// lease is the lease this name belongs to; it is the key for ownership.
	// +required
	Lease LeaseRef `json:"lease"`

	// hostname is a full DNS name (lowercase RFC 1123 subdomain, no wildcard,
	// no trailing dot). Every shard serves this one name. Uppercase is refused
	// here rather than silently folded, so the stored name is the claimed name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self.split('.').all(l, l.size() <= 63)",message="each DNS label must be at most 63 characters"
	Hostname string `json:"hostname,omitempty"`

	// subdomain is one or more DNS labels; each selecting shard serves
	// <subdomain>.<shard domain>, so one LeaseHost gets one host per shard.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self.split('.').all(l, l.size() <= 63)",message="each DNS label must be at most 63 characters"
	Subdomain string `json:"subdomain,omitempty"`

	// service is where matching requests go.
	// +required
	Service ServiceRef `json:"service"`

	// path is a path prefix. The same rules as a Gateway API PathPrefix match
	// apply, so that every accepted LeaseHost yields an HTTPRoute the
	// apiserver accepts.
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('//') && !self.contains('/./') && !self.contains('/../') && !self.contains('%2f') && !self.contains('%2F') && !self.endsWith('/..') && !self.endsWith('/.')",message="path must not contain '//', '/./', '/../' or '%2F', and must not end with '/.' or '/..'"
	Path string `json:"path,omitempty"`

	// takeover moves the name to this lease when another deployment of the
	// same owner holds it (a blue-green cutover). It never takes a name from
	// a different owner.
	// +optional
	Takeover bool `json:"takeover,omitempty"`
}

// ShardStatus is what one shard serves for this LeaseHost. Entries exist only
// for shards that currently select the LeaseHost; stale ones are removed.
type ShardStatus struct {
	// name identifies the shard; it keys the list.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// gateway is the shard's Gateway as "namespace/name".
	// +optional
	Gateway string `json:"gateway,omitempty"`

	// host is the name this shard serves: the explicit hostname or the
	// composed subdomain.
	// +optional
	Host string `json:"host,omitempty"`

	// canonicalHostname is the shard's router name, the CNAME target for
	// tenants' DNS.
	// +optional
	CanonicalHostname string `json:"canonicalHostname,omitempty"`

	// conditions mirror the HTTPRoute's parent status for this shard's
	// Gateway (type Admitted).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LeaseHostStatus is the observed state of a LeaseHost. The controller
// rebuilds hostname claims from it after a restart, so it is part of the
// ownership state, not decoration.
type LeaseHostStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Reserved and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// shards has one entry per shard that selects this LeaseHost.
	// +optional
	// +listType=map
	// +listMapKey=name
	Shards []ShardStatus `json:"shards,omitempty"`

	// route is the name of the generated HTTPRoute, in this namespace.
	// +optional
	Route string `json:"route,omitempty"`

	// admitted summarises the shards: "<admitted>/<selecting>", the number
	// of shards whose Admitted condition is True over the number of shards
	// that select this LeaseHost (for example "1/2" when one shard refuses
	// the name). It is a display summary; status.shards is the detail.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Admitted string `json:"admitted,omitempty"`

	// reservedHosts are the names this LeaseHost holds, as last written by
	// the controller. After a restart they tell the ownership engine who
	// held what, so that a takeover's result survives a restart.
	// Only the controller may write LeaseHost status.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	ReservedHosts []string `json:"reservedHosts,omitempty"`
}

// LeaseHost is one hostname, or one subdomain, of one lease, routed to one
// Service port. It lives in the lease's namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=lh
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.lease.owner`
// +kubebuilder:printcolumn:name="DSeq",type=integer,JSONPath=`.spec.lease.dseq`
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.hostname`
// +kubebuilder:printcolumn:name="Subdomain",type=string,JSONPath=`.spec.subdomain`
// +kubebuilder:printcolumn:name="Reserved",type=string,JSONPath=`.status.conditions[?(@.type=="Reserved")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Admitted",type=string,JSONPath=`.status.admitted`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Route",type=string,priority=1,JSONPath=`.status.route`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LeaseHost struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec LeaseHostSpec `json:"spec"`

	// +optional
	Status LeaseHostStatus `json:"status,omitempty"`
}

// LeaseHostList is a list of LeaseHosts.
//
// +kubebuilder:object:root=true
type LeaseHostList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LeaseHost `json:"items"`
}

func init() {
	register(&LeaseHost{}, &LeaseHostList{})
}
