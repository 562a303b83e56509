/*
Copyright The shardgate Authors.
*/

package translate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
)

// Digest identifies a resource's content: the SHA-256 of its deterministic
// serialization (for a route configuration, of its own fields and of its
// virtual hosts' digests).
type Digest [sha256.Size]byte

// Checker is Validate with a memory, for a config that is published again
// and again with small changes. Each resource is serialized once per check;
// a resource (for route configurations: each virtual host, since one route
// configuration holds every route of a port) whose bytes passed the
// previous check is not validated again, so a one-route change validates
// one virtual host. The referential checks always run over everything. The
// digests it returns let the caller version its snapshot without
// serializing again.
//
// A Checker keeps what its recent checks saw, in maps it updates in place
// (a check of an unchanged config allocates nothing per resource) and
// prunes when they grow past twice what the last check used, so its memory
// is bounded by about two configs. It is not safe for concurrent use.
type Checker struct {
	epoch uint64
	// passed: digests that passed validation, with the check that last
	// saw them.
	passed map[Digest]uint64
	// known is the digest of every message seen, by message: messages are
	// never modified once built (translate.Memo shares them between
	// translations), so a message seen again is not serialized again.
	known map[proto.Message]knownDigest
	// full is the digest of each route configuration of the last check
	// (its own fields and its virtual hosts' digests).
	full map[proto.Message]Digest
	// Validated is how many messages the last check validated (the rest
	// passed before).
	Validated int

	// The clusters and load assignments of the last check, when it
	// passed: the same list again (translate.Memo returns the very same
	// messages when nothing changed) is not walked message by message.
	lastClusters  []*clusterv3.Cluster
	lastEndpoints []*endpointv3.ClusterLoadAssignment
}

type knownDigest struct {
	d     Digest
	epoch uint64
}

// Check validates r like Validate. Afterwards Digest gives the digest of
// every resource in r.
func (c *Checker) Check(r *Resources) error {
	if c.known == nil {
		c.passed, c.known = map[Digest]uint64{}, map[proto.Message]knownDigest{}
	}
	c.epoch++
	c.Validated = 0
	c.full = make(map[proto.Message]Digest, len(r.Routes))
	var (
		errs    []error
		buf     []byte
		opts    = proto.MarshalOptions{Deterministic: true}
		touched int
	)
	digest := func(m proto.Message) (Digest, error) {
		touched++
		if k, ok := c.known[m]; ok {
			if k.epoch != c.epoch {
				c.known[m] = knownDigest{d: k.d, epoch: c.epoch}
			}
			return k.d, nil
		}
		var err error
		buf, err = opts.MarshalAppend(buf[:0], m)
		if err != nil {
			return Digest{}, err
		}
		d := sha256.Sum256(buf)
		c.known[m] = knownDigest{d: d, epoch: c.epoch}
		return d, nil
	}
	// check validates m unless its digest passed before.
	check := func(kind string, name func() string, m proto.Message) (Digest, bool) {
		d, err := digest(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: serialize: %w", kind, name(), err))
			return d, false
		}
		if ep, ok := c.passed[d]; !ok {
			c.Validated++
			if err := validateMessage(m); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", kind, name(), err))
				return d, false
			}
			c.passed[d] = c.epoch
		} else if ep != c.epoch {
			c.passed[d] = c.epoch
		}
		return d, true
	}
	one := func(kind, name string, m proto.Message) {
		check(kind, func() string { return name }, m)
	}
	for _, l := range r.Listeners {
		one("listener", l.GetName(), l)
	}
	for _, rc := range r.Routes {
		if d, ok := c.routeConfiguration(rc, check); ok {
			c.full[rc] = d
		}
	}
	sameClusters := c.lastClusters != nil && slices.Equal(r.Clusters, c.lastClusters)
	sameEndpoints := c.lastEndpoints != nil && slices.Equal(r.Endpoints, c.lastEndpoints)
	if !sameClusters {
		for _, cl := range r.Clusters {
			one("cluster", cl.GetName(), cl)
		}
	}
	if !sameEndpoints {
		for _, e := range r.Endpoints {
			one("cluster load assignment", e.GetClusterName(), e)
		}
	}
	for _, s := range r.Secrets {
		one("secret", s.GetName(), s)
	}
	if err := CheckReferences(r); err != nil {
		errs = append(errs, err)
	}
	// Forget what recent checks did not see once the maps hold more than
	// twice what this one used. (After a refusal too: what passed stays
	// known, and the caller sends the last good config or a fix next.)
	// The lists skipped above are touched first, so that they stay.
	n := touched
	if sameClusters {
		n += len(r.Clusters)
	}
	if sameEndpoints {
		n += len(r.Endpoints)
	}
	if len(c.known) > 2*n+1024 || len(c.passed) > 2*n+1024 {
		if sameClusters {
			for _, cl := range r.Clusters {
				c.touch(cl)
			}
		}
		if sameEndpoints {
			for _, e := range r.Endpoints {
				c.touch(e)
			}
		}
	}
	if len(c.known) > 2*n+1024 {
		for m, k := range c.known {
			if k.epoch != c.epoch {
				delete(c.known, m)
			}
		}
	}
	if len(c.passed) > 2*n+1024 {
		for d, ep := range c.passed {
			if ep != c.epoch {
				delete(c.passed, d)
			}
		}
	}
	if len(errs) > 0 {
		c.lastClusters, c.lastEndpoints = nil, nil
		return errors.Join(errs...)
	}
	c.lastClusters, c.lastEndpoints = r.Clusters, r.Endpoints
	return nil
}

// touch marks a known message (and its digest) as used by this check.
func (c *Checker) touch(m proto.Message) {
	if k, ok := c.known[m]; ok {
		c.known[m] = knownDigest{d: k.d, epoch: c.epoch}
		if _, ok := c.passed[k.d]; ok {
			c.passed[k.d] = c.epoch
		}
	}
}

// Digest returns the digest of a resource of the last check.
func (c *Checker) Digest(m proto.Message) (Digest, bool) {
	if d, ok := c.full[m]; ok {
		return d, true
	}
	if _, isRC := m.(*routev3.RouteConfiguration); isRC {
		return Digest{}, false // only full digests version a route configuration
	}
	k, ok := c.known[m]
	return k.d, ok
}

// routeConfiguration checks a route configuration's own fields (with its
// virtual hosts taken out for the moment) and each virtual host on its own.
func (c *Checker) routeConfiguration(rc *routev3.RouteConfiguration, check func(kind string, name func() string, m proto.Message) (Digest, bool)) (Digest, bool) {
	vhs := rc.VirtualHosts
	rc.VirtualHosts = nil
	shell, ok := check("route configuration", rc.GetName, rc)
	rc.VirtualHosts = vhs
	h := sha256.New()
	h.Write(shell[:])
	for _, vh := range vhs {
		d, vok := check("route configuration", func() string { return rc.GetName() + " virtual host " + vh.GetName() }, vh)
		ok = ok && vok
		h.Write(d[:])
	}
	var d Digest
	h.Sum(d[:0])
	return d, ok
}

// DigestOf computes a resource's digest as Check does.
func DigestOf(m proto.Message) (Digest, error) {
	var c Checker
	if rc, ok := m.(*routev3.RouteConfiguration); ok {
		var err error
		d, _ := c.routeConfiguration(rc, func(_ string, _ func() string, m proto.Message) (Digest, bool) {
			b, merr := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if merr != nil {
				err = merr
				return Digest{}, false
			}
			return sha256.Sum256(b), true
		})
		return d, err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return Digest{}, err
	}
	return sha256.Sum256(b), nil
}
