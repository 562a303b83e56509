package server

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// assignments is one node group's load assignments, served to state-of-
// the-world and delta EDS watches. It answers as go-control-plane's
// LinearCache does (the same responses, versions and watch semantics), but
// a change costs what it changes: an update looks only at the names it
// changed in each open watch, and a watch is kept in one set, not under
// each of the (thousands of) names it asks for. What is left in proportion
// to the names a client asks for is what the protocol brings: a new watch
// compares the client's known version of each (one request names them
// all), and a response hands the server the client's new known versions.
type assignments struct {
	prefix string

	mu      sync.Mutex
	updates uint64    // the version is prefix + updates
	at      time.Time // when updates last changed
	res     map[string]*assignment
	sotw    map[*sotwWatch]struct{}
	delta   map[*deltaWatch]struct{}
}

// assignment is one load assignment, with the cache version it was set at
// (state-of-the-world clients are sent that) and its serialization, made
// once for all clients when it is set, and its content hash (delta
// clients' resource version), made when first asked for. The serialization
// is all that is kept of it: the message, many times its size, goes once
// serialized (message makes a view of it again for the few readers of
// messages: the config dump, debugging, a two-phase publish).
type assignment struct {
	name    string
	version string
	bytes   []byte
	// err says why it could not be serialized; msg is then the message,
	// kept for message readers.
	err error
	msg *endpointv3.ClusterLoadAssignment

	once sync.Once
	hash string
}

// newAssignment serializes msg, set at version.
func newAssignment(msg *endpointv3.ClusterLoadAssignment, version string) *assignment {
	r := &assignment{name: msg.GetClusterName(), version: version}
	b, err := cachev3.MarshalResource(msg)
	if err != nil {
		r.err = fmt.Errorf("serialize load assignment %s: %w", r.name, err)
		r.msg = msg
		return r
	}
	r.bytes = b
	return r
}

// wire is the load assignment's serialization and its hex SHA-256 (the
// version go-control-plane gives a delta resource).
func (r *assignment) wire() ([]byte, string, error) {
	if r.err != nil {
		return nil, "", r.err
	}
	r.once.Do(func() { r.hash = cachev3.HashResource(r.bytes) })
	return r.bytes, r.hash, nil
}

// message is the load assignment as a message: a wire form, its cluster
// name as its one field and the rest of its serialization as unknown
// fields, sharing the bytes (serializing it writes them again; readers
// that look inside decode it, as translate.Decode does), or the message
// decoded when its serialization does not start with its name.
func (r *assignment) message() *endpointv3.ClusterLoadAssignment {
	if r.msg != nil {
		return r.msg
	}
	head := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), r.name)
	if r.name != "" && bytes.HasPrefix(r.bytes, head) {
		w := &endpointv3.ClusterLoadAssignment{ClusterName: r.name}
		rest := r.bytes[len(head):]
		w.ProtoReflect().SetUnknown(protoreflect.RawFields(rest[:len(rest):len(rest)]))
		return w
	}
	out := &endpointv3.ClusterLoadAssignment{}
	if err := proto.Unmarshal(r.bytes, out); err != nil {
		return &endpointv3.ClusterLoadAssignment{ClusterName: r.name}
	}
	return out
}

type sotwWatch struct {
	req *cachev3.Request
	sub cachev3.Subscription
	out chan cachev3.Response
	// forgotten: known names whose load assignment went while the
	// watch was open (state of the world cannot say so; the client's
	// known versions drop them with the next response).
	forgotten []string
}

type deltaWatch struct {
	req *cachev3.DeltaRequest
	sub cachev3.Subscription
	out chan cachev3.DeltaResponse
}

func newAssignments(prefix string) *assignments {
	return &assignments{prefix: prefix, res: map[string]*assignment{},
		sotw: map[*sotwWatch]struct{}{}, delta: map[*deltaWatch]struct{}{}}
}

func (a *assignments) version() string { return a.prefix + strconv.FormatUint(a.updates, 10) }

// current lists the load assignments, sorted by cluster name, and their
// version.
func (a *assignments) current() ([]*endpointv3.ClusterLoadAssignment, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := make([]*endpointv3.ClusterLoadAssignment, 0, len(a.res))
	for _, r := range a.res {
		list = append(list, r.message())
	}
	slices.SortFunc(list, func(x, y *endpointv3.ClusterLoadAssignment) int {
		return strings.Compare(x.GetClusterName(), y.GetClusterName())
	})
	return list, a.version()
}

// versionAt is the version and when it was set.
func (a *assignments) versionAt() (string, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version(), a.at
}

func (a *assignments) watches() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sotw) + len(a.delta)
}

// put sets the load assignments of list's clusters, replacing those of
// the same names, and answers the watches they concern.
func (a *assignments) put(list []*endpointv3.ClusterLoadAssignment) {
	if len(list) == 0 {
		return
	}
	// Serialized before the lock; the version is set under it.
	set := make([]*assignment, len(list))
	for i, r := range list {
		set[i] = newAssignment(r, "")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.updates++
	a.at = time.Now()
	v := a.version()
	names := make([]string, len(list))
	for i, r := range set {
		r.version = v
		names[i] = r.name
		a.res[names[i]] = r
	}
	a.notify(names)
}

// remove takes away the load assignments of names.
func (a *assignments) remove(names []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var gone []string
	for _, name := range names {
		if _, ok := a.res[name]; ok {
			delete(a.res, name)
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return
	}
	a.updates++
	a.at = time.Now()
	a.notify(gone)
}

// removeAll removes every load assignment, at once.
func (a *assignments) removeAll() {
	a.mu.Lock()
	names := make([]string, 0, len(a.res))
	for name := range a.res {
		names = append(names, name)
	}
	a.mu.Unlock()
	a.remove(names)
}

// versionOf is the version a client holding a load assignment holds it at:
// the cache version it was set at for state of the world (sotwVersion), its
// content hash for delta (deltaVersion).
type versionOf func(*assignment) (string, error)

func sotwVersion(r *assignment) (string, error) { return r.version, nil }

func deltaVersion(r *assignment) (string, error) {
	_, v, err := r.wire()
	return v, err
}

// stale is what a client lacks of the names looked at: changed, the load
// assignments it does not hold at their version; gone, those it holds that
// are gone (or that it no longer asks for).
type stale struct{ changed, gone []string }

func (s *stale) add(name string, r *assignment, known map[string]string, version versionOf) {
	k, isKnown := known[name]
	if r == nil {
		if isKnown {
			s.gone = append(s.gone, name)
		}
		return
	}
	if v, err := version(r); err != nil || k != v {
		s.changed = append(s.changed, name)
	}
}

// staleOf is what sub's client lacks of names, among those it asks for.
func (a *assignments) staleOf(sub cachev3.Subscription, names []string, version versionOf) stale {
	known, subscribed, wildcard := sub.ReturnedResources(), sub.SubscribedResources(), sub.IsWildcard()
	var s stale
	for _, name := range names {
		if _, ok := subscribed[name]; !wildcard && !ok {
			continue
		}
		s.add(name, a.res[name], known, version)
	}
	return s
}

// staleAll is what sub's client lacks of everything it asks for; the
// names it knows and no longer asks for (or, for a wildcard subscription,
// that are gone) count as gone.
func (a *assignments) staleAll(sub cachev3.Subscription, version versionOf) stale {
	known := sub.ReturnedResources()
	var s stale
	seen := 0 // known names asked for
	a.each(sub, func(name string, r *assignment) {
		if _, ok := known[name]; ok {
			seen++
		}
		s.add(name, r, known, version)
	})
	if seen < len(known) {
		for name := range known {
			if _, ok := sub.SubscribedResources()[name]; !sub.IsWildcard() && !ok || sub.IsWildcard() && a.res[name] == nil {
				s.gone = append(s.gone, name)
			}
		}
	}
	return s
}

// notify answers the open watches the modified names concern. Call with
// a.mu held. A watch is open only while nothing it asks for has changed
// since it opened (else it was answered at once), so the modified names are
// all it can be sent.
func (a *assignments) notify(modified []string) {
	for w := range a.sotw {
		s := a.staleOf(w.sub, modified, sotwVersion)
		// State of the world cannot say a load assignment went: the
		// client's known versions drop it with the next response.
		w.forgotten = append(w.forgotten, s.gone...)
		if len(s.changed) == 0 {
			continue
		}
		delete(a.sotw, w)
		w.out <- a.sotwResponse(w, s.changed, w.forgotten)
	}
	for w := range a.delta {
		s := a.staleOf(w.sub, modified, deltaVersion)
		if len(s.changed) == 0 && len(s.gone) == 0 {
			continue
		}
		delete(a.delta, w)
		w.out <- a.deltaResponse(w, s.changed, s.gone)
	}
}

// createWatch answers a state-of-the-world request at once when the client
// lacks a load assignment it asks for (or has no version of this cache:
// its first request, or one from another process), and else keeps the
// watch open until one changes. Known names that are gone or no longer
// asked for are forgotten, so that they are sent again once back.
func (a *assignments) createWatch(req *cachev3.Request, sub cachev3.Subscription, out chan cachev3.Response) func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := &sotwWatch{req: req, sub: sub, out: out}
	replyEvenIfEmpty := req.GetVersionInfo() == "" || !strings.HasPrefix(req.GetVersionInfo(), a.prefix)
	s := a.staleAll(sub, sotwVersion)
	if len(s.changed) > 0 || replyEvenIfEmpty {
		out <- a.sotwResponse(w, s.changed, s.gone)
		return func() {}
	}
	w.forgotten = s.gone
	a.sotw[w] = struct{}{}
	return func() {
		a.mu.Lock()
		delete(a.sotw, w)
		a.mu.Unlock()
	}
}

// createDeltaWatch answers a delta request at once when the client lacks a
// load assignment it asks for or holds one that is gone or no longer asked
// for (or it opens a wildcard subscription), and else keeps the watch open
// until one changes.
func (a *assignments) createDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := &deltaWatch{req: req, sub: sub, out: out}
	replyEvenIfEmpty := sub.IsWildcard() && req.GetResponseNonce() == ""
	s := a.staleAll(sub, deltaVersion)
	if len(s.changed) > 0 || len(s.gone) > 0 || replyEvenIfEmpty {
		out <- a.deltaResponse(w, s.changed, s.gone)
		return func() {}
	}
	a.delta[w] = struct{}{}
	return func() {
		a.mu.Lock()
		delete(a.delta, w)
		a.mu.Unlock()
	}
}

// each calls f for every name sub asks for (every load assignment for a
// wildcard subscription), with its load assignment or nil.
func (a *assignments) each(sub cachev3.Subscription, f func(string, *assignment)) {
	if sub.IsWildcard() {
		for name, r := range a.res {
			f(name, r)
		}
		return
	}
	for name := range sub.SubscribedResources() {
		f(name, a.res[name])
	}
}

// answer is changed's load assignments and the client's known versions
// after a response with them: its earlier ones, without gone, with changed
// at their version. Call with a.mu held.
func (a *assignments) answer(sub cachev3.Subscription, changed, gone []string, version versionOf) ([]*assignment, map[string]string) {
	known := maps.Clone(sub.ReturnedResources())
	if known == nil {
		known = map[string]string{}
	}
	for _, name := range gone {
		delete(known, name)
	}
	res := make([]*assignment, len(changed))
	for i, name := range changed {
		res[i] = a.res[name]
		v, err := version(res[i])
		if err != nil {
			v = "" // the response fails to build, and says why
		}
		known[name] = v
	}
	return res, known
}

// sotwResponse sends changed; forgotten names leave the client's known
// versions. Call with a.mu held.
func (a *assignments) sotwResponse(w *sotwWatch, changed, forgotten []string) *eDSResponse {
	res, known := a.answer(w.sub, changed, forgotten, sotwVersion)
	return &eDSResponse{req: w.req, version: a.version(), res: res, known: known}
}

// deltaResponse sends changed and removed. Call with a.mu held.
func (a *assignments) deltaResponse(w *deltaWatch, changed, removed []string) *deltaEDSResponse {
	res, known := a.answer(w.sub, changed, removed, deltaVersion)
	return &deltaEDSResponse{req: w.req, version: a.version(), res: res, removed: removed, known: known}
}

// eDSResponse is a state-of-the-world EDS response.
type eDSResponse struct {
	req     *cachev3.Request
	version string
	res     []*assignment
	known   map[string]string
	once    sync.Once
	out     *discovery.DiscoveryResponse
	err     error
}

func (r *eDSResponse) GetDiscoveryResponse() (*discovery.DiscoveryResponse, error) {
	r.once.Do(func() {
		out := &discovery.DiscoveryResponse{VersionInfo: r.version, TypeUrl: resourcev3.EndpointType, Resources: make([]*anypb.Any, 0, len(r.res))}
		for _, e := range r.res {
			b, _, err := e.wire()
			if err != nil {
				r.err = err
				return
			}
			out.Resources = append(out.Resources, &anypb.Any{TypeUrl: resourcev3.EndpointType, Value: b})
		}
		r.out = out
	})
	return r.out, r.err
}

func (r *eDSResponse) GetRequest() *discovery.DiscoveryRequest { return r.req }
func (r *eDSResponse) GetVersion() (string, error)             { return r.version, nil }
func (r *eDSResponse) GetResponseVersion() string              { return r.version }
func (r *eDSResponse) GetReturnedResources() map[string]string { return r.known }
func (r *eDSResponse) GetContext() context.Context             { return context.Background() }

// deltaEDSResponse is a delta EDS response.
type deltaEDSResponse struct {
	req     *cachev3.DeltaRequest
	version string
	res     []*assignment
	removed []string
	known   map[string]string
	once    sync.Once
	out     *discovery.DeltaDiscoveryResponse
	err     error
}

func (r *deltaEDSResponse) GetDeltaDiscoveryResponse() (*discovery.DeltaDiscoveryResponse, error) {
	r.once.Do(func() {
		out := &discovery.DeltaDiscoveryResponse{SystemVersionInfo: r.version, TypeUrl: resourcev3.EndpointType,
			RemovedResources: r.removed, Resources: make([]*discovery.Resource, 0, len(r.res))}
		for _, e := range r.res {
			b, v, err := e.wire()
			if err != nil {
				r.err = err
				return
			}
			out.Resources = append(out.Resources, &discovery.Resource{Name: e.name, Version: v,
				Resource: &anypb.Any{TypeUrl: resourcev3.EndpointType, Value: b}})
		}
		r.out = out
	})
	return r.out, r.err
}

func (r *deltaEDSResponse) GetDeltaRequest() *discovery.DeltaDiscoveryRequest { return r.req }
func (r *deltaEDSResponse) GetSystemVersion() (string, error)                 { return r.version, nil }
func (r *deltaEDSResponse) GetResponseVersion() string                        { return r.version }
func (r *deltaEDSResponse) GetNextVersionMap() map[string]string              { return r.known }
func (r *deltaEDSResponse) GetReturnedResources() map[string]string           { return r.known }
func (r *deltaEDSResponse) GetContext() context.Context                       { return context.Background() }
