/*
Copyright The shardgate Authors.
*/

package build

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/shardgate/shardgate/xds/translate"
)

// within reports whether part lies in whole's memory.
func within(part, whole []byte) bool {
	if len(part) == 0 {
		return true
	}
	if len(whole) == 0 {
		return false
	}
	p, w := uintptr(unsafe.Pointer(unsafe.SliceData(part))), uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	return p >= w && p+uintptr(len(part)) <= w+uintptr(len(whole))
}

// TestCheckerKeepsTableBytesOnce: the checker holds a route table's bytes
// once, in the wire form it publishes: each virtual host's checked
// serialization, and the wire form the memo hands out for the host, are
// parts of those bytes, not copies of them; the table's earlier bytes are
// not held. A changed virtual host is still a changed table, and what is
// published is a translation from scratch.
func TestCheckerKeepsTableBytesOnce(t *testing.T) {
	gw := propertyBase(12)
	var m Memo
	var c Checker
	var lastDigest Digest
	for step := range 30 {
		next := *gw
		next.Listeners = slices.Clone(gw.Listeners)
		vhs := slices.Clone(next.Listeners[0].VirtualHosts)
		k := step % len(vhs)
		vhs[k] = propertyVhost(vhs[k].Name, gw.Clusters[(step+1)%len(gw.Clusters)].Name, fmt.Sprintf("/step-%d", step))
		next.Listeners[0].VirtualHosts = vhs
		gw = &next
		res, err := m.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Check(res); err != nil {
			t.Fatal(err)
		}
		m.adopt(&c)
		fresh, err := translate.Translate(gw)
		if err != nil {
			t.Fatal(err)
		}
		sameTablesAndSecrets(t, &Config{Resources: res}, fresh)
		d, ok := c.Digest(res.Routes[0])
		if !ok {
			t.Fatalf("step %d: the table has no digest", step)
		}
		if d == lastDigest {
			t.Fatalf("step %d: a changed virtual host left the table's digest as it was", step)
		}
		lastDigest = d
		for name, ts := range c.tables {
			sent := ts.wire.ProtoReflect().GetUnknown()
			var joined []byte
			for i, vs := range ts.vhosts {
				joined = append(joined, vs.field...)
				if !within(vs.field, sent) {
					t.Fatalf("step %d: table %s: virtual host %s's bytes are a copy of the table's", step, name, vs.name)
				}
				if step > 0 && !vs.wire {
					t.Fatalf("step %d: table %s: virtual host %s is not a wire form after adoption", step, name, vs.name)
				}
				if u := ts.messages[i].ProtoReflect().GetUnknown(); vs.wire && (!within(u, sent) || !bytes.HasSuffix(vs.field, u)) {
					t.Fatalf("step %d: table %s: the wire form of virtual host %s holds bytes of its own", step, name, vs.name)
				}
			}
			if !bytes.Equal(joined, sent) {
				t.Fatalf("step %d: table %s: its virtual hosts' bytes are not the table's", step, name)
			}
		}
		for table, hosts := range m.tables {
			sent := c.tables[table].wire.ProtoReflect().GetUnknown()
			for _, e := range hosts {
				if u := e.vh.ProtoReflect().GetUnknown(); len(u) == 0 || !within(u, sent) {
					t.Fatalf("step %d: the memo's virtual host %s of %s holds bytes apart from its table's", step, e.name, table)
				}
			}
		}
	}
}

// TestCheckerKnowsAClusterByItsWireFormAlone: a checked cluster's digest
// is kept once, under its wire form, not under the message as well; the
// message is still recognised (not serialized again) until the memo
// adopts the wire form, after which the checker holds no message for it.
func TestCheckerKnowsAClusterByItsWireFormAlone(t *testing.T) {
	gw := propertyBase(20)
	var m Memo
	var c Checker
	res, err := m.Translate(gw)
	if err != nil {
		t.Fatal(err)
	}
	clusters := slices.Clone(res.Clusters)
	if err := c.Check(res); err != nil {
		t.Fatal(err)
	}
	others := len(res.Listeners) + len(res.Secrets)
	if len(c.known) > len(clusters)+others {
		t.Fatalf("the checker knows %d digests for %d clusters and %d other resources", len(c.known), len(clusters), others)
	}
	for i, cl := range clusters {
		d, ok := c.Digest(cl)
		if !ok {
			t.Fatalf("cluster %s: the message's digest is not known", cl.GetName())
		}
		if w, ok := c.Digest(res.Clusters[i]); !ok || w != d {
			t.Fatalf("cluster %s: the message and its wire form have other digests", cl.GetName())
		}
		want, err := DigestOf(cl)
		if err != nil || want != d {
			t.Fatalf("cluster %s: digest %x, want %x (%v)", cl.GetName(), d, want, err)
		}
		// Seen again before adoption: known, not serialized again.
		e := &checkRun{c: &c}
		encoded := c.Encoded
		if got, err := e.digest(cl); err != nil || got != d || c.Encoded != encoded {
			t.Fatalf("cluster %s: seen again, serialized again (%v)", cl.GetName(), err)
		}
	}
	m.adopt(&c)
	if len(c.wire) != 0 {
		t.Fatalf("after adoption the checker holds %d messages' wire forms", len(c.wire))
	}
	for _, cl := range clusters {
		if _, ok := c.Digest(cl); ok {
			t.Fatalf("after adoption the checker still knows the message of cluster %s", cl.GetName())
		}
	}
}
