package infra

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/pki"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func testGateway() *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "edge", UID: "gw-uid"},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Listeners: []gatewayv1.Listener{
				{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType},
				{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
				{Name: "http-b", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: new(gatewayv1.Hostname("b.example.com"))},
				{Name: "passthrough", Port: 8443, Protocol: gatewayv1.TLSProtocolType},
			},
		},
	}
}

func testCert() ClientCert {
	return ClientCert{Cert: []byte("CERT"), Key: []byte("KEY"), CA: []byte("CA")}
}

func mustBuild(t *testing.T, gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters, opts Options) *Objects {
	t.Helper()
	o, err := Build(gw, params, opts, testCert())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestNames(t *testing.T) {
	if got := Name("edge"); got != "shardgate-edge" {
		t.Errorf("Name = %q", got)
	}
	if got := BootstrapName("edge"); got != "shardgate-edge-bootstrap" {
		t.Errorf("BootstrapName = %q", got)
	}
	if got := ClientCertName("edge"); got != "shardgate-edge-xds-client" {
		t.Errorf("ClientCertName = %q", got)
	}
	long := strings.Repeat("a", 70)
	dotted := "gw.example.com"
	for _, gw := range []string{long, dotted, strings.Repeat("b", 53), strings.Repeat("c.", 100) + "d"} {
		for _, name := range []string{Name(gw), BootstrapName(gw), ClientCertName(gw)} {
			if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
				t.Errorf("%q for Gateway %q: %v", name, gw, errs)
			}
		}
		if v := GatewayLabelValue(gw); len(validation.IsValidLabelValue(v)) > 0 {
			t.Errorf("label value %q for Gateway %q is invalid", v, gw)
		}
	}
	if got, want := Name(long), "shardgate-"+long[:44]+"-"+shortHash(long); got != want {
		t.Errorf("Name(long) = %q, want %q", got, want)
	}
	if got := Name(dotted); got != "shardgate-gw-example-com-"+shortHash(dotted) {
		t.Errorf("Name(dotted) = %q", got)
	}
	// Stable, and distinct where the shortened forms would collide.
	if Name(long) != Name(long) || Name(long+"x") == Name(long+"y") || Name("gw.a") == Name("gw-a") {
		t.Error("names are not stable or collide")
	}
	if strings.HasSuffix(BootstrapName(long), "-bootstrap") == false || strings.HasSuffix(ClientCertName(long), "-xds-client") == false {
		t.Error("suffixes must survive shortening")
	}
	if GatewayLabelValue("edge") != "edge" || GatewayLabelValue("gw.example.com") != "gw.example.com" {
		t.Error("short label values are the name")
	}
	if got := GatewayLabelValue(long); got != long[:54]+"-"+shortHash(long) {
		t.Errorf("GatewayLabelValue(long) = %q", got)
	}
}

func TestBuildObjectsCommon(t *testing.T) {
	gw := testGateway()
	o := mustBuild(t, gw, nil, Options{})
	wantNames := map[string]string{
		"ServiceAccount": "shardgate-edge", "Secret": "shardgate-edge-xds-client", "ConfigMap": "shardgate-edge-bootstrap",
		"Service": "shardgate-edge", "Deployment": "shardgate-edge",
	}
	wantLabels := map[string]string{
		"app.kubernetes.io/name": "envoy", "app.kubernetes.io/managed-by": "shardgate", "gateway.networking.k8s.io/gateway-name": "edge",
		"shardgate.io/gateway": "edge",
	}
	wantSelector := map[string]string{"shardgate.io/gateway": "edge"}
	if len(o.All()) != 5 {
		t.Fatalf("%d objects", len(o.All()))
	}
	for _, obj := range o.All() {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if kind == "" || obj.GetObjectKind().GroupVersionKind().Version == "" {
			t.Errorf("%T has no TypeMeta", obj)
		}
		if obj.GetName() != wantNames[kind] {
			t.Errorf("%s name = %q, want %q", kind, obj.GetName(), wantNames[kind])
		}
		if obj.GetNamespace() != "infra" {
			t.Errorf("%s namespace = %q", kind, obj.GetNamespace())
		}
		if !reflect.DeepEqual(obj.GetLabels(), wantLabels) {
			t.Errorf("%s labels = %v", kind, obj.GetLabels())
		}
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.UID != "gw-uid" || ref.Kind != "Gateway" || ref.APIVersion != "gateway.networking.k8s.io/v1" || ref.Name != "edge" ||
			ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion || len(obj.GetOwnerReferences()) != 1 {
			t.Errorf("%s owner references = %+v", kind, obj.GetOwnerReferences())
		}
		if obj.GetAnnotations()[AnnotationDesiredHash] == "" {
			t.Errorf("%s has no desired hash", kind)
		}
	}
	if !reflect.DeepEqual(o.Deployment.Spec.Selector.MatchLabels, wantSelector) || !reflect.DeepEqual(o.Service.Spec.Selector, wantSelector) ||
		!reflect.DeepEqual(o.Deployment.Spec.Template.Labels, wantLabels) {
		t.Error("the Deployment and Service select by shardgate.io/gateway; the pods carry every label")
	}
	if o.DaemonSet != nil || o.PodDisruptionBudget != nil {
		t.Error("by default there is neither a DaemonSet nor a PodDisruptionBudget")
	}
	if o.ClientCert.Type != corev1.SecretTypeTLS || string(o.ClientCert.Data["tls.crt"]) != "CERT" || string(o.ClientCert.Data["tls.key"]) != "KEY" || string(o.ClientCert.Data["ca.crt"]) != "CA" {
		t.Errorf("client Secret = %v %v", o.ClientCert.Type, o.ClientCert.Data)
	}
	if o.ServiceAccount.AutomountServiceAccountToken == nil || *o.ServiceAccount.AutomountServiceAccountToken {
		t.Error("the ServiceAccount must not mount a token")
	}
	if o.Bootstrap.Data["envoy.yaml"] == "" {
		t.Error("no bootstrap")
	}
}

func TestServicePortsAndAnnotations(t *testing.T) {
	gw := testGateway()
	gw.Spec.Addresses = []gatewayv1.GatewaySpecAddress{
		{Type: new(gatewayv1.IPAddressType), Value: "127.240.0.5"},
		{Value: "127.240.0.6"},
		{Type: new(gatewayv1.HostnameAddressType), Value: "edge.example.com"},
	}
	params := &shardgatev1alpha1.GatewayParameters{Spec: shardgatev1alpha1.GatewayParametersSpec{Addresses: &shardgatev1alpha1.AddressesSpec{Pool: "gold"}}}
	svc := mustBuild(t, gw, params, Options{}).Service
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("type = %s", svc.Spec.Type)
	}
	var got []string
	for _, p := range svc.Spec.Ports {
		got = append(got, p.Name+"/"+string(p.Protocol)+"/"+p.TargetPort.String())
		if p.TargetPort.IntValue() != int(p.Port) {
			t.Errorf("port %d targets %s", p.Port, p.TargetPort.String())
		}
	}
	if want := []string{"http-80/TCP/80", "https-443/TCP/443", "tls-8443/TCP/8443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ports = %v, want %v", got, want)
	}
	if svc.Annotations["metallb.io/address-pool"] != "gold" || svc.Annotations["metallb.io/loadBalancerIPs"] != "127.240.0.5,127.240.0.6" {
		t.Errorf("annotations = %v", svc.Annotations)
	}
	plain := mustBuild(t, testGateway(), nil, Options{}).Service
	for k := range plain.Annotations {
		if strings.HasPrefix(k, "metallb.io/") {
			t.Errorf("unexpected annotation %s", k)
		}
	}
}

func TestPortName(t *testing.T) {
	cases := map[string]string{
		"HTTP/80":                    "http-80",
		"HTTPS/443":                  "https-443",
		"TLS/65535":                  "tls-65535",
		"example.com/custom-udp/53":  "example-com-53",
		"---/8080":                   "port-8080",
		"123/8080":                   "port-8080",
		"example.com/verylong/65535": "example-c-65535",
	}
	for in, want := range cases {
		i := strings.LastIndex(in, "/")
		var port int32
		for _, c := range in[i+1:] {
			port = port*10 + int32(c-'0')
		}
		got := PortName(gatewayv1.ProtocolType(in[:i]), port)
		if got != want {
			t.Errorf("PortName(%s) = %q, want %q", in, got, want)
		}
		if len(got) > 15 || len(validation.IsValidPortName(got)) > 0 {
			t.Errorf("PortName(%s) = %q is not a valid port name", in, got)
		}
	}
}

func TestDeployment(t *testing.T) {
	gw := testGateway()
	d := mustBuild(t, gw, nil, Options{}).Deployment
	if *d.Spec.Replicas != 1 {
		t.Errorf("default replicas = %d", *d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "envoyproxy/envoy:v1.37.0" {
		t.Errorf("default image = %q", c.Image)
	}
	wantArgs := []string{"-c", "/etc/envoy/envoy.yaml", "--service-node", "$(POD_NAME)", "--log-level", "info", "--drain-time-s", "15"}
	if !reflect.DeepEqual(c.Args, wantArgs) {
		t.Errorf("args = %v", c.Args)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "POD_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("env = %+v", c.Env)
	}
	if p := c.ReadinessProbe.HTTPGet; p == nil || p.Path != "/ready" || p.Port.IntValue() != ReadyPort {
		t.Errorf("readiness probe = %+v", c.ReadinessProbe)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || !strings.Contains(strings.Join(c.Lifecycle.PreStop.Exec.Command, " "), "/drain_listeners?graceful") {
		t.Errorf("preStop = %+v", c.Lifecycle)
	}
	ps := d.Spec.Template.Spec
	if *ps.TerminationGracePeriodSeconds != 30 || ps.ServiceAccountName != "shardgate-edge" || !*ps.SecurityContext.RunAsNonRoot {
		t.Errorf("pod spec: grace %d, SA %q", *ps.TerminationGracePeriodSeconds, ps.ServiceAccountName)
	}
	if !reflect.DeepEqual(c.SecurityContext.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) {
		t.Errorf("capabilities = %+v", c.SecurityContext.Capabilities)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	if mounts["bootstrap"] != "/etc/envoy" || vols["bootstrap"].ConfigMap.Name != "shardgate-edge-bootstrap" {
		t.Errorf("bootstrap mount %q volume %+v", mounts["bootstrap"], vols["bootstrap"])
	}
	if mounts["xds-client"] != "/etc/shardgate/xds" || vols["xds-client"].Secret.SecretName != "shardgate-edge-xds-client" {
		t.Errorf("client cert mount %q volume %+v", mounts["xds-client"], vols["xds-client"])
	}

	params := &shardgatev1alpha1.GatewayParameters{Spec: shardgatev1alpha1.GatewayParametersSpec{Envoy: &shardgatev1alpha1.EnvoySpec{
		Image: "registry.example/envoy:custom", Replicas: new(int32(3)), LogLevel: "debug",
		Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
	}}}
	d = mustBuild(t, gw, params, Options{EnvoyImage: "config/envoy:v2"}).Deployment
	c = d.Spec.Template.Spec.Containers[0]
	if *d.Spec.Replicas != 3 || c.Image != "registry.example/envoy:custom" || c.Args[5] != "debug" || c.Resources.Requests.Cpu().String() != "250m" {
		t.Errorf("from params: replicas %d image %q args %v resources %v", *d.Spec.Replicas, c.Image, c.Args, c.Resources)
	}
	zero := &shardgatev1alpha1.GatewayParameters{Spec: shardgatev1alpha1.GatewayParametersSpec{Envoy: &shardgatev1alpha1.EnvoySpec{Replicas: new(int32(0))}}}
	d = mustBuild(t, gw, zero, Options{EnvoyImage: "config/envoy:v2"}).Deployment
	if *d.Spec.Replicas != 0 || d.Spec.Template.Spec.Containers[0].Image != "config/envoy:v2" {
		t.Errorf("replicas 0 and the config image: %d %q", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
}

func TestPodsRollOnBootstrapAndCertChanges(t *testing.T) {
	gw := testGateway()
	a := mustBuild(t, gw, nil, Options{}).Deployment.Spec.Template.Annotations
	b := mustBuild(t, gw, nil, Options{XDSHost: "other.svc"}).Deployment.Spec.Template.Annotations
	o, err := Build(gw, nil, Options{}, ClientCert{Cert: []byte("NEW"), Key: []byte("KEY"), CA: []byte("CA")})
	if err != nil {
		t.Fatal(err)
	}
	c := o.Deployment.Spec.Template.Annotations
	if a[AnnotationBootstrapHash] == b[AnnotationBootstrapHash] || a[AnnotationClientCertHash] != b[AnnotationClientCertHash] {
		t.Error("the bootstrap hash must follow the bootstrap only")
	}
	if a[AnnotationClientCertHash] == c[AnnotationClientCertHash] || a[AnnotationBootstrapHash] != c[AnnotationBootstrapHash] {
		t.Error("the certificate hash must follow the certificate only")
	}
}

func TestBootstrapGolden(t *testing.T) {
	key := types.NamespacedName{Namespace: "infra", Name: "edge"}
	b, err := Bootstrap(key, Options{XDSHost: "shardgate-xds.shardgate-system.svc", XDSPort: 18000})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("ValidateAll: %v", err)
	}
	// The typed configs inside Any are not validated by ValidateAll.
	for _, c := range b.StaticResources.Clusters {
		if c.Name != XDSClusterName {
			continue
		}
		var tlsCtx tlsv3.UpstreamTlsContext
		if err := c.TransportSocket.GetTypedConfig().UnmarshalTo(&tlsCtx); err != nil {
			t.Fatal(err)
		}
		if err := tlsCtx.ValidateAll(); err != nil {
			t.Errorf("TLS context: %v", err)
		}
		var po httpv3.HttpProtocolOptions
		if err := c.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(&po); err != nil {
			t.Fatal(err)
		}
		if err := po.ValidateAll(); err != nil || po.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
			t.Errorf("protocol options: %v %v", err, &po)
		}
	}
	for _, l := range b.StaticResources.Listeners {
		var hcm hcmv3.HttpConnectionManager
		if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		if err := hcm.ValidateAll(); err != nil {
			t.Errorf("%s HCM: %v", l.Name, err)
		}
	}
	if b.Node.Cluster != "infra/edge" || b.Node.Id != "infra/edge" {
		t.Errorf("node = %v", b.Node)
	}

	got, err := BootstrapYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	// The YAML must read back as the same proto.
	again, _ := BootstrapYAML(parseBootstrap(t, got))
	if again != got {
		t.Error("the YAML is not stable across a round trip")
	}

	path := filepath.Join("testdata", "bootstrap.golden.yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("bootstrap differs from %s (run with -update):\n%s", path, got)
	}
}

// The ConfigMap holds the bootstrap the protos give (rendered from the
// template), for the defaults and for other settings.
func TestBootstrapInConfigMapIsTheBuiltOne(t *testing.T) {
	for _, opts := range []Options{{}, {XDSHost: "shardgate-xds.other.svc", XDSPort: 18443}} {
		o := mustBuild(t, testGateway(), nil, opts)
		want, err := protoBootstrapYAML(types.NamespacedName{Namespace: "infra", Name: "edge"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if o.Bootstrap.Data["envoy.yaml"] != want {
			t.Errorf("ConfigMap bootstrap differs with %+v:\n%s\nwant\n%s", opts, o.Bootstrap.Data["envoy.yaml"], want)
		}
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "bootstrap.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := mustBuild(t, testGateway(), nil, Options{}).Bootstrap.Data["envoy.yaml"]; got != string(golden) {
		t.Error("the defaults do not give the golden bootstrap")
	}
}

func TestNeedsReissue(t *testing.T) {
	ca, err := pki.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := pki.NewCA("other")
	gw := types.NamespacedName{Namespace: "infra", Name: "edge"}
	certPEM, keyPEM, err := ca.IssueGateway(gw)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey, _ := other.IssueGateway(gw)
	_, strayKey, _ := ca.IssueGateway(gw)
	secret := func(c, k, a []byte) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{"tls.crt": c, "tls.key": k, "ca.crt": a}}
	}
	now := time.Now()
	cases := []struct {
		name string
		s    *corev1.Secret
		now  time.Time
		want bool
	}{
		{"missing", nil, now, true},
		{"fresh", secret(certPEM, keyPEM, ca.CertPEM()), now, false},
		{"no key", secret(certPEM, nil, ca.CertPEM()), now, true},
		{"no CA", secret(certPEM, keyPEM, nil), now, true},
		{"garbage", secret([]byte("x"), []byte("y"), ca.CertPEM()), now, true},
		{"key does not match", secret(certPEM, strayKey, ca.CertPEM()), now, true},
		{"CA changed", secret(certPEM, keyPEM, other.CertPEM()), now, true},
		{"signed by another CA", secret(otherCert, otherKey, ca.CertPEM()), now, true},
		{"31 days left", secret(certPEM, keyPEM, ca.CertPEM()), now.Add(365*24*time.Hour - 31*24*time.Hour), false},
		{"29 days left", secret(certPEM, keyPEM, ca.CertPEM()), now.Add(365*24*time.Hour - 29*24*time.Hour), true},
		{"expired", secret(certPEM, keyPEM, ca.CertPEM()), now.Add(400 * 24 * time.Hour), true},
	}
	for _, c := range cases {
		if got := NeedsReissue(c.s, ca.CertPEM(), c.now); got != c.want {
			t.Errorf("%s: NeedsReissue = %v, want %v", c.name, got, c.want)
		}
	}
	at, ok := ReissueAt(secret(certPEM, keyPEM, ca.CertPEM()))
	if !ok || at.Before(now.Add(330*24*time.Hour)) || at.After(now.Add(336*24*time.Hour)) {
		t.Errorf("ReissueAt = %v, %v", at, ok)
	}
}

func TestUpToDate(t *testing.T) {
	gw := testGateway()
	desired := mustBuild(t, gw, nil, Options{})
	// What the apiserver gives back: defaults filled in, server metadata,
	// no TypeMeta, status.
	live := func() (*corev1.Service, *appsv1.Deployment) {
		svc := desired.Service.DeepCopy()
		svc.TypeMeta = metav1.TypeMeta{}
		svc.ResourceVersion, svc.UID = "7", "svc-uid"
		svc.Spec.ClusterIP = "127.96.0.10"
		svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 30000 + int32(i)
		}
		svc.Annotations["metallb.io/ip-allocated-from-pool"] = "gold"
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "127.240.0.1"}}
		d := desired.Deployment.DeepCopy()
		d.TypeMeta = metav1.TypeMeta{}
		d.Spec.RevisionHistoryLimit = new(int32(10))
		d.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
		d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
		d.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
		d.Status.ReadyReplicas = 1
		return svc, d
	}
	svc, d := live()
	if !UpToDate(svc, desired.Service) || !UpToDate(d, desired.Deployment) {
		t.Fatal("defaults and status must not count as drift")
	}
	for name, mutate := range map[string]func(*corev1.Service, *appsv1.Deployment) (client.Object, client.Object){
		"port removed": func(s *corev1.Service, _ *appsv1.Deployment) (client.Object, client.Object) {
			s.Spec.Ports = s.Spec.Ports[:1]
			return s, desired.Service
		},
		"selector changed": func(s *corev1.Service, _ *appsv1.Deployment) (client.Object, client.Object) {
			s.Spec.Selector[LabelOwnGateway] = "x"
			return s, desired.Service
		},
		"label dropped": func(s *corev1.Service, _ *appsv1.Deployment) (client.Object, client.Object) {
			delete(s.Labels, LabelGateway)
			return s, desired.Service
		},
		"hash differs": func(s *corev1.Service, _ *appsv1.Deployment) (client.Object, client.Object) {
			s.Annotations[AnnotationDesiredHash] = "old"
			return s, desired.Service
		},
		"owner changed": func(s *corev1.Service, _ *appsv1.Deployment) (client.Object, client.Object) {
			s.OwnerReferences[0].UID = "other"
			return s, desired.Service
		},
		"replicas scaled by hand": func(_ *corev1.Service, d *appsv1.Deployment) (client.Object, client.Object) {
			d.Spec.Replicas = new(int32(5))
			return d, desired.Deployment
		},
		"image changed by hand": func(_ *corev1.Service, d *appsv1.Deployment) (client.Object, client.Object) {
			d.Spec.Template.Spec.Containers[0].Image = "evil"
			return d, desired.Deployment
		},
	} {
		s, d := live()
		got, want := mutate(s, d)
		if UpToDate(got, want) {
			t.Errorf("%s: not noticed", name)
		}
	}
	if UpToDate(nil, desired.Service) {
		t.Error("a missing object is not up to date")
	}
}

// TestAutoTLSPort: a shard with automatic HTTPS serves its names on 443
// whether or not a listener is there: without one, its Service and, with
// host ports, its container get port 443; with one, nothing changes; a
// shard without spec.shard.tls gets nothing.
func TestAutoTLSPort(t *testing.T) {
	httpOnly := testGateway()
	httpOnly.Spec.Listeners = httpOnly.Spec.Listeners[1:2] // http on 80
	shard := func(tls bool, envoy *shardgatev1alpha1.EnvoySpec) *shardgatev1alpha1.GatewayParameters {
		p := &shardgatev1alpha1.GatewayParameters{Spec: shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: "a.example.com"}, Envoy: envoy}}
		if tls {
			p.Spec.Shard.TLS = &shardgatev1alpha1.ShardTLS{IssuerRef: shardgatev1alpha1.IssuerReference{Name: "letsencrypt"}}
		}
		return p
	}
	svcPorts := func(gw *gatewayv1.Gateway, p *shardgatev1alpha1.GatewayParameters) []string {
		var got []string
		for _, sp := range mustBuild(t, gw, p, Options{}).Service.Spec.Ports {
			got = append(got, sp.Name+"/"+sp.TargetPort.String())
		}
		return got
	}
	if got, want := svcPorts(httpOnly, shard(true, nil)), []string{"http-80/80", "https-443/443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("automatic HTTPS, no listener on 443: Service ports %v, want %v", got, want)
	}
	if got, want := svcPorts(httpOnly, shard(false, nil)), []string{"http-80/80"}; !reflect.DeepEqual(got, want) {
		t.Errorf("no automatic HTTPS: Service ports %v, want %v", got, want)
	}
	if got, want := svcPorts(testGateway(), shard(true, nil)), []string{"http-80/80", "https-443/443", "tls-8443/8443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("automatic HTTPS with a listener on 443: Service ports %v, want %v", got, want)
	}
	o := mustBuild(t, httpOnly, shard(true, &shardgatev1alpha1.EnvoySpec{Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true}), Options{})
	var host []string
	for _, c := range o.DaemonSet.Spec.Template.Spec.Containers[0].Ports {
		if c.HostPort != 0 {
			host = append(host, c.Name+"/"+strconv.Itoa(int(c.HostPort)))
		}
	}
	if want := []string{"http-80/80", "https-443/443"}; !reflect.DeepEqual(host, want) {
		t.Errorf("host ports %v, want %v", host, want)
	}
}
