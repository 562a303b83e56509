package manager

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kptr "k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
	"github.com/shardgate/shardgate/internal/akash"
	"github.com/shardgate/shardgate/internal/gatewayapi"
	"github.com/shardgate/shardgate/internal/infra"
)

// fullService is Service t/name of type typ with every field of its
// metadata (but managedFields, which every object loses), spec and status
// set, and ports.
func fullService(name string, typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	now := metav1.Unix(1700000000, 0)
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, GenerateName: name + "-", Namespace: "t", UID: types.UID("uid-" + name), ResourceVersion: "42", Generation: 3,
			SelfLink: "/api/v1/namespaces/t/services/" + name, CreationTimestamp: now, DeletionTimestamp: &now,
			DeletionGracePeriodSeconds: kptr.To[int64](30),
			Labels:                     map[string]string{"app": name, "akash.network": "true"},
			Annotations: map[string]string{"tenant.example/notes": "long text", corev1.LastAppliedConfigAnnotation: `{"kind":"Service"}`,
				addresses.AnnotationAllowSharedIP: "key"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: "dep", Controller: kptr.To(true)}},
			Finalizers:      []string{"tenant.example/keep"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.ServiceSpec{
			Type:                          typ,
			Ports:                         ports,
			Selector:                      map[string]string{"app": name, "tier": "web"},
			ClusterIP:                     "10.96.0.10",
			ClusterIPs:                    []string{"10.96.0.10", "fd00::10"},
			ExternalIPs:                   []string{"192.0.2.1"},
			SessionAffinity:               corev1.ServiceAffinityClientIP,
			LoadBalancerIP:                "192.0.2.2",
			LoadBalancerSourceRanges:      []string{"192.0.2.0/24"},
			ExternalName:                  name + ".example.com",
			ExternalTrafficPolicy:         corev1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort:           31000,
			PublishNotReadyAddresses:      true,
			SessionAffinityConfig:         &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: kptr.To[int32](60)}},
			IPFamilies:                    []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
			IPFamilyPolicy:                kptr.To(corev1.IPFamilyPolicyPreferDualStack),
			AllocateLoadBalancerNodePorts: kptr.To(true),
			LoadBalancerClass:             kptr.To("metallb.io/metallb"),
			InternalTrafficPolicy:         kptr.To(corev1.ServiceInternalTrafficPolicyLocal),
			TrafficDistribution:           kptr.To(corev1.ServiceTrafficDistributionPreferClose),
		},
		Status: corev1.ServiceStatus{
			LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.2", Hostname: "lb.example.com",
				IPMode: kptr.To(corev1.LoadBalancerIPModeVIP), Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}}}},
			Conditions: []metav1.Condition{{Type: "LoadBalancerPortsError", Status: metav1.ConditionFalse, Reason: "Fine"}},
		},
	}
}

func port(name string, p int32, target intstr.IntOrString, appProtocol *string) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, AppProtocol: appProtocol, Port: p, TargetPort: target, NodePort: 30000 + p%1000}
}

// tenantServices are Services of every type, with every field set: the
// shapes backends have.
func tenantServices() []*corev1.Service {
	headless := fullService("headless", corev1.ServiceTypeClusterIP, port("pg", 5432, intstr.FromInt32(5432), nil))
	headless.Spec.ClusterIP, headless.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	return []*corev1.Service{
		fullService("web", corev1.ServiceTypeClusterIP, port("http", 80, intstr.FromInt32(8080), nil)),
		headless,
		fullService("ext", corev1.ServiceTypeExternalName, port("https", 443, intstr.FromInt32(443), kptr.To("kubernetes.io/h2c"))),
		fullService("lb", corev1.ServiceTypeLoadBalancer, port("http", 80, intstr.FromString("http"), kptr.To("http"))),
		fullService("np", corev1.ServiceTypeNodePort, port("", 8080, intstr.FromInt32(8080), nil)),
		fullService("multi", corev1.ServiceTypeClusterIP,
			port("http", 80, intstr.FromString("web"), kptr.To("kubernetes.io/http")),
			port("https", 443, intstr.FromString("tls"), nil),
			port("grpc", 9090, intstr.FromString("grpc"), kptr.To("kubernetes.io/h2c")),
			port("ws", 8081, intstr.FromInt32(8081), kptr.To("kubernetes.io/ws")),
			port("odd", 7000, intstr.FromInt32(7000), kptr.To("example.com/custom"))),
	}
}

func serviceTransform(t *testing.T) func(*corev1.Service) *corev1.Service {
	tr := transformOf[*corev1.Service](t, cacheOptions())
	return func(s *corev1.Service) *corev1.Service {
		out, err := tr(s.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Service)
	}
}

// The fixture sets every field of a Service: one added to the API must be
// set here (and judged in slimService) before this test passes.
func TestFullServiceSetsEveryField(t *testing.T) {
	s := fullService("web", corev1.ServiceTypeClusterIP, port("http", 80, intstr.FromInt32(8080), kptr.To("http")))
	for _, v := range []reflect.Value{reflect.ValueOf(s.ObjectMeta), reflect.ValueOf(s.Spec), reflect.ValueOf(s.Status),
		reflect.ValueOf(s.Spec.Ports[0])} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%s.%s is not set", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
}

// A tenant's Service cached slim gives the translator exactly the
// translation the whole Service gives, for Services of every type, ports
// found and not, named and numeric target ports and every appProtocol
// (HTTPRoute, GRPCRoute and TCPRoute backends, a BackendTLSPolicy that
// selects a port by name), and the same answer to whether a change of it
// matters.
func TestSlimServiceTranslatesTheSame(t *testing.T) {
	slim := serviceTransform(t)
	whole := tenantServices()
	var slimmed []*corev1.Service
	for _, s := range whole {
		w := s.DeepCopy()
		w.ManagedFields = nil
		delete(w.Annotations, corev1.LastAppliedConfigAnnotation)
		got := slim(s)
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer && reflect.DeepEqual(got, w) {
			t.Fatalf("tenant Service %s cached whole", s.Name)
		}
		slimmed = append(slimmed, got)
	}

	want, got := gatewayapi.Translate(translatorInput(whole)), gatewayapi.Translate(translatorInput(slimmed))
	// Each translation numbers its change of a Gateway anew.
	for _, out := range []*gatewayapi.Output{want, got} {
		for _, g := range out.Gateways {
			if g.Change != nil {
				g.Change.Generation = 0
			}
		}
	}
	// Route statuses are persistent maps, whose layout varies from one
	// map to the next: compared by their contents.
	wantStatus, gotStatus := routeStatuses(want), routeStatuses(got)
	if d := cmp.Diff(wantStatus, gotStatus); d != "" {
		t.Fatalf("slim Services give route statuses (-whole +slim):\n%s", d)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("slim Services translate differently: IR (-whole +slim):\n%s\nGateway status (-whole +slim):\n%s",
			cmp.Diff(want.Gateways, got.Gateways), cmp.Diff(want.GatewayStatus, got.GatewayStatus))
	}
	// The fixture must reach every reader: each Service port as a cluster
	// of its own protocol, a port that is not there, an appProtocol that
	// is not supported, and the policy's port by name.
	if len(want.Gateways) != 1 {
		t.Fatalf("want one Gateway translated, got %d: %+v", len(want.Gateways), want.GatewayStatus)
	}
	clusters := map[string]string{}
	for _, c := range want.Gateways[0].Clusters {
		clusters[c.Name] = fmt.Sprintf("%s ws=%v tls=%v port=%s", c.Protocol, c.WebSocket, c.TLS != nil, c.Service.Port)
	}
	wantClusters := map[string]string{
		"t/web/80": "HTTP1 ws=false tls=false port=http", "t/headless/5432": "HTTP1 ws=false tls=false port=pg", // its HTTPRoute outranks its TCPRoute
		"t/ext/443": "H2C ws=false tls=false port=https", "t/lb/80": "HTTP1 ws=false tls=false port=http",
		"t/np/8080": "HTTP1 ws=false tls=false port=", "t/multi/80": "HTTP1 ws=false tls=false port=http",
		"t/multi/443": "HTTP1 ws=false tls=true port=https", "t/multi/9090": "H2C ws=false tls=false port=grpc",
		"t/multi/8081": "HTTP1 ws=true tls=false port=ws",
	}
	if d := cmp.Diff(wantClusters, clusters); d != "" {
		t.Fatalf("clusters (-want +got):\n%s", d)
	}
	for route, reason := range map[string]gatewayv1.RouteConditionReason{
		"r": gatewayv1.RouteReasonUnsupportedProtocol, "missing": gatewayv1.RouteReasonBackendNotFound,
	} {
		reasons := map[string]bool{}
		for _, p := range wantStatus["HTTPRoute"][types.NamespacedName{Namespace: "t", Name: route}] {
			for _, c := range p.Conditions {
				reasons[c.Reason] = true
			}
		}
		if !reasons[string(reason)] {
			t.Fatalf("route %s: want reason %s, got %v", route, reason, reasons)
		}
	}

	// Whether a change matters: the same answer, whole or slim.
	changes := map[string]func(*corev1.Service){
		"port":        func(s *corev1.Service) { s.Spec.Ports[0].Port++ },
		"appProtocol": func(s *corev1.Service) { s.Spec.Ports[0].AppProtocol = kptr.To("kubernetes.io/ws") },
		"port name":   func(s *corev1.Service) { s.Spec.Ports[0].Name = "other" },
		"clusterIP":   func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.11" },
		"selector":    func(s *corev1.Service) { s.Spec.Selector["tier"] = "db" },
		"annotation":  func(s *corev1.Service) { s.Annotations["tenant.example/notes"] = "other" },
		"recreated":   func(s *corev1.Service) { s.UID = "other" },
	}
	for what, change := range changes {
		old := whole[0]
		next := old.DeepCopy()
		change(next)
		next.ResourceVersion = "43"
		if w, s := gatewayapi.Relevant(old, next), gatewayapi.Relevant(slim(old), slim(next)); w != s {
			t.Errorf("a change of the %s: relevant %v whole, %v slim", what, w, s)
		}
	}
}

// routeStatuses takes the route statuses out of out (and leaves them
// empty there), as plain maps by kind.
func routeStatuses(out *gatewayapi.Output) map[string]map[types.NamespacedName][]gatewayv1.RouteParentStatus {
	m := map[string]map[types.NamespacedName][]gatewayv1.RouteParentStatus{}
	for kind, st := range map[string]*gatewayapi.RouteStatuses{"HTTPRoute": &out.HTTPRouteStatus, "GRPCRoute": &out.GRPCRouteStatus,
		"TLSRoute": &out.TLSRouteStatus, "TCPRoute": &out.TCPRouteStatus} {
		m[kind] = map[types.NamespacedName][]gatewayv1.RouteParentStatus{}
		for k, v := range st.All() {
			m[kind][k] = v
		}
		*st = gatewayapi.RouteStatuses{}
	}
	return m
}

// translatorInput is a Gateway with an HTTP and a TCP listener, and routes
// in t to every port of services: an HTTPRoute, a GRPCRoute to the gRPC
// port and a TCPRoute to headless, and an HTTPRoute to a port web does not
// have; a
// BackendTLSPolicy selects multi's port https by name.
func translatorInput(services []*corev1.Service) *gatewayapi.Input {
	const controller = "shardgate.io/gateway-controller"
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: kptr.To(gatewayv1.NamespacesFromAll)}}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "edge", Generation: 1, UID: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: []gatewayv1.Listener{
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, AllowedRoutes: all},
			{Name: "tcp", Port: 8443, Protocol: gatewayv1.TCPProtocolType, AllowedRoutes: &gatewayv1.AllowedRoutes{
				Namespaces: all.Namespaces, Kinds: []gatewayv1.RouteGroupKind{{Kind: "TCPRoute"}}}},
		}},
	}
	parent := func(section string) []gatewayv1.ParentReference {
		return []gatewayv1.ParentReference{{Namespace: kptr.To(gatewayv1.Namespace("infra")), Name: "edge", SectionName: kptr.To(gatewayv1.SectionName(section))}}
	}
	ref := func(name string, p int32) gatewayv1.HTTPBackendRef {
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(name), Port: kptr.To(gatewayv1.PortNumber(p))}}}
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "r", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent("http")},
			Hostnames: []gatewayv1.Hostname{"www.example.com"}},
	}
	prefix := func(p string) []gatewayv1.HTTPRouteMatch {
		return []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: kptr.To(gatewayv1.PathMatchPathPrefix), Value: kptr.To(p)}}}
	}
	for _, s := range services {
		for _, p := range s.Spec.Ports {
			route.Spec.Rules = append(route.Spec.Rules, gatewayv1.HTTPRouteRule{
				Matches:     prefix(fmt.Sprintf("/%s/%d", s.Name, p.Port)),
				BackendRefs: []gatewayv1.HTTPBackendRef{ref(s.Name, p.Port)},
			})
		}
	}
	missing := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "missing", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent("http")},
			Hostnames: []gatewayv1.Hostname{"missing.example.com"},
			Rules:     []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{ref("web", 81)}}}},
	}
	grpc := &gatewayv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "g", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
		Spec: gatewayv1.GRPCRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent("http")}, Hostnames: []gatewayv1.Hostname{"grpc.example.com"},
			Rules: []gatewayv1.GRPCRouteRule{{BackendRefs: []gatewayv1.GRPCBackendRef{{BackendRef: ref("multi", 9090).BackendRef}}}}},
	}
	tcp := &gatewayv1.TCPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "db", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
		Spec: gatewayv1.TCPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent("tcp")},
			Rules: []gatewayv1.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{ref("headless", 5432).BackendRef}}}},
	}
	policy := &gatewayv1.BackendTLSPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "tls", Generation: 1, CreationTimestamp: metav1.Unix(1, 0)},
		Spec: gatewayv1.BackendTLSPolicySpec{
			TargetRefs: []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{
				LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{Kind: "Service", Name: "multi"},
				SectionName:                kptr.To(gatewayv1.SectionName("https"))}},
			Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "multi.example.com",
				WellKnownCACertificates: kptr.To(gatewayv1.WellKnownCACertificatesSystem)},
		},
	}
	return &gatewayapi.Input{
		ControllerName: controller,
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "shardgate", Generation: 1},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}},
		Gateways:           []*gatewayv1.Gateway{gw},
		HTTPRoutes:         []*gatewayv1.HTTPRoute{route, missing},
		GRPCRoutes:         []*gatewayv1.GRPCRoute{grpc},
		TCPRoutes:          []*gatewayv1.TCPRoute{tcp},
		BackendTLSPolicies: []*gatewayv1.BackendTLSPolicy{policy},
		Services:           services,
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "t"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "infra"}}},
	}
}

// What the controllers other than the translator read of a tenant's
// Service is the same slim or whole: the LeasedIP controller (its target's
// selector, whether a Service of its Service's name is its own or in the
// way, by its owner references and sharing key), Akash ProviderHosts and
// their API (the ports), the infra and runtime controllers (whether a
// Service of an Envoy Service's name is theirs), and cached lists by label.
func TestSlimServiceReadersSeeTheSame(t *testing.T) {
	slim := serviceTransform(t)
	lip := &shardgatev1alpha1.LeasedIP{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "ip", UID: "lip", Generation: 1},
		Spec: shardgatev1alpha1.LeasedIPSpec{Service: "web", Port: 8080, ExternalPort: 80,
			Lease: shardgatev1alpha1.LeaseRef{Owner: "akash1owner", DSeq: 1, GSeq: 1, OSeq: 1}},
	}
	for _, whole := range tenantServices() {
		s := slim(whole)
		t.Run(whole.Name, func(t *testing.T) {
			if d := cmp.Diff(addresses.DesiredService(lip, whole, "192.0.2.9"), addresses.DesiredService(lip, s, "192.0.2.9")); d != "" {
				t.Errorf("LeasedIP Service for this target (-whole +slim):\n%s", d)
			}
			obs := func(svc *corev1.Service) addresses.Observed { return addresses.Observed{Target: svc, Service: svc} }
			if d := cmp.Diff(addresses.StatusFor(lip, obs(whole)), addresses.StatusFor(lip, obs(s)),
				cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); d != "" {
				t.Errorf("LeasedIP status with this Service in the way (-whole +slim):\n%s", d)
			}
			if addresses.LeasedIPController(whole) != addresses.LeasedIPController(s) ||
				infra.ControlledBy(whole, "dep") != infra.ControlledBy(s, "dep") ||
				addresses.IngressIP(whole) != addresses.IngressIP(s) && whole.Spec.Type == corev1.ServiceTypeLoadBalancer {
				t.Error("owner or address read differently")
			}
			if d := cmp.Diff(whole.Spec.Ports, s.Spec.Ports); d != "" {
				t.Errorf("ports (-whole +slim):\n%s", d)
			}
			if d := cmp.Diff(whole.Labels, s.Labels); d != "" {
				t.Errorf("labels (-whole +slim):\n%s", d)
			}
			if whole.Name != s.Name || whole.Namespace != s.Namespace || whole.UID != s.UID || whole.ResourceVersion != s.ResourceVersion ||
				!reflect.DeepEqual(whole.DeletionTimestamp, s.DeletionTimestamp) || whole.Spec.Type != s.Spec.Type {
				t.Errorf("identity read differently: %+v", s.ObjectMeta)
			}
		})
	}
}

// Services shardgate provisions or manages, and LoadBalancer Services, are
// cached whole (but for managedFields and kubectl's copy, as every object):
// their readers compare them with what they apply and read their
// annotations, IP families and addresses.
func TestServicesCachedWhole(t *testing.T) {
	slim := serviceTransform(t)
	base := func(mut func(*corev1.Service)) *corev1.Service {
		s := fullService("svc", corev1.ServiceTypeClusterIP, port("http", 80, intstr.FromInt32(8080), nil))
		s.OwnerReferences = nil
		mut(s)
		return s
	}
	cases := map[string]*corev1.Service{
		"Envoy Service": base(func(s *corev1.Service) { s.Labels[infra.LabelOwnGateway] = "edge" }),
		"Envoy Service of an earlier version": base(func(s *corev1.Service) {
			s.Labels[infra.LabelManagedBy], s.Labels[infra.LabelName] = infra.LabelManagedByValue, infra.LabelNameValue
		}),
		"controlled by a Gateway": base(func(s *corev1.Service) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway", Name: "edge", UID: "gw", Controller: kptr.To(true)}}
		}),
		"LeasedIP Service": base(func(s *corev1.Service) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: shardgatev1alpha1.GroupVersion.String(), Kind: "LeasedIP", Name: "ip", UID: "lip", Controller: kptr.To(true)}}
		}),
		"Akash leased-IP Service": base(func(s *corev1.Service) {
			s.Labels[akash.LabelManaged], s.Labels[akash.LabelServiceTarget] = "true", akash.ServiceTargetMetalLB
		}),
		"LoadBalancer": base(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }),
	}
	for name, s := range cases {
		want := s.DeepCopy()
		want.ManagedFields = nil
		delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
		if d := cmp.Diff(want, slim(s)); d != "" {
			t.Errorf("%s not cached whole (-want +cached):\n%s", name, d)
		}
	}
	// The same Service without what makes it managed is slimmed.
	if got := slim(base(func(*corev1.Service) {})); got.Spec.ClusterIP != "" || got.Annotations != nil || !reflect.DeepEqual(got.Status, corev1.ServiceStatus{}) {
		t.Fatalf("a tenant's Service cached with clusterIP %q, annotations %v, status %+v", got.Spec.ClusterIP, got.Annotations, got.Status)
	}
}
