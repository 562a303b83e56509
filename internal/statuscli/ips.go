package statuscli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	"github.com/shardgate/shardgate/internal/kubeflags"
)

// IPsHelp is the long help of `shardgate status ips`. It documents the
// output contract; a test checks that it names every JSON field.
const IPsHelp = `Show MetalLB address pool usage and every LeasedIP with its address.

Two tables. Pools (every IPAddressPool in the cluster, whatever -n says):
  POOL       the IPAddressPool's name
  ASSIGNED   addresses MetalLB has assigned (status.assignedIPv4 + IPv6)
  AVAILABLE  addresses still free (status.availableIPv4 + IPv6)

Leased IPs (the namespace of -n, the context's namespace, or all with -A):
  NAMESPACE, LEASEDIP  the LeasedIP
  ENDPOINT             the tenant's endpoint name
  IP                   the assigned address ("-" while none)
  PORTS                externalPort/protocol, e.g. 80/TCP
  STATE                the Allocated condition's reason: Allocated, Pending,
                       PoolExhausted, PoolNotFound, SelectorNotFound,
                       AddressConflict or ServiceConflict ("-" before the
                       controller has written one)
  -o wide adds OWNER (its lease's owner, after LEASEDIP), POOL (spec.pool),
  SERVICE (the LoadBalancer Service) and SHARING KEY (the
  metallb.io/allow-shared-ip value).

Rows are sorted by pool name, and by namespace and LeasedIP name.

-o json and -o yaml print {"pools": [...], "leasedIPs": [...]} with these
fields, always all present ("" means none). Tools may rely on them; fields
are only ever added:
  pools[]:
    namespace, name                  the IPAddressPool
    assigned, available              IPv4 and IPv6 added up (saturating at
                                     9223372036854775807 for huge IPv6 ranges)
    assignedIPv4, assignedIPv6,
    availableIPv4, availableIPv6     the pool's status as MetalLB wrote it
  leasedIPs[]:
    namespace, leasedIP              the LeasedIP
    owner, dseq, gseq, oseq          its lease (numbers for the sequences)
    endpoint                         spec.endpoint
    ip                               status.ip
    ports                            as PORTS above
    externalPort, port, protocol     spec.externalPort, spec.port (target),
                                     spec.protocol (TCP or UDP)
    pool                             spec.pool
    service                          status.service
    sharingKey                       status.sharingKey
    allocated                        the Allocated condition status: "True",
                                     "False", "Unknown" or ""
    reason, message                  the Allocated condition's reason and
                                     message

Exit status:
  0  listed
  2  could not answer: bad flags or arguments, no usable kubeconfig, the
     apiserver unreachable or refusing the request

The kubeconfig is found as kubectl finds it, and kubectl's connection flags
(--context, --server, --token, --as, ...) work as in kubectl; without -n or
-A the context's namespace is listed. Without MetalLB's CRDs, or without permission to list
IPAddressPools, the pools table is empty and a notice goes to stderr.`

// IPsExample is the example section of `shardgate status ips`.
const IPsExample = `  # pool usage and every leased IP
  shardgate status ips -A

  # one lease namespace, for a script
  shardgate status ips -n lease-ns -o json`

// IPsDocument is what `status ips -o json|yaml` prints. Neither list is
// ever null.
type IPsDocument struct {
	Pools     []addresses.PoolUsage `json:"pools"`
	LeasedIPs []IPRow               `json:"leasedIPs"`
}

// IPRow is one LeasedIP of `shardgate status ips`. The JSON field names are
// a contract (see IPsHelp).
type IPRow struct {
	Namespace    string `json:"namespace"`
	LeasedIP     string `json:"leasedIP"`
	Owner        string `json:"owner"`
	DSeq         uint64 `json:"dseq"`
	GSeq         uint32 `json:"gseq"`
	OSeq         uint32 `json:"oseq"`
	Endpoint     string `json:"endpoint"`
	IP           string `json:"ip"`
	Ports        string `json:"ports"`
	ExternalPort int32  `json:"externalPort"`
	Port         int32  `json:"port"`
	Protocol     string `json:"protocol"`
	Pool         string `json:"pool"`
	Service      string `json:"service"`
	SharingKey   string `json:"sharingKey"`
	Allocated    string `json:"allocated"`
	Reason       string `json:"reason"`
	Message      string `json:"message"`
}

// IPRowsFor turns LeasedIPs into rows sorted by namespace and name.
func IPRowsFor(items []shardgatev1alpha1.LeasedIP) []IPRow {
	rows := make([]IPRow, 0, len(items))
	for i := range items {
		l := &items[i]
		proto := l.Spec.Protocol
		if proto == "" {
			proto = "TCP"
		}
		r := IPRow{
			Namespace: l.Namespace, LeasedIP: l.Name,
			Owner: l.Spec.Lease.Owner, DSeq: l.Spec.Lease.DSeq, GSeq: l.Spec.Lease.GSeq, OSeq: l.Spec.Lease.OSeq,
			Endpoint: l.Spec.Endpoint, IP: l.Status.IP,
			Ports:        strconv.FormatInt(int64(l.Spec.ExternalPort), 10) + "/" + proto,
			ExternalPort: l.Spec.ExternalPort, Port: l.Spec.Port, Protocol: proto,
			Pool: l.Spec.Pool, Service: l.Status.Service, SharingKey: l.Status.SharingKey,
		}
		if c := meta.FindStatusCondition(l.Status.Conditions, shardgatev1alpha1.ConditionAllocated); c != nil {
			r.Allocated, r.Reason, r.Message = string(c.Status), c.Reason, c.Message
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].LeasedIP < rows[j].LeasedIP
	})
	return rows
}

var (
	poolColumns     = []string{"POOL", "ASSIGNED", "AVAILABLE"}
	ipColumns       = []string{"NAMESPACE", "LEASEDIP", "OWNER", "ENDPOINT", "IP", "PORTS", "STATE"}
	ipWideExtension = []string{"POOL", "SERVICE", "SHARING KEY"}
	// ipWideOnly are the columns of ipColumns that only -o wide shows: an
	// Akash owner address alone is 44 characters.
	ipWideOnly = map[string]bool{"OWNER": true}
)

// RenderIPs writes doc in format. It is pure. Tables print "-" for empty
// cells; the two tables are separated by an empty line.
func RenderIPs(doc IPsDocument, format Format, w io.Writer) error {
	if doc.Pools == nil {
		doc.Pools = []addresses.PoolUsage{}
	}
	if doc.LeasedIPs == nil {
		doc.LeasedIPs = []IPRow{}
	}
	if format == FormatTable || format == FormatWide || format == "" {
		return renderIPTables(doc, format == FormatWide, w)
	}
	p, err := NewPrinter(format)
	if err != nil {
		return err
	}
	// custom-columns apply to each LeasedIP, as the main table lists them.
	items := make([]any, len(doc.LeasedIPs))
	for i := range doc.LeasedIPs {
		items[i] = doc.LeasedIPs[i]
	}
	return p.print(doc, items, nil, w)
}

func renderIPTables(doc IPsDocument, wide bool, w io.Writer) error {
	pools := &metav1.Table{}
	for _, c := range poolColumns {
		pools.ColumnDefinitions = append(pools.ColumnDefinitions, metav1.TableColumnDefinition{Name: c, Type: "string"})
	}
	for _, p := range doc.Pools {
		pools.Rows = append(pools.Rows, metav1.TableRow{Cells: cellValues([]string{p.Name, strconv.FormatInt(p.Assigned, 10), strconv.FormatInt(p.Available, 10)})})
	}
	if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(pools, w); err != nil {
		return err
	}
	if len(doc.Pools) > 0 && len(doc.LeasedIPs) > 0 {
		fmt.Fprintln(w)
	}
	ips := &metav1.Table{}
	for _, c := range ipColumns {
		def := metav1.TableColumnDefinition{Name: c, Type: "string"}
		if ipWideOnly[c] {
			def.Priority = 1
		}
		ips.ColumnDefinitions = append(ips.ColumnDefinitions, def)
	}
	for _, c := range ipWideExtension {
		ips.ColumnDefinitions = append(ips.ColumnDefinitions, metav1.TableColumnDefinition{Name: c, Type: "string", Priority: 1})
	}
	for _, r := range doc.LeasedIPs {
		ips.Rows = append(ips.Rows, metav1.TableRow{Cells: cellValues([]string{r.Namespace, r.LeasedIP, r.Owner, r.Endpoint, r.IP, r.Ports, r.Reason,
			r.Pool, r.Service, r.SharingKey})})
	}
	return printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(ips, w)
}

// IPsOptions select and format `status ips`.
type IPsOptions struct {
	// Namespace limits the LeasedIPs to one namespace; "" lists all. Pools
	// are always listed cluster-wide.
	Namespace string
	Format    Format
	// PageSize is the List page size for LeasedIPs; 0 means 500.
	PageSize int64
}

// ErrNoMetalLB is returned (wrapped) by RunIPs next to a complete answer
// when the apiserver does not serve IPAddressPools: the pools table is
// empty.
var ErrNoMetalLB = errors.New("MetalLB's IPAddressPool CRD is not installed; no pools listed")

// RunIPs lists pools and LeasedIPs with c and renders them to w. It returns
// how many LeasedIPs it listed; notice is non-nil when the pools could not
// be listed but the answer is otherwise complete: MetalLB is not installed
// (ErrNoMetalLB) or listing pools is forbidden.
func RunIPs(ctx context.Context, c client.Client, opts IPsOptions, w io.Writer) (listed int, notice, err error) {
	if _, err := ParseFormat(string(opts.Format)); err != nil {
		return 0, nil, err
	}
	var pools metallbv1beta1.IPAddressPoolList
	if err := c.List(ctx, &pools); err != nil {
		switch {
		case meta.IsNoMatchError(err):
			notice = ErrNoMetalLB
		case apierrors.IsForbidden(err):
			// A tenant may read its LeasedIPs but not the cluster's pools.
			notice = fmt.Errorf("not allowed to list IPAddressPools; no pools listed: %w", err)
		default:
			return 0, nil, fmt.Errorf("IPAddressPools: %w", err)
		}
	}
	items, err := listLeasedIPs(ctx, c, opts)
	if err != nil {
		return 0, nil, fmt.Errorf("LeasedIPs: %w", err)
	}
	doc := IPsDocument{Pools: addresses.Usage(pools.Items), LeasedIPs: IPRowsFor(items)}
	return len(items), notice, RenderIPs(doc, opts.Format, w)
}

func listLeasedIPs(ctx context.Context, c client.Client, opts IPsOptions) ([]shardgatev1alpha1.LeasedIP, error) {
	var items []shardgatev1alpha1.LeasedIP
	err := listPaged(ctx, c, func() *shardgatev1alpha1.LeasedIPList { return &shardgatev1alpha1.LeasedIPList{} },
		opts.Namespace, opts.PageSize, func(l *shardgatev1alpha1.LeasedIPList) { items = append(items, l.Items...) })
	return items, err
}

// IPsConfig is the whole command line of `shardgate status ips`.
type IPsConfig struct {
	// Flags are kubectl's connection flags, as in Config.
	Flags          *kubeflags.Flags
	Kubeconfig     string
	Context        string
	Namespace      string
	AllNamespaces  bool
	Output         string
	RequestTimeout time.Duration
}

// ExecuteIPs runs `shardgate status ips` as the binary does. It returns nil
// (exit 0) or an *ExitError with ExitFailed.
func ExecuteIPs(ctx context.Context, cfg IPsConfig, stdout, stderr io.Writer) error {
	format, c, namespace, host, err := connect(cfg.Output, cfg.Flags, cfg.Kubeconfig, cfg.Context, cfg.Namespace, cfg.AllNamespaces, cfg.RequestTimeout)
	if err != nil {
		return err
	}
	listed, notice, err := RunIPs(ctx, c, IPsOptions{Namespace: namespace, Format: format}, stdout)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: explainIPs(err, host)}
	}
	if notice != nil {
		fmt.Fprintln(stderr, notice)
	}
	if listed == 0 && (format == FormatTable || format == FormatWide) {
		where := "any namespace"
		if namespace != "" {
			where = "namespace " + namespace
		}
		fmt.Fprintf(stderr, "No LeasedIPs found in %s.\n", where)
	}
	return nil
}

func explainIPs(err error, host string) error {
	var status apierrors.APIStatus
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return fmt.Errorf("the apiserver at %s does not serve %s LeasedIPs (are shardgate's CRDs installed?): %w", host, shardgatev1alpha1.GroupVersion, err)
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Errorf("not allowed to list at %s: %w", host, err)
	case errors.As(err, &status), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("list at %s: %w", host, err)
	default:
		return fmt.Errorf("cannot reach the apiserver at %s: %w", host, err)
	}
}
