package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Limits bound what one xDS client may make the server hold. A Gateway's
// client certificate is handed to its tenant's Envoys, so a tenant may open
// any stream that certificate allows: without bounds, one certificate holds
// any number of streams (each with its goroutines and watches) and each
// stream any number of subscribed names.
//
// A zero field takes its default (DefaultLimits); config keys
// xds.limits.*.
type Limits struct {
	// StreamsPerIdentity bounds the concurrent ADS streams (state of the
	// world and delta together) of one identity: the Gateway its client
	// certificates name, over every certificate and connection to this
	// server. An Envoy opens one ADS stream; replicas and restarts overlap.
	StreamsPerIdentity int
	// StreamsPerCertificate bounds the concurrent ADS streams of one
	// client certificate (by its SHA-256), over every connection to this
	// server. Every replica of a Gateway mounts the same certificate
	// Secret; a re-issued certificate is another certificate of the same
	// identity.
	StreamsPerCertificate int
	// ResourceNamesPerStream bounds the resource names one stream
	// subscribes to, over every resource type. A stream that asks for
	// more is ended with ResourceExhausted; the names are never kept.
	ResourceNamesPerStream int
	// MaxRequestBytes bounds one request message (gRPC's
	// MaxRecvMsgSize). A larger request ends its stream with
	// ResourceExhausted.
	MaxRequestBytes int
}

// Defaults of Limits.
//
// StreamsPerCertificate (64): an Envoy keeps one ADS stream, and every
// replica of a Gateway mounts the Gateway's one certificate Secret, so this
// is the bound on a Gateway's Envoys: a Gateway of 32 replicas in a rolling
// restart (old and new pods overlapping, reconnecting) stays under it. A
// tenant cannot mint certificates, so it is also the bound on what one
// tenant's Envoys, or one leaked certificate, can hold.
//
// StreamsPerIdentity (128): the certificates of one Gateway together, which
// are more than one only after a re-issue, while pods with the old and the
// new certificate overlap: two certificates' worth.
//
// ResourceNamesPerStream (40,000): a legitimate Envoy subscribes by name
// only to load assignments (one per cluster), route configurations (one per
// HTTP listener) and Secrets (one per certificate); listeners and clusters
// are wildcards (no names). A 10k-route shard with a Service per route and
// a certificate per name subscribes about 10k + 10k + a few names; 40,000
// is twice that.
//
// MaxRequestBytes (2 MiB): an Envoy's requests are its node (a few KiB
// with its extension list) and names; the largest is a delta reconnect
// carrying initial_resource_versions for every load assignment: 10k
// clusters × about 100 bytes (a lease namespace is 45 characters, a version
// a hash) is about 1 MiB. gRPC's default, 4 MiB, lets one message carry
// about 110k names.
const (
	DefaultStreamsPerIdentity     = 128
	DefaultStreamsPerCertificate  = 64
	DefaultResourceNamesPerStream = 40000
	DefaultMaxRequestBytes        = 2 << 20
)

// DefaultLimits are the limits a zero Limits takes.
func DefaultLimits() Limits {
	return Limits{
		StreamsPerIdentity:     DefaultStreamsPerIdentity,
		StreamsPerCertificate:  DefaultStreamsPerCertificate,
		ResourceNamesPerStream: DefaultResourceNamesPerStream,
		MaxRequestBytes:        DefaultMaxRequestBytes,
	}
}

// withDefaults fills zero (or negative) fields with their defaults.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.StreamsPerIdentity <= 0 {
		l.StreamsPerIdentity = d.StreamsPerIdentity
	}
	if l.StreamsPerCertificate <= 0 {
		l.StreamsPerCertificate = d.StreamsPerCertificate
	}
	if l.ResourceNamesPerStream <= 0 {
		l.ResourceNamesPerStream = d.ResourceNamesPerStream
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = d.MaxRequestBytes
	}
	return l
}

// Reasons of shardgate_xds_limit_refusals_total.
const (
	limitStreamsPerIdentity    = "streams_per_identity"
	limitStreamsPerCertificate = "streams_per_certificate"
	limitResourceNames         = "resource_names_per_stream"
	limitRequestBytes          = "max_request_bytes"
)

// streamLimiter counts the open streams of every identity and certificate.
type streamLimiter struct {
	limits Limits
	log    logr.Logger

	mu      sync.Mutex
	open    map[string]int // "id:" + identity, "cert:" + certificate hash
	logged  map[string]time.Time
	logTime func() time.Time
}

func newStreamLimiter(l Limits, log logr.Logger) *streamLimiter {
	return &streamLimiter{limits: l, log: log, open: map[string]int{}, logged: map[string]time.Time{}, logTime: time.Now}
}

// logEvery is how often a limit hit by one client is logged again.
const logEvery = time.Minute

// logHit logs a refusal: once per reason and client per logEvery, so that
// a client hammering a limit costs one line a minute.
func (l *streamLimiter) logHit(reason, client, msg string, kv ...any) {
	key := reason + "\x00" + client
	now := l.logTime()
	l.mu.Lock()
	last, seen := l.logged[key]
	if !seen || now.Sub(last) >= logEvery {
		l.logged[key] = now
	} else {
		l.mu.Unlock()
		return
	}
	// Forget stale entries, so the map holds only recent clients.
	for k, t := range l.logged {
		if now.Sub(t) >= logEvery {
			delete(l.logged, k)
		}
	}
	l.mu.Unlock()
	l.log.Info(msg, append([]any{"limit", reason}, kv...)...)
}

// peerCertificate is the identity (the node group its certificate names,
// or "") and the SHA-256 of the verified client certificate of ctx's
// connection; ok is false without one.
func peerCertificate(ctx context.Context) (identity, cert string, ok bool) {
	p, found := peer.FromContext(ctx)
	if !found {
		return "", "", false
	}
	ti, isTLS := p.AuthInfo.(credentials.TLSInfo)
	if !isTLS || len(ti.State.VerifiedChains) == 0 || len(ti.State.PeerCertificates) == 0 {
		return "", "", false
	}
	sum := sha256.Sum256(ti.State.PeerCertificates[0].Raw)
	identity, _ = peerGateway(ctx)
	return identity, hex.EncodeToString(sum[:]), true
}

// acquire takes a stream slot for the identity and the certificate of
// ctx's connection, or refuses with ResourceExhausted. release gives the
// slot back. A stream with no verified certificate takes no slot: it is
// refused when it opens (identity.go).
func (l *streamLimiter) acquire(ctx context.Context) (release func(), err error) {
	identity, cert, ok := peerCertificate(ctx)
	if !ok {
		return func() {}, nil
	}
	idKey, certKey := "id:"+identity, "cert:"+cert
	l.mu.Lock()
	var reason string
	switch {
	case identity != "" && l.open[idKey] >= l.limits.StreamsPerIdentity:
		reason = limitStreamsPerIdentity
	case l.open[certKey] >= l.limits.StreamsPerCertificate:
		reason = limitStreamsPerCertificate
	}
	if reason == "" {
		if identity != "" {
			l.open[idKey]++
		}
		l.open[certKey]++
	}
	idOpen, certOpen := l.open[idKey], l.open[certKey]
	l.mu.Unlock()
	if reason != "" {
		limitRefusals.WithLabelValues(reason).Inc()
		if reason == limitStreamsPerIdentity {
			l.logHit(reason, idKey, "xDS stream refused: too many concurrent streams for this Gateway's certificates",
				"identity", identity, "open", idOpen, "max", l.limits.StreamsPerIdentity)
			return nil, status.Errorf(codes.ResourceExhausted, "xds: Gateway %s already has %d concurrent streams (xds.limits.streamsPerIdentity)", identity, l.limits.StreamsPerIdentity)
		}
		l.logHit(reason, certKey, "xDS stream refused: too many concurrent streams for one client certificate",
			"identity", identity, "certificateSHA256", cert, "open", certOpen, "max", l.limits.StreamsPerCertificate)
		return nil, status.Errorf(codes.ResourceExhausted, "xds: this client certificate already has %d concurrent streams (xds.limits.streamsPerCertificate)", l.limits.StreamsPerCertificate)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, k := range []string{idKey, certKey} {
				if k == "id:" {
					continue
				}
				if l.open[k]--; l.open[k] <= 0 {
					delete(l.open, k)
				}
			}
		})
	}, nil
}

// size is how many identities and certificates hold slots.
func (l *streamLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// streamInterceptor enforces the stream limits before go-control-plane
// sees a stream (a refused stream gets no stream ID, goroutine or watch),
// and counts and logs a request over MaxRequestBytes: gRPC refuses the
// message and ends the stream itself with ResourceExhausted ("received
// message larger than max"); the status returned here is for the case
// where it has not.
func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	release, err := s.limiter.acquire(ss.Context())
	if err != nil {
		return err
	}
	defer release()
	w := &sizedStream{ServerStream: ss}
	herr := handler(srv, w)
	if w.tooLarge != nil {
		identity, _, _ := peerCertificate(ss.Context())
		limitRefusals.WithLabelValues(limitRequestBytes).Inc()
		s.limiter.logHit(limitRequestBytes, "id:"+identity, "xDS stream ended: a request exceeded the size limit",
			"identity", identity, "max", s.limits.MaxRequestBytes, "error", w.tooLarge.Error())
		return status.Errorf(codes.ResourceExhausted, "xds: request larger than %d bytes (xds.limits.maxRequestBytes): %v", s.limits.MaxRequestBytes, status.Convert(w.tooLarge).Message())
	}
	return herr
}

// sizedStream records a request refused by gRPC for its size.
type sizedStream struct {
	grpc.ServerStream
	tooLarge error
}

func (w *sizedStream) RecvMsg(m any) error {
	err := w.ServerStream.RecvMsg(m)
	if err != nil && status.Code(err) == codes.ResourceExhausted && w.tooLarge == nil {
		w.tooLarge = err
	}
	return err
}

// subscriptions is what one stream subscribes to, by type: the names of a
// delta stream (subscribe and unsubscribe change them), and the number of
// names of a state-of-the-world stream's latest request of each type
// (each request replaces the last).
type subscriptions struct {
	delta map[string]map[string]struct{}
	sotw  map[string]int
	total int
}

// errTooManyNames refuses a stream that subscribes to more names than the
// limit.
func (s *Server) errTooManyNames(key streamKey, identity string, n int) error {
	limitRefusals.WithLabelValues(limitResourceNames).Inc()
	s.limiter.logHit(limitResourceNames, "id:"+identity, "xDS stream ended: it subscribed to too many resource names",
		"identity", identity, "delta", key.delta, "names", n, "max", s.limits.ResourceNamesPerStream)
	return status.Errorf(codes.ResourceExhausted, "xds: the stream subscribes to more than %d resource names (xds.limits.resourceNamesPerStream)", s.limits.ResourceNamesPerStream)
}

// streamSubs returns the stream's subscriptions and identity. Only the
// stream's own goroutine calls the request callbacks, so the caller may
// change them without the lock.
func (s *Server) streamSubs(key streamKey) (*subscriptions, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[key]
	if st == nil {
		return nil, ""
	}
	return &st.subs, st.identity
}

// countSotw applies a state-of-the-world request to its stream's count,
// refusing it when the stream would subscribe to more names than the limit.
func (s *Server) countSotw(key streamKey, req *discovery.DiscoveryRequest) error {
	subs, identity := s.streamSubs(key)
	if subs == nil {
		return nil
	}
	n := len(req.GetResourceNames())
	total := subs.total - subs.sotw[req.GetTypeUrl()] + n
	if total > s.limits.ResourceNamesPerStream {
		return s.errTooManyNames(key, identity, total)
	}
	if subs.sotw == nil {
		subs.sotw = map[string]int{}
	}
	subs.sotw[req.GetTypeUrl()] = n
	subs.total = total
	return nil
}

// countDelta applies a delta request's subscribe and unsubscribe lists
// (and a reconnect's initial_resource_versions, which subscribe too) to its
// stream's names, refusing it when the stream would subscribe to more
// names than the limit. A refused request's names are never kept: the
// stream ends before go-control-plane reads them.
func (s *Server) countDelta(key streamKey, req *discovery.DeltaDiscoveryRequest) error {
	subs, identity := s.streamSubs(key)
	if subs == nil {
		return nil
	}
	limit := s.limits.ResourceNamesPerStream
	// One request naming more than the limit is refused before any of
	// its names is looked at.
	if adds := len(req.GetResourceNamesSubscribe()) + len(req.GetInitialResourceVersions()); adds > limit {
		return s.errTooManyNames(key, identity, adds)
	}
	typ := req.GetTypeUrl()
	if subs.delta == nil {
		subs.delta = map[string]map[string]struct{}{}
	}
	names := subs.delta[typ]
	if names == nil {
		names = map[string]struct{}{}
		subs.delta[typ] = names
	}
	before := len(names)
	for _, n := range req.GetResourceNamesUnsubscribe() {
		delete(names, n)
	}
	add := func(n string) error {
		if _, ok := names[n]; ok {
			return nil
		}
		if subs.total-before+len(names) >= limit {
			return s.errTooManyNames(key, identity, subs.total-before+len(names)+1)
		}
		names[n] = struct{}{}
		return nil
	}
	for _, n := range req.GetResourceNamesSubscribe() {
		if err := add(n); err != nil {
			return err
		}
	}
	for n := range req.GetInitialResourceVersions() {
		if err := add(n); err != nil {
			return err
		}
	}
	subs.total += len(names) - before
	return nil
}
