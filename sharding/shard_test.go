package sharding

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/tenancy"
)

const ours = shardgatev1alpha1.ControllerName

func class(name, controller string, defaultParams *gatewayv1.ParametersReference) *gatewayv1.GatewayClass {
	return &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gatewayv1.GatewayClassSpec{
			ControllerName: gatewayv1.GatewayController(controller),
			ParametersRef:  defaultParams,
		},
	}
}

func classRef(ns, name string) *gatewayv1.ParametersReference {
	r := &gatewayv1.ParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: name}
	if ns != "" {
		r.Namespace = new(gatewayv1.Namespace(ns))
	}
	return r
}

func gateway(ns, name, className, paramsName string) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(className)},
	}
	if paramsName != "" {
		gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{
			ParametersRef: &gatewayv1.LocalParametersReference{Group: "shardgate.io", Kind: "GatewayParameters", Name: paramsName},
		}
	}
	return gw
}

// created sets gw's creationTimestamp to second s.
func created(gw *gatewayv1.Gateway, s int64) *gatewayv1.Gateway {
	gw.CreationTimestamp = metav1.Unix(s, 0)
	return gw
}

func namespace(name string, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

func params(ns, name string, shard *shardgatev1alpha1.ShardSpec) *shardgatev1alpha1.GatewayParameters {
	return &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: shard},
	}
}

// shardView is a comparable rendering of a Shard (selectors as strings).
type shardView struct {
	Name, Gateway, Domain, Canonical, LeaseSel, NsSel string
}

func view(shards []Shard) []shardView {
	var out []shardView
	for _, s := range shards {
		out = append(out, shardView{s.Name, s.Gateway.String(), s.Domain, s.CanonicalHostname, s.LeaseSelector.String(), s.NamespaceSelector.String()})
	}
	return out
}

type problemView struct{ Gateway, Reason, MessagePart string }

func TestDiscover(t *testing.T) {
	domainA := &shardgatev1alpha1.ShardSpec{Domain: "shard-a.apps.example.test"}
	cases := []struct {
		name      string
		classes   []*gatewayv1.GatewayClass
		gateways  []*gatewayv1.Gateway
		params    []*shardgatev1alpha1.GatewayParameters
		want      []shardView
		problems  []problemView
		placement Placement
	}{
		{
			name:     "via the Gateway's parametersRef, canonical hostname defaulted",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "shard-a", "sg", "a")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("infra", "a", domainA)},
			want:     []shardView{{"shard-a", "infra/shard-a", "shard-a.apps.example.test", "router-shard-a.shard-a.apps.example.test", "", ""}},
		},
		{
			name:     "via the class default, which carries a namespace",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, classRef("defaults", "p"))},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("defaults", "p", &shardgatev1alpha1.ShardSpec{Domain: "d.example.com"})},
			want:     []shardView{{"gw", "infra/gw", "d.example.com", "router-gw.d.example.com", "", ""}},
		},
		{
			name:    "the Gateway's own ref replaces the class default",
			classes: []*gatewayv1.GatewayClass{class("sg", ours, classRef("defaults", "p"))},
			gateways: []*gatewayv1.Gateway{
				gateway("infra", "own", "sg", "own"),
				gateway("infra", "plain", "sg", ""),
			},
			params: []*shardgatev1alpha1.GatewayParameters{
				params("defaults", "p", &shardgatev1alpha1.ShardSpec{Domain: "default.example.com"}),
				params("infra", "own", nil), // envoy settings only: not a shard
			},
			want: []shardView{{"plain", "infra/plain", "default.example.com", "router-plain.default.example.com", "", ""}},
		},
		{
			name:     "canonical hostname override and selectors",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gold", "sg", "gold")},
			params: []*shardgatev1alpha1.GatewayParameters{params("infra", "gold", &shardgatev1alpha1.ShardSpec{
				Domain:            "gold.example.com",
				CanonicalHostname: "lb.gold.example.com",
				LeaseSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: metav1.LabelSelectorOpExists}}},
			})},
			want: []shardView{{"gold", "infra/gold", "gold.example.com", "lb.gold.example.com", "tier=gold", "tenant"}},
		},
		{
			name:     "a Gateway of another controller is ignored",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil), class("other", "example.com/other", nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "theirs", "other", "a"), gateway("infra", "mine", "sg", "a")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("infra", "a", domainA)},
			want:     []shardView{{"mine", "infra/mine", "shard-a.apps.example.test", "router-mine.shard-a.apps.example.test", "", ""}},
		},
		{
			name:     "a Gateway whose class does not exist is ignored",
			classes:  nil,
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "a")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("infra", "a", domainA)},
		},
		{
			name:     "no parameters at all: not a shard, no problem",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "")},
		},
		{
			name:    "a Gateway being deleted is not a shard",
			classes: []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{func() *gatewayv1.Gateway {
				g := gateway("infra", "gw", "sg", "a")
				g.DeletionTimestamp = &metav1.Time{}
				return g
			}()},
			params: []*shardgatev1alpha1.GatewayParameters{params("infra", "a", domainA)},
		},
		{
			name:     "parametersRef to a missing GatewayParameters",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, classRef("defaults", "p"))},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "missing")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("defaults", "p", domainA)},
			problems: []problemView{{"infra/gw", ReasonInvalidParameters, "GatewayParameters infra/missing not found"}},
		},
		{
			name:    "parametersRef of another kind",
			classes: []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{func() *gatewayv1.Gateway {
				g := gateway("infra", "gw", "sg", "cm")
				g.Spec.Infrastructure.ParametersRef.Group, g.Spec.Infrastructure.ParametersRef.Kind = "", "ConfigMap"
				return g
			}()},
			problems: []problemView{{"infra/gw", ReasonInvalidParameters, "spec.infrastructure.parametersRef must name a shardgate.io/GatewayParameters, not ConfigMap"}},
		},
		{
			name:     "the GatewayParameters must be in the Gateway's namespace",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "a")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("elsewhere", "a", domainA)},
			problems: []problemView{{"infra/gw", ReasonInvalidParameters, "infra/a not found"}},
		},
		{
			name:     "class default without a namespace",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, classRef("", "p"))},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("infra", "p", domainA)},
			problems: []problemView{{"infra/gw", ReasonInvalidParameters, "has no namespace"}},
		},
		{
			name:     "class default missing",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, classRef("defaults", "p"))},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "")},
			problems: []problemView{{"infra/gw", ReasonInvalidParameters, "GatewayClass sg spec.parametersRef: GatewayParameters defaults/p not found"}},
		},
		{
			name:     "an invalid lease selector skips the shard",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "bad", "sg", "bad"), gateway("infra", "good", "sg", "a")},
			params: []*shardgatev1alpha1.GatewayParameters{
				params("infra", "a", domainA),
				params("infra", "bad", &shardgatev1alpha1.ShardSpec{Domain: "x.example.com", LeaseSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}},
				}}),
			},
			want:     []shardView{{"good", "infra/good", "shard-a.apps.example.test", "router-good.shard-a.apps.example.test", "", ""}},
			problems: []problemView{{"infra/bad", ReasonInvalidSelector, "shard.leaseSelector"}},
		},
		{
			name:     "an invalid namespace selector skips the shard",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "bad", "sg", "bad")},
			params: []*shardgatev1alpha1.GatewayParameters{
				params("infra", "bad", &shardgatev1alpha1.ShardSpec{Domain: "x.example.com", NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"bad key!": "x"},
				}}),
			},
			problems: []problemView{{"infra/bad", ReasonInvalidSelector, "shard.namespaceSelector"}},
		},
		{
			name:     "an empty selector selects everything",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "a")},
			params: []*shardgatev1alpha1.GatewayParameters{params("infra", "a", &shardgatev1alpha1.ShardSpec{
				Domain: "d.example.com", LeaseSelector: &metav1.LabelSelector{},
			})},
			want: []shardView{{"gw", "infra/gw", "d.example.com", "router-gw.d.example.com", "", ""}},
		},
		{
			// Not the first by namespace: alpha sorts first but is newer.
			name:     "the same Gateway name in two provider namespaces: the oldest is the shard",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, classRef("defaults", "p"))},
			gateways: []*gatewayv1.Gateway{created(gateway("zeta", "edge", "sg", ""), 1), created(gateway("alpha", "edge", "sg", ""), 2)},
			params:   []*shardgatev1alpha1.GatewayParameters{params("defaults", "p", domainA)},
			want:     []shardView{{"edge", "zeta/edge", "shard-a.apps.example.test", "router-edge.shard-a.apps.example.test", "", ""}},
			problems: []problemView{{"alpha/edge", ReasonDuplicateShardName, "zeta/edge"}},
		},
		{
			// The attack: tenant B creates a Gateway of the class named like
			// the provider's shard, in its own namespace, which sorts
			// earlier, with its own shard parameters; and it is older.
			name:    "a tenant's Gateway named like a shard in an earlier-sorting namespace is not a shard",
			classes: []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{created(gateway("infra", "shard-a", "sg", "a"), 2),
				created(gateway("aaa-tenant-b", "shard-a", "sg", "a"), 1)},
			params: []*shardgatev1alpha1.GatewayParameters{params("infra", "a", domainA), params("aaa-tenant-b", "a", domainA)},
			placement: Placement{Policy: tenancy.DefaultPolicy(), Namespaces: map[string]*corev1.Namespace{
				"infra":        namespace("infra", nil),
				"aaa-tenant-b": namespace("aaa-tenant-b", map[string]string{tenancy.OwnerKey: "akash1bob"}),
			}},
			want:     []shardView{{"shard-a", "infra/shard-a", "shard-a.apps.example.test", "router-shard-a.shard-a.apps.example.test", "", ""}},
			problems: []problemView{{"aaa-tenant-b/shard-a", ReasonShardInTenantNamespace, "belongs to a tenant"}},
		},
		{
			name:    "an owner label marks a tenant namespace too, and Akash's label when configured",
			classes: []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("t1", "gw", "sg", "a"), gateway("t2", "gw2", "sg", "a"),
				gateway("infra", "gw3", "sg", "a")},
			params: []*shardgatev1alpha1.GatewayParameters{params("t1", "a", domainA), params("t2", "a", domainA), params("infra", "a", domainA)},
			placement: Placement{Policy: tenancy.Policy{Keys: []string{tenancy.OwnerKey, tenancy.AkashOwnerLabel}, RequireOwner: true},
				Namespaces: map[string]*corev1.Namespace{
					"t1":    {ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{tenancy.OwnerKey: "x"}}},
					"t2":    {ObjectMeta: metav1.ObjectMeta{Name: "t2", Labels: map[string]string{tenancy.AkashOwnerLabel: "akash1x"}}},
					"infra": namespace("infra", nil),
				}},
			want: []shardView{{"gw3", "infra/gw3", "shard-a.apps.example.test", "router-gw3.shard-a.apps.example.test", "", ""}},
			problems: []problemView{{"t1/gw", ReasonShardInTenantNamespace, "owner marking"},
				{"t2/gw2", ReasonShardInTenantNamespace, "owner marking"}},
		},
		{
			name:     "shardNamespaces restricts shards to the listed namespaces",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", "gw", "sg", "a"), gateway("other", "gw2", "sg", "a")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("infra", "a", domainA), params("other", "a", domainA)},
			placement: Placement{Allowed: []string{"infra"}, Namespaces: map[string]*corev1.Namespace{
				"infra": namespace("infra", nil), "other": namespace("other", nil)}},
			want:     []shardView{{"gw", "infra/gw", "shard-a.apps.example.test", "router-gw.shard-a.apps.example.test", "", ""}},
			problems: []problemView{{"other/gw2", ReasonShardNamespaceNotAllowed, "shardNamespaces"}},
		},
		{
			name:      "a namespace not known yet holds no shard",
			classes:   []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways:  []*gatewayv1.Gateway{gateway("new", "gw", "sg", "a")},
			params:    []*shardgatev1alpha1.GatewayParameters{params("new", "a", domainA)},
			placement: Placement{Namespaces: map[string]*corev1.Namespace{}},
			problems:  []problemView{{"new/gw", ReasonShardInTenantNamespace, "not known yet"}},
		},
		{
			name:     "a default canonical hostname that is too long leaves it empty",
			classes:  []*gatewayv1.GatewayClass{class("sg", ours, nil)},
			gateways: []*gatewayv1.Gateway{gateway("infra", strings.Repeat("g", 60), "sg", "a")},
			params:   []*shardgatev1alpha1.GatewayParameters{params("infra", "a", domainA)},
			want:     []shardView{{strings.Repeat("g", 60), "infra/" + strings.Repeat("g", 60), "shard-a.apps.example.test", "", "", ""}},
			problems: []problemView{{"infra/" + strings.Repeat("g", 60), ReasonInvalidCanonicalHostname, "set shard.canonicalHostname"}},
		},
		{
			name:     "output sorted by Gateway namespace/name; nil entries ignored",
			classes:  []*gatewayv1.GatewayClass{nil, class("sg", ours, classRef("defaults", "p"))},
			gateways: []*gatewayv1.Gateway{gateway("b", "z", "sg", ""), nil, gateway("a", "y", "sg", ""), gateway("b", "a", "sg", "")},
			params:   []*shardgatev1alpha1.GatewayParameters{nil, params("defaults", "p", domainA)},
			want: []shardView{
				{"y", "a/y", "shard-a.apps.example.test", "router-y.shard-a.apps.example.test", "", ""},
				{"a", "b/a", "shard-a.apps.example.test", "router-a.shard-a.apps.example.test", "", ""},
				{"z", "b/z", "shard-a.apps.example.test", "router-z.shard-a.apps.example.test", "", ""},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shards, problems := Discover(ours, tc.classes, tc.gateways, tc.params, tc.placement)
			if got := view(shards); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("shards:\n got %+v\nwant %+v", got, tc.want)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems = %v, want %d", problems, len(tc.problems))
			}
			for i, w := range tc.problems {
				p := problems[i]
				if p.Gateway.String() != w.Gateway || p.Reason != w.Reason || !strings.Contains(p.Message, w.MessagePart) {
					t.Errorf("problem[%d] = %v, want %s %s containing %q", i, p, w.Gateway, w.Reason, w.MessagePart)
				}
			}
		})
	}
}

// TestDiscoverDeterministic shuffles the input: the answer must not change.
func TestDiscoverDeterministic(t *testing.T) {
	classes := []*gatewayv1.GatewayClass{class("sg", ours, classRef("defaults", "p")), class("other", "x/y", nil)}
	var gws []*gatewayv1.Gateway
	for i := range 20 {
		gws = append(gws, gateway(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("gw%d", i%7), []string{"sg", "other"}[i%2], ""))
	}
	ps := []*shardgatev1alpha1.GatewayParameters{params("defaults", "p", &shardgatev1alpha1.ShardSpec{Domain: "d.example.com"})}
	wantShards, wantProblems := Discover(ours, classes, gws, ps, Placement{})
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		r.Shuffle(len(gws), func(i, j int) { gws[i], gws[j] = gws[j], gws[i] })
		r.Shuffle(len(classes), func(i, j int) { classes[i], classes[j] = classes[j], classes[i] })
		gotShards, gotProblems := Discover(ours, classes, gws, ps, Placement{})
		if !reflect.DeepEqual(view(gotShards), view(wantShards)) || !reflect.DeepEqual(gotProblems, wantProblems) {
			t.Fatalf("order changed the result:\n%v %v\n%v %v", view(gotShards), gotProblems, view(wantShards), wantProblems)
		}
	}
}

func TestSelection(t *testing.T) {
	mustShard := func(name string, lease, ns *metav1.LabelSelector) Shard {
		t.Helper()
		shards, problems := Discover(ours,
			[]*gatewayv1.GatewayClass{class("sg", ours, nil)},
			[]*gatewayv1.Gateway{gateway("infra", name, "sg", "p")},
			[]*shardgatev1alpha1.GatewayParameters{params("infra", "p", &shardgatev1alpha1.ShardSpec{
				Domain: name + ".example.com", LeaseSelector: lease, NamespaceSelector: ns,
			})}, Placement{})
		if len(shards) != 1 || len(problems) != 0 {
			t.Fatalf("discover %s: %v %v", name, shards, problems)
		}
		return shards[0]
	}
	all := mustShard("all", nil, nil)
	gold := mustShard("gold", &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}, nil)
	notFree := mustShard("not-free", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"free"}},
	}}, nil)
	internal := mustShard("internal", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"network": "internal"}})
	goldInternal := mustShard("gold-internal",
		&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
		&metav1.LabelSelector{MatchLabels: map[string]string{"network": "internal"}})
	nilSelectors := Shard{Name: "zero", Domain: "zero.example.com"} // built by hand: nil selectors
	shards := []Shard{all, gold, notFree, internal, goldInternal, nilSelectors}

	cases := []struct {
		name     string
		lhLabels map[string]string
		nsLabels map[string]string
		want     []string
	}{
		{"no labels anywhere", nil, nil, []string{"all", "not-free", "zero"}},
		{"gold lease", map[string]string{"tier": "gold"}, nil, []string{"all", "gold", "not-free", "zero"}},
		{"free lease", map[string]string{"tier": "free"}, nil, []string{"all", "zero"}},
		{"internal namespace", nil, map[string]string{"network": "internal"}, []string{"all", "not-free", "internal", "zero"}},
		{"gold lease in internal namespace", map[string]string{"tier": "gold"}, map[string]string{"network": "internal"},
			[]string{"all", "gold", "not-free", "internal", "gold-internal", "zero"}},
		{"namespace labels do not count as lease labels", nil, map[string]string{"tier": "gold"}, []string{"all", "not-free", "zero"}},
		{"lease labels do not count as namespace labels", map[string]string{"network": "internal"}, nil, []string{"all", "not-free", "zero"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lh := leaseHost("tenant", "lh", tc.lhLabels, nil)
			var got []string
			for _, s := range Select(shards, lh, tc.nsLabels) {
				got = append(got, s.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Select = %v, want %v", got, tc.want)
			}
			for _, s := range shards {
				in := false
				for _, n := range tc.want {
					in = in || n == s.Name
				}
				if Selects(s, lh, tc.nsLabels) != in {
					t.Errorf("Selects(%s) = %v, want %v", s.Name, !in, in)
				}
			}
		})
	}
	if Selects(all, nil, nil) {
		t.Error("Selects(nil LeaseHost) = true")
	}
}

func TestSelectThenCompose(t *testing.T) {
	// The scenario: subdomain web on two shards, one shard's lease
	// selector excluding another LeaseHost.
	shards, _ := Discover(ours,
		[]*gatewayv1.GatewayClass{class("sg", ours, nil)},
		[]*gatewayv1.Gateway{gateway("infra", "shard-b", "sg", "b"), gateway("infra", "shard-a", "sg", "a")},
		[]*shardgatev1alpha1.GatewayParameters{
			params("infra", "a", &shardgatev1alpha1.ShardSpec{Domain: "shard-a.apps.example.test"}),
			params("infra", "b", &shardgatev1alpha1.ShardSpec{Domain: "shard-b.apps.example.test",
				LeaseSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "shard-b", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"no"}}}}}),
		}, Placement{})
	web := leaseHost("t", "web", nil, nil)
	var hosts []string
	for _, h := range HostsFor(web, Select(shards, web, nil)) {
		hosts = append(hosts, h.Shard.Gateway.String()+"="+h.Host)
	}
	if want := []string{"infra/shard-a=web.shard-a.apps.example.test", "infra/shard-b=web.shard-b.apps.example.test"}; !reflect.DeepEqual(hosts, want) {
		t.Errorf("hosts = %v, want %v", hosts, want)
	}
	only := leaseHost("t", "only-a", map[string]string{"shard-b": "no"}, nil)
	sel := Select(shards, only, nil)
	if len(sel) != 1 || sel[0].Gateway != (types.NamespacedName{Namespace: "infra", Name: "shard-a"}) {
		t.Errorf("Select(only-a) = %v", view(sel))
	}
}

func TestListenerCovers(t *testing.T) {
	listener := func(proto gatewayv1.ProtocolType, host string) gatewayv1.Listener {
		l := gatewayv1.Listener{Name: "l", Port: 80, Protocol: proto}
		if host != "-" {
			l.Hostname = new(gatewayv1.Hostname(host))
		}
		return l
	}
	gw := func(ls ...gatewayv1.Listener) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{Spec: gatewayv1.GatewaySpec{Listeners: ls}}
	}
	const domain = "shard-a.apps.example.test"
	grpcOnly := listener(gatewayv1.HTTPProtocolType, "-")
	grpcOnly.AllowedRoutes = &gatewayv1.AllowedRoutes{Kinds: []gatewayv1.RouteGroupKind{{Kind: "GRPCRoute"}}}
	explicitHTTPRoute := listener(gatewayv1.HTTPSProtocolType, "*."+domain)
	explicitHTTPRoute.AllowedRoutes = &gatewayv1.AllowedRoutes{Kinds: []gatewayv1.RouteGroupKind{
		{Kind: "GRPCRoute"}, {Group: new(gatewayv1.Group(gatewayv1.GroupName)), Kind: "HTTPRoute"},
	}}
	otherGroup := listener(gatewayv1.HTTPProtocolType, "-")
	otherGroup.AllowedRoutes = &gatewayv1.AllowedRoutes{Kinds: []gatewayv1.RouteGroupKind{{Group: new(gatewayv1.Group("example.com")), Kind: "HTTPRoute"}}}
	cases := []struct {
		name string
		gw   *gatewayv1.Gateway
		want bool
	}{
		{"no hostname", gw(listener(gatewayv1.HTTPProtocolType, "-")), true},
		{"empty hostname", gw(listener(gatewayv1.HTTPProtocolType, "")), true},
		{"exact wildcard for the domain", gw(listener(gatewayv1.HTTPProtocolType, "*."+domain)), true},
		{"HTTPS wildcard", gw(listener(gatewayv1.HTTPSProtocolType, "*."+domain)), true},
		{"wider wildcard", gw(listener(gatewayv1.HTTPProtocolType, "*.apps.example.test")), true},
		{"widest wildcard", gw(listener(gatewayv1.HTTPProtocolType, "*.test")), true},
		{"wildcard of a sibling domain", gw(listener(gatewayv1.HTTPProtocolType, "*.shard-b.apps.example.test")), false},
		{"wildcard under the domain is too narrow", gw(listener(gatewayv1.HTTPProtocolType, "*.x."+domain)), false},
		{"suffix without a label boundary", gw(listener(gatewayv1.HTTPProtocolType, "*.ard-a.apps.example.test")), false},
		{"exact hostname equal to the domain", gw(listener(gatewayv1.HTTPProtocolType, domain)), false},
		{"exact hostname under the domain", gw(listener(gatewayv1.HTTPProtocolType, "web."+domain)), false},
		{"TLS passthrough listener", gw(listener(gatewayv1.TLSProtocolType, "*."+domain)), false},
		{"TCP listener", gw(listener(gatewayv1.TCPProtocolType, "-")), false},
		{"listener not allowing HTTPRoutes", gw(grpcOnly), false},
		{"listener listing HTTPRoute among kinds", gw(explicitHTTPRoute), true},
		{"HTTPRoute of another group", gw(otherGroup), false},
		{"one good listener among bad ones", gw(listener(gatewayv1.TLSProtocolType, "-"), listener(gatewayv1.HTTPProtocolType, "x.example.com"), listener(gatewayv1.HTTPProtocolType, "*."+domain)), true},
		{"no listeners", gw(), false},
		{"nil Gateway", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ListenerCovers(tc.gw, domain); got != tc.want {
				t.Errorf("ListenerCovers = %v, want %v", got, tc.want)
			}
		})
	}
	if ListenerCovers(gw(listener(gatewayv1.HTTPProtocolType, "-")), "") {
		t.Error("an empty domain is covered")
	}
}
