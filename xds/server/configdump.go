package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/xds/build"
	"github.com/shardgate/shardgate/xds/translate"
)

// Redacted replaces every private key in a config dump.
const Redacted = "[redacted]"

// ConfigDump is what one Gateway's proxies are served: per xDS type (in
// the order they are sent), the version and the resources as Envoy's own
// JSON (protojson), with the private keys of Secrets redacted.
type ConfigDump struct {
	Gateway string `json:"gateway"`
	// Refused is set when the Gateway's latest config was refused before
	// publishing; the resources are then the last good config.
	Refused string            `json:"refused,omitempty"`
	Types   []ConfigDumpTypes `json:"types"`
}

// ConfigDumpTypes is one xDS type of a ConfigDump.
type ConfigDumpTypes struct {
	// Type is the short type name: Cluster, ClusterLoadAssignment, Secret,
	// Listener or RouteConfiguration.
	Type      string            `json:"type"`
	TypeURL   string            `json:"typeURL"`
	Version   string            `json:"version"`
	Resources []json.RawMessage `json:"resources"`
}

// ErrNoConfig is returned by ConfigDump for a Gateway with no published
// config.
type ErrNoConfig struct{ Gateway string }

func (e ErrNoConfig) Error() string {
	return fmt.Sprintf("no xDS config is published for Gateway %s (is it a Gateway of this controller, and programmed?)", e.Gateway)
}

// ConfigDump returns the config published for gw's proxies.
func (s *Server) ConfigDump(gw k8stypes.NamespacedName) (*ConfigDump, error) {
	group := NodeGroup(gw)
	snap, err := s.cache.GetSnapshot(group)
	if err != nil {
		return nil, ErrNoConfig{Gateway: group}
	}
	s.mu.Lock()
	var refused string
	if st := s.gateways[group]; st != nil {
		refused = st.refused
	}
	s.mu.Unlock()
	out := &ConfigDump{Gateway: group, Refused: refused, Types: []ConfigDumpTypes{}}
	marshal := protojson.MarshalOptions{UseProtoNames: false}
	for _, typ := range build.TypeOrder {
		res := snap.GetResources(typ)
		names := make([]string, 0, len(res))
		for name := range res {
			names = append(names, name)
		}
		sort.Strings(names)
		t := ConfigDumpTypes{Type: shortType(typ), TypeURL: typ, Version: snap.GetVersion(typ), Resources: []json.RawMessage{}}
		for _, name := range names {
			b, err := marshal.Marshal(redact(res[name]))
			if err != nil {
				return nil, fmt.Errorf("marshal %s %s: %w", t.Type, name, err)
			}
			t.Resources = append(t.Resources, b)
		}
		out.Types = append(out.Types, t)
	}
	return out, nil
}

// redact returns m, or a copy of it without private keys.
func redact(m proto.Message) proto.Message {
	// A wire form (a route table, cluster or load assignment) carries
	// its content serialized: show it.
	if decoded, err := translate.Decode(m); err == nil {
		m = decoded
	}
	sec, ok := m.(*tlsv3.Secret)
	if !ok {
		return m
	}
	sec = proto.Clone(sec).(*tlsv3.Secret)
	hidden := &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: Redacted}}
	if c := sec.GetTlsCertificate(); c != nil {
		if c.PrivateKey != nil {
			c.PrivateKey = hidden
		}
		if c.Password != nil {
			c.Password = hidden
		}
		c.PrivateKeyProvider = nil
	}
	if k := sec.GetSessionTicketKeys(); k != nil {
		for i := range k.Keys {
			k.Keys[i] = hidden
		}
	}
	if g := sec.GetGenericSecret(); g != nil && g.Secret != nil {
		g.Secret = hidden
	}
	return sec
}

// ConfigDumpHandler serves ConfigDump as JSON at <prefix>/<namespace>/<name>
// (mounted on the metrics server, behind its authentication).
func (s *Server) ConfigDumpHandler(prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest := strings.Trim(strings.TrimPrefix(r.URL.Path, prefix), "/")
		ns, name, ok := strings.Cut(rest, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			http.Error(w, fmt.Sprintf("want %s/<namespace>/<gateway>", prefix), http.StatusBadRequest)
			return
		}
		dump, err := s.ConfigDump(k8stypes.NamespacedName{Namespace: ns, Name: name})
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(dump)
	})
}
