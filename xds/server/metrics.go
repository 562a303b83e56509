package server

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	nacksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_xds_nacks_total",
		Help: "xDS responses rejected by a proxy, by type URL.",
	}, []string{"type_url"})
	pushesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_xds_pushes_total",
		Help: "xDS responses sent, by type URL.",
	}, []string{"type_url"})
	connectedProxies = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shardgate_xds_connected_proxies",
		Help: "Open xDS streams.",
	})
	// gatewayProxies: see exportGatewayProxies.
	gatewayProxies = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_xds_gateway_proxies",
		Help: "Open xDS streams bound to a Gateway by their client certificate, per Gateway the server serves (0: no proxy of that Gateway is connected to this replica); a series is removed when its Gateway is no longer served.",
	}, []string{"gateway_namespace", "gateway_name"})
	pushLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shardgate_xds_push_latency_seconds",
		Help:    "From a snapshot being published to its first response being sent on a stream.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
	limitRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_xds_limit_refusals_total",
		Help: "xDS streams refused or ended by a limit (xds.limits), by reason: streams_per_identity, streams_per_certificate, resource_names_per_stream, max_request_bytes.",
	}, []string{"reason"})
	// twoPhasePublishes: see finishTwoPhase (twophase.go).
	twoPhasePublishes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_xds_two_phase_publishes_total",
		Help: "Two-phase publishes (a new cluster before the route tables that use it, for proxyless gRPC clients) finished, by outcome: acknowledged (every proxyless client of the Gateway acknowledged phase one) or timeout (phase two went out after the wait bound).",
	}, []string{"outcome"})
	publishErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shardgate_xds_publish_refused_total",
		Help: "Gateway configs refused before publishing (translation or validation failed).",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(nacksTotal, pushesTotal, connectedProxies, gatewayProxies, pushLatency, publishErrors, limitRefusals, twoPhasePublishes)
	for _, o := range []string{twoPhaseAcknowledged, twoPhaseTimeout} {
		twoPhasePublishes.WithLabelValues(o)
	}
	for _, r := range []string{limitStreamsPerIdentity, limitStreamsPerCertificate, limitResourceNames, limitRequestBytes} {
		limitRefusals.WithLabelValues(r) // exported at 0 from the start
	}
}

// Streams per Gateway (shardgate_xds_gateway_proxies).
//
// A series exists for every Gateway the server serves (s.gateways: each
// Gateway the last Publish was given, its config accepted or not), from
// the moment it is first published, at 0 while none of its proxies is
// connected, so that a shard without a proxy is a series at 0 rather
// than a missing one; it is deleted when Publish no longer serves the
// Gateway. A stream counts for the Gateway its verified client
// certificate names (its identity, bound when it opens); a stream with no
// identity counts nowhere. Streams whose identity is a Gateway the server
// does not serve (a certificate of a deleted Gateway, or one not yet
// published) are counted in s.proxies but create no series: the number
// of series is the number of Gateways served, whatever certificates
// clients present. Their count shows once the Gateway is published.
//
// The labels are gateway_namespace and gateway_name, not namespace and
// name: a scraped label named namespace clashes with the target label
// the Prometheus Operator adds (the controller's own namespace), and
// Prometheus would rename it exported_namespace.
//
// The gauge is the process's, as the other metrics are: one Server per
// process exports it.

// exportGatewayProxies sets group's series to its open streams when the
// server serves group. Call with s.mu held, so that a series deleted by
// forgetGatewayProxies is not set again by a stream closing meanwhile.
func (s *Server) exportGatewayProxies(group string) {
	if s.gateways[group] == nil {
		return
	}
	nn, ok := parseGroup(group)
	if !ok {
		return
	}
	gatewayProxies.WithLabelValues(nn.Namespace, nn.Name).Set(float64(s.proxies[group]))
}

// forgetGatewayProxies deletes group's series. Call with s.mu held, once
// group is out of s.gateways.
func forgetGatewayProxies(group string) {
	if nn, ok := parseGroup(group); ok {
		gatewayProxies.DeleteLabelValues(nn.Namespace, nn.Name)
	}
}
