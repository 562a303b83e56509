/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/ir"
)

// misdirectedProbes are request hosts around the fuzz inputs' hostnames.
var misdirectedProbes = []string{
	"foo.example.com", "bar.example.com", "a.b.example.com", "x.example.com",
	"example.com", "y.com", "z.org", "deep.a.b.example.com",
}

// envoyVhost is the virtual host Envoy selects for host: an exact domain,
// else the longest "*.suffix" wildcard, else "*"; nil when none matches.
func envoyVhost(vhosts []*ir.VirtualHost, host string) *ir.VirtualHost {
	var best *ir.VirtualHost
	bestLen := -1
	for _, v := range vhosts {
		for _, d := range v.Domains {
			switch {
			case d == host:
				return v
			case d == "*":
				if bestLen < 0 {
					best, bestLen = v, 0
				}
			case strings.HasPrefix(d, "*.") && strings.HasSuffix(host, d[1:]) && len(d) > bestLen:
				best, bestLen = v, len(d)
			}
		}
	}
	return best
}

// envoyServer is the TLS server (filter chain) Envoy selects for an SNI:
// an exact server name, else the longest wildcard, else the one without
// server names; -1 when none.
func envoyServer(servers []ir.TLSServer, sni string) int {
	best, bestLen := -1, -1
	for i, s := range servers {
		if len(s.SNI) == 0 && bestLen < 0 {
			best, bestLen = i, 0
		}
		for _, n := range s.SNI {
			switch {
			case n == sni:
				return i
			case strings.HasPrefix(n, "*.") && strings.HasSuffix(sni, n[1:]) && len(n) > bestLen:
				best, bestLen = i, len(n)
			}
		}
	}
	return best
}

// httpsOnly turns every listener into an HTTPS listener on 443 with a
// valid certificate, so that most Gateways have several TLS servers.
func httpsOnly(in *Input, cert, key []byte) {
	have := map[string]bool{}
	for _, s := range in.Secrets {
		if s.Name == "cert" {
			have[s.Namespace] = true
		}
	}
	for _, gw := range in.Gateways {
		for i := range gw.Spec.Listeners {
			l := &gw.Spec.Listeners[i]
			l.Port, l.Protocol = 443, gatewayv1.HTTPSProtocolType
			l.TLS = &gatewayv1.ListenerTLSConfig{Mode: ptrTo(gatewayv1.TLSModeTerminate),
				CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}
		}
		if !have[gw.Namespace] {
			have[gw.Namespace] = true
			in.Secrets = append(in.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cert", Namespace: gw.Namespace},
				Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}})
		}
	}
}

func isMisdirected(v *ir.VirtualHost) bool {
	return v != nil && len(v.Routes) == 1 && v.Routes[0].DirectResponse != nil && v.Routes[0].DirectResponse.Status == 421
}

// TestMisdirectedRequests checks, over random Gateways, what Envoy does
// with a request whose Host differs from its SNI: on the TLS server SNI
// selected, a Host that the same SNI would select that server for is
// served (or 404) and never 421; any other Host is answered 421, so no
// route of one listener answers a Host another listener owns
// (GatewayHTTPSListenerDetectMisdirectedRequests). It also checks that no
// two virtual hosts of a route table share a domain.
func TestMisdirectedRequests(t *testing.T) {
	cert, key := tlsPEM(t)
	seeds := 2000
	if testing.Short() {
		seeds = 200
	}
	servers := 0
	refused := 0
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 421))
		data := make([]byte, 100+r.IntN(400))
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		in := fuzzInput(data, cert, key)
		if seed%4 != 0 {
			httpsOnly(in, cert, key)
		}
		out := Translate(in)
		for _, gw := range out.Gateways {
			for _, l := range gw.Listeners {
				if l.Protocol != ir.ProtocolHTTPS {
					continue
				}
				for si, s := range l.TLSServers {
					servers++
					domains := map[string]bool{}
					for _, v := range s.VirtualHosts {
						for _, d := range v.Domains {
							if domains[d] {
								t.Fatalf("seed %d: %s/%s server %s: domain %q twice", seed, gw.Name, l.Name, s.Name, d)
							}
							domains[d] = true
						}
					}
					for _, h := range misdirectedProbes {
						v := envoyVhost(s.VirtualHosts, h)
						mine := envoyServer(l.TLSServers, h) == si
						switch {
						case mine && isMisdirected(v):
							t.Fatalf("seed %d: %s/%s server %s: host %s, which its SNI sends here, is answered 421", seed, gw.Name, l.Name, s.Name, h)
						case !mine && !isMisdirected(v):
							t.Fatalf("seed %d: %s/%s server %s: host %s, which its SNI sends elsewhere, is not answered 421 (virtual host %v)", seed, gw.Name, l.Name, s.Name, h, v)
						case !mine:
							refused++
						}
					}
				}
			}
		}
	}
	if servers == 0 || refused == 0 {
		t.Fatalf("the inputs exercised nothing: %d TLS servers, %d misdirected probes", servers, refused)
	}
	t.Logf("%d TLS servers, %d misdirected probes answered 421", servers, refused)
}
