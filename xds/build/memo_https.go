/*
Copyright The shardgate Authors.
*/

package build

import (
	"bytes"
	"fmt"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/shardgate/shardgate/internal/ir"
	"github.com/shardgate/shardgate/xds/translate"
)

// HTTPS listeners and secrets in the memo: a shard with automatic HTTPS
// has a TLS server (filter chain) and a certificate per name it serves.

// memoHTTPS is an HTTPS listener's message, the listenerKey it was built
// with, and its filter chains by TLS server name. A shard with automatic
// HTTPS has one TLS server per name it serves: a name coming or going
// builds its own chain alone, and the others are the very messages built
// before (so the proxy keeps their connections).
type memoHTTPS struct {
	key    string
	msg    *listenerv3.Listener
	chains map[string]memoChain
}

// memoChain is a TLS server's filter chain and the server it was built
// from (serverKey).
type memoChain struct {
	key   string
	chain *listenerv3.FilterChain
}

// serverKey says everything of a TLS server its filter chain is built
// from, besides its listener's key: its name, SNI, certificates and
// client validation.
func serverKey(s *ir.TLSServer) string {
	var b strings.Builder
	b.WriteString(s.Name)
	b.WriteByte(0)
	for _, n := range s.SNI {
		b.WriteString(n)
		b.WriteByte(',')
	}
	b.WriteByte(0)
	for _, c := range s.Certificates {
		b.WriteString(c.Name)
		b.WriteByte(',')
	}
	if cv := s.ClientValidation; cv != nil {
		fmt.Fprintf(&b, "\x00%s|%t", cv.CA.Name, cv.InsecureFallback)
	}
	return b.String()
}

// memoSecret is an IR secret translated, and its message.
type memoSecret struct {
	ir  ir.Secret
	msg *tlsv3.Secret
}

// httpsListener is HTTPS listener l's message. When the IR changed only
// in the virtual hosts and clusters its change names (ir.Change: its TLS
// servers are those of the IR last translated), it is the message built
// before. Otherwise each TLS server's filter chain is the one built before
// for the same server (serverKey) under the same listener key, or built
// anew; and when every chain is the previous one, in order, the listener
// is the previous message too.
func (t *memoRun) httpsListener(l *ir.Listener, traffic *ir.Traffic) *listenerv3.Listener {
	key := listenerKey(l, traffic)
	prev, had := t.memo.httpsListeners[l.Name]
	had = had && prev.key == key
	if had && !t.change.all {
		t.nextHTTPS[l.Name] = prev
		return prev.msg
	}
	next := memoHTTPS{key: key, chains: make(map[string]memoChain, len(l.TLSServers))}
	chains := make([]*listenerv3.FilterChain, 0, len(l.TLSServers))
	same := had && prev.msg != nil && len(prev.msg.GetFilterChains()) == len(l.TLSServers)
	for i := range l.TLSServers {
		s := &l.TLSServers[i]
		sk := serverKey(s)
		c, ok := prev.chains[s.Name]
		if !had || !ok || c.key != sk {
			c = memoChain{key: sk, chain: t.sc.HTTPSChain(l, s)}
		}
		next.chains[s.Name] = c
		chains = append(chains, c.chain)
		if same && prev.msg.FilterChains[i] != c.chain {
			same = false
		}
	}
	if same {
		next.msg = prev.msg
	} else {
		next.msg = t.sc.HTTPSListener(l, chains)
	}
	t.nextHTTPS[l.Name] = next
	return next.msg
}

// secretsMemo translates gw's secrets, reusing the message of every secret
// whose IR is the one last translated at its place (its bytes the very
// same, or equal). When every one is, at the same place, the list is the
// very list handed out last (kept), which callers must not modify.
func (t *memoRun) secretsMemo(gw *ir.Gateway, r *translate.Resources) (kept bool) {
	m := t.memo
	prev := m.secrets
	if len(prev) == len(gw.Secrets) && len(m.lastSecrets) == len(prev) {
		same := true
		for i := range gw.Secrets {
			if !sameSecret(&prev[i].ir, &gw.Secrets[i]) {
				same = false
				break
			}
		}
		if same {
			t.nextSecrets = prev
			r.Secrets = m.lastSecrets
			return true
		}
	}
	next := make([]memoSecret, 0, len(gw.Secrets))
	r.Secrets = make([]*tlsv3.Secret, 0, len(gw.Secrets))
	j := 0
	for i := range gw.Secrets {
		s := &gw.Secrets[i]
		// Both lists are sorted by name: skip what was removed.
		for j < len(prev) && prev[j].ir.Name < s.Name {
			j++
		}
		var e memoSecret
		if j < len(prev) && sameSecret(&prev[j].ir, s) {
			e = prev[j]
			j++
		} else {
			e = memoSecret{ir: *s, msg: translate.Secret(s)}
		}
		next = append(next, e)
		r.Secrets = append(r.Secrets, e.msg)
	}
	t.nextSecrets = next
	m.lastSecrets = r.Secrets
	return false
}

// sameSecret: a and b are the same secret with the same bytes.
func sameSecret(a, b *ir.Secret) bool {
	return a.Name == b.Name && sameBytes(a.Cert, b.Cert) && sameBytes(a.Key, b.Key) && sameBytes(a.CA, b.CA)
}

func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}
