package infra

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/pki"
)

// Defaults for Options fields left empty.
const (
	DefaultXDSHost  = "shardgate-xds." + config.DefaultLeaderElectionNamespace + ".svc"
	DefaultXDSPort  = 18000
	DefaultLogLevel = "info"
	// DrainSeconds is Envoy's --drain-time-s and the preStop hook's sleep.
	DrainSeconds = 15
	// TerminationGraceSeconds leaves room for the drain and Envoy's exit.
	TerminationGraceSeconds = 30
	// EnvoyUID is the envoy user of the envoyproxy/envoy image.
	EnvoyUID = 101
)

// Annotations written by the builders.
const (
	// AnnotationDesiredHash, on every provisioned object, is a hash of what
	// the builder produced; UpToDate compares it, so a field the builder
	// stops setting is noticed too.
	AnnotationDesiredHash = "shardgate.io/desired-hash"
	// AnnotationBootstrapHash and AnnotationClientCertHash, on the pod
	// template, roll the Envoy pods when the bootstrap or the client
	// certificate changes: Envoy reads both only at start.
	AnnotationBootstrapHash  = "shardgate.io/bootstrap-hash"
	AnnotationClientCertHash = "shardgate.io/client-cert-hash"
)

// Options are the controller-wide settings of provisioning.
type Options struct {
	// EnvoyImage is the image when the GatewayParameters name none
	// (default config.DefaultEnvoyImage).
	EnvoyImage string
	// XDSHost is the DNS name of the shardgate xDS Service (default
	// DefaultXDSHost); the xDS server's certificate must carry it as a DNS
	// SAN.
	XDSHost string
	// XDSPort is the xDS Service's port (default DefaultXDSPort).
	XDSPort uint32
	// AnnotationPrefixes are the extra allowed prefixes of a Gateway's
	// infrastructure annotations (see AllowedAnnotation).
	AnnotationPrefixes []string
}

func (o Options) withDefaults() Options {
	if o.EnvoyImage == "" {
		o.EnvoyImage = config.DefaultEnvoyImage
	}
	if o.XDSHost == "" {
		o.XDSHost = DefaultXDSHost
	}
	if o.XDSPort == 0 {
		o.XDSPort = DefaultXDSPort
	}
	return o
}

// ClientCert is a Gateway's xDS client certificate, key and the CA, PEM.
type ClientCert struct {
	Cert, Key, CA []byte
}

// Objects are everything provisioned for one Gateway, all in its namespace
// and controlled by it.
type Objects struct {
	ServiceAccount *corev1.ServiceAccount
	ClientCert     *corev1.Secret
	Bootstrap      *corev1.ConfigMap
	Service        *corev1.Service
	// Exactly one of Deployment and DaemonSet is set (spec.envoy.kind).
	Deployment *appsv1.Deployment
	DaemonSet  *appsv1.DaemonSet
	// PodDisruptionBudget is nil unless spec.envoy.podDisruptionBudget is
	// set.
	PodDisruptionBudget *policyv1.PodDisruptionBudget
}

// All lists the objects that exist, in the order they are best applied:
// what the workload mounts and runs as first.
func (o *Objects) All() []client.Object {
	out := []client.Object{o.ServiceAccount, o.ClientCert, o.Bootstrap, o.Service}
	if o.Deployment != nil {
		out = append(out, o.Deployment)
	}
	if o.DaemonSet != nil {
		out = append(out, o.DaemonSet)
	}
	if o.PodDisruptionBudget != nil {
		out = append(out, o.PodDisruptionBudget)
	}
	return out
}

// Workload is the Deployment or the DaemonSet.
func (o *Objects) Workload() client.Object {
	if o.DaemonSet != nil {
		return o.DaemonSet
	}
	return o.Deployment
}

// Absent are the objects of the Gateway that must not exist, empty but for
// their name and namespace: the workload of the other kind, and the
// PodDisruptionBudget when none is asked for. The controller deletes
// those it controls.
func (o *Objects) Absent() []client.Object {
	m := metav1.ObjectMeta{Name: o.Service.Name, Namespace: o.Service.Namespace}
	var out []client.Object
	if o.Deployment == nil {
		out = append(out, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: m})
	}
	if o.DaemonSet == nil {
		out = append(out, &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: m})
	}
	if o.PodDisruptionBudget == nil {
		out = append(out, &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}, ObjectMeta: m})
	}
	return out
}

// Build produces a Gateway's objects from the Gateway, its resolved
// GatewayParameters (nil: defaults) and its client certificate.
func Build(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters, opts Options, cert ClientCert) (*Objects, error) {
	opts = opts.withDefaults()
	gw = allowedInfrastructure(gw, opts.AnnotationPrefixes)
	key := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	// The bootstrap comes from the template generated from its protos
	// (bootstrap.go renderBootstrap), which checks the values it is given.
	bootstrap, err := renderBootstrap(key, opts)
	if err != nil {
		return nil, fmt.Errorf("bootstrap of Gateway %s is invalid: %w", key, err)
	}
	o := &Objects{
		ServiceAccount: serviceAccount(gw),
		ClientCert:     clientCertSecret(gw, cert),
		Bootstrap:      configMap(gw, bootstrap),
		Service:        service(gw, params),
	}
	tmpl := podTemplate(gw, params, opts, hashOf(bootstrap), hashOf(string(cert.Cert)))
	if Kind(params) == shardgatev1alpha1.EnvoyKindDaemonSet {
		o.DaemonSet = daemonSet(gw, tmpl)
	} else {
		o.Deployment = deployment(gw, params, tmpl)
	}
	o.PodDisruptionBudget = podDisruptionBudget(gw, params)
	for _, obj := range o.All() {
		if err := stampHash(obj); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// meta is the ObjectMeta every object gets: name, namespace, labels
// (the Gateway's spec.infrastructure labels under ours), the Gateway's
// spec.infrastructure annotations, and the controller reference to the
// Gateway.
func meta(gw *gatewayv1.Gateway, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       gw.Namespace,
		Labels:          ObjectLabels(gw),
		Annotations:     InfrastructureAnnotations(gw),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(gw)},
	}
}

// OwnerReference is the controller reference to gw. The garbage collector
// deletes the objects when the Gateway goes.
func OwnerReference(gw *gatewayv1.Gateway) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         gatewayv1.GroupVersion.String(),
		Kind:               "Gateway",
		Name:               gw.Name,
		UID:                gw.UID,
		Controller:         new(true),
		BlockOwnerDeletion: new(true),
	}
}

func serviceAccount(gw *gatewayv1.Gateway) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: meta(gw, Name(gw.Name)),
		// Envoy never talks to the apiserver.
		AutomountServiceAccountToken: new(false),
	}
}

func clientCertSecret(gw *gatewayv1.Gateway, cert ClientCert) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta(gw, ClientCertName(gw.Name)),
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			pki.KeyCert: cert.Cert,
			pki.KeyKey:  cert.Key,
			pki.KeyCA:   cert.CA,
		},
	}
}

func configMap(gw *gatewayv1.Gateway, bootstrap string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(gw, BootstrapName(gw.Name)),
		Data:       map[string]string{BootstrapKey: bootstrap},
	}
}

// ServicePort is one port of the Envoy Service.
type ServicePort struct {
	Name     string
	Port     int32
	Protocol gatewayv1.ProtocolType
}

// ServicePorts are the distinct listener ports of gw, ascending; a port
// shared by several listeners takes the first listener's protocol (in spec
// order) for its name "<protocol lowercased>-<port>".
func ServicePorts(gw *gatewayv1.Gateway) []ServicePort {
	seen := map[int32]bool{}
	var out []ServicePort
	for _, l := range gw.Spec.Listeners {
		p := int32(l.Port)
		if p <= 0 || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, ServicePort{Name: PortName(l.Protocol, p), Port: p, Protocol: l.Protocol})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// ServicePortsFor are ServicePorts(gw), and, for a shard with automatic
// HTTPS (params spec.shard.tls) without a listener on 443, port 443
// ("https-443"), where the shard serves each name it admits: the per-name
// HTTPS servers are made by the translator, not by listeners.
func ServicePortsFor(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters) []ServicePort {
	out := ServicePorts(gw)
	if params == nil || params.Spec.Shard == nil || params.Spec.Shard.TLS == nil {
		return out
	}
	for _, p := range out {
		if p.Port == AutoTLSPort {
			return out
		}
	}
	out = append(out, ServicePort{Name: PortName(gatewayv1.HTTPSProtocolType, AutoTLSPort), Port: AutoTLSPort, Protocol: gatewayv1.HTTPSProtocolType})
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// AutoTLSPort is the port a shard with automatic HTTPS serves names on.
const AutoTLSPort = 443

// PortName is "<protocol lowercased>-<port>", made a valid IANA service
// name (at most 15 characters of [a-z0-9-], no leading, trailing or double
// '-'): characters outside [a-z0-9] become '-', and the protocol part is cut
// to fit. An empty protocol part becomes "port".
func PortName(protocol gatewayv1.ProtocolType, port int32) string {
	suffix := "-" + strconv.Itoa(int(port))
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(string(protocol)) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	p := b.String()
	if room := 15 - len(suffix); len(p) > room {
		p = p[:room]
	}
	p = strings.Trim(p, "-")
	if p == "" || strings.IndexFunc(p, func(r rune) bool { return r >= 'a' && r <= 'z' }) < 0 {
		p = "port"
	}
	return p + suffix
}

func service(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(gw, Name(gw.Name)),
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			Selector:              SelectorLabels(gw.Name),
			ExternalTrafficPolicy: ExternalTrafficPolicy(params),
		},
	}
	if ann := addresses.GatewayServiceAnnotations(gw, params); len(ann) > 0 {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		for k, v := range ann {
			svc.Annotations[k] = v
		}
	}
	for _, p := range ServicePortsFor(gw, params) {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name:       p.Name,
			Protocol:   corev1.ProtocolTCP,
			Port:       p.Port,
			TargetPort: intstr.FromInt32(p.Port),
		})
	}
	return svc
}

// ExternalTrafficPolicy is spec.envoy.service.externalTrafficPolicy,
// default Local (the client's address reaches Envoy).
func ExternalTrafficPolicy(params *shardgatev1alpha1.GatewayParameters) corev1.ServiceExternalTrafficPolicy {
	if params != nil && params.Spec.Envoy != nil && params.Spec.Envoy.Service != nil &&
		params.Spec.Envoy.Service.ExternalTrafficPolicy == shardgatev1alpha1.EnvoyExternalTrafficPolicyCluster {
		return corev1.ServiceExternalTrafficPolicyCluster
	}
	return corev1.ServiceExternalTrafficPolicyLocal
}

// Kind is spec.envoy.kind, default Deployment.
func Kind(params *shardgatev1alpha1.GatewayParameters) shardgatev1alpha1.EnvoyKind {
	if params != nil && params.Spec.Envoy != nil && params.Spec.Envoy.Kind == shardgatev1alpha1.EnvoyKindDaemonSet {
		return shardgatev1alpha1.EnvoyKindDaemonSet
	}
	return shardgatev1alpha1.EnvoyKindDeployment
}

// Replicas is spec.envoy.replicas, default 1.
func Replicas(params *shardgatev1alpha1.GatewayParameters) int32 {
	if params != nil && params.Spec.Envoy != nil && params.Spec.Envoy.Replicas != nil {
		return *params.Spec.Envoy.Replicas
	}
	return 1
}

// Image is spec.envoy.image, else the controller's configured image, else
// config.DefaultEnvoyImage.
func Image(params *shardgatev1alpha1.GatewayParameters, opts Options) string {
	if params != nil && params.Spec.Envoy != nil && params.Spec.Envoy.Image != "" {
		return params.Spec.Envoy.Image
	}
	return opts.withDefaults().EnvoyImage
}

// LogLevel is spec.envoy.logLevel, default "info".
func LogLevel(params *shardgatev1alpha1.GatewayParameters) string {
	if params != nil && params.Spec.Envoy != nil && params.Spec.Envoy.LogLevel != "" {
		return params.Spec.Envoy.LogLevel
	}
	return DefaultLogLevel
}

// preStopScript fails Envoy's health checks (the readiness listener answers
// 503, so the pod leaves the endpoints), starts a graceful drain of every
// listener, and waits the drain time. The admin interface is on loopback
// and the image has no curl, so bash's /dev/tcp speaks HTTP/1.1 to it; each
// request runs in a subshell so an unreachable admin cannot stop the hook.
var preStopScript = fmt.Sprintf(`post() { ( exec 3<>/dev/tcp/%s/%d && printf 'POST %%s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$1" >&3 && cat <&3 >/dev/null ) 2>/dev/null; }
post /healthcheck/fail
post '/drain_listeners?graceful'
sleep %d
`, AdminAddress, AdminPort, AdminAddress, DrainSeconds)

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// stampHash sets AnnotationDesiredHash on obj: a hash of obj as built
// (without that annotation).
func stampHash(obj client.Object) error {
	js, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("hash %T: %w", obj, err)
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationDesiredHash] = hashOf(string(js))
	obj.SetAnnotations(ann)
	return nil
}

// ControllerOptions derives Options from the controller's settings: the
// Envoy image, the namespace the controller (and its "shardgate-xds"
// Service) runs in, and the xDS listen address, whose port the Service is
// expected to expose unchanged (an address without a usable port gives
// DefaultXDSPort).
func ControllerOptions(envoyImage, namespace, xdsListenAddress string) Options {
	o := Options{EnvoyImage: envoyImage, XDSPort: DefaultXDSPort}
	if namespace != "" {
		o.XDSHost = "shardgate-xds." + namespace + ".svc"
	}
	if _, port, err := net.SplitHostPort(xdsListenAddress); err == nil {
		if p, err := strconv.ParseUint(port, 10, 16); err == nil && p > 0 {
			o.XDSPort = uint32(p)
		}
	}
	return o.withDefaults()
}
