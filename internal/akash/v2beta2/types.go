package v2beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is akash.network/v2beta2.
var GroupVersion = schema.GroupVersion{Group: "akash.network", Version: "v2beta2"}

// AddToScheme registers the types of this package.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ProviderHost{}, &ProviderHostList{},
		&ProviderLeasedIP{}, &ProviderLeasedIPList{},
		&Manifest{}, &ManifestList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// LeaseID identifies a lease. DSeq is a decimal string on the wire.
type LeaseID struct {
	Owner    string `json:"owner"`
	DSeq     string `json:"dseq"`
	GSeq     uint32 `json:"gseq"`
	OSeq     uint32 `json:"oseq"`
	Provider string `json:"provider"`
}

// ProviderHost is one hostname of a lease, routed to one Service port.
//
// +kubebuilder:object:root=true
type ProviderHost struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderHostSpec `json:"spec,omitempty"`
}

// ProviderHostSpec is the provider's wire format.
type ProviderHostSpec struct {
	Owner        string `json:"owner"`
	Provider     string `json:"provider"`
	Hostname     string `json:"hostname"`
	Dseq         uint64 `json:"dseq"`
	Gseq         uint32 `json:"gseq"`
	Oseq         uint32 `json:"oseq"`
	ServiceName  string `json:"service_name"`
	ExternalPort uint32 `json:"external_port"`
}

// ProviderHostList is a list of ProviderHosts.
//
// +kubebuilder:object:root=true
type ProviderHostList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderHost `json:"items"`
}

// ProviderLeasedIP is one leased IP endpoint port of a lease.
//
// +kubebuilder:object:root=true
type ProviderLeasedIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderLeasedIPSpec `json:"spec,omitempty"`
}

// ProviderLeasedIPSpec is the provider's wire format. SharingKey is computed
// by the provider: "<owner>-ip-<endpoint>".
type ProviderLeasedIPSpec struct {
	LeaseID      LeaseID `json:"lease_id"`
	ServiceName  string  `json:"service_name"`
	Port         uint32  `json:"port"`
	ExternalPort uint32  `json:"external_port"`
	SharingKey   string  `json:"sharing_key"`
	Protocol     string  `json:"protocol"`
}

// ProviderLeasedIPList is a list of ProviderLeasedIPs.
//
// +kubebuilder:object:root=true
type ProviderLeasedIPList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderLeasedIP `json:"items"`
}

// Manifest is a lease's deployment manifest. Its name is the lease
// namespace's name. Only the fields shardgate reads are declared; the rest
// of the object is ignored on decoding.
//
// +kubebuilder:object:root=true
type Manifest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ManifestSpec `json:"spec,omitempty"`
}

// ManifestSpec is the lease and its group.
type ManifestSpec struct {
	LeaseID LeaseID       `json:"lease_id"`
	Group   ManifestGroup `json:"group"`
}

// ManifestGroup is the lease's group of services.
type ManifestGroup struct {
	Name     string            `json:"name,omitempty"`
	Services []ManifestService `json:"services,omitempty"`
}

// ManifestService is one SDL service.
type ManifestService struct {
	Name   string                  `json:"name,omitempty"`
	Count  uint32                  `json:"count,omitempty"`
	Expose []ManifestServiceExpose `json:"expose,omitempty"`
}

// ManifestServiceExpose is one exposed port.
type ManifestServiceExpose struct {
	Port         uint16                           `json:"port,omitempty"`
	ExternalPort uint16                           `json:"external_port,omitempty"`
	Proto        string                           `json:"proto,omitempty"`
	Service      string                           `json:"service,omitempty"`
	Global       bool                             `json:"global,omitempty"`
	Hosts        []string                         `json:"hosts,omitempty"`
	HTTPOptions  ManifestServiceExposeHTTPOptions `json:"http_options,omitempty"`
	IP           string                           `json:"ip,omitempty"`
}

// ManifestServiceExposeHTTPOptions are an expose's HTTP settings; timeouts
// are in milliseconds, MaxBodySize in bytes.
type ManifestServiceExposeHTTPOptions struct {
	MaxBodySize uint32   `json:"max_body_size,omitempty"`
	ReadTimeout uint32   `json:"read_timeout,omitempty"`
	SendTimeout uint32   `json:"send_timeout,omitempty"`
	NextTries   uint32   `json:"next_tries,omitempty"`
	NextTimeout uint32   `json:"next_timeout,omitempty"`
	NextCases   []string `json:"next_cases,omitempty"`
}

// ManifestList is a list of Manifests.
//
// +kubebuilder:object:root=true
type ManifestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Manifest `json:"items"`
}
