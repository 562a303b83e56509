/*
Copyright The shardgate Authors.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeasedIPSpec asks for one dedicated IP endpoint of a lease: one external
// port and protocol on the IP that the lease's owner and endpoint name share.
type LeasedIPSpec struct {
	// lease is the lease this endpoint belongs to.
	// +required
	Lease LeaseRef `json:"lease"`

	// endpoint is the tenant's endpoint name (the SDL ip_name). It is
	// free-form: names that are not DNS-safe are hashed into the sharing key
	// instead of being refused, so any tenant input keeps working.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Endpoint string `json:"endpoint"`

	// service is the workload Service, in this namespace, whose selector the
	// IP's LoadBalancer Service copies.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Service string `json:"service"`

	// port is the target port on the workload's pods.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// externalPort is the port exposed on the leased IP.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ExternalPort int32 `json:"externalPort"`

	// protocol is TCP or UDP. TCP and UDP on one external port are distinct
	// endpoints.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP
	Protocol string `json:"protocol,omitempty"`

	// pool is the MetalLB IPAddressPool to allocate from; unset lets MetalLB
	// choose.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pool string `json:"pool,omitempty"`
}

// LeasedIPStatus is the observed state of a LeasedIP.
type LeasedIPStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ip is the address MetalLB assigned, read from the Service.
	// +optional
	IP string `json:"ip,omitempty"`

	// sharingKey is the metallb.io/allow-shared-ip key. It is reported because
	// it is derived (hashed for non-DNS-safe endpoint names) and otherwise
	// invisible to the tenant.
	// +optional
	SharingKey string `json:"sharingKey,omitempty"`

	// service is the name of the LoadBalancer Service created for this
	// endpoint.
	// +optional
	Service string `json:"service,omitempty"`

	// conditions are Allocated.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LeasedIP is a leased, dedicated IP endpoint. It lives in the lease's
// namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=lip
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.lease.owner`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="ExternalPort",type=integer,JSONPath=`.spec.externalPort`
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.spec.protocol`
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.status.ip`
// +kubebuilder:printcolumn:name="Allocated",type=string,JSONPath=`.status.conditions[?(@.type=="Allocated")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Allocated")].reason`
// +kubebuilder:printcolumn:name="Service",type=string,priority=1,JSONPath=`.status.service`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LeasedIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec LeasedIPSpec `json:"spec"`

	// +optional
	Status LeasedIPStatus `json:"status,omitempty"`
}

// LeasedIPList is a list of LeasedIPs.
//
// +kubebuilder:object:root=true
type LeasedIPList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LeasedIP `json:"items"`
}

func init() {
	register(&LeasedIP{}, &LeasedIPList{})
}
