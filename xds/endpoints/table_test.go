/*
Copyright The shardgate Authors.
*/

package endpoints

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/ir"
)

// loadSlices reads the EndpointSlices of a multi-document YAML file.
func loadSlices(t *testing.T, path string) []*discoveryv1.EndpointSlice {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*discoveryv1.EndpointSlice
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		if !bytes.Contains(doc, []byte("kind: EndpointSlice")) {
			continue
		}
		s := &discoveryv1.EndpointSlice{}
		if err := yaml.UnmarshalStrict(doc, s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestForPortSlices: a Service port's endpoints come from every
// EndpointSlice of the Service: ready (or unknown) only, from the slice
// port whose name is the Service port's, without duplicates, sorted; IPv6
// kept, FQDN skipped; other Services' slices never count.
func TestForPortSlices(t *testing.T) {
	sl := loadSlices(t, "testdata/slices.yaml")
	if len(sl) != 6 {
		t.Fatalf("read %d slices, want 6", len(sl))
	}
	tb := NewTable()
	for _, s := range sl {
		tb.Set(nil, s)
	}
	ep := func(ip string, port int32) Endpoint { return Endpoint{IP: ip, Port: port} }
	for _, c := range []struct {
		port ir.ServicePort
		want []Endpoint
	}{
		{ir.ServicePort{Namespace: "default", Name: "web", Port: "http"}, []Endpoint{ep("10.244.0.1", 8080), ep("10.244.0.2", 8080)}},
		{ir.ServicePort{Namespace: "default", Name: "multi", Port: "http"}, []Endpoint{
			ep("10.244.0.4", 8080), ep("10.244.0.5", 8080), ep("10.244.0.7", 8080), ep("fd00::1", 8080)}},
		{ir.ServicePort{Namespace: "default", Name: "multi", Port: "metrics"}, []Endpoint{ep("10.244.0.8", 9100)}},
		{ir.ServicePort{Namespace: "default", Name: "multi", Port: "admin"}, []Endpoint{}},
		{ir.ServicePort{Namespace: "other", Name: "web", Port: "http"}, []Endpoint{}},
	} {
		got := tb.For(c.port)
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: endpoints %v, want %v", c.port, got, c.want)
		}
	}
}

// TestTableSet: Set reports the Services whose endpoints a change may
// alter, and only those; For answers from a memo that a reported change
// drops, so the answer always matches the slices held.
func TestTableSet(t *testing.T) {
	tb := NewTable()
	web := ir.ServicePort{Namespace: "t", Name: "app", Port: "http"}
	s1 := slice("t", "app", "app-1", 1, 2)
	if got := tb.Set(nil, s1); !slices.Equal(got, []types.NamespacedName{{Namespace: "t", Name: "app"}}) {
		t.Fatalf("a new slice reported %v", got)
	}
	first := tb.For(web)
	if len(first) != 2 {
		t.Fatalf("endpoints %v, want 2", first)
	}
	if again := tb.For(web); &again[0] != &first[0] {
		t.Fatal("an unchanged Service port's endpoints were listed again (the fill step keeps clusters by this list)")
	}
	// An update of what is not read: reported as no change, but held (the
	// next change replaces this version).
	s1b := s1.DeepCopy()
	s1b.ResourceVersion = "2"
	s1b.Endpoints[0].NodeName = ptr.To("node-2")
	if got := tb.Set(s1, s1b); len(got) != 0 {
		t.Fatalf("an unread change reported %v", got)
	}
	if got := tb.For(web); &got[0] != &first[0] {
		t.Fatal("an unread change made a new list")
	}
	s1c := s1b.DeepCopy()
	s1c.Endpoints = s1c.Endpoints[1:]
	if got := tb.Set(s1b, s1c); len(got) != 1 {
		t.Fatalf("a read change reported %v", got)
	}
	if got := tb.For(web); len(got) != 1 || got[0].IP != "10.244.0.2" {
		t.Fatalf("after a ready endpoint left, endpoints %v", got)
	}
	// A second slice, then the first deleted; the label moved to another
	// Service reports both.
	s2 := slice("t", "app", "app-2", 5, 1)
	tb.Set(nil, s2)
	if got := tb.For(web); len(got) != 2 {
		t.Fatalf("two slices give %v", got)
	}
	tb.Set(s1c, nil)
	if got := tb.For(web); len(got) != 1 || got[0].IP != "10.244.0.5" {
		t.Fatalf("after a slice was deleted, endpoints %v", got)
	}
	s2b := s2.DeepCopy()
	s2b.Labels[discoveryv1.LabelServiceName] = "other"
	if got := tb.Set(s2, s2b); len(got) != 2 {
		t.Fatalf("a slice moved to another Service reported %v, want both", got)
	}
	if got := tb.For(web); len(got) != 0 {
		t.Fatalf("a slice that left the Service still counts: %v", got)
	}
	if got := tb.For(ir.ServicePort{Namespace: "t", Name: "other", Port: "http"}); len(got) != 1 {
		t.Fatalf("the slice's new Service has %v", got)
	}
	// A slice with no Service label is held nowhere.
	bare := slice("t", "", "bare", 9, 1)
	if got := tb.Set(nil, bare); len(got) != 0 {
		t.Fatalf("a slice of no Service reported %v", got)
	}
}

// TestSameReads: an update changes the endpoints only when it changes
// what a Service port's endpoints are made of (its Service, address type,
// ports, ready addresses), not the Pod references, nodes, zones and other
// conditions the EndpointSlice controller also updates.
func TestSameReads(t *testing.T) {
	base := func() *discoveryv1.EndpointSlice {
		port, name := int32(8080), "http"
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "app-x", Namespace: "t", UID: "u", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"10.0.0.2"}},
				{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			},
		}
	}
	for _, c := range []struct {
		name    string
		edit    func(*discoveryv1.EndpointSlice)
		changed bool
	}{
		{"Pod references, node, zone, serving and terminating", func(s *discoveryv1.EndpointSlice) {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "p"}
				e.NodeName, e.Zone = ptr.To("n"), ptr.To("z")
				e.Conditions.Serving, e.Conditions.Terminating = ptr.To(false), ptr.To(true)
			}
			s.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: "now"}
		}, false},
		{"a not-ready endpoint added", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}})
		}, false},
		{"ready unknown made true", func(s *discoveryv1.EndpointSlice) { s.Endpoints[1].Conditions.Ready = ptr.To(true) }, false},
		{"nothing", func(*discoveryv1.EndpointSlice) {}, false},
		{"deleted and created again, the same", func(s *discoveryv1.EndpointSlice) { s.UID = "u2" }, false},
		{"a ready endpoint added", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}})
		}, true},
		{"a ready endpoint gone", func(s *discoveryv1.EndpointSlice) { s.Endpoints = s.Endpoints[1:] }, true},
		{"an endpoint becomes ready", func(s *discoveryv1.EndpointSlice) { s.Endpoints[2].Conditions.Ready = ptr.To(true) }, true},
		{"an endpoint becomes not ready", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Ready = ptr.To(false) }, true},
		{"an address changes", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "10.0.0.7" }, true},
		{"a port changes", func(s *discoveryv1.EndpointSlice) { *s.Ports[0].Port = 9090 }, true},
		{"a port is renamed", func(s *discoveryv1.EndpointSlice) { *s.Ports[0].Name = "web" }, true},
		{"another Service", func(s *discoveryv1.EndpointSlice) { s.Labels[discoveryv1.LabelServiceName] = "other" }, true},
		{"another address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = discoveryv1.AddressTypeFQDN }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := base()
			c.edit(n)
			n.ResourceVersion = "2"
			if got := !SameReads(base(), n); got != c.changed {
				t.Fatalf("changed = %v, want %v", got, c.changed)
			}
			tb := NewTable()
			tb.Set(nil, base())
			if got := len(tb.Set(base(), n)) > 0; got != c.changed {
				t.Fatalf("Set reported a change: %v, want %v", got, c.changed)
			}
		})
	}
}

// slice is an EndpointSlice of Service svc ("" for none) with n ready
// endpoints on port http (8080), whose IPs are numbered from first.
func slice(ns, svc, name string, first, n int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Labels: map[string]string{}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if svc != "" {
		s.Labels[discoveryv1.LabelServiceName] = svc
	}
	for i := first; i < first+n; i++ {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		})
	}
	return s
}

// TestSliceOfAnotherNamespaceNeverCounts: a slice belongs to the Service of
// its label in its own namespace. A slice in another namespace that names
// the same Service (a tenant's, were it allowed to write slices) gives that
// Service no endpoint, and its changes report only its own namespace's
// Service.
func TestSliceOfAnotherNamespaceNeverCounts(t *testing.T) {
	tb := NewTable()
	tb.Set(nil, slice("tenant-a", "web", "web-1", 1, 1))
	intruder := slice("tenant-b", "web", "web-1", 100, 3)
	if got := tb.Set(nil, intruder); !slices.Equal(got, []types.NamespacedName{{Namespace: "tenant-b", Name: "web"}}) {
		t.Fatalf("the other namespace's slice reported %v", got)
	}
	a := ir.ServicePort{Namespace: "tenant-a", Name: "web", Port: "http"}
	if got := tb.For(a); len(got) != 1 || got[0].IP != "10.244.0.1" {
		t.Fatalf("tenant-a/web has endpoints %v; want only its own 10.244.0.1", got)
	}
	// Deleting the other namespace's slice of the same name leaves
	// tenant-a's alone.
	tb.Set(intruder, nil)
	if got := tb.For(a); len(got) != 1 {
		t.Fatalf("deleting tenant-b's slice changed tenant-a's endpoints: %v", got)
	}
}

// TestTableForgetsAServiceWithoutSlices: once a Service's last slice is
// gone, the table keeps nothing for it, even after its endpoints were
// asked for again (a retained cluster still names it); a provider's
// ended leases must not leave entries behind.
func TestTableForgetsAServiceWithoutSlices(t *testing.T) {
	tb := NewTable()
	web := ir.ServicePort{Namespace: "t", Name: "web", Port: "http"}
	s := slice("t", "web", "web-1", 1, 2)
	tb.Set(nil, s)
	if got := tb.For(web); len(got) != 2 {
		t.Fatalf("endpoints %v, want 2", got)
	}
	tb.Set(s, nil)
	if got := tb.For(web); got != nil {
		t.Fatalf("a Service without slices has endpoints %v", got)
	}
	tb.For(ir.ServicePort{Namespace: "t", Name: "never", Port: "http"})
	if len(tb.services) != 0 {
		t.Fatalf("the table keeps %d Services' slices or endpoints", len(tb.services))
	}
}
