/*
Copyright The shardgate Authors.
*/

package build

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shardgate/shardgate/xds/translate"
)

// Wire route configurations.
//
// A repeated protobuf field is the concatenation of its encoded elements,
// each a tag, a length and the element's bytes. A route table's virtual
// hosts (RouteConfiguration field 2) can therefore be kept serialized, one
// by one, and a table with one changed virtual host encoded as the
// concatenation of the kept bytes and the new host's, instead of
// serializing every host again.
//
// The wire form of a table is a RouteConfiguration holding its own fields
// as usual and its virtual hosts as those concatenated bytes, in the
// message's unknown fields. Serializing it writes its own fields and copies
// the bytes; whoever reads the serialization (Envoy, a gRPC client,
// DecodeRouteConfiguration) gets the virtual hosts as field 2, as if they
// had been serialized with the table. It needs nothing from go-control-plane
// but its own marshalling of a resource.

// virtualHostsField is RouteConfiguration.virtual_hosts.
const virtualHostsField protowire.Number = 2

// tableState is what a Checker keeps of one route configuration.
type tableState struct {
	shell  []byte // the serialization of the table without its virtual hosts
	vhosts []*vhostState
	// messages are the virtual hosts of vhosts, compared without
	// reaching into each state.
	messages []*routev3.VirtualHost
	// names and domains count the virtual hosts per name and per
	// (lowercased) domain; dups counts the names and domains counted more
	// than once, problems the virtual hosts with problems of their own.
	names    map[string]int
	domains  map[string]int
	dups     int
	problems int
	wire     *routev3.RouteConfiguration
	// fields is the buffer wire's virtual hosts are read from: its length
	// is theirs, and what lies past it is no wire's, so that the next
	// table that only adds virtual hosts appends them there (tableFields).
	fields []byte
	// in is the message wire was checked from: the same message again,
	// with the same virtual hosts, is the same table (a memo hands out an
	// unchanged table again).
	in *routev3.RouteConfiguration
}

// vhostState is a checked virtual host.
type vhostState struct {
	vh       *routev3.VirtualHost
	name     string
	field    []byte // its element of field 2: tag, length, serialization
	domains  []string
	refs     []string // the clusters its routes send to
	problems []error
}

// table checks one route configuration against the state of the previous
// check and returns its wire form.
func (e *checkRun) table(rc *routev3.RouteConfiguration) *routev3.RouteConfiguration {
	c := e.c
	c.looked++
	name := rc.GetName()
	ts := c.tables[name]
	if ts == nil {
		ts = &tableState{names: map[string]int{}, domains: map[string]int{}}
		c.tables[name] = ts
	}
	if ts.wire != nil && ts.in == rc && ts.dups == 0 && ts.problems == 0 && slices.Equal(rc.VirtualHosts, ts.messages) {
		e.touched++
		return ts.wire
	}
	ts.in = rc
	// The table's own fields, with its virtual hosts taken out for the
	// moment.
	vhs := rc.VirtualHosts
	rc.VirtualHosts = nil
	shell, err := e.opts.Marshal(rc)
	if err == nil {
		c.Encoded += len(shell)
		if verr := e.validate(sha256.Sum256(shell), rc); verr != nil {
			e.fail("route configuration %q: %w", name, verr)
		}
	} else {
		e.fail("route configuration %q: serialize: %w", name, err)
	}
	rc.VirtualHosts = vhs
	changed := ts.wire == nil || !bytes.Equal(shell, ts.shell)
	ts.shell = shell
	// onlyAdded: the table is the last one's with virtual hosts added
	// (added), none removed or changed; its wire form then appends them
	// to the last one's bytes.
	onlyAdded := !changed
	var added []*vhostState

	// The virtual hosts, in order: an unchanged one is the very same
	// message at its place. While the new list keeps the old one's places
	// (virtual hosts edited, none added or removed), the state is updated
	// in place: next is prev and i == j. (It is the checker's own list;
	// a check that fails resets the checker.)
	prev, prevMsgs := ts.vhosts, ts.messages
	next, inPlace := prev, true
	leave := func(i int) {
		if inPlace {
			inPlace = false
			next = append(make([]*vhostState, 0, len(vhs)), prev[:i]...)
		}
	}
	j := 0
	for i := 0; i < len(vhs); {
		v := vhs[i]
		if j < len(prev) && prevMsgs[j] == v {
			if !inPlace {
				next = append(next, prev[j])
			}
			i++
			j++
			continue
		}
		if j < len(prev) && prev[j].name < v.GetName() {
			leave(i)
			changed, onlyAdded = true, false
			c.unindex(ts, prev[j])
			j++
			continue
		}
		vs := e.vhost(name, v)
		e.built = append(e.built, builtVhost{ts: ts, i: i})
		if j < len(prev) && prev[j].name == v.GetName() {
			// Rebuilt in its place: a change only if its bytes differ.
			if !bytes.Equal(vs.field, prev[j].field) {
				changed, onlyAdded = true, false
			}
			c.unindex(ts, prev[j])
			if inPlace {
				prev[j] = vs
			}
			j++
		} else {
			leave(i)
			changed = true
			added = append(added, vs)
		}
		c.index(ts, vs, e)
		if !inPlace {
			next = append(next, vs)
		}
		i++
	}
	if j < len(prev) {
		leave(len(vhs))
	}
	for ; j < len(prev); j++ {
		changed, onlyAdded = true, false
		c.unindex(ts, prev[j])
	}
	ts.vhosts, ts.messages = next, vhs
	e.touched++
	if ts.dups > 0 {
		e.errs = append(e.errs, duplicates(name, next)...)
	}
	if ts.problems > 0 {
		for _, vs := range next {
			e.errs = append(e.errs, vs.problems...)
		}
	}
	if !changed {
		return ts.wire
	}
	// A new content.
	fields := tableFields(ts.fields, onlyAdded, added, next)
	wire := &routev3.RouteConfiguration{}
	if err := proto.Unmarshal(shell, wire); err != nil {
		e.fail("route configuration %q: decode: %w", name, err)
		return rc
	}
	ts.fields = fields
	wire.ProtoReflect().SetUnknown(protoreflect.RawFields(fields[:len(fields):len(fields)]))
	// The table's previous wire form is no longer this config's: its
	// digest (and with it its bytes) goes now, not when pruned.
	delete(c.wires, ts.wire)
	ts.wire = wire
	c.wires[wire] = wireDigest(generation.Add(1))
	return wire
}

// tableFields returns the virtual hosts of a table's new wire form, field 2
// element after element. When the table only added virtual hosts to the
// last one (onlyAdded), their elements are appended to last, the last wire
// form's: the bytes it holds stay as they are, shared by both forms, and
// only the new hosts are copied (growing the buffer copies it, as append
// does, once in a while). A new lease thus costs its own virtual host, not
// the table. The added hosts then follow the others instead of standing at
// their place by name, which changes nothing for a proxy: Envoy and gRPC
// pick a virtual host by its domains, whatever its place, and the checker
// refuses a domain served twice. Otherwise the elements of next are laid
// out anew, in order, with room for a few more.
func tableFields(last []byte, onlyAdded bool, added, next []*vhostState) []byte {
	if onlyAdded && last != nil && len(added) > 0 {
		for _, vs := range added {
			last = append(last, vs.field...)
		}
		return last
	}
	n := 0
	for _, vs := range next {
		n += len(vs.field)
	}
	fields := make([]byte, 0, n+n/8)
	for _, vs := range next {
		fields = append(fields, vs.field...)
	}
	return fields
}

// wireVhosts replaces each virtual host the last check that passed
// serialized by its wire form: a message with its name as its one field and
// the rest of its checked serialization as unknown fields, sharing the
// checker's bytes of it. The replacement happens in the checker's state
// and in the virtual host lists of the route tables checked (the memo's,
// built for that check alone). It returns the wire forms by the message
// they replace, for the memo that built those messages to adopt
// (Memo.adopt); the messages then go. The checker recognises a host by its
// wire form from then on, so a memo that handed out the message again
// would have it serialized again: only Memo.adopt calls this.
func (c *Checker) wireVhosts() map[*routev3.VirtualHost]*routev3.VirtualHost {
	if len(c.lastBuilt) == 0 {
		return nil
	}
	out := make(map[*routev3.VirtualHost]*routev3.VirtualHost, len(c.lastBuilt))
	for _, b := range c.lastBuilt {
		if b.i >= len(b.ts.messages) || b.i >= len(b.ts.vhosts) {
			continue
		}
		v, vs := b.ts.messages[b.i], b.ts.vhosts[b.i]
		if vs.vh != v || len(v.ProtoReflect().GetUnknown()) > 0 {
			continue // a wire form already, or not this state's message
		}
		_, _, n := protowire.ConsumeTag(vs.field)
		if n < 0 {
			continue
		}
		_, m := protowire.ConsumeVarint(vs.field[n:])
		if m < 0 {
			continue
		}
		// Its name is its first field: the wire form keeps it as a field
		// (the checker walks hosts by name) and the rest as unknown.
		payload := vs.field[n+m:]
		head := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), v.GetName())
		if v.GetName() == "" || !bytes.HasPrefix(payload, head) {
			continue
		}
		w := &routev3.VirtualHost{Name: v.GetName()}
		w.ProtoReflect().SetUnknown(protoreflect.RawFields(payload[len(head):]))
		b.ts.messages[b.i] = w
		vs.vh = w
		out[v] = w
	}
	c.lastBuilt = nil
	return out
}

// vhost serializes, validates and indexes one virtual host of table.
func (e *checkRun) vhost(table string, v *routev3.VirtualHost) *vhostState {
	vs := &vhostState{vh: v, name: v.GetName()}
	if len(v.ProtoReflect().GetUnknown()) > 0 {
		// A wire form (after a refused check forgot the checker's state):
		// its facts and validation are those of what it serializes to.
		full, err := translate.Decode(v)
		if err != nil {
			e.fail("route configuration %q: virtual host: decode: %w", table, err)
			return vs
		}
		v = full.(*routev3.VirtualHost)
		vs.name = v.GetName()
	}
	where := func() string { return fmt.Sprintf("route configuration %q virtual host %s", table, v.GetName()) }
	size := e.opts.Size(v)
	field := protowire.AppendTag(make([]byte, 0, size+16), virtualHostsField, protowire.BytesType)
	field = protowire.AppendVarint(field, uint64(size))
	start := len(field)
	field, err := e.opts.MarshalAppend(field, v)
	if err != nil {
		e.fail("%s: serialize: %w", where(), err)
		return vs
	}
	if len(field)-start != size {
		// The size was computed for another content (the message must
		// not be modified while checked): encode the length afresh.
		enc := field[start:]
		field = protowire.AppendTag(nil, virtualHostsField, protowire.BytesType)
		field = protowire.AppendBytes(field, enc)
		start = len(field) - len(enc)
	}
	vs.field = field
	e.c.Encoded += len(field)
	if err := e.validate(sha256.Sum256(field[start:]), v); err != nil {
		e.fail("%s: %w", where(), err)
	}
	for _, d := range v.GetDomains() {
		vs.domains = append(vs.domains, strings.ToLower(d))
	}
	for _, r := range v.GetRoutes() {
		vs.refs = append(vs.refs, translate.RouteClusters(r.GetRoute())...)
		for _, h := range translate.HeaderNames(r) {
			if !translate.IsModifiable(h) {
				vs.problems = append(vs.problems, fmt.Errorf("route configuration %q: virtual host %q route %q: header %q cannot be modified",
					table, v.GetName(), r.GetName(), h))
			}
		}
	}
	return vs
}

// index adds a virtual host's names, domains and references to the counts.
func (c *Checker) index(ts *tableState, vs *vhostState, e *checkRun) {
	if ts.names[vs.name]++; ts.names[vs.name] == 2 {
		ts.dups++
	}
	for _, d := range vs.domains {
		if ts.domains[d]++; ts.domains[d] == 2 {
			ts.dups++
		}
	}
	for _, name := range vs.refs {
		if c.refs[name]++; c.refs[name] == 1 {
			e.newRefs = append(e.newRefs, name)
		}
	}
	if len(vs.problems) > 0 {
		ts.problems++
	}
	c.vhosts++
}

// unindex takes a virtual host out of the counts.
func (c *Checker) unindex(ts *tableState, vs *vhostState) {
	if ts.names[vs.name]--; ts.names[vs.name] == 1 {
		ts.dups--
	} else if ts.names[vs.name] == 0 {
		delete(ts.names, vs.name)
	}
	for _, d := range vs.domains {
		if ts.domains[d]--; ts.domains[d] == 1 {
			ts.dups--
		} else if ts.domains[d] == 0 {
			delete(ts.domains, d)
		}
	}
	for _, name := range vs.refs {
		if c.refs[name]--; c.refs[name] <= 0 {
			delete(c.refs, name)
		}
	}
	if len(vs.problems) > 0 {
		ts.problems--
	}
	c.vhosts--
}

// duplicates reports the duplicate virtual host names and domains of a
// table, as CheckReferences does.
func duplicates(table string, vhosts []*vhostState) []error {
	var errs []error
	names := map[string]bool{}
	domains := map[string]string{}
	for _, vs := range vhosts {
		if names[vs.name] {
			errs = append(errs, fmt.Errorf("route configuration %q: duplicate virtual host name %q", table, vs.name))
		}
		names[vs.name] = true
		for _, d := range vs.domains {
			if prev, ok := domains[d]; ok {
				errs = append(errs, fmt.Errorf("route configuration %q: virtual hosts %q and %q both serve domain %q", table, prev, vs.name, d))
				continue
			}
			domains[d] = vs.name
		}
	}
	return errs
}

// referrer names a virtual host that references cluster (for errors).
func (c *Checker) referrer(cluster string) string {
	for table, ts := range c.tables {
		for _, vs := range ts.vhosts {
			for _, r := range vs.refs {
				if r == cluster {
					return fmt.Sprintf("route configuration %q: virtual host %q", table, vs.name)
				}
			}
		}
	}
	return "a route"
}

// Wire clusters.
//
// A state-of-the-world response carries every cluster of a changed type: at
// 10k Services, one new cluster would serialize 10k clusters again. A
// checked cluster is published as a wire form instead: the message with its
// name as its one known field and the rest of its checked serialization as
// unknown fields. Its name is its first field, so serializing the wire form
// writes the very bytes that were checked (the name, then the copied rest).

// wireNamed returns the wire form of a message whose serialization b starts
// with its name as field 1, built by shell from the name; nil when b does
// not start so.
func wireNamed[T proto.Message](name string, b []byte, shell func(string) T) proto.Message {
	head := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name)
	if name == "" || !bytes.HasPrefix(b, head) {
		return nil
	}
	w := shell(name)
	w.ProtoReflect().SetUnknown(bytes.Clone(b[len(head):]))
	return w
}

// wireOf returns the wire form of a checked cluster serialized as b; nil
// for other messages, or when b is not laid out as a wire form needs.
func wireOf(m proto.Message, b []byte) proto.Message {
	switch v := m.(type) {
	case *clusterv3.Cluster:
		if len(v.ProtoReflect().GetUnknown()) > 0 {
			return nil // already a wire form
		}
		return wireNamed(v.GetName(), b, func(n string) *clusterv3.Cluster { return &clusterv3.Cluster{Name: n} })
	}
	return nil
}
