package statuscli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/kubeflags"
	"github.com/shardgate/shardgate/internal/scheme"
	"github.com/shardgate/shardgate/internal/version"
)

// Exit statuses of `shardgate status`. Scripts can tell "something is not
// admitted" (1) from "could not find out" (2).
const (
	ExitOK         = 0
	ExitUnadmitted = 1 // only with --fail-on-unadmitted
	ExitFailed     = 2 // bad flags, an unknown --shard or --owner, no kubeconfig, apiserver unreachable or refusing
)

// ExitError is an error with the exit status the binary must end with. Err
// may be nil when there is nothing to say beyond the status.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Options select and format the rows of Run.
type Options struct {
	// Namespace limits the listing to one namespace; "" lists all of them.
	Namespace string
	Filter
	// Format is the output format; "" is table.
	Format Format
	// PageSize is the List page size; 0 means 500. Large providers have many
	// LeaseHosts, and one unpaged List would hold them all in one response.
	PageSize int64
}

// Run lists LeaseHosts with c, renders the filtered rows to w and returns
// how many of the printed rows are not admitted, leaving out LeaseHosts
// retired by a takeover (see Row.IsUnadmitted).
//
// A --shard or --owner that no listed row has is an *UnknownFilterError,
// and nothing is printed.
func Run(ctx context.Context, c client.Client, opts Options, w io.Writer) (unadmitted int, err error) {
	unadmitted, _, _, err = run(ctx, c, opts, w)
	return unadmitted, err
}

// run is Run that also says how many LeaseHosts were listed before filters
// and how many rows it printed.
func run(ctx context.Context, c client.Client, opts Options, w io.Writer) (unadmitted, listed, shown int, err error) {
	p, err := NewPrinter(opts.Format)
	if err != nil {
		return 0, 0, 0, err
	}
	items, _, err := list(ctx, c, opts)
	if err != nil {
		return 0, 0, 0, err
	}
	all := RowsFor(items)
	akashRows, err := providerHostRows(ctx, c, opts)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(akashRows) > 0 {
		all = append(all, akashRows...)
		sortRows(all)
	}
	rows := opts.Filter.Apply(all)
	if len(rows) == 0 && len(all) > 0 {
		if err := opts.Filter.unknown(all, opts.Namespace); err != nil {
			return 0, len(items), 0, err
		}
	}
	return countUnadmitted(rows), len(items), len(rows), p.Print(rows, w)
}

// where names the listed namespace for messages.
func where(namespace string) string {
	if namespace == "" {
		return "any namespace"
	}
	return "namespace " + namespace
}

func countUnadmitted(rows []Row) (n int) {
	for _, r := range rows {
		if r.IsUnadmitted() {
			n++
		}
	}
	return n
}

// list returns every LeaseHost and the resourceVersion of the listing (to
// watch from).
func list(ctx context.Context, c client.Client, opts Options) (items []shardgatev1alpha1.LeaseHost, rv string, err error) {
	err = listPaged(ctx, c, func() *shardgatev1alpha1.LeaseHostList { return &shardgatev1alpha1.LeaseHostList{} },
		opts.Namespace, opts.PageSize, func(l *shardgatev1alpha1.LeaseHostList) {
			items = append(items, l.Items...)
			rv = l.ResourceVersion
		})
	return items, rv, err
}

// listPaged lists every object of a kind, pageSize (default 500) at a time,
// handing each page to collect. Each page decodes into a new list, so no
// field of one response (its continue token) leaks into the next.
func listPaged[L client.ObjectList](ctx context.Context, c client.Client, newList func() L, namespace string, pageSize int64, collect func(L)) error {
	if pageSize <= 0 {
		pageSize = 500
	}
	opts := []client.ListOption{client.Limit(pageSize)}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	cont := ""
	for {
		page := newList()
		if err := c.List(ctx, page, append(opts, client.Continue(cont))...); err != nil {
			return err
		}
		collect(page)
		if cont = page.GetContinue(); cont == "" {
			return nil
		}
	}
}

// Config is the whole command line of `shardgate status`.
type Config struct {
	// Flags are kubectl's connection flags as the binary binds them
	// (--kubeconfig, --context, -n, --server, --token, --as, --as-group,
	// --user, --cluster, --certificate-authority, --request-timeout, ...;
	// see NewKubeFlags). When set, they replace Kubeconfig, Context and
	// RequestTimeout, and their -n counts as Namespace.
	Flags *kubeflags.Flags
	// Kubeconfig is --kubeconfig; "" uses $KUBECONFIG, ~/.kube/config, then
	// the in-cluster config (clientcmd's default loading rules).
	Kubeconfig string
	// Context is --context; "" is the kubeconfig's current context.
	Context string
	// Namespace is -n; "" is the context's namespace ("default" if it sets
	// none). AllNamespaces (-A) wins over it.
	Namespace     string
	AllNamespaces bool
	Filter
	// Output is -o: table (""), wide, json, yaml, jsonpath=TEMPLATE or
	// custom-columns=SPEC.
	Output string
	// FailOnUnadmitted makes a listed row that is not admitted exit 1;
	// LeaseHosts retired by a takeover (TransferredAway) do not count.
	FailOnUnadmitted bool
	// Watch keeps printing: after the listing, the rows of every LeaseHost
	// or ProviderHost whose rows change, until the context ends.
	Watch bool
	// RequestTimeout bounds each request to the apiserver; 0 means none.
	RequestTimeout time.Duration
}

// connect is what both status commands do first: parse -o, build the
// client from flags (or, when nil, from kubeconfig, kubeContext and
// timeout), and settle the namespace (-A wins over -n, which wins over the
// context's). Errors come back as *ExitError with ExitFailed.
func connect(output string, flags *kubeflags.Flags, kubeconfig, kubeContext, namespaceFlag string, all bool, timeout time.Duration) (Format, client.WithWatch, string, string, error) {
	format, err := ParseFormat(output)
	if err != nil {
		return format, nil, "", "", &ExitError{Code: ExitFailed, Err: err}
	}
	if flags == nil {
		flags = KubeFlags(kubeconfig, kubeContext, timeout)
	}
	c, namespace, host, err := NewClientFor(flags)
	if err != nil {
		return format, nil, "", "", &ExitError{Code: ExitFailed, Err: err}
	}
	if namespaceFlag != "" {
		namespace = namespaceFlag
	}
	if all {
		namespace = ""
	}
	return format, c, namespace, host, nil
}

// Execute runs the command as the binary does: it loads the kubeconfig,
// lists, prints to stdout and writes notices to stderr. It returns nil (exit
// 0) or an *ExitError carrying the exit status: ExitUnadmitted when
// FailOnUnadmitted is set and a listed row is not admitted, ExitFailed for
// everything that kept it from answering.
func Execute(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	format, c, namespace, host, err := connect(cfg.Output, cfg.Flags, cfg.Kubeconfig, cfg.Context, cfg.Namespace, cfg.AllNamespaces, cfg.RequestTimeout)
	if err != nil {
		return err
	}
	opts := Options{Namespace: namespace, Filter: cfg.Filter, Format: format}
	if cfg.Watch {
		if cfg.FailOnUnadmitted {
			return &ExitError{Code: ExitFailed, Err: errors.New("--watch and --fail-on-unadmitted do not go together: a watch has no final answer")}
		}
		if err := Watch(ctx, c, opts, stdout); err != nil {
			return &ExitError{Code: ExitFailed, Err: explain(err, host)}
		}
		return nil
	}
	unadmitted, listed, shown, err := run(ctx, c, opts, stdout)
	var unknown *UnknownFilterError
	if errors.As(err, &unknown) {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: explain(err, host)}
	}
	if format == FormatTable || format == FormatWide {
		// As kubectl does: on stderr, and nothing on stdout.
		switch {
		case listed == 0:
			fmt.Fprintf(stderr, "No LeaseHosts found in %s.\n", where(namespace))
		case shown == 0:
			fmt.Fprintf(stderr, "No LeaseHosts in %s match %s.\n", where(namespace), cfg.Filter)
		}
	}
	if cfg.FailOnUnadmitted && unadmitted > 0 {
		noun := "entries are"
		if unadmitted == 1 {
			noun = "entry is"
		}
		return &ExitError{Code: ExitUnadmitted, Err: fmt.Errorf("%d listed %s not admitted", unadmitted, noun)}
	}
	return nil
}

// NewClient builds a client from a kubeconfig the way kubectl does:
// explicit path, else $KUBECONFIG, else ~/.kube/config, else in-cluster;
// kubeContext overrides the current context. It also returns the context's
// namespace ("default" when it sets none) and the apiserver URL, for
// messages. The client is lazy: nothing is contacted until the first
// request.
func NewClient(kubeconfig, kubeContext string, timeout time.Duration) (client.WithWatch, string, string, error) {
	return NewClientFor(KubeFlags(kubeconfig, kubeContext, timeout))
}

// DefaultRequestTimeout is the default of --request-timeout.
const DefaultRequestTimeout = 30 * time.Second

// NewKubeFlags returns kubectl's connection flags (see package kubeflags)
// for the status commands to bind: --kubeconfig, --context,
// -n/--namespace, --cluster, --user, -s/--server, --token, --as,
// --as-group, --as-uid, --as-user-extra, --client-certificate,
// --client-key, --certificate-authority, --insecure-skip-tls-verify,
// --tls-server-name, --proxy-url, --disable-compression and
// --request-timeout (default 30s, not kubectl's 0). There is no
// --cache-dir: nothing is discovered through a disk cache.
func NewKubeFlags() *kubeflags.Flags {
	return kubeflags.New(DefaultRequestTimeout.String())
}

// KubeFlags is NewKubeFlags set as if --kubeconfig, --context and
// --request-timeout were given these values (for callers without a
// command line).
func KubeFlags(kubeconfig, kubeContext string, timeout time.Duration) *kubeflags.Flags {
	f := NewKubeFlags()
	f.KubeConfig, f.Overrides.CurrentContext, f.Overrides.Timeout = kubeconfig, kubeContext, timeout.String()
	return f
}

// NewClientFor builds a client from kubectl's connection flags, as kubectl
// does; see NewClient for what it returns.
func NewClientFor(flags *kubeflags.Flags) (client.WithWatch, string, string, error) {
	loader := flags.ToRawKubeConfigLoader()
	restConfig, err := flags.ToRESTConfig()
	if clientcmd.IsEmptyConfig(err) || (err == nil && noKubeconfig(flags, loader, restConfig.Host)) {
		return nil, "", "", errors.New("no kubeconfig found: pass --kubeconfig or --server, set $KUBECONFIG, or create ~/.kube/config")
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("load kubeconfig: %w", err)
	}
	namespace, _, err := loader.Namespace()
	if err != nil {
		return nil, "", "", fmt.Errorf("load kubeconfig: %w", err)
	}
	restConfig.UserAgent = "shardgate-status/" + version.Version
	c, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", "", fmt.Errorf("create a client for %s: %w", restConfig.Host, err)
	}
	return c, namespace, restConfig.Host, nil
}

// noKubeconfig reports whether the config is only clientcmd's placeholder
// (http://localhost:8080), which the flags' loader falls back to when there is no
// kubeconfig, no --server, no $KUBERNETES_MASTER and no in-cluster service
// account.
func noKubeconfig(flags *kubeflags.Flags, loader clientcmd.ClientConfig, host string) bool {
	if flags.Overrides.ClusterInfo.Server != "" || os.Getenv("KUBERNETES_MASTER") != "" {
		return false
	}
	raw, err := loader.RawConfig()
	return err == nil && len(raw.Clusters) == 0 && host == clientcmd.ClusterDefaults.Server
}

// explain turns a List failure into a message that says what to check.
func explain(err error, host string) error {
	var status apierrors.APIStatus
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return fmt.Errorf("the apiserver at %s does not serve %s LeaseHosts (are shardgate's CRDs installed?): %w", host, shardgatev1alpha1.GroupVersion, err)
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Errorf("not allowed to list LeaseHosts at %s: %w", host, err)
	case errors.As(err, &status):
		return fmt.Errorf("list LeaseHosts at %s: %w", host, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("list LeaseHosts at %s: %w", host, err)
	default:
		return fmt.Errorf("cannot reach the apiserver at %s: %w", host, err)
	}
}
