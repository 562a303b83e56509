package akash

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
)

// Labels Akash puts on the objects it manages. The provider lists generated
// routes and IP Services by these, so they are written exactly.
const (
	LabelManaged         = "akash.network"
	LabelManifestService = "akash.network/manifest-service"
	LabelServiceTarget   = "akash.network/service-target"
	LabelLeaseOwner      = "akash.network/lease.id.owner"
	LabelLeaseDSeq       = "akash.network/lease.id.dseq"
	LabelLeaseGSeq       = "akash.network/lease.id.gseq"
	LabelLeaseOSeq       = "akash.network/lease.id.oseq"
	LabelLeaseProvider   = "akash.network/lease.id.provider"
	// ServiceTargetMetalLB marks the LoadBalancer Services of leased IPs.
	ServiceTargetMetalLB = "metal-lb"
)

// Lease identifies one Akash lease.
type Lease struct {
	Owner    string
	DSeq     uint64
	GSeq     uint32
	OSeq     uint32
	Provider string
}

// String is Akash's lease ID string: owner/dseq/gseq/oseq/provider.
func (l Lease) String() string {
	return fmt.Sprintf("%s/%d/%d/%d/%s", l.Owner, l.DSeq, l.GSeq, l.OSeq, l.Provider)
}

// Namespace is the lease namespace, where the provider runs the lease's
// workloads: the lowercase, unpadded base32hex encoding of SHA-224 over the
// lease ID string (45 characters, a valid DNS label).
func (l Lease) Namespace() string {
	sum := sha256.Sum224([]byte(l.String()))
	return strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))
}

// Labels are the lease labels Akash puts on the objects of a lease.
func (l Lease) Labels() map[string]string {
	return map[string]string{
		LabelLeaseOwner:    l.Owner,
		LabelLeaseDSeq:     strconv.FormatUint(l.DSeq, 10),
		LabelLeaseGSeq:     strconv.FormatUint(uint64(l.GSeq), 10),
		LabelLeaseOSeq:     strconv.FormatUint(uint64(l.OSeq), 10),
		LabelLeaseProvider: l.Provider,
	}
}

// LeaseFromLabels recovers a lease from its labels, as the provider does
// when it lists generated objects. ok is false when a label is missing or
// malformed.
func LeaseFromLabels(labels map[string]string) (Lease, bool) {
	owner, provider := labels[LabelLeaseOwner], labels[LabelLeaseProvider]
	dseq, err1 := strconv.ParseUint(labels[LabelLeaseDSeq], 10, 64)
	gseq, err2 := strconv.ParseUint(labels[LabelLeaseGSeq], 10, 32)
	oseq, err3 := strconv.ParseUint(labels[LabelLeaseOSeq], 10, 32)
	if owner == "" || provider == "" || err1 != nil || err2 != nil || err3 != nil {
		return Lease{}, false
	}
	return Lease{Owner: owner, DSeq: dseq, GSeq: uint32(gseq), OSeq: uint32(oseq), Provider: provider}, true
}
