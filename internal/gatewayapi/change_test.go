/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// assertChange checks next's Change against prev, the IR of the same
// Gateway handed over before it: a patch (Since set) is relative to prev
// and names every virtual host and cluster that differs from prev's by
// content, and nothing else differs; an IR handed over again keeps its
// number; any other IR has a number of its own.
func assertChange(t *testing.T, prev, next *ir.Gateway) {
	t.Helper()
	c := next.Change
	if c == nil || c.Generation == 0 {
		t.Fatalf("IR %s/%s has no numbered Change", next.Namespace, next.Name)
	}
	if prev == nil {
		return
	}
	if c.Generation == prev.Change.Generation {
		if next != prev {
			t.Fatal("two IRs have one Generation")
		}
		return
	}
	if c.Since == 0 {
		return // a whole new IR: anything may have changed
	}
	if c.Since != prev.Change.Generation {
		t.Fatalf("Change since %d, want since the previous IR, %d", c.Since, prev.Change.Generation)
	}
	if !slices.IsSortedFunc(c.VirtualHosts, ir.CompareVirtualHostRefs) || !slices.IsSorted(c.Clusters) {
		t.Fatalf("Change lists not sorted: %+v", c)
	}
	hosts := func(gw *ir.Gateway) map[ir.VirtualHostRef]*ir.VirtualHost {
		out := map[ir.VirtualHostRef]*ir.VirtualHost{}
		for _, l := range gw.Listeners {
			for _, v := range l.VirtualHosts {
				out[ir.VirtualHostRef{Listener: l.Name, Name: v.Name}] = v
			}
			for _, s := range l.TLSServers {
				for _, v := range s.VirtualHosts {
					out[ir.VirtualHostRef{Listener: l.Name, Server: s.Name, Name: v.Name}] = v
				}
			}
		}
		return out
	}
	before, after := hosts(prev), hosts(next)
	named := func(ref ir.VirtualHostRef) bool {
		_, ok := slices.BinarySearchFunc(c.VirtualHosts, ref, ir.CompareVirtualHostRefs)
		return ok
	}
	for ref, v := range after {
		if !reflect.DeepEqual(before[ref], v) && !named(ref) {
			t.Errorf("virtual host %+v changed, and the Change does not name it", ref)
		}
	}
	for ref := range before {
		if after[ref] == nil && !named(ref) {
			t.Errorf("virtual host %+v removed, and the Change does not name it", ref)
		}
	}
	clusters := func(gw *ir.Gateway) map[string]*ir.Cluster {
		out := map[string]*ir.Cluster{}
		for _, cl := range gw.Clusters {
			out[cl.Name] = cl
		}
		return out
	}
	cb, ca := clusters(prev), clusters(next)
	for name, cl := range ca {
		if !reflect.DeepEqual(cb[name], cl) && !slices.Contains(c.Clusters, name) {
			t.Errorf("cluster %s changed, and the Change does not name it", name)
		}
	}
	for name := range cb {
		if ca[name] == nil && !slices.Contains(c.Clusters, name) {
			t.Errorf("cluster %s removed, and the Change does not name it", name)
		}
	}
	// Nothing else differs: the listeners without their virtual hosts,
	// the secrets and the traffic settings.
	shape := func(gw *ir.Gateway) []ir.Listener {
		out := slices.Clone(gw.Listeners)
		for i := range out {
			out[i].VirtualHosts = nil
			out[i].TLSServers = slices.Clone(out[i].TLSServers)
			for j := range out[i].TLSServers {
				out[i].TLSServers[j].VirtualHosts = nil
			}
		}
		return out
	}
	if !reflect.DeepEqual(shape(prev), shape(next)) || !reflect.DeepEqual(prev.Secrets, next.Secrets) || !reflect.DeepEqual(prev.Traffic, next.Traffic) {
		t.Error("a patch changed more than virtual hosts and clusters")
	}
}

// A new lease (its Service and route) is a patch whose Change names its
// virtual host and its cluster, relative to the IR before; the IR of a
// Gateway nothing touched is handed over again with its number; a Gateway
// change is a whole new IR.
func TestChangeNamesWhatAPatchChanged(t *testing.T) {
	in := benchInput(20)
	rv := 0
	stamp(in, &rv)
	l := newLoaded()
	first := l.translate(in).Gateways[0]
	assertChange(t, nil, first)

	next := *in
	svc, rt := benchLease(20)
	next.Services = append(slices.Clone(in.Services), svc)
	next.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), rt)
	for _, o := range []client.Object{svc, rt} {
		rv++
		o.SetResourceVersion(fmt.Sprint(rv))
		o.SetUID(types.UID(fmt.Sprint("uid-", rv)))
	}
	second := l.translate(&next).Gateways[0]
	if l.tr.Stats.Patched != 1 {
		t.Fatalf("a new lease was not a patch: %+v", l.tr.Stats)
	}
	assertChange(t, first, second)
	c := second.Change
	if c.Since != first.Change.Generation || len(c.VirtualHosts) != 1 || c.VirtualHosts[0].Name != string(rt.Spec.Hostnames[0]) ||
		len(c.Clusters) != 1 || len(second.Clusters) != len(first.Clusters)+1 {
		t.Fatalf("Change %+v, want the new lease's host and cluster since %d", c, first.Change.Generation)
	}

	// Nothing changed: the same IR, the same number.
	again := l.translate(&next).Gateways[0]
	assertChange(t, second, again)
	if again.Change.Generation != second.Change.Generation {
		t.Fatal("an IR handed over again has a new number")
	}

	// The Gateway itself changed: a whole new IR.
	gw := next.Gateways[0].DeepCopy()
	gw.Labels = map[string]string{"edited": "yes"}
	gw.Generation++
	rv++
	gw.ResourceVersion = fmt.Sprint(rv)
	last := next
	last.Gateways = []*gatewayv1.Gateway{gw}
	third := l.translate(&last).Gateways[0]
	assertChange(t, again, third)
	if third.Change.Since != 0 || third.Change.Generation == again.Change.Generation {
		t.Fatalf("a Gateway change gave Change %+v, want a new number and no Since", third.Change)
	}
}

// On a Gateway with an HTTP and an HTTPS listener, a new lease's host is
// served on both, and the patch's Change names both: on the HTTP listener,
// and on the HTTPS listener's TLS server (the Gateway listener's name).
func TestChangeNamesHostsOfTLSServers(t *testing.T) {
	crt, err := os.ReadFile("testdata/tls.crt")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("testdata/tls.key")
	if err != nil {
		t.Fatal(err)
	}
	in := benchInput(10)
	gw := in.Gateways[0].DeepCopy()
	gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{
		Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType,
		TLS:           &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}},
		AllowedRoutes: gw.Spec.Listeners[0].AllowedRoutes,
	})
	in.Gateways[0] = gw
	in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cert"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": crt, "tls.key": key}})
	rv := 0
	stamp(in, &rv)
	l := newLoaded()
	first := l.translate(in).Gateways[0]

	next := *in
	svc, rt := benchLease(10)
	next.Services = append(slices.Clone(in.Services), svc)
	next.HTTPRoutes = append(slices.Clone(in.HTTPRoutes), rt)
	for _, o := range []client.Object{svc, rt} {
		rv++
		o.SetResourceVersion(fmt.Sprint(rv))
		o.SetUID(types.UID(fmt.Sprint("uid-", rv)))
	}
	second := l.translate(&next).Gateways[0]
	if l.tr.Stats.Patched != 1 {
		t.Fatalf("a new lease was not a patch: %+v", l.tr.Stats)
	}
	assertChange(t, first, second)
	host := string(rt.Spec.Hostnames[0])
	want := []ir.VirtualHostRef{{Listener: "http-80", Name: host}, {Listener: "https-443", Server: "https", Name: host}}
	if !slices.Equal(second.Change.VirtualHosts, want) {
		t.Fatalf("Change names %+v, want %+v", second.Change.VirtualHosts, want)
	}
}
