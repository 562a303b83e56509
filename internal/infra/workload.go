package infra

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// podTemplate is the Envoy pod of either workload kind.
func podTemplate(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters, opts Options, bootstrapHash, certHash string) corev1.PodTemplateSpec {
	name := Name(gw.Name)
	var envoy shardgatev1alpha1.EnvoySpec
	if params != nil && params.Spec.Envoy != nil {
		envoy = *params.Spec.Envoy
	}
	hostPorts := envoy.Kind == shardgatev1alpha1.EnvoyKindDaemonSet && envoy.HostPorts
	hostNetwork := envoy.Kind == shardgatev1alpha1.EnvoyKindDaemonSet && envoy.HostNetwork
	var resources corev1.ResourceRequirements
	if params != nil && params.Spec.Envoy != nil && params.Spec.Envoy.Resources != nil {
		resources = *params.Spec.Envoy.Resources.DeepCopy()
	}
	container := corev1.Container{
		Name:    "envoy",
		Image:   Image(params, opts),
		Command: []string{"envoy"},
		Args: []string{
			"-c", BootstrapPath,
			"--service-node", "$(POD_NAME)",
			"--log-level", LogLevel(params),
			"--drain-time-s", strconv.Itoa(DrainSeconds),
		},
		Env: []corev1.EnvVar{{
			Name:      "POD_NAME",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
		}},
		Ports:     containerPorts(gw, params, hostPorts, hostNetwork),
		Resources: resources,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: ReadyPath, Port: intstr.FromInt32(ReadyPort), Scheme: corev1.URISchemeHTTP,
			}},
			PeriodSeconds:    5,
			TimeoutSeconds:   1,
			SuccessThreshold: 1,
			FailureThreshold: 1,
		},
		// Liveness only asks that Envoy still accepts connections: a
		// draining Envoy fails readiness on purpose and must not be killed
		// for it.
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(ReadyPort)}},
			InitialDelaySeconds: 10,
			PeriodSeconds:       10,
			TimeoutSeconds:      1,
			SuccessThreshold:    1,
			FailureThreshold:    3,
		},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"/bin/bash", "-c", preStopScript},
		}}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: new(false),
			ReadOnlyRootFilesystem:   new(true),
			Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"ALL"},
				Add:  []corev1.Capability{"NET_BIND_SERVICE"},
			},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "bootstrap", MountPath: BootstrapDir, ReadOnly: true},
			{Name: "xds-client", MountPath: ClientCertDir, ReadOnly: true},
			{Name: "tmp", MountPath: "/tmp"},
		},
	}
	podAnnotations := InfrastructureAnnotations(gw)
	if podAnnotations == nil {
		podAnnotations = map[string]string{}
	}
	podAnnotations[AnnotationBootstrapHash] = bootstrapHash
	podAnnotations[AnnotationClientCertHash] = certHash
	spec := corev1.PodSpec{
		ServiceAccountName:            name,
		AutomountServiceAccountToken:  new(false),
		TerminationGracePeriodSeconds: new(int64(TerminationGraceSeconds)),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: new(true),
			RunAsUser:    new(int64(EnvoyUID)),
			RunAsGroup:   new(int64(EnvoyUID)),
			FSGroup:      new(int64(EnvoyUID)),
			// A non-root process gets no effective capabilities
			// from the container's capability list unless the
			// binary carries file capabilities, so the Gateway
			// ports below 1024 are made bindable by the
			// namespaced, "safe" sysctl as well.
			Sysctls:        []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{container},
		Volumes: []corev1.Volume{
			{Name: "bootstrap", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: BootstrapName(gw.Name)},
				Items:                []corev1.KeyToPath{{Key: BootstrapKey, Path: BootstrapKey}},
			}}},
			{Name: "xds-client", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName:  ClientCertName(gw.Name),
				DefaultMode: new(int32(0o440)),
			}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	for k, v := range envoy.NodeSelector {
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		spec.NodeSelector[k] = v
	}
	for _, t := range envoy.Tolerations {
		spec.Tolerations = append(spec.Tolerations, *t.DeepCopy())
	}
	spec.Affinity = envoy.Affinity.DeepCopy()
	for _, c := range envoy.TopologySpreadConstraints {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, *c.DeepCopy())
	}
	if hostNetwork {
		spec.HostNetwork = true
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		// The kubelet refuses net.* sysctls in the host's network
		// namespace, and uid 101 gets no effective capability from the
		// container's list: to bind the Gateway's ports below 1024 on the
		// node, Envoy runs as root there, with every capability dropped but
		// NET_BIND_SERVICE.
		spec.SecurityContext.Sysctls = nil
		spec.SecurityContext.RunAsNonRoot = new(false)
		spec.SecurityContext.RunAsUser = new(int64(0))
		spec.SecurityContext.RunAsGroup = new(int64(0))
		spec.SecurityContext.FSGroup = nil
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      ObjectLabels(gw),
			Annotations: podAnnotations,
		},
		Spec: spec,
	}
}

// containerPorts are the ports the Envoy container declares: readiness and
// metrics always; with hostPorts, every listener port (ServicePortsFor: with
// 443 for a shard with automatic HTTPS) as the host port of the same
// number; with hostNetwork, every port Envoy binds (admin, readiness,
// metrics, listeners), which the API then requires to equal their host
// ports. Declared host ports make the scheduler keep two pods
// that need one port off the same node. Without them, listener ports are
// not declared: they come and go through LDS and must not roll the pods.
func containerPorts(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters, hostPorts, hostNetwork bool) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{
		{Name: "ready", ContainerPort: ReadyPort, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
	}
	switch {
	case hostNetwork:
		ports = append([]corev1.ContainerPort{{Name: "admin", ContainerPort: AdminPort, Protocol: corev1.ProtocolTCP}}, ports...)
		for i := range ports {
			ports[i].HostPort = ports[i].ContainerPort
		}
	case hostPorts:
		// Only the listener ports are published; readiness and metrics
		// stay in the pod's network.
	default:
		return ports
	}
	for _, p := range ServicePortsFor(gw, params) {
		ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, HostPort: p.Port, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

func deployment(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(gw, Name(gw.Name)),
		Spec: appsv1.DeploymentSpec{
			Replicas: new(Replicas(params)),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(gw.Name)},
			Template: tmpl,
		},
	}
}

func daemonSet(gw *gatewayv1.Gateway, tmpl corev1.PodTemplateSpec) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: meta(gw, Name(gw.Name)),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(gw.Name)},
			Template: tmpl,
		},
	}
	if hasHostPorts(tmpl.Spec) {
		// A new pod cannot start on a node while the old one holds the
		// host ports: replace one node at a time, old pod first.
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{
			Type:          appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: new(intstr.FromInt32(1)), MaxSurge: new(intstr.FromInt32(0))},
		}
	}
	return ds
}

func hasHostPorts(spec corev1.PodSpec) bool {
	if spec.HostNetwork {
		return true
	}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				return true
			}
		}
	}
	return false
}

// podDisruptionBudget is spec.envoy.podDisruptionBudget made a
// PodDisruptionBudget over the Envoy pods; nil when unset.
func podDisruptionBudget(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters) *policyv1.PodDisruptionBudget {
	if params == nil || params.Spec.Envoy == nil || params.Spec.Envoy.PodDisruptionBudget == nil {
		return nil
	}
	b := params.Spec.Envoy.PodDisruptionBudget
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: meta(gw, Name(gw.Name)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(gw.Name)},
		},
	}
	switch {
	case b.MinAvailable != nil:
		pdb.Spec.MinAvailable = new(*b.MinAvailable)
	case b.MaxUnavailable != nil:
		pdb.Spec.MaxUnavailable = new(*b.MaxUnavailable)
	}
	return pdb
}

// SelectorStep is what AdoptSelector decided for an existing Deployment
// whose selector differs from the one Build chose.
type SelectorStep int

const (
	// SelectorKept: the objects select by the existing selector (or it was
	// already Build's); apply them.
	SelectorKept SelectorStep = iota
	// SelectorBridged: the desired pods would not match the existing
	// selector, so for now the pod template keeps that selector's labels
	// (with shardgate.io/gateway among them); apply the objects and wait
	// for the rollout.
	SelectorBridged
	// SelectorReplace: every pod of the existing Deployment carries
	// shardgate.io/gateway; delete the Deployment orphaning its ReplicaSets
	// and create it anew with Build's selector: the new Deployment adopts
	// the running ReplicaSet (its labels match) and rolls it over, and the
	// Service, now selecting shardgate.io/gateway, keeps every pod.
	SelectorReplace
)

// AdoptSelector reconciles Build's objects with an existing Deployment's
// selector, which is immutable: a Deployment created before
// shardgate.io/gateway existed selects LegacySelectorLabels.
//
// When the desired pods still carry every label of the existing selector,
// the desired Deployment, Service and PodDisruptionBudget select by it, so
// upgrading changes no selector and the rollout keeps old and new pods
// behind the Service (SelectorKept). When an infrastructure label breaks
// it (app.kubernetes.io/name: ingress-nginx, say), the pods first roll to
// a template that has both the old selector's labels and
// shardgate.io/gateway (SelectorBridged); once every pod has, the
// Deployment is replaced without stopping them (SelectorReplace). existing
// nil, or of Build's selector, leaves o as it is.
func AdoptSelector(o *Objects, existing *appsv1.Deployment) (SelectorStep, error) {
	if o.Deployment == nil || existing == nil || existing.Spec.Selector == nil {
		return SelectorKept, nil
	}
	old := existing.Spec.Selector
	if equalSelector(old, o.Deployment.Spec.Selector) {
		return SelectorKept, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(old)
	if err != nil || len(old.MatchExpressions) > 0 || len(old.MatchLabels) == 0 {
		// Not a selector this controller ever wrote: replace it.
		return SelectorReplace, nil
	}
	step := SelectorKept
	if !sel.Matches(labels.Set(o.Deployment.Spec.Template.Labels)) {
		if rolledOut(existing) {
			return SelectorReplace, nil
		}
		step = SelectorBridged
		for k, v := range old.MatchLabels {
			o.Deployment.Spec.Template.Labels[k] = v
		}
	}
	o.Deployment.Spec.Selector = old.DeepCopy()
	o.Service.Spec.Selector = map[string]string{}
	for k, v := range old.MatchLabels {
		o.Service.Spec.Selector[k] = v
	}
	if o.PodDisruptionBudget != nil {
		o.PodDisruptionBudget.Spec.Selector = old.DeepCopy()
	}
	for _, obj := range o.All() {
		delete(obj.GetAnnotations(), AnnotationDesiredHash)
		if err := stampHash(obj); err != nil {
			return step, err
		}
	}
	return step, nil
}

// rolledOut: every pod of d is of its current template, and that template
// carries the shardgate.io/gateway label that a Deployment of Build's
// selector adopts.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	own, ok := d.Spec.Template.Labels[LabelOwnGateway]
	return ok && own == d.Spec.Template.Labels[LabelGateway] &&
		d.Status.ObservedGeneration >= d.Generation &&
		d.Status.Replicas == want && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want
}

func equalSelector(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.MatchExpressions) > 0 || len(b.MatchExpressions) > 0 || len(a.MatchLabels) != len(b.MatchLabels) {
		return false
	}
	for k, v := range a.MatchLabels {
		if b.MatchLabels[k] != v {
			return false
		}
	}
	return true
}

// ReasonNoResources is the Gateway's Programmed=False reason when its
// Envoy DaemonSet runs no available pod on any node it should.
const ReasonNoResources = string(gatewayv1.GatewayReasonNoResources)

// DaemonSetUnavailable says why a Gateway's Envoy DaemonSet serves
// nothing: it should run on at least one node but has no available pod
// anywhere (typically a host port another Gateway's pod holds on every
// such node, which keeps the new pods Pending). It returns "" while the
// DaemonSet controller has not caught up with the spec, when no node is
// selected (nothing to run), or when a pod is available.
func DaemonSetUnavailable(ds *appsv1.DaemonSet) string {
	st := ds.Status
	if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled == 0 || st.NumberAvailable > 0 {
		return ""
	}
	msg := fmt.Sprintf("No Envoy pod of DaemonSet %s is available on the %d node(s) it should run on", ds.Name, st.DesiredNumberScheduled)
	if hasHostPorts(ds.Spec.Template.Spec) {
		msg += "; its pods need host ports, which another Gateway's Envoy pods may hold there (see the pods' scheduling events)"
	}
	return msg
}
