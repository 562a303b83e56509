package server

import (
	"crypto/tls"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/pki"
)

// Hostile-tenant tests of the xDS limits: tenant B holds a valid client
// certificate for its own Gateway and opens as many streams, and subscribes
// to as many names, as it likes. Without limits one certificate held 2000
// streams (goroutines 16 → 6036) and 16 streams of 110,000 names each grew
// the heap by 150 MiB.

func withLimits(l Limits) func(*Options) { return func(o *Options) { o.Limits = l } }

// refusals reads shardgate_xds_limit_refusals_total{reason}.
func refusals(reason string) float64 {
	var m dto.Metric
	_ = limitRefusals.WithLabelValues(reason).Write(&m)
	return m.GetCounter().GetValue()
}

// certConns dials n connections with one client certificate for gw.
func (e *identityEnv) certConns(t *testing.T, gw k8stypes.NamespacedName, n int) []*grpc.ClientConn {
	t.Helper()
	certPEM, keyPEM, err := e.ca.Issue("gateway:"+gw.String(), nil, []string{pki.GatewayURI(gw)}, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var out []*grpc.ClientConn
	for range n {
		cfg := &tls.Config{RootCAs: e.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		cc, err := grpc.NewClient("passthrough:///"+e.target, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		out = append(out, cc)
	}
	return out
}

// subscribed opens a delta stream on cc and subscribes to gw's clusters;
// it fails the test unless they are served, and ACKs them.
func subscribed(t *testing.T, cc *grpc.ClientConn, gw k8stypes.NamespacedName, id string) *rawStream {
	t.Helper()
	st := openDelta(t, cc)
	a := st.ask(node(id, gw), resourcev3.ClusterType)
	expectServed(t, id+"'s clusters", a)
	if err := st.delta.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResponseNonce: a.nonce}); err != nil {
		t.Fatalf("%s: ACK: %v", id, err)
	}
	return st
}

// expectExhausted checks that a stream was ended with ResourceExhausted
// and carried nothing.
func expectExhausted(t *testing.T, what string, a answer) {
	t.Helper()
	if len(a.resources) > 0 {
		t.Fatalf("%s: served %d resources, want ResourceExhausted", what, len(a.resources))
	}
	if c := status.Code(a.err); c != codes.ResourceExhausted {
		t.Fatalf("%s: got %v (%v), want ResourceExhausted", what, c, a.err)
	}
}

// nextPush waits for the next delta response on st and fails unless it
// changes something.
func nextPush(t *testing.T, st *rawStream, what string) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		resp, err := st.delta.Next(time.Minute)
		if err == nil && len(resp.Added)+len(resp.Removed) == 0 {
			err = fmt.Errorf("an empty response")
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no update within 20s", what)
	}
}

// B opens more streams than its Gateway may hold, over several
// connections and certificates: the extra ones are refused with
// ResourceExhausted, the first ones still get updates, A is untouched,
// and closing a stream frees a slot.
func TestLimitStreamsPerIdentity(t *testing.T) {
	const limit = 4
	var (
		logMu sync.Mutex
		lines []string
	)
	log := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	e := startIdentityServer(t, withLimits(Limits{StreamsPerIdentity: limit, StreamsPerCertificate: 100}), func(o *Options) { o.Log = log })
	before := refusals(limitStreamsPerIdentity)

	var first []*rawStream
	for i := range limit { // two certificates, two connections each
		cc := e.certConns(t, attackerGW, 1)[0]
		if i%2 == 1 {
			cc = e.conn(t, &attackerGW)
		}
		first = append(first, subscribed(t, cc, attackerGW, fmt.Sprintf("b-%d", i)))
	}
	const extra = 6
	for i := range extra {
		// A new connection with a new certificate for the same Gateway
		// counts against the same identity.
		expectExhausted(t, fmt.Sprintf("extra stream %d", i), openDelta(t, e.conn(t, &attackerGW)).ask(node("b-extra", attackerGW), resourcev3.ClusterType))
	}
	expectExhausted(t, "extra sotw stream", openSotw(t, e.conn(t, &attackerGW)).ask(node("b-extra", attackerGW), resourcev3.ListenerType))
	if got := refusals(limitStreamsPerIdentity) - before; got != extra+1 {
		t.Fatalf("shardgate_xds_limit_refusals_total{reason=%q} rose by %v, want %d", limitStreamsPerIdentity, got, extra+1)
	}
	// One log line for the 7 refusals, naming the Gateway and the limit.
	logMu.Lock()
	var hits []string
	for _, l := range lines {
		if strings.Contains(l, "too many concurrent streams") {
			hits = append(hits, l)
		}
	}
	logMu.Unlock()
	if len(hits) != 1 || !strings.Contains(hits[0], NodeGroup(attackerGW)) || !strings.Contains(hits[0], `"max"=4`) {
		t.Fatalf("log lines about the limit: %q, want one naming %s and max 4", hits, NodeGroup(attackerGW))
	}

	// Another Gateway's proxy is not affected by B's limit.
	subscribed(t, e.conn(t, &victimGW), victimGW, "envoy-a")

	// B's first streams were not disturbed: a new config reaches each.
	victim := gatewayIR(t, "https-single-server.in.yaml")
	victim.Namespace, victim.Name = victimGW.Namespace, victimGW.Name
	changed := gatewayIR(t, "multi-listener-gateway.in.yaml")
	changed.Namespace, changed.Name = attackerGW.Namespace, attackerGW.Name
	publishIR(e.srv, victim, changed)
	for i, st := range first {
		nextPush(t, st, fmt.Sprintf("B's stream %d after the refusals", i))
	}

	// Closing one stream frees one slot, and only one.
	open := connected()
	first[0].close()
	waitClosed(t, open)
	eventually(t, func() error {
		st := openDelta(t, e.conn(t, &attackerGW))
		a := st.ask(node("b-again", attackerGW), resourcev3.ClusterType)
		if a.err != nil {
			st.close()
			return fmt.Errorf("a stream after one was closed: %v", a.err)
		}
		return nil
	})
	expectExhausted(t, "a stream over the limit again", openDelta(t, e.conn(t, &attackerGW)).ask(node("b-extra", attackerGW), resourcev3.ClusterType))
}

// One certificate, used over several connections, holds at most
// StreamsPerCertificate streams; another certificate of the same Gateway
// still gets its own.
func TestLimitStreamsPerCertificate(t *testing.T) {
	const limit = 3
	e := startIdentityServer(t, withLimits(Limits{StreamsPerIdentity: 100, StreamsPerCertificate: limit}))
	before := refusals(limitStreamsPerCertificate)
	conns := e.certConns(t, attackerGW, 2)
	var first []*rawStream
	for i := range limit {
		first = append(first, subscribed(t, conns[i%2], attackerGW, fmt.Sprintf("b-%d", i)))
	}
	for i, cc := range conns {
		expectExhausted(t, fmt.Sprintf("extra stream on connection %d", i), openDelta(t, cc).ask(node("b-extra", attackerGW), resourcev3.ClusterType))
	}
	if got := refusals(limitStreamsPerCertificate) - before; got != 2 {
		t.Fatalf("refusals{reason=%q} rose by %v, want 2", limitStreamsPerCertificate, got)
	}
	subscribed(t, e.conn(t, &attackerGW), attackerGW, "b-other-certificate")

	changed := gatewayIR(t, "multi-listener-gateway.in.yaml")
	changed.Namespace, changed.Name = attackerGW.Namespace, attackerGW.Name
	victim := gatewayIR(t, "https-single-server.in.yaml")
	victim.Namespace, victim.Name = victimGW.Namespace, victimGW.Name
	publishIR(e.srv, victim, changed)
	for i, st := range first {
		nextPush(t, st, fmt.Sprintf("stream %d of the certificate", i))
	}
}

// names returns n distinct resource names of the length a lease
// namespace gives (about 70 bytes), starting at from.
func names(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("vb3l0q1c8p2m9g6a7uu2o0j2k3l4m5n6o7p8q9r0s1t2u/svc-%08d/http", from+i)
	}
	return out
}

// heapInUse is the live heap after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// 16 delta streams each subscribe 110,000 names in requests under the size
// limit: each is ended with ResourceExhausted once it passes
// ResourceNamesPerStream, and the heap does not keep the names.
func TestLimitResourceNamesPerStream(t *testing.T) {
	e := startIdentityServer(t) // the defaults
	limit := DefaultResourceNamesPerStream
	before := refusals(limitResourceNames)
	const streams, perStream, perRequest = 16, 110000, 11000
	heapBefore := heapInUse()

	var wg sync.WaitGroup
	results := make([]error, streams)
	cc := e.certConns(t, attackerGW, 1)[0]
	for i := range streams {
		st := openDelta(t, cc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ended := make(chan error, 1)
			go func() {
				<-st.delta.Done()
				ended <- st.delta.Err()
			}()
			for k := 0; k < perStream; k += perRequest {
				req := &discovery.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: names(i*perStream+k, perRequest)}
				if k == 0 {
					req.Node = node(fmt.Sprintf("b-%d", i), attackerGW)
				}
				if err := st.delta.Send(req); err != nil {
					break // the server ended the stream; Recv has the status
				}
			}
			select {
			case err := <-ended:
				results[i] = err
			case <-time.After(30 * time.Second):
				results[i] = fmt.Errorf("stream still open 30s after subscribing to %d names", perStream)
			}
			st.close()
		}()
	}
	wg.Wait()
	for i, err := range results {
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "resourceNamesPerStream") {
			t.Fatalf("stream %d: %v, want ResourceExhausted (resourceNamesPerStream)", i, err)
		}
	}
	if got := refusals(limitResourceNames) - before; got != streams {
		t.Fatalf("refusals{reason=%q} rose by %v, want %d", limitResourceNames, got, streams)
	}
	eventually(t, func() error {
		if st := e.srv.State(); st.Streams != 0 || st.LimitSlots != 0 {
			return fmt.Errorf("server state after every stream ended: %+v", st)
		}
		return nil
	})
	grown := int64(heapInUse()) - int64(heapBefore)
	t.Logf("heap grew by %.1f MiB with %d refused streams of %d names (limit %d)", float64(grown)/(1<<20), streams, perStream, limit)
	// Kept, the 1.76M names would be about 150 MiB; the bound leaves room
	// for the gRPC connection's buffers and the test's own garbage.
	if grown > 24<<20 {
		t.Fatalf("heap grew by %d MiB, want at most 24 MiB", grown>>20)
	}

	// Control: a stream at the limit is kept and served.
	st := subscribed(t, e.conn(t, &attackerGW), attackerGW, "b-at-limit")
	for k := 0; k < limit-1; k += perRequest { // requests under the size limit
		if err := st.delta.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: names(k, min(perRequest, limit-1-k))}); err != nil {
			t.Fatal(err)
		}
	}
	changed := gatewayIR(t, "multi-listener-gateway.in.yaml")
	changed.Namespace, changed.Name = attackerGW.Namespace, attackerGW.Name
	victim := gatewayIR(t, "https-single-server.in.yaml")
	victim.Namespace, victim.Name = victimGW.Namespace, victimGW.Name
	publishIR(e.srv, victim, changed)
	nextPush(t, st, "a stream subscribed to the limit (the wildcard and limit-1 names)")

	// One state-of-the-world request naming more than the limit (short
	// names, so that it stays under the size limit).
	short := make([]string, limit+1)
	for i := range short {
		short[i] = fmt.Sprint(i)
	}
	sotw := openSotw(t, e.conn(t, &attackerGW))
	expectExhausted(t, "sotw request over the limit", sotw.recv(sotw.sotw.Send(&discovery.DiscoveryRequest{
		Node: node("b-sotw", attackerGW), TypeUrl: resourcev3.EndpointType, ResourceNames: short})))
}

// A request over MaxRequestBytes ends its stream with ResourceExhausted,
// and the identity's other streams stay.
func TestLimitMaxRequestBytes(t *testing.T) {
	e := startIdentityServer(t, withLimits(Limits{MaxRequestBytes: 256 << 10}))
	before := refusals(limitRequestBytes)
	cc := e.conn(t, &attackerGW)
	keep := subscribed(t, cc, attackerGW, "b-keep")
	big := openDelta(t, cc)
	a := big.recv(big.delta.Send(&discovery.DeltaDiscoveryRequest{
		Node: node("b-big", attackerGW), TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: names(0, 5000)})) // about 350 KiB
	expectExhausted(t, "a 350 KiB request", a)
	if !strings.Contains(a.err.Error(), "larger than max") {
		t.Fatalf("the status does not say the request was too large: %v", a.err)
	}
	// gRPC ends the client's stream before the interceptor counts the
	// refusal: wait for the count, then make sure it is exactly one.
	eventually(t, func() error {
		if got := refusals(limitRequestBytes) - before; got != 1 {
			return fmt.Errorf("refusals{reason=%q} rose by %v, want 1", limitRequestBytes, got)
		}
		return nil
	})
	changed := gatewayIR(t, "multi-listener-gateway.in.yaml")
	changed.Namespace, changed.Name = attackerGW.Namespace, attackerGW.Name
	victim := gatewayIR(t, "https-single-server.in.yaml")
	victim.Namespace, victim.Name = victimGW.Namespace, victimGW.Name
	publishIR(e.srv, victim, changed)
	nextPush(t, keep, "the other stream of the connection")
}

// Limits default field by field.
func TestLimitsDefaults(t *testing.T) {
	got := Limits{StreamsPerCertificate: 5}.withDefaults()
	want := DefaultLimits()
	want.StreamsPerCertificate = 5
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// The config file's defaults are these.
	c := config.Default().XDS.Limits
	if cfg := (Limits{c.StreamsPerIdentity, c.StreamsPerCertificate, c.ResourceNamesPerStream, c.MaxRequestBytes}); cfg != DefaultLimits() {
		t.Fatalf("config defaults %+v differ from the server's %+v", cfg, DefaultLimits())
	}
}

// The name count follows what a stream subscribes to: duplicates and names
// already subscribed count once, unsubscribing frees room, unsubscribing
// names never subscribed frees none, a reconnect's initial versions count,
// and a state-of-the-world request replaces its type's names.
func TestLimitNamesCount(t *testing.T) {
	s := New(Options{Log: logr.Discard(), Limits: Limits{ResourceNamesPerStream: 10}})
	d, w := deltaStream(1), sotwStream(1)
	s.streams[d] = &streamState{identity: "ns/gw", group: "ns/gw"}
	s.streams[w] = &streamState{identity: "ns/gw", group: "ns/gw"}
	eds, cds := resourcev3.EndpointType, resourcev3.ClusterType
	n := func(from, count int) []string { return names(from, count) }
	steps := []struct {
		name string
		req  *discovery.DeltaDiscoveryRequest
		ok   bool
	}{
		{"6 names", &discovery.DeltaDiscoveryRequest{TypeUrl: eds, ResourceNamesSubscribe: n(0, 6)}, true},
		{"the same 6 again, and one twice", &discovery.DeltaDiscoveryRequest{TypeUrl: eds, ResourceNamesSubscribe: append(n(0, 6), n(0, 1)...)}, true},
		{"unsubscribing 20 names never subscribed frees nothing", &discovery.DeltaDiscoveryRequest{TypeUrl: eds, ResourceNamesUnsubscribe: n(100, 20)}, true},
		{"4 more of another type: 10 in all", &discovery.DeltaDiscoveryRequest{TypeUrl: cds, InitialResourceVersions: map[string]string{"a": "1", "b": "1", "c": "1", "d": "1"}}, true},
		{"an 11th", &discovery.DeltaDiscoveryRequest{TypeUrl: eds, ResourceNamesSubscribe: n(6, 1)}, false},
	}
	for _, st := range steps {
		if err := s.countDelta(d, st.req); (err == nil) != st.ok {
			t.Fatalf("%s: %v, want ok=%v", st.name, err, st.ok)
		}
	}
	// A refused stream ends; a fresh one that unsubscribes makes room.
	s.streams[deltaStream(2)] = &streamState{identity: "ns/gw", group: "ns/gw"}
	for i, req := range []*discovery.DeltaDiscoveryRequest{
		{TypeUrl: eds, ResourceNamesSubscribe: n(0, 10)},
		{TypeUrl: eds, ResourceNamesUnsubscribe: n(0, 5), ResourceNamesSubscribe: n(10, 5)},
	} {
		if err := s.countDelta(deltaStream(2), req); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := s.streams[deltaStream(2)].subs.total; got != 10 {
		t.Fatalf("total after unsubscribing 5 and subscribing 5: %d, want 10", got)
	}
	if err := s.countDelta(deltaStream(2), &discovery.DeltaDiscoveryRequest{TypeUrl: eds, ResourceNamesSubscribe: n(20, 11)}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("one request of 11 names: %v, want ResourceExhausted", err)
	}

	for i, st := range []struct {
		req *discovery.DiscoveryRequest
		ok  bool
	}{
		{&discovery.DiscoveryRequest{TypeUrl: eds, ResourceNames: n(0, 8)}, true},
		{&discovery.DiscoveryRequest{TypeUrl: eds, ResourceNames: n(0, 9)}, true}, // replaces the 8
		{&discovery.DiscoveryRequest{TypeUrl: cds, ResourceNames: n(0, 1)}, true},
		{&discovery.DiscoveryRequest{TypeUrl: cds, ResourceNames: n(0, 2)}, false},
	} {
		if err := s.countSotw(w, st.req); (err == nil) != st.ok {
			t.Fatalf("sotw request %d: %v, want ok=%v", i, err, st.ok)
		}
	}
}

// The reported attack at its scale, with the default limits: 2000 delta
// streams from one certificate over 4 connections. 64 are served; the
// rest end at once, and the goroutines they would have held (three or so
// per stream on the server) are not held.
func TestLimitTwoThousandStreamsFromOneCertificate(t *testing.T) {
	e := startIdentityServer(t)
	conns := e.certConns(t, attackerGW, 4)
	runtime.GC()
	goroutines0 := runtime.NumGoroutine()
	const attempts = 2000
	served, refused := 0, 0
	for i := range attempts {
		st := openDelta(t, conns[i%len(conns)])
		a := st.ask(node(fmt.Sprintf("b-%d", i), attackerGW), resourcev3.ClusterType)
		switch {
		case a.err == nil && len(a.resources) > 0:
			served++
		case status.Code(a.err) == codes.ResourceExhausted:
			refused++
			st.close()
		default:
			t.Fatalf("stream %d: %v (%d resources)", i, a.err, len(a.resources))
		}
	}
	if served != DefaultStreamsPerCertificate || refused != attempts-DefaultStreamsPerCertificate {
		t.Fatalf("served %d, refused %d; want %d and %d", served, refused, DefaultStreamsPerCertificate, attempts-DefaultStreamsPerCertificate)
	}
	if st := e.srv.State(); st.Streams != DefaultStreamsPerCertificate {
		t.Fatalf("the server tracks %d streams, want %d", st.Streams, DefaultStreamsPerCertificate)
	}
	// Client and server run in this process: the 64 live streams cost
	// both sides' goroutines; 1936 refused streams must cost none.
	var grown int
	eventually(t, func() error {
		grown = runtime.NumGoroutine() - goroutines0
		if limit := 12 * DefaultStreamsPerCertificate; grown > limit {
			return fmt.Errorf("goroutines grew by %d with %d streams open, want at most %d", grown, served, limit)
		}
		return nil
	})
	t.Logf("goroutines %d → %d with %d served and %d refused streams", goroutines0, goroutines0+grown, served, refused)
}
