/*
Copyright The shardgate Authors.
*/

package translate

import (
	"crypto/sha256"
	"errors"
	"fmt"

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
// A Checker remembers only what passed in its last check, so its memory is
// bounded by one config. It is not safe for concurrent use.
type Checker struct {
	passed map[Digest]struct{}
	// known is the digest of every message of the last check, by message:
	// messages are never modified once built (translate.Memo shares them
	// between translations), so a message seen again is not serialized
	// again.
	known map[proto.Message]Digest
	// Validated is how many messages the last check validated (the rest
	// passed before).
	Validated int
}

// Check validates r like Validate and returns the digest of every resource
// in it, keyed by the resource.
func (c *Checker) Check(r *Resources) (map[proto.Message]Digest, error) {
	var (
		errs    []error
		digests = make(map[proto.Message]Digest, len(r.Listeners)+len(r.Routes)+len(r.Clusters)+len(r.Endpoints)+len(r.Secrets))
		passed  = make(map[Digest]struct{}, len(c.passed))
		buf     []byte
		opts    = proto.MarshalOptions{Deterministic: true}
	)
	c.Validated = 0
	known := make(map[proto.Message]Digest, len(c.known))
	digest := func(m proto.Message) (Digest, error) {
		if d, ok := c.known[m]; ok {
			known[m] = d
			return d, nil
		}
		var err error
		buf, err = opts.MarshalAppend(buf[:0], m)
		if err != nil {
			return Digest{}, err
		}
		d := sha256.Sum256(buf)
		known[m] = d
		return d, nil
	}
	// check validates m unless its digest passed before.
	check := func(kind string, name func() string, m proto.Message) (Digest, bool) {
		d, err := digest(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: serialize: %w", kind, name(), err))
			return d, false
		}
		if _, ok := c.passed[d]; !ok {
			c.Validated++
			if err := validateMessage(m); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", kind, name(), err))
				return d, false
			}
		}
		passed[d] = struct{}{}
		return d, true
	}
	one := func(kind, name string, m proto.Message) {
		if d, ok := check(kind, func() string { return name }, m); ok {
			digests[m] = d
		}
	}
	for _, l := range r.Listeners {
		one("listener", l.GetName(), l)
	}
	for _, rc := range r.Routes {
		if d, ok := c.routeConfiguration(rc, check); ok {
			digests[rc] = d
		}
	}
	for _, cl := range r.Clusters {
		one("cluster", cl.GetName(), cl)
	}
	for _, e := range r.Endpoints {
		one("cluster load assignment", e.GetClusterName(), e)
	}
	for _, s := range r.Secrets {
		one("secret", s.GetName(), s)
	}
	if err := CheckReferences(r); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		// Keep what passed before: the caller keeps publishing the last
		// good config, and will send it (or a fix) again.
		if c.passed == nil || len(c.passed) > 2*len(passed)+1024 {
			c.passed = passed
		} else {
			for d := range passed {
				c.passed[d] = struct{}{}
			}
		}
		return nil, errors.Join(errs...)
	}
	c.passed, c.known = passed, known
	return digests, nil
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
