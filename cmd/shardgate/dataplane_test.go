package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestDataPlaneConfigDump runs the built binary against the real apiserver
// and reads what a shard's proxies are served, as an operator would, from
// /debug/config_dump/<ns>/<gateway>: a tenant's generated route gets
// ingress-nginx's defaults (no cap on a whole response, a 60 s idle
// timeout, WebSocket upgrades, the client address in X-Forwarded-For, a
// JSON access log), and the shard's GatewayParameters spec.traffic changes
// them on the listener and on every route.
func TestDataPlaneConfigDump(t *testing.T) {
	ctx := context.Background()
	env := testenv.StartT(t, testenv.Options{})
	c := env.Client

	must(t, c.Create(ctx, &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: shardgatev1alpha1.ControllerName},
	}))
	must(t, c.Create(ctx, &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge"},
		Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: "a.example.test"}},
	}))
	must(t, c.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge"},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: "shardgate.io", Kind: "GatewayParameters", Name: "edge",
			}},
			Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
				Hostname:      new(gatewayv1.Hostname("*.a.example.test")),
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: new(gatewayv1.NamespacesFromAll)}},
			}},
		},
	}))
	const owner = "akash1dataplane"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Annotations: map[string]string{tenancy.OwnerKey: owner}}}))
	must(t, c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}))
	must(t, c.Create(ctx, &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "blog"},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:     shardgatev1alpha1.LeaseRef{Owner: owner, DSeq: 1, GSeq: 1, OSeq: 1},
			Subdomain: "blog",
			Service:   shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
		},
	}))

	metrics := freeAddr(t)
	proc, err := env.StartShardgate("shardgate", "--health-address="+freeAddr(t), "--metrics-address="+metrics,
		"--metrics-secure=false", "--xds-address="+freeAddr(t), "--log-format=text")
	if err != nil {
		t.Fatal(err)
	}
	dumpURL := "http://" + metrics + "/debug/config_dump/default/edge"

	// The defaults.
	var d served
	waitUntil(t, proc, "the shard to serve blog.a.example.test", func() (bool, string) {
		var err error
		d, err = readDump(dumpURL)
		if err != nil {
			return false, err.Error()
		}
		return d.route("blog.a.example.test") != nil, "no route for blog.a.example.test yet"
	})
	hcm := d.hcm(t, "http-80")
	if hcm["useRemoteAddress"] != true {
		t.Errorf("use_remote_address = %v, want true: the client address must reach X-Forwarded-For", hcm["useRemoteAddress"])
	}
	if _, ok := hcm["xffNumTrustedHops"]; ok {
		t.Errorf("xff_num_trusted_hops = %v by default, want 0 (unset)", hcm["xffNumTrustedHops"])
	}
	if got := upgrades(hcm["upgradeConfigs"]); !slices.Equal(got, []string{"websocket"}) {
		t.Errorf("listener upgrade_configs = %v, want [websocket] on every route", got)
	}
	fields := accessLogJSON(t, hcm)
	for name, op := range ir.DefaultAccessLogFields() {
		if fields[name] != op {
			t.Errorf("access log field %s = %v, want %s", name, fields[name], op)
		}
	}
	action := d.route("blog.a.example.test")
	if action["timeout"] != "0s" || action["idleTimeout"] != "60s" {
		t.Errorf("generated route timeout %v, idle timeout %v; want 0s (no cap on a response) and 60s", action["timeout"], action["idleTimeout"])
	}
	if got := upgrades(action["upgradeConfigs"]); len(got) != 0 {
		t.Errorf("route upgrade_configs = %v, want none: the listener's apply", got)
	}

	// The provider's settings on the shard.
	var p shardgatev1alpha1.GatewayParameters
	must(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "edge"}, &p))
	p.Spec.Traffic = &shardgatev1alpha1.TrafficSpec{
		IdleTimeout:   &metav1.Duration{Duration: 300e9},
		WebSockets:    shardgatev1alpha1.WebSocketsAppProtocol,
		TrustedHops:   2,
		ProxyProtocol: true,
		AccessLog:     &shardgatev1alpha1.AccessLogSpec{Format: shardgatev1alpha1.AccessLogOff},
	}
	must(t, c.Update(ctx, &p))
	waitUntil(t, proc, "the shard's proxies to get its traffic settings", func() (bool, string) {
		var err error
		d, err = readDump(dumpURL)
		if err != nil {
			return false, err.Error()
		}
		a := d.route("blog.a.example.test")
		return a != nil && a["idleTimeout"] == "300s", fmt.Sprintf("route action %v", a)
	})
	hcm = d.hcm(t, "http-80")
	if hcm["xffNumTrustedHops"] != float64(2) || hcm["useRemoteAddress"] != true {
		t.Errorf("xff_num_trusted_hops %v, use_remote_address %v; want 2, true", hcm["xffNumTrustedHops"], hcm["useRemoteAddress"])
	}
	if got := upgrades(hcm["upgradeConfigs"]); len(got) != 0 {
		t.Errorf("listener upgrade_configs = %v with webSockets AppProtocol, want none", got)
	}
	if _, ok := hcm["accessLog"]; ok {
		t.Errorf("access log %v with format Off", hcm["accessLog"])
	}
	if got := d.listenerFilters("http-80"); !slices.Equal(got, []string{"envoy.filters.listener.proxy_protocol"}) {
		t.Errorf("listener filters %v, want the PROXY protocol", got)
	}
	// The generated route still upgrades: its LeaseHost's visitors keep
	// WebSockets whatever the shard says for other routes.
	if got := upgrades(d.route("blog.a.example.test")["upgradeConfigs"]); !slices.Equal(got, []string{"websocket"}) {
		t.Errorf("generated route upgrade_configs = %v, want [websocket]", got)
	}
}

// served is a decoded config dump: each type's resources as JSON objects.
type served map[string][]map[string]any

func readDump(url string) (served, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var dump struct {
		Types []struct {
			Type      string           `json:"type"`
			Resources []map[string]any `json:"resources"`
		} `json:"types"`
	}
	if err := json.Unmarshal(body, &dump); err != nil {
		return nil, fmt.Errorf("decode config dump: %w", err)
	}
	out := served{}
	for _, ty := range dump.Types {
		out[ty.Type] = ty.Resources
	}
	return out, nil
}

// route is the action of the first route of the virtual host serving
// domain, or nil.
func (s served) route(domain string) map[string]any {
	for _, rc := range s["RouteConfiguration"] {
		for _, vh := range list(rc["virtualHosts"]) {
			if !slices.Contains(list(vh.(map[string]any)["domains"]), any(domain)) {
				continue
			}
			for _, r := range list(vh.(map[string]any)["routes"]) {
				if a, ok := r.(map[string]any)["route"].(map[string]any); ok {
					return a
				}
			}
		}
	}
	return nil
}

func (s served) listener(name string) map[string]any {
	for _, l := range s["Listener"] {
		if l["name"] == name {
			return l
		}
	}
	return nil
}

// hcm is the HTTP connection manager of the listener's first filter chain.
func (s served) hcm(t *testing.T, listener string) map[string]any {
	t.Helper()
	l := s.listener(listener)
	if l == nil {
		t.Fatalf("no listener %s", listener)
	}
	chains := list(l["filterChains"])
	if len(chains) == 0 {
		t.Fatalf("listener %s has no filter chain", listener)
	}
	filters := list(chains[0].(map[string]any)["filters"])
	if len(filters) == 0 {
		t.Fatalf("listener %s has no filter", listener)
	}
	return filters[0].(map[string]any)["typedConfig"].(map[string]any)
}

func (s served) listenerFilters(listener string) []string {
	var out []string
	for _, f := range list(s.listener(listener)["listenerFilters"]) {
		out = append(out, f.(map[string]any)["name"].(string))
	}
	return out
}

func accessLogJSON(t *testing.T, hcm map[string]any) map[string]any {
	t.Helper()
	logs := list(hcm["accessLog"])
	if len(logs) != 1 {
		t.Fatalf("access logs %v, want one", hcm["accessLog"])
	}
	cfg := logs[0].(map[string]any)["typedConfig"].(map[string]any)
	if cfg["path"] != "/dev/stdout" {
		t.Errorf("access log path %v, want /dev/stdout", cfg["path"])
	}
	format, _ := cfg["logFormat"].(map[string]any)
	fields, ok := format["jsonFormat"].(map[string]any)
	if !ok {
		t.Fatalf("access log format %v, want JSON", cfg["logFormat"])
	}
	return fields
}

func upgrades(v any) []string {
	var out []string
	for _, u := range list(v) {
		out = append(out, fmt.Sprint(u.(map[string]any)["upgradeType"]))
	}
	return out
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}
