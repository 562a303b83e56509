package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shardgate/shardgate/internal/kubeflags"
	"github.com/shardgate/shardgate/internal/statuscli"
)

// exit is os.Exit; `shardgate status` ends with its own exit status (0, 1 or
// 2, see statuscli) instead of main's generic 1.
var exit = os.Exit

func statusCommand() *cobra.Command {
	var cfg statuscli.Config
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Show which shard serves which LeaseHost host, and whether it is admitted",
		Long:    statuscli.Help,
		Example: statuscli.Example,
	}
	exitingCommand(cmd, func(ctx context.Context, stdout, stderr io.Writer) error {
		return statuscli.Execute(ctx, cfg, stdout, stderr)
	})
	f := cmd.Flags()
	cfg.Flags = kubeFlags(f, "list this namespace; default: the context's namespace")
	f.BoolVarP(&cfg.AllNamespaces, "all-namespaces", "A", false, "list every namespace (overrides -n)")
	f.StringVar(&cfg.Owner, "owner", "", "only rows of this lease owner")
	f.StringVar(&cfg.Shard, "shard", "", "only rows of this shard (its name, or its Gateway as namespace/name)")
	f.StringVarP(&cfg.Output, "output", "o", "", "output format: table (default), wide, json, yaml, jsonpath=TEMPLATE or custom-columns=NAME:PATH,...")
	f.BoolVar(&cfg.FailOnUnadmitted, "fail-on-unadmitted", false, "exit 1 when a listed row is not admitted (LeaseHosts retired by a takeover, TransferredAway, do not count)")
	f.BoolVarP(&cfg.Watch, "watch", "w", false, "after listing, keep printing the rows of every LeaseHost or ProviderHost whose rows change")
	cmd.AddCommand(statusIPsCommand())
	return cmd
}

// exitingCommand makes cmd run execute and end with statuscli's exit status.
// Arguments are checked in RunE, and flag errors routed to fail, so that
// every usage error exits 2, never 1 (which means "not admitted").
func exitingCommand(cmd *cobra.Command, execute func(ctx context.Context, stdout, stderr io.Writer) error) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fail(cmd, &statuscli.ExitError{Code: statuscli.ExitFailed, Err: fmt.Errorf("unexpected arguments %q; see --help", args)})
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return fail(cmd, execute(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr()))
	}
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fail(cmd, &statuscli.ExitError{Code: statuscli.ExitFailed, Err: err})
	})
}

// fail prints err and exits with its status; it returns only for nil.
func fail(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	code := statuscli.ExitFailed
	var ee *statuscli.ExitError
	if errors.As(err, &ee) {
		code = ee.Code
		err = ee.Err
	}
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "shardgate status:", err)
	}
	exit(code)
	return nil
}

// statusIPsCommand is `shardgate status ips`: MetalLB pool usage and the
// LeasedIPs with their addresses.
func statusIPsCommand() *cobra.Command {
	var cfg statuscli.IPsConfig
	cmd := &cobra.Command{
		Use:     "ips",
		Short:   "Show MetalLB pool usage and every LeasedIP with its address",
		Long:    statuscli.IPsHelp,
		Example: statuscli.IPsExample,
	}
	exitingCommand(cmd, func(ctx context.Context, stdout, stderr io.Writer) error {
		return statuscli.ExecuteIPs(ctx, cfg, stdout, stderr)
	})
	f := cmd.Flags()
	cfg.Flags = kubeFlags(f, "list this namespace's LeasedIPs; default: the context's namespace")
	f.BoolVarP(&cfg.AllNamespaces, "all-namespaces", "A", false, "list every namespace's LeasedIPs (overrides -n)")
	f.StringVarP(&cfg.Output, "output", "o", "", "output format: table (default), wide, json or yaml")
	return cmd
}

// kubeFlags binds kubectl's connection flags (package kubeflags:
// --kubeconfig, --context, -n, --server, --token, --as, ...)
// to f, with this command's words for -n, --kubeconfig, --context and
// --request-timeout.
func kubeFlags(f *pflag.FlagSet, namespaceUsage string) *kubeflags.Flags {
	kf := statuscli.NewKubeFlags()
	kf.AddFlags(f)
	f.Lookup("namespace").Usage = namespaceUsage
	f.Lookup("kubeconfig").Usage = "path to a kubeconfig; default: $KUBECONFIG, ~/.kube/config, then in-cluster"
	f.Lookup("context").Usage = "kubeconfig context to use; default: the current context"
	f.Lookup("request-timeout").Usage = "timeout of each request to the apiserver, e.g. 30s or 2m (0: none)"
	return kf
}
