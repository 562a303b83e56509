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
		Use:     "dump GATEWAY",
		Short:   "Print the xDS resources a Gateway's proxies are served, as YAML or JSON",
		Long:    configdump.Help,
		Example: configdump.Example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Gateway = args[0]
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return configdump.Execute(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	// kubectl's connection flags that do not clash with the endpoint's own
	// --token, --insecure-skip-tls-verify and --request-timeout.
	cfg.Flags = configdump.NewKubeFlags()
	cfg.Flags.AddFlags(f)
	f.Lookup("namespace").Usage = "the Gateway's namespace; default: the context's namespace"
	f.Lookup("kubeconfig").Usage = "path to a kubeconfig (for the default namespace and token); default: $KUBECONFIG, ~/.kube/config, then in-cluster"
	f.Lookup("context").Usage = "kubeconfig context to use; default: the current context"
	f.Lookup("user").Usage = "kubeconfig user whose token to send; default: the context's"
	f.StringVar(&cfg.URL, "url", "", "the controller's metrics endpoint, e.g. https://127.0.0.1:8080, or http:// with --metrics-secure=false (required)")
	f.StringVar(&cfg.Token, "token", "", "bearer token for the metrics endpoint; default over https: the kubeconfig user's token; over http only this one is sent, and none is needed")
	f.StringVar(&cfg.CAFile, "ca-file", "", "PEM CA to verify the metrics endpoint's certificate")
	f.BoolVar(&cfg.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the metrics endpoint's certificate (the default one is self-signed)")
	f.StringVarP(&cfg.Output, "output", "o", "yaml", "yaml or json")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", 30*time.Second, "timeout of the request to the metrics endpoint (0: none)")
	return cmd
}
