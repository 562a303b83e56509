// Command shardgate is the one binary: `controller` (the default),
// `status`, `config dump` and `version`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/shardgate/shardgate/internal/logging"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/version"
)

func main() {
	root := rootCommand()
	// `shardgate [flags]` means `shardgate controller [flags]`.
	args := os.Args[1:]
	if len(args) == 0 || (len(args[0]) > 0 && args[0][0] == '-' && args[0] != "-h" && args[0] != "--help") {
		args = append([]string{"controller"}, args...)
	}
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "shardgate:", err)
		os.Exit(1)
	}
}

// rootCommand is `shardgate` with every subcommand.
func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "shardgate",
		Short:         "Ingress controller for multi-tenant compute providers",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(controllerCommand(), versionCommand(), statusCommand(), configCommand())
	return root
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version.String()) },
	}
}

func controllerCommand() *cobra.Command {
	var (
		kubeconfig, configPath           string
		metricsAddr, healthAddr, xdsAdr  string
		leaderElect, profiling, debugXDS bool
		metricsSecure                    bool
		metricsCertDir, pprofAddr        string
		logLevel, logFormat              string
		qps                              float32
		burst                            int
		compression                      bool
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the controller (the default command)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runtime.MemProfileRate = heapProfileRate(pprofAddr, profiling)
			log, err := logging.New(logLevel, logFormat)
			if err != nil {
				return err
			}
			ctrl.SetLogger(log)
			restConfig, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			restConfig.QPS, restConfig.Burst = qps, burst
			restConfig.DisableCompression = !compression
			opts := manager.Options{RestConfig: restConfig, ConfigPath: configPath, Log: log}
			// Flags given on the command line win over the config file.
			if cmd.Flags().Changed("metrics-address") || configPath == "" {
				opts.MetricsAddress = metricsAddr
			}
			if cmd.Flags().Changed("health-address") || configPath == "" {
				opts.HealthAddress = healthAddr
			}
			if cmd.Flags().Changed("xds-address") || configPath == "" {
				opts.XDSAddress = xdsAdr
			}
			if cmd.Flags().Changed("leader-elect") {
				opts.LeaderElect = &leaderElect
			}
			if cmd.Flags().Changed("enable-debug-xds") {
				opts.EnableDebugXDS = &debugXDS
			}
			opts.EnableProfiling = profiling
			opts.PprofAddress = pprofAddr
			opts.MetricsInsecure = !metricsSecure
			opts.MetricsCertDir = metricsCertDir
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return manager.Run(ctx, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, in-cluster, then ~/.kube/config")
	f.StringVar(&configPath, "config", "", "path to the YAML config file (re-read when it changes)")
	f.StringVar(&metricsAddr, "metrics-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	f.StringVar(&healthAddr, "health-address", ":8081", "address of the /healthz and /readyz probes")
	f.StringVar(&xdsAdr, "xds-address", ":18000", "address of the xDS (ADS) gRPC server")
	f.BoolVar(&leaderElect, "leader-elect", false, "elect a leader; only the leader writes to the apiserver")
	f.BoolVar(&debugXDS, "enable-debug-xds", false, "serve every Gateway's xDS resource names and versions under /debug/xds on the metrics address (overrides the config's xds.debugEndpoint; they name every tenant's clusters and Secrets)")
	f.BoolVar(&metricsSecure, "metrics-secure", true, "serve metrics over HTTPS, each request authenticated (TokenReview) and authorized (SubjectAccessReview of its path) by the apiserver; false serves plain HTTP for local use")
	f.StringVar(&metricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for the metrics endpoint; default: a self-signed certificate")
	f.StringVar(&pprofAddr, "pprof-address", "", "address to serve Go's pprof profiles on, under /debug/pprof/ (default: off)")
	f.BoolVar(&profiling, "enable-profiling", false, "serve Go's pprof profiles on "+manager.DefaultPprofAddress+" unless --pprof-address is set (older switch, kept working)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn, error, or a verbosity 0-10")
	f.StringVar(&logFormat, "log-format", "json", "json or text")
	// client-go's default (5 QPS, burst 10) would hold back status and
	// route writes; the apiserver's priority and fairness protects itself.
	// A block-list change that revokes 5000 names costs about two writes
	// per name (route delete, status), so revoking them within 10 s needs
	// 1000 writes a second and some room.
	f.Float32Var(&qps, "kube-api-qps", 2000, "queries per second to the apiserver")
	f.IntVar(&burst, "kube-api-burst", 4000, "burst of queries to the apiserver")
	// Every watch stream the apiserver gzips holds a decompressor (about
	// 70 KB) for its whole life, and each event costs the apiserver a
	// compression and this process a decompression: in a cluster the
	// network is cheaper than that CPU and memory.
	f.BoolVar(&compression, "kube-api-compression", false, "ask the apiserver to gzip its responses (watch streams and large lists); off by default: on a cluster network the bytes are cheaper than the CPU both sides spend, and each watch stream holds a decompressor")
	return cmd
}

// heapProfileRate is the controller's runtime.MemProfileRate: Go's default
// when pprof is served (--pprof-address, --enable-profiling), else 0.
// Heap profiles are read only through pprof. Sampling them walks the stack
// of an allocation every 512 KiB, and each walk reads the binary's function
// tables: about 3 MiB of them become resident at 1000 routes, for a profile
// nobody can read.
func heapProfileRate(pprofAddr string, profiling bool) int {
	if pprofAddr == "" && !profiling {
		return 0
	}
	return runtime.MemProfileRate
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load --kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find a kubeconfig (use --kubeconfig): %w", err)
	}
	return c, nil
}
