package server

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	k8stypes "k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardgate/shardgate/internal/ir"
)

// proxiesNamespace prefixes the namespaces of this file's Gateways, so that
// the series of other tests' servers (the gauge is the process's) are not
// read.
const proxiesNamespace = "proxies-gauge-"

// gatewayProxySeries reads shardgate_xds_gateway_proxies from the registry
// the controller's /metrics serves: "<namespace>/<name>" → value, for this
// file's Gateways.
func gatewayProxySeries(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "shardgate_xds_gateway_proxies" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) != 2 || labels["gateway_namespace"] == "" || labels["gateway_name"] == "" {
				t.Fatalf("shardgate_xds_gateway_proxies series with labels %v", labels)
			}
			if strings.HasPrefix(labels["gateway_namespace"], proxiesNamespace) {
				out[labels["gateway_namespace"]+"/"+labels["gateway_name"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// expectSeries waits until this file's series are exactly want.
func expectSeries(t *testing.T, want map[string]float64) {
	t.Helper()
	eventually(t, func() error {
		if got := gatewayProxySeries(t); !maps.Equal(got, want) {
			return fmt.Errorf("shardgate_xds_gateway_proxies %v, want %v", got, want)
		}
		return nil
	})
}

// expectProxyIdentities waits until the server counts streams for exactly n
// identities.
func expectProxyIdentities(t *testing.T, s *Server, n int) {
	t.Helper()
	eventually(t, func() error {
		if got := s.State().ProxyIdentities; got != n {
			return fmt.Errorf("%d identities with counted streams, want %d", got, n)
		}
		return nil
	})
}

// shardgate_xds_gateway_proxies: one series per Gateway served, at 0 until a
// stream bound to that Gateway by its certificate opens, back to 0 when it
// closes, gone when the Gateway is no longer served; a certificate of a
// Gateway not served, or of none, makes no series.
func TestGatewayProxiesPerGateway(t *testing.T) {
	e := startIdentityServer(t)
	gwA := k8stypes.NamespacedName{Namespace: proxiesNamespace + "a", Name: "gw"}
	gwB := k8stypes.NamespacedName{Namespace: proxiesNamespace + "b", Name: "gw"}
	gwC := k8stypes.NamespacedName{Namespace: proxiesNamespace + "c", Name: "gw"}
	gateway := func(nn k8stypes.NamespacedName) *ir.Gateway {
		gw := gatewayIR(t, "http-single-route.in.yaml")
		gw.Namespace, gw.Name = nn.Namespace, nn.Name
		return gw
	}
	a, b, c := gateway(gwA), gateway(gwB), gateway(gwC)
	a0, b0, c0 := gwA.String(), gwB.String(), gwC.String()

	// Two Gateways published: both series, at 0.
	publishIR(e.srv, a, b)
	if errs := e.srv.PublishErrors(); len(errs) != 0 {
		t.Fatalf("publish: %v", errs)
	}
	expectSeries(t, map[string]float64{a0: 0, b0: 0})

	// A stream bound to a Gateway the server does not serve is counted
	// apart and makes no series.
	streamC := openSotw(t, e.conn(t, &gwC))
	expectProxyIdentities(t, e.srv, 1)
	expectSeries(t, map[string]float64{a0: 0, b0: 0})

	// A stream whose certificate names no Gateway is refused and counts
	// nowhere.
	expectRefused(t, "a stream without identity", openSotw(t, e.conn(t, nil)).ask(node("tool", gwA), resourcev3.ListenerType))
	expectSeries(t, map[string]float64{a0: 0, b0: 0})

	// A's proxy connects: A=1, B=0; a second stream of A (delta) counts too.
	sotwA := openSotw(t, e.conn(t, &gwA))
	expectServed(t, "A's listeners", sotwA.ask(node("envoy-a", gwA), resourcev3.ListenerType))
	expectSeries(t, map[string]float64{a0: 1, b0: 0})
	deltaA := openDelta(t, e.conn(t, &gwA))
	expectServed(t, "A's clusters on delta", deltaA.ask(node("envoy-a2", gwA), resourcev3.ClusterType))
	expectSeries(t, map[string]float64{a0: 2, b0: 0})

	// Closing them brings A back to 0, not to a missing series.
	sotwA.close()
	expectSeries(t, map[string]float64{a0: 1, b0: 0})
	deltaA.close()
	expectSeries(t, map[string]float64{a0: 0, b0: 0})

	// C published: its already open stream shows.
	publishIR(e.srv, a, b, c)
	expectSeries(t, map[string]float64{a0: 0, b0: 0, c0: 1})

	// B no longer served: its series is gone.
	publishIR(e.srv, a, c)
	expectSeries(t, map[string]float64{a0: 0, c0: 1})

	// C no longer served while its stream is open: gone, and the stream's
	// close does not bring it back.
	publishIR(e.srv, a)
	expectSeries(t, map[string]float64{a0: 0})
	streamC.close()
	expectProxyIdentities(t, e.srv, 0)
	expectSeries(t, map[string]float64{a0: 0})
	if st := e.srv.State(); st.Identities != 0 {
		t.Fatalf("streams left bound to an identity: %+v", st)
	}
}
