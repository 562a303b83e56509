package kubeflags

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Usage texts of the flags, as kubectl (cli-runtime) words them.
const (
	usageKubeconfig         = "Path to the kubeconfig file to use for CLI requests."
	usageCertFile           = "Path to a client certificate file for TLS"
	usageKeyFile            = "Path to a client key file for TLS"
	usageToken              = "Bearer token for authentication to the API server"
	usageImpersonate        = "Username to impersonate for the operation. User could be a regular user or a service account in a namespace."
	usageImpersonateUID     = "UID to impersonate for the operation."
	usageImpersonateGroup   = "Group to impersonate for the operation, this flag can be repeated to specify multiple groups."
	usageImpersonateExtra   = "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key."
	usageCluster            = "The name of the kubeconfig cluster to use"
	usageUser               = "The name of the kubeconfig user to use"
	usageNamespace          = "If present, the namespace scope for this CLI request"
	usageContext            = "The name of the kubeconfig context to use"
	usageServer             = "The address and port of the Kubernetes API server"
	usageTLSServerName      = "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used"
	usageInsecure           = "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure"
	usageCAFile             = "Path to a cert file for the certificate authority"
	usageTimeout            = "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests."
	usageDisableCompression = "If true, opt-out of response compression for all requests to the server"
	usageProxyURL           = "Proxy URL to use for requests to the API server"
)

// Flags are kubectl's connection flags. The zero value binds nothing; use
// New or NewContextOnly. Callers without a command line may set the fields
// directly.
type Flags struct {
	// KubeConfig is --kubeconfig: "" loads $KUBECONFIG, else
	// ~/.kube/config, else the in-cluster config.
	KubeConfig string
	// Overrides hold every other flag's value: --context (CurrentContext),
	// --cluster, --user, -n (Context), --server, --token, --as, ...,
	// --request-timeout (Timeout). Empty values override nothing.
	Overrides clientcmd.ConfigOverrides
	// ImpersonateUserExtra is --as-user-extra, KEY=VALUE, repeated.
	ImpersonateUserExtra []string

	all bool
}

// New returns every connection flag kubectl's commands have, but
// --cache-dir (nothing is discovered through a disk cache) and --username
// and --password (kubectl's ConfigFlags does not bind them either):
// --kubeconfig, --context, -n/--namespace, --cluster, --user, -s/--server,
// --token, --as, --as-group, --as-uid, --as-user-extra,
// --client-certificate, --client-key, --certificate-authority,
// --insecure-skip-tls-verify, --tls-server-name, --proxy-url,
// --disable-compression and --request-timeout, whose default is timeout
// (kubectl's is "0").
func New(timeout string) *Flags {
	f := &Flags{all: true}
	f.Overrides.Timeout = timeout
	return f
}

// NewContextOnly returns the flags that only pick the kubeconfig's
// entries: --kubeconfig, --context, --cluster, --user and -n/--namespace.
func NewContextOnly() *Flags {
	return &Flags{}
}

// AddFlags binds the flags to fs, with kubectl's usage texts (which the
// caller may reword through fs.Lookup). Their defaults are the fields'
// values.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.KubeConfig, "kubeconfig", f.KubeConfig, usageKubeconfig)
	names := clientcmd.ConfigOverrideFlags{
		ContextOverrideFlags: clientcmd.ContextOverrideFlags{
			ClusterName:  flag(clientcmd.FlagClusterName, f.Overrides.Context.Cluster, usageCluster),
			AuthInfoName: flag(clientcmd.FlagAuthInfoName, f.Overrides.Context.AuthInfo, usageUser),
			// -n is bound below: clientcmd's binding strips a "ns/"
			// prefix, which kubectl's -n does not.
		},
		CurrentContext: flag(clientcmd.FlagContext, f.Overrides.CurrentContext, usageContext),
	}
	if f.all {
		recommended := clientcmd.RecommendedConfigOverrideFlags("")
		names.AuthOverrideFlags = clientcmd.AuthOverrideFlags{
			ClientCertificate: reword(recommended.AuthOverrideFlags.ClientCertificate, f.Overrides.AuthInfo.ClientCertificate, usageCertFile),
			ClientKey:         reword(recommended.AuthOverrideFlags.ClientKey, f.Overrides.AuthInfo.ClientKey, usageKeyFile),
			Token:             reword(recommended.AuthOverrideFlags.Token, f.Overrides.AuthInfo.Token, usageToken),
			Impersonate:       reword(recommended.AuthOverrideFlags.Impersonate, f.Overrides.AuthInfo.Impersonate, usageImpersonate),
			ImpersonateUID:    reword(recommended.AuthOverrideFlags.ImpersonateUID, f.Overrides.AuthInfo.ImpersonateUID, usageImpersonateUID),
			ImpersonateGroups: reword(recommended.AuthOverrideFlags.ImpersonateGroups, "", usageImpersonateGroup),
			// No --username or --password, as with kubectl's ConfigFlags.
		}
		names.ClusterOverrideFlags = clientcmd.ClusterOverrideFlags{
			APIServer:             reword(recommended.ClusterOverrideFlags.APIServer, f.Overrides.ClusterInfo.Server, usageServer),
			CertificateAuthority:  reword(recommended.ClusterOverrideFlags.CertificateAuthority, f.Overrides.ClusterInfo.CertificateAuthority, usageCAFile),
			InsecureSkipTLSVerify: reword(recommended.ClusterOverrideFlags.InsecureSkipTLSVerify, strconv.FormatBool(f.Overrides.ClusterInfo.InsecureSkipTLSVerify), usageInsecure),
			TLSServerName:         reword(recommended.ClusterOverrideFlags.TLSServerName, f.Overrides.ClusterInfo.TLSServerName, usageTLSServerName),
			ProxyURL:              reword(recommended.ClusterOverrideFlags.ProxyURL, f.Overrides.ClusterInfo.ProxyURL, usageProxyURL),
			DisableCompression:    reword(recommended.ClusterOverrideFlags.DisableCompression, strconv.FormatBool(f.Overrides.ClusterInfo.DisableCompression), usageDisableCompression),
		}
		names.ClusterOverrideFlags.APIServer.ShortName = "s"
		names.Timeout = reword(recommended.Timeout, f.Overrides.Timeout, usageTimeout)
	}
	clientcmd.BindOverrideFlags(&f.Overrides, fs, names)
	fs.StringVarP(&f.Overrides.Context.Namespace, clientcmd.FlagNamespace, "n", f.Overrides.Context.Namespace, usageNamespace)
	if f.all {
		fs.StringArrayVar(&f.ImpersonateUserExtra, "as-user-extra", f.ImpersonateUserExtra, usageImpersonateExtra)
	}
}

func flag(name, def, usage string) clientcmd.FlagInfo {
	return clientcmd.FlagInfo{LongName: name, Default: def, Description: usage}
}

func reword(info clientcmd.FlagInfo, def, usage string) clientcmd.FlagInfo {
	info.Default, info.Description = def, usage
	return info
}

// ToRawKubeConfigLoader returns the client config the flags select, loaded
// as kubectl loads it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config,
// and, when none of them holds a cluster, the in-cluster config; the other
// flags override the kubeconfig's values. Without any of those it yields
// clientcmd's placeholder, http://localhost:8080 (see clientcmd.ClusterDefaults).
func (f *Flags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	rules.ExplicitPath = f.KubeConfig
	overrides := f.Overrides
	overrides.ClusterDefaults = clientcmd.ClusterDefaults
	if extra := userExtra(f.ImpersonateUserExtra); extra != nil {
		overrides.AuthInfo.ImpersonateUserExtra = extra
	}
	return &clientConfig{loader: clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)}
}

// ToRESTConfig is ToRawKubeConfigLoader's REST config.
func (f *Flags) ToRESTConfig() (*restclient.Config, error) {
	return f.ToRawKubeConfigLoader().ClientConfig()
}

// userExtra parses --as-user-extra's KEY=VALUE values; kubectl ignores a
// value without "=".
func userExtra(values []string) map[string][]string {
	if len(values) == 0 {
		return nil
	}
	extra := make(map[string][]string)
	for _, v := range values {
		key, value, ok := strings.Cut(v, "=")
		if !ok {
			continue
		}
		extra[key] = append(extra[key], value)
	}
	return extra
}

// ErrEmptyConfig is the error of a loader that found no configuration at
// all, worded as kubectl words it.
var ErrEmptyConfig = clientcmd.NewEmptyConfigError(`Missing or incomplete configuration info.  Please point to an existing, complete config file:


  1. Via the command-line flag --kubeconfig
  2. Via the KUBECONFIG environment variable
  3. In your home directory as ~/.kube/config

To view or setup config directly use the 'config' command.`)

// clientConfig words clientcmd's empty-config error as kubectl does.
type clientConfig struct {
	loader clientcmd.ClientConfig
}

func (c *clientConfig) RawConfig() (clientcmdapi.Config, error) {
	config, err := c.loader.RawConfig()
	return config, emptyConfig(err)
}

func (c *clientConfig) ClientConfig() (*restclient.Config, error) {
	config, err := c.loader.ClientConfig()
	return config, emptyConfig(err)
}

func (c *clientConfig) Namespace() (string, bool, error) {
	namespace, ok, err := c.loader.Namespace()
	return namespace, ok, emptyConfig(err)
}

func (c *clientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return c.loader.ConfigAccess()
}

func emptyConfig(err error) error {
	if clientcmd.IsEmptyConfig(err) {
		return ErrEmptyConfig
	}
	return err
}
