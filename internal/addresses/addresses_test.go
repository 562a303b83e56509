package addresses_test

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/addresses"
)

// hashed is the hashed sharing key computed independently of the package:
// "ip-" and the lowercase, unpadded base32hex of the first 20 bytes of
// SHA-256 over the owner and the endpoint, each preceded by its length as
// a 4-byte big-endian integer.
func hashed(owner, endpoint string) string {
	h := sha256.New()
	for _, f := range []string{owner, endpoint} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return "ip-" + strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)[:20]))
}

// endpointHash is the 24-character stand-in for an endpoint that is not
// DNS-safe.
func endpointHash(endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:15]))
}

func TestSharingKey(t *testing.T) {
	cases := []struct{ owner, endpoint, want string }{
		// The plain form, unchanged for normal owners and endpoints.
		{"akash1alice", "myip", "akash1alice-ip-myip"},
		{"akash1alice", "my-ip2", "akash1alice-ip-my-ip2"},
		{"akash1alice", "0", "akash1alice-ip-0"},
		// An endpoint that is not DNS-safe is replaced by the base32hex of
		// the first 15 bytes of its SHA-256, as Akash's IP operator does
		// (known vectors, as before).
		{"akash1alice", "My IP!", "akash1alice-ip-6u5debd38rq359gfft2fasin"},
		{"akash1bob", "web_1", "akash1bob-ip-os1s7ektraej95g67lsq2jou"},
		{"akash1alice", "MyIP", "akash1alice-ip-" + endpointHash("MyIP")},
		{"akash1alice", "my.ip", "akash1alice-ip-" + endpointHash("my.ip")},
		{"akash1alice", "ip\u00e9", "akash1alice-ip-" + endpointHash("ip\u00e9")},
		{"akash1alice", "my ip", "akash1alice-ip-" + endpointHash("my ip")},
		// The review's collision: both fields hashed (known vectors,
		// computed with Python's hashlib, struct and base64.b32hexencode).
		{"akash1a", "db-ip-primary", "ip-umcba35n23i5ctqiu57ikkmvmelcnc7i"},
		{"akash1a-ip-db", "primary", "ip-8b32b3m9q1a1100dmvv9aletgirj9eps"},
		// An owner that is not DNS-safe.
		{"Akash1alice", "myip", hashed("Akash1alice", "myip")},
		// "-ip-" more than once in the plain form, overlaps included.
		{"akash1alice", "my-ip-2", hashed("akash1alice", "my-ip-2")},
		{"x-ip", "-y", hashed("x-ip", "-y")},
		{"x", "ip--y", hashed("x", "ip--y")},
		{"x-", "ip-y", hashed("x-", "ip-y")},
	}
	for _, tc := range cases {
		if got := addresses.SharingKey(tc.owner, tc.endpoint); got != tc.want {
			t.Errorf("SharingKey(%q, %q) = %q, want %q", tc.owner, tc.endpoint, got, tc.want)
		}
	}
	lip := &shardgatev1alpha1.LeasedIP{Spec: shardgatev1alpha1.LeasedIPSpec{Lease: shardgatev1alpha1.LeaseRef{Owner: "o"}, Endpoint: "E"}}
	if got := addresses.LeasedIPSharingKey(lip); got != "o-ip-"+endpointHash("E") {
		t.Errorf("LeasedIPSharingKey = %q", got)
	}
}

// The review's collision: two owners, one key, one IP.
func TestSharingKeyOwnersDoNotCollide(t *testing.T) {
	a, b := addresses.SharingKey("akash1a", "db-ip-primary"), addresses.SharingKey("akash1a-ip-db", "primary")
	if a == b {
		t.Fatalf("(akash1a, db-ip-primary) and (akash1a-ip-db, primary) share the key %q", a)
	}
}

// SharingKey is injective: every pair of distinct (owner, endpoint) over an
// alphabet rich in the separator's letters gets its own key. All strings
// up to 4 characters long over {-, i, p, a} are paired with each other.
func TestSharingKeyInjective(t *testing.T) {
	var words []string
	var grow func(prefix string)
	grow = func(prefix string) {
		if prefix != "" {
			words = append(words, prefix)
		}
		if len(prefix) == 4 {
			return
		}
		for _, c := range []string{"-", "i", "p", "a"} {
			grow(prefix + c)
		}
	}
	grow("")
	type pair struct{ owner, endpoint string }
	seen := make(map[string]pair, len(words)*len(words))
	plain := 0
	for _, o := range words {
		for _, e := range words {
			k := addresses.SharingKey(o, e)
			if p, dup := seen[k]; dup {
				t.Fatalf("SharingKey(%q, %q) = SharingKey(%q, %q) = %q", o, e, p.owner, p.endpoint, k)
			}
			seen[k] = pair{o, e}
			if k == o+"-ip-"+e {
				plain++
			}
		}
	}
	if plain == 0 || plain == len(seen) {
		t.Fatalf("%d of %d keys in the plain form: the test does not exercise both forms", plain, len(seen))
	}
	t.Logf("%d pairs, %d plain keys, no two alike", len(seen), plain)
}

func TestServiceName(t *testing.T) {
	long63 := "s" + strings.Repeat("x", 61) + "z"
	cases := []struct {
		service string
		port    int32
		proto   string
		want    string
	}{
		{"web", 80, "TCP", "web-ip-80-tcp"},
		{"web", 80, "UDP", "web-ip-80-udp"},
		{"web", 443, "", "web-ip-443-tcp"},
		{"Web", 53, "udp", "web-ip-53-udp"},
		// Exactly 63: not truncated.
		{strings.Repeat("a", 50), 65535, "TCP", strings.Repeat("a", 50) + "-ip-65535-tcp"},
		// 64: truncated, with the hash (computed with Python) inserted.
		{long63, 65535, "UDP", "s" + strings.Repeat("x", 40) + "-d454b4e0-ip-65535-udp"},
	}
	for _, tc := range cases {
		got := addresses.ServiceName(tc.service, tc.port, tc.proto)
		if got != tc.want {
			t.Errorf("ServiceName(%q, %d, %q) = %q, want %q", tc.service, tc.port, tc.proto, got, tc.want)
		}
	}
	dns1035 := regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	seen := map[string]string{}
	for n := 1; n <= 63; n++ {
		for _, port := range []int32{1, 80, 65535} {
			for _, tail := range []string{"a", "b", "-c"} {
				svc := strings.Repeat("q", n) + tail
				if len(svc) > 63 || !dns1035.MatchString(svc) {
					continue
				}
				name := addresses.ServiceName(svc, port, "TCP")
				if len(name) > 63 || len(validation.IsDNS1035Label(name)) > 0 {
					t.Fatalf("ServiceName(%q, %d) = %q: not a DNS-1035 label of at most 63", svc, port, name)
				}
				key := svc + "/" + strconv.Itoa(int(port))
				if other, dup := seen[name]; dup && other != key {
					t.Fatalf("ServiceName collision: %q for %s and %s", name, other, key)
				}
				seen[name] = key
				if !strings.HasSuffix(name, "-ip-"+strconv.Itoa(int(port))+"-tcp") {
					t.Errorf("%q lost its suffix", name)
				}
			}
		}
	}
	// A truncated name is stable.
	if addresses.ServiceName(long63, 1, "TCP") != addresses.ServiceName(long63, 1, "TCP") {
		t.Error("unstable name")
	}
	// A cut that ends in a hyphen drops it rather than doubling it.
	withHyphen := strings.Repeat("a", 40) + "-" + strings.Repeat("b", 22)
	if got := addresses.ServiceName(withHyphen, 65535, "TCP"); strings.Contains(got, "--") {
		t.Errorf("ServiceName(%q) = %q has a double hyphen", withHyphen, got)
	}
}

func leasedIP() *shardgatev1alpha1.LeasedIP {
	return &shardgatev1alpha1.LeasedIP{
		ObjectMeta: metav1.ObjectMeta{Name: "myip-443", Namespace: "lease-1", UID: "uid-1", Generation: 3},
		Spec: shardgatev1alpha1.LeasedIPSpec{
			Lease:    shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 12, GSeq: 1, OSeq: 2},
			Endpoint: "myip", Service: "web", Port: 8443, ExternalPort: 443, Protocol: "TCP",
		},
	}
}

func target() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "lease-1"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web", "tier": "front"}},
	}
}

func TestDesiredService(t *testing.T) {
	lip := leasedIP()
	svc := addresses.DesiredService(lip, target(), "")
	if svc.APIVersion != "v1" || svc.Kind != "Service" {
		t.Errorf("TypeMeta = %v", svc.TypeMeta)
	}
	if svc.Name != "web-ip-443-tcp" || svc.Namespace != "lease-1" {
		t.Errorf("name = %s/%s", svc.Namespace, svc.Name)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("type = %s", svc.Spec.Type)
	}
	want := corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0] != want {
		t.Errorf("ports = %+v", svc.Spec.Ports)
	}
	if svc.Spec.Selector["app"] != "web" || svc.Spec.Selector["tier"] != "front" || len(svc.Spec.Selector) != 2 {
		t.Errorf("selector = %v", svc.Spec.Selector)
	}
	wantAnn := map[string]string{"metallb.io/allow-shared-ip": "akash1alice-ip-myip"}
	if len(svc.Annotations) != 1 || svc.Annotations["metallb.io/allow-shared-ip"] != wantAnn["metallb.io/allow-shared-ip"] {
		t.Errorf("annotations = %v", svc.Annotations)
	}
	wantLabels := map[string]string{
		shardgatev1alpha1.LabelLeaseOwner: "akash1alice", shardgatev1alpha1.LabelLeaseDSeq: "12",
		shardgatev1alpha1.LabelLeaseGSeq: "1", shardgatev1alpha1.LabelLeaseOSeq: "2",
	}
	for k, v := range wantLabels {
		if svc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, svc.Labels[k], v)
		}
	}
	ref := metav1.GetControllerOf(svc)
	if ref == nil || ref.Kind != "LeasedIP" || ref.Name != "myip-443" || ref.UID != "uid-1" || ref.APIVersion != shardgatev1alpha1.GroupVersion.String() {
		t.Errorf("controller = %+v", ref)
	}
	if !addresses.ControlledBy(svc, "uid-1") || addresses.ControlledBy(svc, "uid-2") || addresses.LeasedIPController(svc) != "myip-443" {
		t.Error("ControlledBy/LeasedIPController disagree with the owner reference")
	}

	// The selector is a copy.
	tg := target()
	svc = addresses.DesiredService(lip, tg, "")
	tg.Spec.Selector["app"] = "changed"
	if svc.Spec.Selector["app"] != "web" {
		t.Error("selector shares the target's map")
	}

	// UDP, a pool and a pin.
	lip.Spec.Protocol, lip.Spec.Pool = "UDP", "gold"
	svc = addresses.DesiredService(lip, target(), "192.0.2.7")
	if svc.Name != "web-ip-443-udp" || svc.Spec.Ports[0].Protocol != corev1.ProtocolUDP {
		t.Errorf("UDP: %s %v", svc.Name, svc.Spec.Ports)
	}
	if svc.Annotations["metallb.io/address-pool"] != "gold" || svc.Annotations["metallb.io/loadBalancerIPs"] != "192.0.2.7" {
		t.Errorf("annotations = %v", svc.Annotations)
	}
	// An unset protocol is TCP.
	lip.Spec.Protocol = ""
	if p := addresses.DesiredService(lip, target(), "").Spec.Ports[0].Protocol; p != corev1.ProtocolTCP {
		t.Errorf("default protocol = %s", p)
	}
}

func TestServiceUpToDate(t *testing.T) {
	lip := leasedIP()
	desired := addresses.DesiredService(lip, target(), "")
	existing := desired.DeepCopy()
	// What the apiserver and MetalLB add does not count.
	existing.Spec.Ports[0].NodePort = 31000
	existing.Spec.ClusterIP = "127.96.0.10"
	existing.Annotations["metallb.io/ip-allocated-from-pool"] = "leased"
	existing.Labels["extra"] = "x"
	if !addresses.ServiceUpToDate(existing, desired) {
		t.Error("up-to-date Service reported stale")
	}
	for name, mutate := range map[string]func(*corev1.Service){
		"selector":   func(s *corev1.Service) { s.Spec.Selector["app"] = "other" },
		"port":       func(s *corev1.Service) { s.Spec.Ports[0].Port = 444 },
		"targetPort": func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(1) },
		"type":       func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP },
		"key":        func(s *corev1.Service) { s.Annotations["metallb.io/allow-shared-ip"] = "x" },
		"pin added":  func(s *corev1.Service) { s.Annotations["metallb.io/loadBalancerIPs"] = "192.0.2.1" },
		"label":      func(s *corev1.Service) { s.Labels[shardgatev1alpha1.LabelLeaseDSeq] = "13" },
		"owner":      func(s *corev1.Service) { s.OwnerReferences = nil },
	} {
		e := existing.DeepCopy()
		mutate(e)
		if addresses.ServiceUpToDate(e, desired) {
			t.Errorf("%s: stale Service reported up to date", name)
		}
	}
}

func lbService(ns, name, key, pool, ip string) corev1.Service {
	ctrl := true
	s := corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("svc-" + name),
			Annotations: map[string]string{"metallb.io/allow-shared-ip": key},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: shardgatev1alpha1.GroupVersion.String(), Kind: "LeasedIP", Name: name, UID: types.UID("lip-" + name), Controller: &ctrl,
			}},
		},
	}
	if pool != "" {
		s.Annotations["metallb.io/address-pool"] = pool
	}
	if ip != "" {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}
	return s
}

func TestPin(t *testing.T) {
	lip := leasedIP()
	key := "akash1alice-ip-myip"
	if got := addresses.Pin(lip, nil, nil, nil); got != "" {
		t.Errorf("no siblings: %q", got)
	}
	siblings := []corev1.Service{
		lbService("lease-1", "web-ip-80-tcp", key, "", "127.240.0.20"),
		lbService("lease-2", "api-ip-81-tcp", key, "", "127.240.0.20"),
		lbService("lease-3", "x-ip-82-tcp", key, "other", "127.240.1.17"),
		lbService("lease-1", "other-ip-80-tcp", "akash1bob-ip-myip", "", "127.240.0.16"), // another key
		lbService("lease-1", "pending-ip-83-tcp", key, "", ""),                           // no address yet
	}
	if got := addresses.Pin(lip, nil, nil, siblings); got != "127.240.0.20" {
		t.Errorf("majority: %q", got)
	}
	// A tie goes to the lowest address.
	if got := addresses.Pin(lip, nil, nil, []corev1.Service{siblings[2], siblings[1]}); got != "127.240.0.20" {
		t.Errorf("tie: %q", got)
	}
	// With spec.pool only addresses of that pool count: by the pool's
	// addresses when it is known, by the siblings' pool annotation when not.
	lip.Spec.Pool = "other"
	other := &metallbv1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "other"},
		Spec: metallbv1beta1.IPAddressPoolSpec{Addresses: []string{"127.240.1.16/30", "127.240.0.20-127.240.0.20"}}}
	if got := addresses.Pin(lip, other, nil, siblings); got != "127.240.0.20" {
		t.Errorf("pool by addresses: %q", got)
	}
	other.Spec.Addresses = other.Spec.Addresses[:1]
	if got := addresses.Pin(lip, other, nil, siblings); got != "127.240.1.17" {
		t.Errorf("pool by addresses: %q", got)
	}
	if got := addresses.Pin(lip, nil, nil, siblings); got != "127.240.1.17" {
		t.Errorf("pool by annotation: %q", got)
	}
	// MetalLB's record of the pool counts as well.
	byMetalLB := lbService("lease-4", "y-ip-84-tcp", key, "", "127.240.1.18")
	byMetalLB.Annotations["metallb.io/ip-allocated-from-pool"] = "other"
	if got := addresses.Pin(lip, nil, nil, []corev1.Service{siblings[0], byMetalLB}); got != "127.240.1.18" {
		t.Errorf("pool by MetalLB's annotation: %q", got)
	}
	lip.Spec.Pool = "gold"
	gold := &metallbv1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "gold"},
		Spec: metallbv1beta1.IPAddressPoolSpec{Addresses: []string{"192.0.2.0/28"}}}
	if got := addresses.Pin(lip, gold, nil, siblings); got != "" {
		t.Errorf("no sibling in the pool: %q", got)
	}
	lip.Spec.Pool = ""
	// A Service that has an address keeps its own pin, whatever siblings say.
	own := lbService("lease-1", "web-ip-443-tcp", key, "", "127.240.0.30")
	if got := addresses.Pin(lip, nil, &own, siblings); got != "" {
		t.Errorf("assigned, no pin: %q", got)
	}
	own.Annotations["metallb.io/loadBalancerIPs"] = "127.240.0.30"
	if got := addresses.Pin(lip, nil, &own, siblings); got != "127.240.0.30" {
		t.Errorf("assigned, pinned: %q", got)
	}
	// Our own Service in the sibling list does not count.
	own.Status = corev1.ServiceStatus{}
	delete(own.Annotations, "metallb.io/loadBalancerIPs")
	self := lbService("lease-1", "web-ip-443-tcp", key, "", "127.240.0.31")
	if got := addresses.Pin(lip, nil, &own, []corev1.Service{self}); got != "" {
		t.Errorf("self: %q", got)
	}
	// A Service not controlled by a LeasedIP is not a sibling.
	foreign := lbService("lease-1", "f-ip-1-tcp", key, "", "127.240.0.40")
	foreign.OwnerReferences = nil
	if got := addresses.Pin(lip, nil, nil, []corev1.Service{foreign}); got != "" {
		t.Errorf("foreign: %q", got)
	}
}

func event(uid, reason, msg string, at int, rv string) corev1.Event {
	ts := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, at, 0, time.UTC))
	return corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{ResourceVersion: rv},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", UID: "svc-uid", Name: "web-ip-443-tcp"},
		Reason:         reason, Message: msg, FirstTimestamp: ts, LastTimestamp: ts,
		Type: corev1.EventTypeWarning,
	}
}

func TestLatestAllocationEvent(t *testing.T) {
	evs := []corev1.Event{
		event("svc-uid", "AllocationFailed", "old", 1, "10"),
		event("svc-uid", "IPAllocated", "same second, later", 5, "30"),
		event("svc-uid", "AllocationFailed", "same second", 5, "20"),
		event("svc-uid", "deprecatedAnnotation", "not an allocation event", 9, "40"),
	}
	other := event("svc-uid", "AllocationFailed", "an earlier Service", 9, "50")
	other.InvolvedObject.UID = "old-uid"
	evs = append(evs, other)
	got := addresses.LatestAllocationEvent(evs, "svc-uid")
	if got == nil || got.Message != "same second, later" {
		t.Errorf("latest = %+v", got)
	}
	if addresses.LatestAllocationEvent(evs, "none") != nil {
		t.Error("event of another Service")
	}
}

func TestClassifyEvent(t *testing.T) {
	cases := []struct{ reason, msg, want string }{
		// What MetalLB v0.15.2 says (see the controller's log in the tests).
		{"AllocationFailed", `Failed to allocate IP for "ns/web-ip-83-tcp": ["<nil>"] is not allowed in config`, "PoolExhausted"},
		{"AllocationFailed", `Failed to allocate IP for "ns/x": no available IPs`, "PoolExhausted"},
		{"AllocationFailed", `Failed to allocate IP for "ns/x": unknown pool "gold"`, "PoolNotFound"},
		{"AllocationFailed", `Failed to allocate IP for "ns/x": port 9000/TCP is already in use on "127.240.0.20"`, "AddressConflict"},
		{"AllocationFailed", `Failed to allocate IP for "ns/x": can't change sharing key for "ns/x", address also in use by ns/y`, "AddressConflict"},
		{"AllocationFailed", `Failed to allocate IP for "ns/x": ["192.0.2.1"] is not allowed in config`, "AddressConflict"},
		{"AllocationFailed", `Failed to allocate IP for "ns/x": requested loadBalancer IP(s) ["127.240.0.20"] is not compatible with requested address pool tiny`, "AddressConflict"},
		{"LoadBalancerFailed", `invalid requested loadbalancer IPs: invalid metallb.io/loadBalancerIPs: "x"`, "AddressConflict"},
		{"AllocationFailed", "something new", "Pending"},
		{"IPAllocated", `Assigned IP ["127.240.0.20"]`, "Pending"},
		{"ClearAssignment", "current IP not allowed", "Pending"},
	}
	for _, tc := range cases {
		ev := event("svc-uid", tc.reason, tc.msg, 1, "1")
		reason, msg := addresses.ClassifyEvent(&ev)
		if reason != tc.want {
			t.Errorf("%s %q → %s, want %s", tc.reason, tc.msg, reason, tc.want)
		}
		if !strings.Contains(msg, tc.msg) {
			t.Errorf("message %q does not quote MetalLB's %q", msg, tc.msg)
		}
	}
}

func TestStatusFor(t *testing.T) {
	lip := leasedIP()
	lip.Spec.Pool = "tiny"
	own := addresses.DesiredService(lip, target(), "")
	own.UID = "svc-uid"
	assigned := own.DeepCopy()
	assigned.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "127.240.1.10"}}
	foreign := own.DeepCopy()
	foreign.OwnerReferences = nil
	fullPool := &metallbv1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "tiny"},
		Status: metallbv1beta1.IPAddressPoolStatus{AssignedIPv4: 2, AvailableIPv4: 0}}
	unreported := &metallbv1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "tiny"}}
	freePool := &metallbv1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "tiny"},
		Status: metallbv1beta1.IPAddressPoolStatus{AssignedIPv4: 1, AvailableIPv4: 1}}
	pinned := own.DeepCopy()
	pinned.Annotations["metallb.io/loadBalancerIPs"] = "127.240.1.10"
	failed := event("svc-uid", "AllocationFailed", `port 443/TCP is already in use on "127.240.1.10"`, 1, "1")

	cases := []struct {
		name        string
		obs         addresses.Observed
		want        string
		ip, service string
	}{
		{"conflict", addresses.Observed{Target: target(), Service: foreign}, "False/ServiceConflict", "", ""},
		{"no target", addresses.Observed{}, "False/SelectorNotFound", "", ""},
		{"no target, kept", addresses.Observed{Service: assigned}, "False/SelectorNotFound", "127.240.1.10", "web-ip-443-tcp"},
		{"no pool", addresses.Observed{Target: target(), PoolMissing: true}, "False/PoolNotFound", "", ""},
		{"assigned", addresses.Observed{Target: target(), Service: assigned, Pool: fullPool}, "True/Allocated", "127.240.1.10", "web-ip-443-tcp"},
		{"event", addresses.Observed{Target: target(), Service: own, Pool: freePool, Event: &failed}, "False/AddressConflict", "", "web-ip-443-tcp"},
		{"full pool", addresses.Observed{Target: target(), Service: own, Pool: fullPool}, "False/PoolExhausted", "", "web-ip-443-tcp"},
		{"full pool, sharing", addresses.Observed{Target: target(), Service: pinned, Pool: fullPool}, "False/Pending", "", "web-ip-443-tcp"},
		{"unreported pool", addresses.Observed{Target: target(), Service: own, Pool: unreported}, "False/Pending", "", "web-ip-443-tcp"},
		{"pending", addresses.Observed{Target: target(), Service: own, Pool: freePool}, "False/Pending", "", "web-ip-443-tcp"},
	}
	for _, tc := range cases {
		st := addresses.StatusFor(lip, tc.obs)
		c := meta.FindStatusCondition(st.Conditions, shardgatev1alpha1.ConditionAllocated)
		if c == nil {
			t.Fatalf("%s: no Allocated condition", tc.name)
		}
		if got := string(c.Status) + "/" + c.Reason; got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, c.Message, tc.want)
		}
		if c.Message == "" || c.ObservedGeneration != 3 {
			t.Errorf("%s: message %q, observedGeneration %d", tc.name, c.Message, c.ObservedGeneration)
		}
		if st.IP != tc.ip || st.Service != tc.service {
			t.Errorf("%s: ip %q service %q, want %q %q", tc.name, st.IP, st.Service, tc.ip, tc.service)
		}
		if st.SharingKey != "akash1alice-ip-myip" || st.ObservedGeneration != 3 {
			t.Errorf("%s: sharingKey %q observedGeneration %d", tc.name, st.SharingKey, st.ObservedGeneration)
		}
	}

	// A Pending without evidence does not replace MetalLB's diagnosis of
	// the same generation and Service; an address, a newer Event or a new
	// generation does.
	exhausted := *lip
	exhausted.Status = addresses.StatusFor(lip, addresses.Observed{Target: target(), Service: own, Pool: fullPool})
	allocatedEv := event("svc-uid", "IPAllocated", `Assigned IP ["127.240.1.10"]`, 2, "2")
	for _, tc := range []struct {
		name string
		gen  int64
		obs  addresses.Observed
		want string
	}{
		{"no evidence", 3, addresses.Observed{Target: target(), Service: own, Pool: freePool}, "False/PoolExhausted"},
		{"pool not reported", 3, addresses.Observed{Target: target(), Service: own, Pool: unreported}, "False/PoolExhausted"},
		{"newer event", 3, addresses.Observed{Target: target(), Service: own, Pool: freePool, Event: &allocatedEv}, "False/Pending"},
		{"address", 3, addresses.Observed{Target: target(), Service: assigned, Pool: freePool}, "True/Allocated"},
		{"new generation", 4, addresses.Observed{Target: target(), Service: own, Pool: freePool}, "False/Pending"},
	} {
		l := exhausted.DeepCopy()
		l.Generation = tc.gen
		st := addresses.StatusFor(l, tc.obs)
		c := meta.FindStatusCondition(st.Conditions, shardgatev1alpha1.ConditionAllocated)
		if got := string(c.Status) + "/" + c.Reason; got != tc.want {
			t.Errorf("after PoolExhausted, %s: %s (%s), want %s", tc.name, got, c.Message, tc.want)
		}
		if st.Service != "web-ip-443-tcp" || c.ObservedGeneration != tc.gen {
			t.Errorf("after PoolExhausted, %s: service %q observedGeneration %d", tc.name, st.Service, c.ObservedGeneration)
		}
	}

	// The transition time stays while the status does not change.
	first := addresses.StatusFor(lip, addresses.Observed{Target: target(), Service: assigned})
	then := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	first.Conditions[0].LastTransitionTime = then
	lip.Status = first
	again := addresses.StatusFor(lip, addresses.Observed{Target: target(), Service: assigned})
	if !again.Conditions[0].LastTransitionTime.Equal(&then) {
		t.Error("transition time moved without a transition")
	}
}

func TestUsage(t *testing.T) {
	pools := []metallbv1beta1.IPAddressPool{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "tiny"},
			Status: metallbv1beta1.IPAddressPoolStatus{AssignedIPv4: 2}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "dual"},
			Status: metallbv1beta1.IPAddressPoolStatus{AssignedIPv4: 3, AvailableIPv4: 10, AssignedIPv6: 1, AvailableIPv6: math.MaxInt64}},
	}
	got := addresses.Usage(pools)
	if len(got) != 2 || got[0].Name != "dual" || got[1].Name != "tiny" {
		t.Fatalf("order: %+v", got)
	}
	if got[0].Assigned != 4 || got[0].Available != math.MaxInt64 || got[0].AvailableIPv4 != 10 {
		t.Errorf("dual: %+v", got[0])
	}
	if got[1].Assigned != 2 || got[1].Available != 0 || got[1].Namespace != "metallb-system" {
		t.Errorf("tiny: %+v", got[1])
	}
}
