/*
Copyright The shardgate Authors.
*/

package server

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// TestAutoTLSConfigDump: the config dump of a shard with automatic HTTPS
// (what `shardgate config dump` prints) shows each name's filter chain on
// 443 (its SNI, its SDS secret, its route table), the route table
// answering the name, port 80 redirecting it to https, and the
// certificate's Secret with its private key redacted.
func TestAutoTLSConfigDump(t *testing.T) {
	in, eslices := pipelineInput(3)
	autoTLSShardInput(t, in)
	s := newWithSlices(eslices)
	st := gatewayapi.NewStore(in.ControllerName)
	st.Load(in)
	s.Publish(gatewayapi.NewTranslator(st).Translate(gatewayapi.FactsOf(in)).Gateways)
	if errs := s.PublishErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	dump, err := s.ConfigDump(types.NamespacedName{Namespace: "default", Name: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	byType := map[string]string{}
	for _, ty := range dump.Types {
		var all []string
		for _, r := range ty.Resources {
			all = append(all, string(r))
		}
		byType[ty.Type] = strings.Join(all, "\n")
	}
	host := "app-1.example.com"
	var listener struct {
		Name         string `json:"name"`
		FilterChains []struct {
			Name             string `json:"name"`
			FilterChainMatch struct {
				ServerNames []string `json:"serverNames"`
			} `json:"filterChainMatch"`
		} `json:"filterChains"`
	}
	found := false
	for _, ty := range dump.Types {
		if ty.Type != "Listener" {
			continue
		}
		for _, r := range ty.Resources {
			if err := json.Unmarshal(r, &listener); err != nil {
				t.Fatal(err)
			}
			if listener.Name != "https-443" {
				continue
			}
			found = true
			if len(listener.FilterChains) != 3 {
				t.Fatalf("https-443 has %d filter chains, want 3", len(listener.FilterChains))
			}
			fc := listener.FilterChains[1]
			if fc.Name != "auto-tls/"+host || len(fc.FilterChainMatch.ServerNames) != 1 || fc.FilterChainMatch.ServerNames[0] != host {
				t.Fatalf("filter chain %+v, want auto-tls/%s matching SNI %s", fc, host, host)
			}
		}
	}
	if !found {
		t.Fatal("no https-443 listener in the config dump")
	}
	for _, want := range []string{
		`"name":"lease-1/shardgate-tls.` + host + `"`, // the chain's SDS secret
		`"routeConfigName":"https-443/auto-tls/` + host + `"`,
	} {
		if !strings.Contains(byType["Listener"], want) {
			t.Errorf("the listeners lack %s", want)
		}
	}
	if !strings.Contains(byType["RouteConfiguration"], `"name":"https-443/auto-tls/`+host+`"`) ||
		!strings.Contains(byType["RouteConfiguration"], `"schemeRedirect":"https"`) {
		t.Errorf("the route tables lack the per-name table or the redirect:\n%s", byType["RouteConfiguration"])
	}
	if !strings.Contains(byType["Secret"], `"name":"lease-1/shardgate-tls.`+host+`"`) || !strings.Contains(byType["Secret"], Redacted) ||
		strings.Contains(byType["Secret"], "PRIVATE KEY") {
		t.Errorf("the Secrets do not show the certificate with its key redacted:\n%.400s", byType["Secret"])
	}
}
