package addresses

import (
	"net/netip"
	"reflect"
	"testing"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func gwPool(name string, addrs ...string) metallbv1beta1.IPAddressPool {
	return metallbv1beta1.IPAddressPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: name},
		Spec:       metallbv1beta1.IPAddressPoolSpec{Addresses: addrs},
	}
}

func TestPoolContains(t *testing.T) {
	cases := []struct {
		entry string
		ip    string
		want  bool
	}{
		{"127.240.0.0/28", "127.240.0.0", true},
		{"127.240.0.0/28", "127.240.0.15", true},
		{"127.240.0.0/28", "127.240.0.16", false},
		{"127.240.0.5/28", "127.240.0.1", true}, // host bits set: MetalLB masks them
		{"192.0.2.10-192.0.2.20", "192.0.2.10", true},
		{"192.0.2.10-192.0.2.20", "192.0.2.20", true},
		{"192.0.2.10-192.0.2.20", "192.0.2.21", false},
		{"192.0.2.10-192.0.2.20", "192.0.2.9", false},
		{"192.0.2.10 - 192.0.2.20", "192.0.2.15", true},
		{"192.0.2.7/32", "192.0.2.7", true},
		{"192.0.2.7", "192.0.2.7", true},
		{"2001:db8::/120", "2001:db8::ff", true},
		{"2001:db8::/120", "2001:db8::100", false},
		{"2001:db8::10-2001:db8::20", "2001:db8::1a", true},
		{"2001:db8::10-2001:db8::20", "2001:db8::21", false},
		// Families never mix.
		{"192.0.2.0/24", "2001:db8::1", false},
		{"2001:db8::/32", "192.0.2.1", false},
		{"192.0.2.10-192.0.2.20", "::ffff:192.0.2.15", true}, // v4-mapped is the v4 address
		{"::ffff:192.0.2.0/120", "192.0.2.1", false},         // a v6 prefix stays v6
		// Garbage contains nothing.
		{"not-an-ip", "192.0.2.1", false},
		{"192.0.2.0/99", "192.0.2.1", false},
		{"", "192.0.2.1", false},
	}
	for _, c := range cases {
		p := gwPool("p", c.entry)
		if got := PoolContains(&p, netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("PoolContains(%q, %s) = %v, want %v", c.entry, c.ip, got, c.want)
		}
	}
	multi := gwPool("multi", "10.0.0.0/30", "192.0.2.10-192.0.2.11")
	if !PoolContains(&multi, netip.MustParseAddr("192.0.2.11")) || PoolContains(&multi, netip.MustParseAddr("10.0.0.4")) {
		t.Error("a pool with several entries")
	}
}

func gwWith(addrs ...gatewayv1.GatewaySpecAddress) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "gw"},
		Spec:       gatewayv1.GatewaySpec{Addresses: addrs},
	}
}

func gwIP(v string) gatewayv1.GatewaySpecAddress {
	return gatewayv1.GatewaySpecAddress{Type: new(gatewayv1.IPAddressType), Value: v}
}

func gwUntyped(v string) gatewayv1.GatewaySpecAddress { return gatewayv1.GatewaySpecAddress{Value: v} }

func gwParams(pool string) *shardgatev1alpha1.GatewayParameters {
	return &shardgatev1alpha1.GatewayParameters{Spec: shardgatev1alpha1.GatewayParametersSpec{
		Addresses: &shardgatev1alpha1.AddressesSpec{Pool: pool},
	}}
}

func TestGatewayServiceAnnotations(t *testing.T) {
	host := gatewayv1.GatewaySpecAddress{Type: new(gatewayv1.HostnameAddressType), Value: "gw.example.com"}
	cases := []struct {
		name   string
		gw     *gatewayv1.Gateway
		params *shardgatev1alpha1.GatewayParameters
		want   map[string]string
	}{
		{"nothing", gwWith(), nil, map[string]string{}},
		{"params without addresses", gwWith(), &shardgatev1alpha1.GatewayParameters{}, map[string]string{}},
		{"pool", gwWith(), gwParams("gold"), map[string]string{AnnotationAddressPool: "gold"}},
		{"typed and untyped IPs, in spec order", gwWith(gwIP("192.0.2.10"), gwUntyped("2001:db8::1")), nil,
			map[string]string{AnnotationLoadBalancerIPs: "192.0.2.10,2001:db8::1"}},
		{"hostname and garbage skipped, duplicates folded", gwWith(host, gwIP("192.0.2.10"), gwUntyped("nope"), gwUntyped("192.0.2.10"), gwIP("")), gwParams("gold"),
			map[string]string{AnnotationAddressPool: "gold", AnnotationLoadBalancerIPs: "192.0.2.10"}},
		{"only a hostname", gwWith(host), nil, map[string]string{}},
		{"empty IPAddress value: the pool, no fixed IP", gwWith(gwIP("")), gwParams("gold"), map[string]string{AnnotationAddressPool: "gold"}},
		{"empty untyped value next to a fixed IP", gwWith(gwUntyped(""), gwIP("192.0.2.10")), nil, map[string]string{AnnotationLoadBalancerIPs: "192.0.2.10"}},
	}
	for _, c := range cases {
		if got := GatewayServiceAnnotations(c.gw, c.params); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func gwLBService(ingress ...corev1.LoadBalancerIngress) *corev1.Service {
	return &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}}}
}

func TestGatewayAddresses(t *testing.T) {
	pools := []metallbv1beta1.IPAddressPool{gwPool("gold", "127.240.0.0/29"), gwPool("silver", "127.240.0.8-127.240.0.15")}
	assigned := gwLBService(corev1.LoadBalancerIngress{IP: "127.240.0.9"})
	cases := []struct {
		name       string
		gw         *gatewayv1.Gateway
		params     *shardgatev1alpha1.GatewayParameters
		svc        *corev1.Service
		checkPools bool
		reason     string
		message    string
		addresses  []string
	}{
		{name: "no Service yet", gw: gwWith(), checkPools: true, reason: ReasonAddressNotAssigned,
			message: "No address is assigned to the Gateway's Service yet"},
		{name: "pending", gw: gwWith(), svc: gwLBService(), checkPools: true, reason: ReasonAddressNotAssigned,
			message: "No address is assigned to the Gateway's Service yet"},
		{name: "assigned", gw: gwWith(), svc: assigned, checkPools: true, addresses: []string{"IPAddress/127.240.0.9"}},
		{name: "hostname ingress", gw: gwWith(), svc: gwLBService(corev1.LoadBalancerIngress{Hostname: "lb.example.com"}, corev1.LoadBalancerIngress{IP: "127.240.0.9"}),
			addresses: []string{"IPAddress/127.240.0.9", "Hostname/lb.example.com"}},
		{name: "requested IP in a pool and assigned", gw: gwWith(gwIP("127.240.0.9")), svc: assigned, checkPools: true,
			addresses: []string{"IPAddress/127.240.0.9"}},
		{name: "requested IP in a pool, pending", gw: gwWith(gwIP("127.240.0.9")), svc: gwLBService(), checkPools: true,
			reason: ReasonAddressNotAssigned, message: "No address is assigned to the Gateway's Service yet"},
		{name: "requested IP in no pool", gw: gwWith(gwUntyped("127.240.3.77")), svc: gwLBService(), checkPools: true,
			reason: ReasonAddressNotUsable, message: "Requested address 127.240.3.77 is in no IPAddressPool"},
		{name: "one of two requested IPs in no pool, old address still assigned", gw: gwWith(gwIP("127.240.0.9"), gwIP("127.240.3.77")), svc: assigned, checkPools: true,
			reason: ReasonAddressNotUsable, message: "Requested address 127.240.3.77 is in no IPAddressPool", addresses: []string{"IPAddress/127.240.0.9"}},
		{name: "requested IP outside the named pool", gw: gwWith(gwIP("127.240.0.9")), params: gwParams("gold"), svc: gwLBService(), checkPools: true,
			reason: ReasonAddressNotUsable, message: `Requested address 127.240.0.9 is not in IPAddressPool "gold"`},
		{name: "requested IP inside the named pool", gw: gwWith(gwIP("127.240.0.3")), params: gwParams("gold"), svc: gwLBService(corev1.LoadBalancerIngress{IP: "127.240.0.3"}), checkPools: true,
			addresses: []string{"IPAddress/127.240.0.3"}},
		{name: "pools unknown: never unusable", gw: gwWith(gwIP("127.240.3.77")), svc: gwLBService(), checkPools: false,
			reason: ReasonAddressNotAssigned, message: "No address is assigned to the Gateway's Service yet"},
		{name: "empty value, pending", gw: gwWith(gwIP("")), svc: gwLBService(), checkPools: true,
			reason: ReasonAddressNotAssigned, message: "No address is assigned to the Gateway's Service yet"},
		{name: "empty value, assigned from the pool", gw: gwWith(gwIP("")), params: gwParams("silver"), svc: assigned, checkPools: true,
			addresses: []string{"IPAddress/127.240.0.9"}},
		{name: "empty untyped value, assigned", gw: gwWith(gwUntyped("")), svc: assigned, checkPools: true,
			addresses: []string{"IPAddress/127.240.0.9"}},
		{name: "two empty values, one address", gw: gwWith(gwIP(""), gwUntyped("")), svc: assigned, checkPools: true,
			reason: ReasonAddressNotAssigned, message: "2 IP addresses are requested (2 without a value) but 1 is assigned to the Gateway's Service",
			addresses: []string{"IPAddress/127.240.0.9"}},
		{name: "a fixed IP and an empty value, only the fixed one", gw: gwWith(gwIP("127.240.0.9"), gwIP("")), svc: assigned, checkPools: true,
			reason: ReasonAddressNotAssigned, message: "2 IP addresses are requested (1 without a value) but 1 is assigned to the Gateway's Service",
			addresses: []string{"IPAddress/127.240.0.9"}},
		{name: "a fixed IPv4 and an empty value, dual-stack assignment", gw: gwWith(gwIP("127.240.0.9"), gwIP("")),
			svc: gwLBService(corev1.LoadBalancerIngress{IP: "127.240.0.9"}, corev1.LoadBalancerIngress{IP: "fd00::9"}), checkPools: true,
			addresses: []string{"IPAddress/127.240.0.9", "IPAddress/fd00::9"}},
		{name: "requested IP changed, MetalLB not caught up", gw: gwWith(gwIP("127.240.0.10")), svc: assigned, checkPools: true,
			reason: ReasonAddressNotAssigned, message: "Requested address 127.240.0.10 is not assigned to the Gateway's Service yet", addresses: []string{"IPAddress/127.240.0.9"}},
	}
	for _, c := range cases {
		st := GatewayAddresses(c.gw, c.params, c.svc, pools, c.checkPools)
		if st.Reason != c.reason || st.Message != c.message {
			t.Errorf("%s: reason/message = %q/%q, want %q/%q", c.name, st.Reason, st.Message, c.reason, c.message)
		}
		var got []string
		for _, a := range st.Addresses {
			got = append(got, string(*a.Type)+"/"+a.Value)
		}
		if !reflect.DeepEqual(got, c.addresses) {
			t.Errorf("%s: addresses = %v, want %v", c.name, got, c.addresses)
		}
	}
}
