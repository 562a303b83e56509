// Package kubeflags binds kubectl's connection flags (--kubeconfig,
// --context, -n, -s/--server, --token, --as, ...) to a pflag.FlagSet and
// turns them into a clientcmd.ClientConfig, with client-go's own clientcmd
// (its ConfigOverrides and flag binding) only.
//
// It is what k8s.io/cli-runtime's genericclioptions.ConfigFlags did for the
// CLI subcommands, with the same flag names, shorthands, defaults, types and
// usage texts and the same loading (--kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster config), without genericclioptions,
// whose package graph (cli-runtime's resource package, kustomize, OpenAPI)
// would otherwise be linked into, and initialised at every start of, the
// controller's binary.
package kubeflags
