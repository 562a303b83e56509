/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"iter"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/sharding"
)

// Key is one certificate shardgate may want: a name in a lease namespace
// (the namespace of the generated route that holds it).
type Key struct {
	Namespace string
	Host      string
}

func (k Key) String() string { return k.Namespace + "/" + k.Host }

// Want is one Certificate shardgate wants to exist.
type Want struct {
	Key
	// Issuer signs it: the issuerRef of the first shard (in the order of
	// Gateway namespace/name) with tls that holds the name and whose domain
	// does not cover it.
	Issuer shardgatev1alpha1.IssuerReference
	// Owner is the tenant the name is held for (the holder's lease
	// owner, or the namespace when the facts name none): the unit of
	// fairness in the Pacer.
	Owner string
	// Holder is the UID of the LeaseHost (or Akash ProviderHost) whose
	// generated route holds the name, and Route that route.
	Holder types.UID
	Route  types.NamespacedName
	// Unowned: the holder is an Akash ProviderHost, which lives in another
	// namespace; the Certificate gets no ownerReference.
	Unowned bool
	// Shards are the shard Gateways with tls that hold the name and whose
	// domain does not cover it, sorted.
	Shards []types.NamespacedName
}

// Desired is what the ownership facts and the shards ask of automatic
// HTTPS.
type Desired struct {
	// Wants are the Certificates to have, by key.
	Wants map[Key]*Want
	// ShardCertificate are the held names (by key) that some shard with
	// tls serves with its own certificate, because its domain covers
	// them, with those shards.
	ShardCertificate map[Key][]types.NamespacedName
}

// Covered says whether the shard's own certificate covers host: host is
// the shard's domain or a name under it (any depth; the shard's own HTTPS
// listener serves them, as the translator decides).
func Covered(s *sharding.Shard, host string) bool {
	host = strings.ToLower(host)
	return s.Domain != "" && (host == s.Domain || strings.HasSuffix(host, "."+s.Domain))
}

// Held is one name a generated route holds on one shard: an entry of the
// translator's ownership facts (gatewayapi.Ownership.Generated[Route].
// Hosts[Shard]). The package takes them one by one, not the facts
// themselves, because the translator imports this package.
type Held struct {
	Route types.NamespacedName
	// Holder is the LeaseHost's UID (the ProviderHost's when Unowned).
	Holder  types.UID
	Unowned bool
	Shard   types.NamespacedName
	Host    string
}

// DesiredFrom computes the Certificates the facts ask for: one per
// (namespace, host) held by a generated route on at least one shard with
// tls whose domain does not cover the host. A name held by no generated
// route (blocked, withheld, another tenant's, revoked) is never wanted.
// owners maps held names to their holder's owner (Ownership.Holders). The
// issuer is that of the first shard, by Gateway namespace/name, that
// wants the certificate. It is a pure function of its arguments.
func DesiredFrom(held iter.Seq[Held], owners map[string]string, shards []sharding.Shard) Desired {
	d := Desired{Wants: map[Key]*Want{}, ShardCertificate: map[Key][]types.NamespacedName{}}
	byGateway := make(map[types.NamespacedName]*sharding.Shard, len(shards))
	for i := range shards {
		if shards[i].TLS != nil {
			byGateway[shards[i].Gateway] = &shards[i]
		}
	}
	if len(byGateway) == 0 {
		return d
	}
	for e := range held {
		route, gw := e.Route, e.Shard
		s := byGateway[gw]
		if s == nil {
			continue
		}
		h := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(e.Host), "."))
		if h == "" || strings.HasPrefix(h, "*") {
			continue
		}
		k := Key{Namespace: route.Namespace, Host: h}
		if Covered(s, h) {
			d.ShardCertificate[k] = insertSorted(d.ShardCertificate[k], gw)
			continue
		}
		w := d.Wants[k]
		if w == nil {
			owner := owners[h]
			if owner == "" {
				owner = "namespace:" + route.Namespace
			}
			w = &Want{Key: k, Owner: owner}
			d.Wants[k] = w
		}
		w.Shards = insertSorted(w.Shards, gw)
		if w.Shards[0] == gw {
			w.Issuer = normalIssuer(s.TLS.IssuerRef)
		}
		if w.Holder == "" || lessRoute(route, w.Route) {
			w.Holder, w.Route, w.Unowned = e.Holder, route, e.Unowned
		}
	}
	return d
}

// normalIssuer fills the API defaults of an issuerRef.
func normalIssuer(r shardgatev1alpha1.IssuerReference) shardgatev1alpha1.IssuerReference {
	if r.Group == "" {
		r.Group = "cert-manager.io"
	}
	if r.Kind == "" {
		r.Kind = "ClusterIssuer"
	}
	return r
}

func lessRoute(a, b types.NamespacedName) bool {
	return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
}

func insertSorted(s []types.NamespacedName, n types.NamespacedName) []types.NamespacedName {
	i, found := slices.BinarySearchFunc(s, n, func(a, b types.NamespacedName) int {
		switch {
		case lessRoute(a, b):
			return -1
		case a == b:
			return 0
		}
		return 1
	})
	if found {
		return s
	}
	return slices.Insert(s, i, n)
}
