package main

import (
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/internal/configdump"
)

// configCommand is `shardgate config`, with `dump`.
func configCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect what the controller serves"}
	cmd.AddCommand(configDumpCommand())
	return cmd
}

func configDumpCommand() *cobra.Command {
	var cfg configdump.Config
	cmd := &cobra.Command{
		Use:   "dump GATEWAY",
		Short: "Print the xDS resources a Gateway's proxies are served, as YAML or JSON",
		Long: `Print the xDS resources (clusters, endpoints, secrets, listeners, routes) the
controller serves to one Gateway's proxies, with their versions. Private keys
are redacted by the controller.

The dump comes from the controller's /debug/config_dump endpoint on its metrics
server, behind the same authentication as /metrics: a bearer token (--token, or
the kubeconfig user's) whose user may get that path.`,
		Example: `  kubectl port-forward -n shardgate-system deploy/shardgate 8443 &
  shardgate config dump -n infra shard-a --url https://127.0.0.1:8443 --insecure-skip-tls-verify \
    --token "$(kubectl create token -n shardgate-system shardgate-config-reader)"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Gateway = args[0]
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return configdump.Execute(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.Namespace, "namespace", "n", "", "the Gateway's namespace; default: the context's namespace")
	f.StringVar(&cfg.URL, "url", "", "the controller's metrics endpoint, e.g. https://127.0.0.1:8443 (required)")
	f.StringVar(&cfg.Token, "token", "", "bearer token; default: the kubeconfig user's token")
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, ~/.kube/config, then in-cluster")
	f.StringVar(&cfg.Context, "context", "", "kubeconfig context to use; default: the current context")
	f.StringVar(&cfg.CAFile, "ca-file", "", "PEM CA to verify the endpoint's certificate")
	f.BoolVar(&cfg.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the endpoint's certificate (the default one is self-signed)")
	f.StringVarP(&cfg.Output, "output", "o", "yaml", "yaml or json")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", 30*time.Second, "timeout of the request (0: none)")
	return cmd
}
