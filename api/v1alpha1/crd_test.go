/*
Copyright The shardgate Authors.
*/

package v1alpha1

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// These tests read the generated YAML in crds/, not the Go markers, so they
// fail when the YAML is stale or when a marker did not produce what we meant.
// Objects are validated in process with the apiserver's own schema, defaulting
// and CEL code; no apiserver is started.

const exactlyOneRule = "has(self.hostname) != has(self.subdomain)"

func loadCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "crds", file))
	if err != nil {
		t.Fatalf("read CRD: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
	return crd
}

func TestCRDs(t *testing.T) {
	cases := []struct {
		file, kind, plural, short string
		columns                   []string
	}{
		{"shardgate.io_leasehosts.yaml", "LeaseHost", "leasehosts", "lh",
			[]string{"Owner", "DSeq", "Hostname", "Subdomain", "Reserved", "Ready", "Admitted", "Reason", "Route", "Age"}},
		{"shardgate.io_leasedips.yaml", "LeasedIP", "leasedips", "lip",
			[]string{"Owner", "Endpoint", "ExternalPort", "Protocol", "IP", "Allocated", "Reason", "Service", "Age"}},
		{"shardgate.io_gatewayparameters.yaml", "GatewayParameters", "gatewayparameters", "gwp",
			[]string{"Domain", "Pool", "Age"}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			crd := loadCRD(t, tc.file)
			if crd.Name != tc.plural+".shardgate.io" {
				t.Errorf("name = %q", crd.Name)
			}
			if crd.Spec.Group != GroupVersion.Group {
				t.Errorf("group = %q, want %q", crd.Spec.Group, GroupVersion.Group)
			}
			if crd.Spec.Names.Kind != tc.kind || crd.Spec.Names.ListKind != tc.kind+"List" || crd.Spec.Names.Plural != tc.plural {
				t.Errorf("names = %+v", crd.Spec.Names)
			}
			if got := crd.Spec.Names.ShortNames; len(got) != 1 || got[0] != tc.short {
				t.Errorf("shortNames = %v, want [%s]", got, tc.short)
			}
			if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
				t.Errorf("scope = %q, want Namespaced", crd.Spec.Scope)
			}
			if len(crd.Spec.Versions) != 1 {
				t.Fatalf("%d versions, want 1", len(crd.Spec.Versions))
			}
			v := crd.Spec.Versions[0]
			if v.Name != GroupVersion.Version || !v.Served || !v.Storage {
				t.Errorf("version %q served=%v storage=%v", v.Name, v.Served, v.Storage)
			}
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Errorf("status subresource is off")
			}
			var cols []string
			for _, c := range v.AdditionalPrinterColumns {
				cols = append(cols, c.Name)
			}
			if strings.Join(cols, ",") != strings.Join(tc.columns, ",") {
				t.Errorf("printer columns = %v, want %v", cols, tc.columns)
			}
			// The same static checks the apiserver runs on create: structural
			// schema, list-map keys, defaults, and CEL compilation and cost.
			if errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internalCRD(t, crd)); len(errs) > 0 {
				t.Errorf("the apiserver would refuse this CRD:\n%v", errs.ToAggregate())
			}
		})
	}
}

func TestLeaseHostExactlyOneRule(t *testing.T) {
	crd := loadCRD(t, "shardgate.io_leasehosts.yaml")
	spec, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if !ok {
		t.Fatal("no spec in schema")
	}
	for _, r := range spec.XValidations {
		if r.Rule == exactlyOneRule {
			if r.Message != "exactly one of hostname and subdomain must be set" {
				t.Errorf("message = %q", r.Message)
			}
			return
		}
	}
	t.Fatalf("spec has no x-kubernetes-validations rule %q; got %+v", exactlyOneRule, spec.XValidations)
}

func TestSchemeRegistersAllKinds(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"LeaseHost", "LeaseHostList", "LeasedIP", "LeasedIPList", "GatewayParameters", "GatewayParametersList"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
	gvks, _, err := s.ObjectKinds(&LeaseHost{})
	if err != nil || len(gvks) != 1 || gvks[0] != GroupVersion.WithKind("LeaseHost") {
		t.Errorf("ObjectKinds(LeaseHost) = %v, %v", gvks, err)
	}
	// metav1.AddToGroupVersion must have run, or list/watch options fail to
	// convert for this group.
	if !s.Recognizes(GroupVersion.WithKind("WatchEvent")) {
		t.Error("metav1 types are not registered for the group version")
	}
}

// validation runs the apiserver's create-time checks for one CRD: defaulting,
// OpenAPI schema validation and CEL rules.
type validation struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

func newValidation(t *testing.T, file string) *validation {
	t.Helper()
	in := internalCRD(t, loadCRD(t, file))
	// The internal type hoists a schema shared by every version to
	// spec.validation.
	sch := in.Spec.Validation
	if sch == nil {
		sch = in.Spec.Versions[0].Schema
	}
	props := sch.OpenAPIV3Schema
	s, err := structuralschema.NewStructural(props)
	if err != nil {
		t.Fatal(err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	return &validation{structural: s, schema: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
}

// check returns the errors the apiserver would give for obj (YAML), and the
// object after defaulting.
func (v *validation) check(t *testing.T, obj string) (field.ErrorList, map[string]any) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(obj))
	if err != nil {
		t.Fatal(err)
	}
	var u map[string]any
	// utiljson decodes numbers as int64 where possible, as the apiserver does.
	if err := utiljson.Unmarshal(j, &u); err != nil {
		t.Fatal(err)
	}
	structuraldefaulting.Default(u, v.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, u, v.schema)
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...), u
}

type objCase struct {
	name    string
	obj     string
	wantErr string // substring of the aggregated errors; "" means valid
}

func runCases(t *testing.T, v *validation, header string, cases []objCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := v.check(t, header+tc.obj)
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("want valid, got:\n%v", errs.ToAggregate())
			case tc.wantErr != "" && len(errs) == 0:
				t.Errorf("want error containing %q, got none", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(errs.ToAggregate().Error(), tc.wantErr):
				t.Errorf("want error containing %q, got:\n%v", tc.wantErr, errs.ToAggregate())
			}
		})
	}
}

const leaseHostHeader = `
apiVersion: shardgate.io/v1alpha1
kind: LeaseHost
metadata: {name: x, namespace: lease-ns}
`

func TestLeaseHostValidation(t *testing.T) {
	v := newValidation(t, "shardgate.io_leasehosts.yaml")
	label63 := strings.Repeat("a", 63)
	label64 := strings.Repeat("a", 64)
	spec := func(extra string) string {
		return "spec:\n  lease: {owner: akash1abc, dseq: 42, gseq: 1, oseq: 1}\n  service: {name: web, port: 80}\n" + extra
	}
	runCases(t, v, leaseHostHeader, []objCase{
		{"hostname", spec("  hostname: www.example.com\n"), ""},
		{"subdomain", spec("  subdomain: app\n"), ""},
		{"multi-label subdomain", spec("  subdomain: a.b\n"), ""},
		{"both", spec("  hostname: www.example.com\n  subdomain: app\n"), "exactly one of hostname and subdomain must be set"},
		{"neither", spec(""), "exactly one of hostname and subdomain must be set"},
		{"uppercase", spec("  hostname: WWW.example.com\n"), "spec.hostname"},
		{"wildcard", spec("  hostname: '*.example.com'\n"), "spec.hostname"},
		{"trailing dot", spec("  hostname: example.com.\n"), "spec.hostname"},
		{"empty hostname", spec("  hostname: ''\n"), "spec.hostname"},
		{"63-char label", spec("  hostname: " + label63 + ".example.com\n"), ""},
		{"64-char label", spec("  hostname: " + label64 + ".example.com\n"), "each DNS label must be at most 63 characters"},
		{"64-char subdomain label", spec("  subdomain: " + label64 + "\n"), "each DNS label must be at most 63 characters"},
		{"path", spec("  hostname: a.example.com\n  path: /api/v1\n"), ""},
		{"relative path", spec("  hostname: a.example.com\n  path: api\n"), "spec.path"},
		{"double slash", spec("  hostname: a.example.com\n  path: /a//b\n"), "must not contain"},
		{"dot segment", spec("  hostname: a.example.com\n  path: /a/..\n"), "must not contain"},
		{"fragment", spec("  hostname: a.example.com\n  path: /a#b\n"), "spec.path"},
		{"no owner", "spec:\n  lease: {dseq: 1}\n  service: {name: web, port: 80}\n  hostname: a.example.com\n", "spec.lease.owner"},
		{"max uint32 gseq", "spec:\n  lease: {owner: o, dseq: 9007199254740993, gseq: 4294967295, oseq: 4294967295}\n  service: {name: web, port: 80}\n  hostname: a.example.com\n", ""},
		// A Kubernetes limit, pinned here so a change in it is noticed.
		{"dseq above int64", "spec:\n  lease: {owner: o, dseq: 9223372036854775808}\n  service: {name: web, port: 80}\n  hostname: a.example.com\n", "spec.lease.dseq"},
		{"negative dseq", "spec:\n  lease: {owner: o, dseq: -1}\n  service: {name: web, port: 80}\n  hostname: a.example.com\n", "spec.lease.dseq"},
		{"gseq over uint32", "spec:\n  lease: {owner: o, gseq: 4294967296}\n  service: {name: web, port: 80}\n  hostname: a.example.com\n", "spec.lease.gseq"},
		{"port 0", "spec:\n  lease: {owner: o}\n  service: {name: web, port: 0}\n  hostname: a.example.com\n", "spec.service.port"},
		{"bad service name", "spec:\n  lease: {owner: o}\n  service: {name: 1web, port: 80}\n  hostname: a.example.com\n", "spec.service.name"},
		{"no service", "spec:\n  lease: {owner: o}\n  hostname: a.example.com\n", "spec.service"},
	})

	t.Run("path defaults to /", func(t *testing.T) {
		errs, u := v.check(t, leaseHostHeader+spec("  hostname: a.example.com\n"))
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		if got := u["spec"].(map[string]any)["path"]; got != "/" {
			t.Errorf("path = %v, want /", got)
		}
	})
}

const leasedIPHeader = `
apiVersion: shardgate.io/v1alpha1
kind: LeasedIP
metadata: {name: x, namespace: lease-ns}
`

func TestLeasedIPValidation(t *testing.T) {
	v := newValidation(t, "shardgate.io_leasedips.yaml")
	spec := func(extra string) string {
		return "spec:\n  lease: {owner: akash1abc, dseq: 42}\n  service: web\n  port: 8080\n  externalPort: 443\n" + extra
	}
	runCases(t, v, leasedIPHeader, []objCase{
		{"minimal", spec("  endpoint: db\n"), ""},
		{"free-form endpoint", spec("  endpoint: 'My Endpoint_1!'\n"), ""},
		{"udp with pool", spec("  endpoint: db\n  protocol: UDP\n  pool: public\n"), ""},
		{"sctp", spec("  endpoint: db\n  protocol: SCTP\n"), "spec.protocol"},
		{"lowercase tcp", spec("  endpoint: db\n  protocol: tcp\n"), "spec.protocol"},
		{"empty endpoint", spec("  endpoint: ''\n"), "spec.endpoint"},
		{"no endpoint", spec(""), "spec.endpoint"},
		{"external port 65536", "spec:\n  lease: {owner: o}\n  endpoint: db\n  service: web\n  port: 80\n  externalPort: 65536\n", "spec.externalPort"},
		{"no external port", "spec:\n  lease: {owner: o}\n  endpoint: db\n  service: web\n  port: 80\n", "spec.externalPort"},
	})

	t.Run("protocol defaults to TCP", func(t *testing.T) {
		errs, u := v.check(t, leasedIPHeader+spec("  endpoint: db\n"))
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		if got := u["spec"].(map[string]any)["protocol"]; got != "TCP" {
			t.Errorf("protocol = %v, want TCP", got)
		}
	})
}

const gatewayParametersHeader = `
apiVersion: shardgate.io/v1alpha1
kind: GatewayParameters
metadata: {name: x, namespace: infra}
`

func TestGatewayParametersValidation(t *testing.T) {
	v := newValidation(t, "shardgate.io_gatewayparameters.yaml")
	runCases(t, v, gatewayParametersHeader, []objCase{
		{"empty", "spec: {}\n", ""},
		{"full", `spec:
  shard:
    domain: shard1.example.com
    canonicalHostname: router-a.shard1.example.com
    leaseSelector: {matchLabels: {tier: gold}}
    namespaceSelector: {matchExpressions: [{key: tenant, operator: Exists}]}
  envoy:
    image: envoyproxy/envoy:v1.37.0
    replicas: 0
    logLevel: warning
    resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 1Gi}}
  addresses: {pool: public}
`, ""},
		{"no domain", "spec:\n  shard: {canonicalHostname: r.example.com}\n", "spec.shard.domain"},
		{"64-char domain label", "spec:\n  shard: {domain: " + strings.Repeat("a", 64) + ".example.com}\n", "each DNS label must be at most 63 characters"},
		{"uppercase domain", "spec:\n  shard: {domain: Example.com}\n", "spec.shard.domain"},
		{"bad canonical", "spec:\n  shard: {domain: example.com, canonicalHostname: '*.example.com'}\n", "spec.shard.canonicalHostname"},
		{"negative replicas", "spec:\n  envoy: {replicas: -1}\n", "spec.envoy.replicas"},
		{"bad log level", "spec:\n  envoy: {logLevel: verbose}\n", "spec.envoy.logLevel"},
		{"daemonset with host ports", `spec:
  envoy:
    kind: DaemonSet
    hostPorts: true
    nodeSelector: {edge: "true"}
    tolerations: [{key: edge, operator: Exists, effect: NoSchedule}]
    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: edge, operator: Exists}]}]}}}
    topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {shardgate.io/gateway: edge}}}]
    podDisruptionBudget: {maxUnavailable: 25%}
    service: {externalTrafficPolicy: Cluster}
`, ""},
		{"daemonset with host network", "spec:\n  envoy: {kind: DaemonSet, hostNetwork: true, podDisruptionBudget: {minAvailable: 1}}\n", ""},
		{"host ports on a deployment", "spec:\n  envoy: {hostPorts: true}\n", "hostPorts needs kind DaemonSet"},
		{"host network on a deployment", "spec:\n  envoy: {kind: Deployment, hostNetwork: true}\n", "hostNetwork needs kind DaemonSet"},
		{"host ports and network", "spec:\n  envoy: {kind: DaemonSet, hostPorts: true, hostNetwork: true}\n", "set one of hostPorts and hostNetwork"},
		{"replicas of a daemonset", "spec:\n  envoy: {kind: DaemonSet, replicas: 2}\n", "replicas applies to kind Deployment only"},
		{"unknown kind", "spec:\n  envoy: {kind: StatefulSet}\n", "spec.envoy.kind"},
		{"both disruption bounds", "spec:\n  envoy: {podDisruptionBudget: {minAvailable: 1, maxUnavailable: 1}}\n", "exactly one of minAvailable and maxUnavailable"},
		{"no disruption bound", "spec:\n  envoy: {podDisruptionBudget: {}}\n", "exactly one of minAvailable and maxUnavailable"},
		{"bad traffic policy", "spec:\n  envoy: {service: {externalTrafficPolicy: Everywhere}}\n", "spec.envoy.service.externalTrafficPolicy"},
	})

	t.Run("kind and externalTrafficPolicy default to Deployment and Local", func(t *testing.T) {
		errs, u := v.check(t, gatewayParametersHeader+"spec:\n  envoy: {service: {}}\n")
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		envoy := u["spec"].(map[string]any)["envoy"].(map[string]any)
		if envoy["kind"] != "Deployment" || envoy["service"].(map[string]any)["externalTrafficPolicy"] != "Local" {
			t.Errorf("envoy = %v", envoy)
		}
	})

	t.Run("canonicalHostname is not defaulted by the apiserver", func(t *testing.T) {
		errs, u := v.check(t, gatewayParametersHeader+"spec:\n  shard: {domain: example.com}\n")
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		if _, ok := u["spec"].(map[string]any)["shard"].(map[string]any)["canonicalHostname"]; ok {
			t.Error("canonicalHostname was defaulted; the controller owns that default")
		}
	})
}

// internalCRD defaults and converts a v1 CRD the way the apiserver does before
// validating it.
func internalCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensions.CustomResourceDefinition {
	t.Helper()
	crd = crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}
