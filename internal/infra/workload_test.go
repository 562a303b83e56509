package infra

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func envoyParams(e shardgatev1alpha1.EnvoySpec) *shardgatev1alpha1.GatewayParameters {
	return &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "p"},
		Spec:       shardgatev1alpha1.GatewayParametersSpec{Envoy: &e},
	}
}

func ports(c corev1.Container) map[string]corev1.ContainerPort {
	out := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		out[p.Name] = p
	}
	return out
}

func absentKinds(t *testing.T, o *Objects) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, a := range o.Absent() {
		kind := a.GetObjectKind().GroupVersionKind().Kind
		out[kind] = true
		if a.GetName() != "shardgate-edge" || a.GetNamespace() != "infra" {
			t.Errorf("absent %s named %s/%s", kind, a.GetNamespace(), a.GetName())
		}
	}
	return out
}

// The default shape: a Deployment, no DaemonSet, no PodDisruptionBudget,
// readiness and metrics ports without host ports, a LoadBalancer Service
// with externalTrafficPolicy Local.
func TestDefaultShape(t *testing.T) {
	o := mustBuild(t, testGateway(), nil, Options{})
	if o.Deployment == nil || o.DaemonSet != nil || o.PodDisruptionBudget != nil {
		t.Fatalf("default objects: deployment %v daemonset %v pdb %v", o.Deployment != nil, o.DaemonSet != nil, o.PodDisruptionBudget != nil)
	}
	if got := absentKinds(t, o); !reflect.DeepEqual(got, map[string]bool{"DaemonSet": true, "PodDisruptionBudget": true}) {
		t.Errorf("absent = %v", got)
	}
	p := ports(o.Deployment.Spec.Template.Spec.Containers[0])
	if len(p) != 2 || p["ready"].ContainerPort != ReadyPort || p["metrics"].ContainerPort != MetricsPort || p["metrics"].HostPort != 0 || p["ready"].HostPort != 0 {
		t.Errorf("container ports = %v", o.Deployment.Spec.Template.Spec.Containers[0].Ports)
	}
	if o.Service.Spec.Type != corev1.ServiceTypeLoadBalancer || o.Service.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("Service type %s externalTrafficPolicy %s", o.Service.Spec.Type, o.Service.Spec.ExternalTrafficPolicy)
	}
	cluster := mustBuild(t, testGateway(), envoyParams(shardgatev1alpha1.EnvoySpec{
		Service: &shardgatev1alpha1.EnvoyServiceSpec{ExternalTrafficPolicy: shardgatev1alpha1.EnvoyExternalTrafficPolicyCluster},
	}), Options{})
	if cluster.Service.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("externalTrafficPolicy Cluster not honoured: %s", cluster.Service.Spec.ExternalTrafficPolicy)
	}
	if UpToDate(o.Service, cluster.Service) {
		t.Error("a changed externalTrafficPolicy is not noticed")
	}
}

func TestDaemonSetHostPorts(t *testing.T) {
	o := mustBuild(t, testGateway(), envoyParams(shardgatev1alpha1.EnvoySpec{
		Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true,
		NodeSelector: map[string]string{"node-role.example.com/edge": "true"},
	}), Options{})
	if o.DaemonSet == nil || o.Deployment != nil || o.Workload() != o.DaemonSet {
		t.Fatal("kind DaemonSet builds a DaemonSet and no Deployment")
	}
	if got := absentKinds(t, o); !got["Deployment"] || got["DaemonSet"] {
		t.Errorf("absent = %v", got)
	}
	ds := o.DaemonSet
	if ds.Name != "shardgate-edge" || !reflect.DeepEqual(ds.Spec.Selector.MatchLabels, SelectorLabels("edge")) ||
		!labels.SelectorFromSet(o.Service.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("DaemonSet %s selector %v, Service selector %v, pod labels %v", ds.Name, ds.Spec.Selector, o.Service.Spec.Selector, ds.Spec.Template.Labels)
	}
	spec := ds.Spec.Template.Spec
	p := ports(spec.Containers[0])
	for name, port := range map[string]int32{"http-80": 80, "https-443": 443, "tls-8443": 8443} {
		if p[name].ContainerPort != port || p[name].HostPort != port || p[name].Protocol != corev1.ProtocolTCP {
			t.Errorf("listener port %s = %+v, want host port %d", name, p[name], port)
		}
	}
	if p["ready"].HostPort != 0 || p["metrics"].HostPort != 0 || len(p) != 5 {
		t.Errorf("only listener ports are host ports: %v", spec.Containers[0].Ports)
	}
	if spec.HostNetwork || spec.SecurityContext.RunAsUser == nil || *spec.SecurityContext.RunAsUser != EnvoyUID || len(spec.SecurityContext.Sysctls) != 1 {
		t.Error("host ports keep the pod's own network and its non-root user")
	}
	if !reflect.DeepEqual(spec.NodeSelector, map[string]string{"node-role.example.com/edge": "true"}) {
		t.Errorf("nodeSelector = %v", spec.NodeSelector)
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.MaxSurge == nil || ru.MaxSurge.IntValue() != 0 || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("a DaemonSet holding host ports must not surge: %+v", ds.Spec.UpdateStrategy)
	}
	// A listener port added rolls the pods (its host port is declared).
	gw := testGateway()
	gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{Name: "alt", Port: 8080, Protocol: gatewayv1.HTTPProtocolType})
	o2 := mustBuild(t, gw, envoyParams(shardgatev1alpha1.EnvoySpec{Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true}), Options{})
	if ports(o2.DaemonSet.Spec.Template.Spec.Containers[0])["http-8080"].HostPort != 8080 {
		t.Error("a new listener port is not a host port")
	}
}

func TestDaemonSetHostNetwork(t *testing.T) {
	o := mustBuild(t, testGateway(), envoyParams(shardgatev1alpha1.EnvoySpec{Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostNetwork: true}), Options{})
	spec := o.DaemonSet.Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v dnsPolicy %s", spec.HostNetwork, spec.DNSPolicy)
	}
	p := ports(spec.Containers[0])
	for name, port := range map[string]int32{"admin": AdminPort, "ready": ReadyPort, "metrics": MetricsPort, "http-80": 80, "https-443": 443, "tls-8443": 8443} {
		if p[name].ContainerPort != port || p[name].HostPort != port {
			t.Errorf("port %s = %+v: every port Envoy binds on the node must be declared as a host port", name, p[name])
		}
	}
	sc := spec.SecurityContext
	if len(sc.Sysctls) != 0 {
		t.Error("the kubelet refuses net.* sysctls with hostNetwork")
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || *sc.RunAsNonRoot {
		t.Error("with hostNetwork Envoy runs as root to bind ports below 1024")
	}
	if caps := spec.Containers[0].SecurityContext.Capabilities; !reflect.DeepEqual(caps.Add, []corev1.Capability{"NET_BIND_SERVICE"}) || !reflect.DeepEqual(caps.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities = %+v", caps)
	}
	// kind Deployment ignores the host settings (the API refuses them).
	d := mustBuild(t, testGateway(), envoyParams(shardgatev1alpha1.EnvoySpec{HostNetwork: true, HostPorts: true}), Options{})
	if d.Deployment == nil || d.Deployment.Spec.Template.Spec.HostNetwork || len(d.Deployment.Spec.Template.Spec.Containers[0].Ports) != 2 {
		t.Error("host settings apply to kind DaemonSet only")
	}
}

func TestSchedulingFieldsAndPDB(t *testing.T) {
	e := shardgatev1alpha1.EnvoySpec{
		NodeSelector: map[string]string{"zone": "a"},
		Tolerations:  []corev1.Toleration{{Key: "edge", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "edge", Operator: corev1.NodeSelectorOpExists}}}},
		}}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels("edge")},
		}},
		PodDisruptionBudget: &shardgatev1alpha1.EnvoyPodDisruptionBudget{MaxUnavailable: new(intstr.FromString("50%"))},
	}
	for _, kind := range []shardgatev1alpha1.EnvoyKind{shardgatev1alpha1.EnvoyKindDeployment, shardgatev1alpha1.EnvoyKindDaemonSet} {
		e.Kind = kind
		params := envoyParams(e)
		o := mustBuild(t, testGateway(), params, Options{})
		var spec corev1.PodSpec
		if kind == shardgatev1alpha1.EnvoyKindDaemonSet {
			spec = o.DaemonSet.Spec.Template.Spec
		} else {
			spec = o.Deployment.Spec.Template.Spec
		}
		if !reflect.DeepEqual(spec.NodeSelector, e.NodeSelector) || !reflect.DeepEqual(spec.Tolerations, e.Tolerations) ||
			!reflect.DeepEqual(spec.Affinity, e.Affinity) || !reflect.DeepEqual(spec.TopologySpreadConstraints, e.TopologySpreadConstraints) {
			t.Errorf("%s: scheduling fields not copied: %+v", kind, spec)
		}
		spec.NodeSelector["zone"] = "mutated"
		if params.Spec.Envoy.NodeSelector["zone"] != "a" {
			t.Fatal("the pod spec aliases the parameters' nodeSelector")
		}
		pdb := o.PodDisruptionBudget
		if pdb == nil {
			t.Fatalf("%s: no PodDisruptionBudget", kind)
		}
		if pdb.Name != "shardgate-edge" || metav1.GetControllerOf(pdb) == nil || metav1.GetControllerOf(pdb).UID != "gw-uid" ||
			pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "50%" || pdb.Spec.MinAvailable != nil ||
			!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, SelectorLabels("edge")) {
			t.Errorf("%s: PodDisruptionBudget = %+v", kind, pdb)
		}
		if absentKinds(t, o)["PodDisruptionBudget"] {
			t.Errorf("%s: a wanted PodDisruptionBudget is listed absent", kind)
		}
	}
	e.PodDisruptionBudget = &shardgatev1alpha1.EnvoyPodDisruptionBudget{MinAvailable: new(intstr.FromInt32(1))}
	o := mustBuild(t, testGateway(), envoyParams(e), Options{})
	if o.PodDisruptionBudget.Spec.MinAvailable == nil || o.PodDisruptionBudget.Spec.MinAvailable.IntValue() != 1 || o.PodDisruptionBudget.Spec.MaxUnavailable != nil {
		t.Errorf("minAvailable = %+v", o.PodDisruptionBudget.Spec)
	}
	var _ *policyv1.PodDisruptionBudget = o.PodDisruptionBudget
}

// A Deployment created before shardgate.io/gateway existed keeps its
// (immutable) selector while its pods still match it, and the Service and
// PodDisruptionBudget select by it too; an infrastructure label that breaks
// it asks for the Deployment's replacement.
func TestAdoptSelector(t *testing.T) {
	legacy := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: LegacySelectorLabels("edge")}}}
	params := envoyParams(shardgatev1alpha1.EnvoySpec{PodDisruptionBudget: &shardgatev1alpha1.EnvoyPodDisruptionBudget{MinAvailable: new(intstr.FromInt32(1))}})
	o := mustBuild(t, testGateway(), params, Options{})
	fresh := mustBuild(t, testGateway(), params, Options{})
	step, err := AdoptSelector(o, legacy)
	if err != nil || step != SelectorKept {
		t.Fatalf("AdoptSelector = %v, %v", step, err)
	}
	want := LegacySelectorLabels("edge")
	if !reflect.DeepEqual(o.Deployment.Spec.Selector.MatchLabels, want) || !reflect.DeepEqual(o.Service.Spec.Selector, want) ||
		!reflect.DeepEqual(o.PodDisruptionBudget.Spec.Selector.MatchLabels, want) {
		t.Errorf("selectors = %v %v %v", o.Deployment.Spec.Selector, o.Service.Spec.Selector, o.PodDisruptionBudget.Spec.Selector)
	}
	if !labels.SelectorFromSet(want).Matches(labels.Set(o.Deployment.Spec.Template.Labels)) {
		t.Error("the pods do not match the kept selector")
	}
	if UpToDate(o.Service, fresh.Service) || o.Service.Annotations[AnnotationDesiredHash] == fresh.Service.Annotations[AnnotationDesiredHash] {
		t.Error("the desired hash was not restamped")
	}
	// Already the new selector: nothing changes.
	same := mustBuild(t, testGateway(), params, Options{})
	if step, _ := AdoptSelector(same, fresh.Deployment); step != SelectorKept || !reflect.DeepEqual(same.Service, fresh.Service) {
		t.Error("a Deployment of the current selector changed the objects")
	}
	// app.kubernetes.io/name: ingress-nginx breaks the legacy selector:
	// first the pods roll to a template with both the legacy selector's
	// labels and shardgate.io/gateway...
	gw := testGateway()
	gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{Labels: map[gatewayv1.LabelKey]gatewayv1.LabelValue{"app.kubernetes.io/name": "ingress-nginx"}}
	bridged := mustBuild(t, gw, params, Options{})
	if step, _ := AdoptSelector(bridged, legacy); step != SelectorBridged {
		t.Fatalf("step = %v, want SelectorBridged", step)
	}
	pods := labels.Set(bridged.Deployment.Spec.Template.Labels)
	if !labels.SelectorFromSet(want).Matches(pods) || pods[LabelOwnGateway] != "edge" ||
		!reflect.DeepEqual(bridged.Service.Spec.Selector, want) || !reflect.DeepEqual(bridged.Deployment.Spec.Selector.MatchLabels, want) {
		t.Errorf("bridge: pods %v, Service selector %v", pods, bridged.Service.Spec.Selector)
	}
	// ...then, every pod of that template, the Deployment is replaced.
	rolled := legacy.DeepCopy()
	rolled.Generation = 3
	rolled.Spec.Replicas = new(int32(2))
	rolled.Spec.Template = *bridged.Deployment.Spec.Template.DeepCopy()
	rolled.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	final := mustBuild(t, gw, params, Options{})
	if step, _ := AdoptSelector(final, rolled); step != SelectorReplace {
		t.Fatalf("step = %v, want SelectorReplace", step)
	}
	if !reflect.DeepEqual(final.Service.Spec.Selector, SelectorLabels("edge")) || final.Deployment.Spec.Template.Labels["app.kubernetes.io/name"] != "ingress-nginx" {
		t.Error("a replacement changed the objects")
	}
	// Not rolled out yet: still bridged.
	rolled.Status.UpdatedReplicas = 1
	if step, _ := AdoptSelector(mustBuild(t, gw, params, Options{}), rolled); step != SelectorBridged {
		t.Errorf("an incomplete rollout is replaced: %v", step)
	}
}

// A DaemonSet that should run on some node but has no available pod makes
// the Gateway not Programmed; one still catching up, one with no node to
// run on, or one with an available pod does not.
func TestDaemonSetUnavailable(t *testing.T) {
	o := mustBuild(t, testGateway(), envoyParams(shardgatev1alpha1.EnvoySpec{Kind: shardgatev1alpha1.EnvoyKindDaemonSet, HostPorts: true}), Options{})
	ds := o.DaemonSet
	ds.Generation = 2
	for name, c := range map[string]struct {
		st   appsv1.DaemonSetStatus
		want bool
	}{
		"all pending":   {appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, NumberUnavailable: 3}, true},
		"one available": {appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, NumberAvailable: 1, NumberUnavailable: 2}, false},
		"no node":       {appsv1.DaemonSetStatus{ObservedGeneration: 2}, false},
		"not caught up": {appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3}, false},
	} {
		ds.Status = c.st
		msg := DaemonSetUnavailable(ds)
		if (msg != "") != c.want {
			t.Errorf("%s: %q", name, msg)
		}
		if c.want && !strings.Contains(msg, "host ports") {
			t.Errorf("%s: the message does not point at host ports: %q", name, msg)
		}
	}
}
