/*
Copyright The shardgate Authors.
*/

package translate

import (
	"fmt"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
)

// Wire forms.
//
// An incremental publisher (xds/build) may hand over a resource in its wire
// form: a message that holds its own name as usual and the rest of its
// serialization, already checked, in its unknown fields (a route
// configuration: its virtual hosts, field 2, as the concatenation of their
// serializations). Serializing a wire form writes exactly the bytes of the
// message it stands for, so whoever reads it (Envoy, a gRPC client) sees no
// difference. These functions read one back as ordinary message fields;
// Validate decodes wire forms the same way before it checks them.

// DecodeRouteConfiguration returns rc with its virtual hosts as messages:
// rc itself unless it is a wire form, else a new message.
func DecodeRouteConfiguration(rc *routev3.RouteConfiguration) (*routev3.RouteConfiguration, error) {
	if len(rc.ProtoReflect().GetUnknown()) == 0 {
		return rc, nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rc)
	if err != nil {
		return nil, fmt.Errorf("route configuration %q: serialize: %w", rc.GetName(), err)
	}
	out := &routev3.RouteConfiguration{}
	if err := proto.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("route configuration %q: decode: %w", rc.GetName(), err)
	}
	return out, nil
}

// Decode returns m with every field as a message field: m itself unless it
// is a wire form (a route table or cluster), else a new
// message of the same type.
func Decode(m proto.Message) (proto.Message, error) {
	if len(m.ProtoReflect().GetUnknown()) == 0 {
		return m, nil
	}
	return roundTrip(m)
}

// roundTrip is m serialized and read back as a new message of its type:
// every wire form in it, at any depth, becomes message fields.
func roundTrip(m proto.Message) (proto.Message, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("serialize: %w", err)
	}
	out := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return out, nil
}

// SameRouteTable reports whether a and b, read as messages (no wire
// forms), are the same route table but for the order of their virtual
// hosts, which a proxy does not read: Envoy and gRPC pick a virtual host by
// its domains, wherever it stands, and a table with a domain served twice
// is refused. A table published incrementally lists the virtual hosts it
// added last (xds/build), where a translation lists them by name.
func SameRouteTable(a, b *routev3.RouteConfiguration) bool {
	if len(a.GetVirtualHosts()) != len(b.GetVirtualHosts()) {
		return false
	}
	return proto.Equal(virtualHostsByName(a), virtualHostsByName(b))
}

// virtualHostsByName is rc with its virtual hosts in name order: rc itself
// when they are, else a copy.
func virtualHostsByName(rc *routev3.RouteConfiguration) *routev3.RouteConfiguration {
	cmp := func(x, y *routev3.VirtualHost) int { return strings.Compare(x.GetName(), y.GetName()) }
	if slices.IsSortedFunc(rc.GetVirtualHosts(), cmp) {
		return rc
	}
	out := proto.Clone(rc).(*routev3.RouteConfiguration)
	slices.SortStableFunc(out.VirtualHosts, cmp)
	return out
}
