/*
Copyright The shardgate Authors.
*/

package infra

import (
	"reflect"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestServiceExposesTCPListeners: the Envoy Service carries the ports of
// TCP listeners (the akash-gateway chart's 8443 and 8444) as TCP ports
// named after the protocol, each targeting the same port on Envoy, which
// binds the TCP listener there; two listeners on one port give one.
func TestServiceExposesTCPListeners(t *testing.T) {
	gw := testGateway()
	gw.Spec.Listeners = []gatewayv1.Listener{
		{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
		{Name: "tcp-8444", Port: 8444, Protocol: gatewayv1.TCPProtocolType},
		{Name: "tcp-8443", Port: 8443, Protocol: gatewayv1.TCPProtocolType},
		{Name: "tcp-8443-again", Port: 8443, Protocol: gatewayv1.TCPProtocolType},
	}
	svc := mustBuild(t, gw, nil, Options{}).Service
	var got []string
	for _, p := range svc.Spec.Ports {
		got = append(got, p.Name+"/"+string(p.Protocol)+"/"+p.TargetPort.String())
	}
	if want := []string{"http-80/TCP/80", "tcp-8443/TCP/8443", "tcp-8444/TCP/8444"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ports = %v, want %v", got, want)
	}
}
