package statuscli

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Row is one line of `shardgate status`: one shard entry of one LeaseHost,
// or, for a LeaseHost without shard entries, the LeaseHost itself.
//
// The JSON (and YAML) field names are a contract for tooling: fields are
// added, never renamed or removed, within a major version. Every field is
// always present; "" means "none".
type Row struct {
	// Source is the kind of the row's object: "LeaseHost", or
	// "ProviderHost" for an Akash ProviderHost (Akash mode), whose
	// namespace, name and lease fill the LeaseHost fields.
	Source string `json:"source"`
	// Namespace and LeaseHost name the LeaseHost.
	Namespace string `json:"namespace"`
	LeaseHost string `json:"leaseHost"`
	// Owner, DSeq, GSeq and OSeq are the LeaseHost's spec.lease.
	Owner string `json:"owner"`
	DSeq  uint64 `json:"dseq"`
	GSeq  uint32 `json:"gseq"`
	OSeq  uint32 `json:"oseq"`
	// Shard is the shard entry's name (the shard Gateway's name); "" for a
	// LeaseHost without shard entries.
	Shard string `json:"shard"`
	// Gateway is the shard's Gateway as "namespace/name".
	Gateway string `json:"gateway"`
	// Host is the host this shard serves: the explicit hostname or the
	// composed subdomain. For a LeaseHost without shard entries it is the
	// requested spec.hostname ("" for a subdomain), so a refused name is
	// still visible.
	Host string `json:"host"`
	// CanonicalHostname is the shard's router name, the CNAME target.
	CanonicalHostname string `json:"canonicalHostname"`
	// Route is the generated HTTPRoute's name (status.route).
	Route string `json:"route"`
	// Reserved is the status of the LeaseHost's Reserved condition: "True",
	// "False", "Unknown", or "" when the controller has not written it.
	Reserved string `json:"reserved"`
	// Admitted is the status of the shard entry's Admitted condition: "True",
	// "False", "Unknown", or "" when there is none. A row is admitted only
	// when this is "True"; a LeaseHost without shard entries never is.
	Admitted string `json:"admitted"`
	// Reason and Message explain the row. When the LeaseHost's Reserved
	// condition is False they are its reason and message (Blocked,
	// HostnameInUse, Withheld, TransferredAway, ...): without the name
	// nothing is served, and that is the cause the tenant must act on,
	// whatever a shard entry still says. Otherwise they are the shard
	// entry's Admitted reason and message. For a LeaseHost without shard
	// entries they are the Reserved reason and message, or the Ready ones
	// when Ready is False (NoShards, say) and Reserved is not.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Certificate is the status of the shard entry's CertificateReady
	// condition (automatic HTTPS, GatewayParameters spec.shard.tls):
	// "True", "False", "Unknown", or "" when the shard has no automatic
	// HTTPS for this name (no such condition), and for a LeaseHost without
	// shard entries.
	Certificate string `json:"certificate"`
	// CertificateReason and CertificateMessage are that condition's reason
	// (Issued, ShardCertificate, Queued, Issuing, Backoff, ... or
	// cert-manager's own) and message; "" without the condition.
	CertificateReason  string `json:"certificateReason"`
	CertificateMessage string `json:"certificateMessage"`
}

// IsAdmitted reports whether the row's shard admitted the LeaseHost.
func (r Row) IsAdmitted() bool { return r.Admitted == string(metav1.ConditionTrue) }

// IsRetired reports whether the row's LeaseHost gave its name up to a
// takeover by another deployment of the same owner (Reserved=False
// TransferredAway): the blue of a blue-green cutover, which nothing is
// expected to serve any more.
func (r Row) IsRetired() bool { return r.Reason == shardgatev1alpha1.ReasonTransferredAway }

// IsUnadmitted reports whether the row counts for --fail-on-unadmitted: not
// admitted, and not retired by a takeover.
func (r Row) IsUnadmitted() bool { return !r.IsAdmitted() && !r.IsRetired() }

// RowsFor turns LeaseHosts into rows, sorted by namespace, LeaseHost and
// shard. Filters are not applied.
func RowsFor(items []shardgatev1alpha1.LeaseHost) []Row {
	var rows []Row
	for i := range items {
		lh := &items[i]
		base := Row{
			Source:    SourceLeaseHost,
			Namespace: lh.Namespace,
			LeaseHost: lh.Name,
			Owner:     lh.Spec.Lease.Owner,
			DSeq:      lh.Spec.Lease.DSeq,
			GSeq:      lh.Spec.Lease.GSeq,
			OSeq:      lh.Spec.Lease.OSeq,
			Route:     lh.Status.Route,
		}
		reserved := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved)
		refused := reserved != nil && reserved.Status == metav1.ConditionFalse
		if reserved != nil {
			base.Reserved = string(reserved.Status)
		}
		if len(lh.Status.Shards) == 0 {
			r := base
			r.Host = lh.Spec.Hostname
			if refused {
				r.Admitted = string(metav1.ConditionFalse)
			}
			if reserved != nil {
				r.Reason, r.Message = reserved.Reason, reserved.Message
			}
			// Reserved but served nowhere: Ready says why (NoShards,
			// RouteConflict, ...), which "Reserved" would hide.
			if ready := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReady); !refused && ready != nil && ready.Status == metav1.ConditionFalse {
				r.Reason, r.Message = ready.Reason, ready.Message
			}
			rows = append(rows, r)
			continue
		}
		for _, s := range lh.Status.Shards {
			r := base
			r.Shard, r.Gateway, r.Host, r.CanonicalHostname = s.Name, s.Gateway, s.Host, s.CanonicalHostname
			if c := meta.FindStatusCondition(s.Conditions, shardgatev1alpha1.ConditionAdmitted); c != nil {
				r.Admitted, r.Reason, r.Message = string(c.Status), c.Reason, c.Message
			}
			if c := meta.FindStatusCondition(s.Conditions, shardgatev1alpha1.ConditionCertificateReady); c != nil {
				r.Certificate, r.CertificateReason, r.CertificateMessage = string(c.Status), c.Reason, c.Message
			}
			if refused {
				r.Reason, r.Message = reserved.Reason, reserved.Message
			}
			rows = append(rows, r)
		}
	}
	sortRows(rows)
	return rows
}

// sortRows sorts by namespace, object name, shard and source.
func sortRows(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.LeaseHost != b.LeaseHost {
			return a.LeaseHost < b.LeaseHost
		}
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		return a.Source < b.Source
	})
}

// Filter is the row filter of `shardgate status`.
type Filter struct {
	// Owner keeps rows whose lease owner is exactly this.
	Owner string
	// Shard keeps rows of this shard, given as the shard's name or as its
	// Gateway "namespace/name". LeaseHosts without shard entries are
	// dropped.
	Shard string
}

// Apply returns the rows the filter keeps, in order.
func (f Filter) Apply(rows []Row) []Row {
	out := rows[:0:0]
	for _, r := range rows {
		if f.Owner != "" && r.Owner != f.Owner {
			continue
		}
		if f.Shard != "" && (r.Shard == "" || (r.Shard != f.Shard && r.Gateway != f.Shard)) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// String is the filter as its flags, for messages.
func (f Filter) String() string {
	var parts []string
	if f.Owner != "" {
		parts = append(parts, "--owner "+f.Owner)
	}
	if f.Shard != "" {
		parts = append(parts, "--shard "+f.Shard)
	}
	return strings.Join(parts, " ")
}

// UnknownFilterError says that --shard or --owner names something no listed
// row has: a typo, most likely, which an empty answer would hide.
type UnknownFilterError struct {
	// Flag is "--shard" or "--owner"; Value what it was given.
	Flag, Value string
	msg         string
}

func (e *UnknownFilterError) Error() string { return e.msg }

// unknown returns an *UnknownFilterError when the filter's shard or owner
// is in none of rows (the listing of namespace, before filters), nil
// otherwise. Shards are known by the LeaseHosts' shard entries: a shard
// that serves none of the listed LeaseHosts is unknown here.
func (f Filter) unknown(rows []Row, namespace string) error {
	if f.Shard != "" {
		shards := map[string]bool{}
		for _, r := range rows {
			if r.Shard == "" {
				continue
			}
			if r.Shard == f.Shard || r.Gateway == f.Shard {
				shards = nil
				break
			}
			shards[r.Shard] = true
		}
		if shards != nil {
			known := "no LeaseHost there has a shard entry"
			if len(shards) > 0 {
				names := make([]string, 0, len(shards))
				for s := range shards {
					names = append(names, s)
				}
				sort.Strings(names)
				known = "shards: " + strings.Join(names, ", ")
			}
			return &UnknownFilterError{Flag: "--shard", Value: f.Shard,
				msg: fmt.Sprintf("no shard named %s serves a LeaseHost in %s; %s", f.Shard, where(namespace), known)}
		}
	}
	if f.Owner != "" {
		for _, r := range rows {
			if r.Owner == f.Owner {
				return nil
			}
		}
		return &UnknownFilterError{Flag: "--owner", Value: f.Owner,
			msg: fmt.Sprintf("no LeaseHosts of owner %s in %s", f.Owner, where(namespace))}
	}
	return nil
}
