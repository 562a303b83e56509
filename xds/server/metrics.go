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
	pushLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "shardgate_xds_push_latency_seconds",
		Help:    "From a snapshot being published to its first response being sent on a stream.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
	limitRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_xds_limit_refusals_total",
		Help: "xDS streams refused or ended by a limit (xds.limits), by reason: streams_per_identity, streams_per_certificate, resource_names_per_stream, max_request_bytes.",
	}, []string{"reason"})
	publishErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shardgate_xds_publish_refused_total",
		Help: "Gateway configs refused before publishing (translation or validation failed).",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(nacksTotal, pushesTotal, connectedProxies, pushLatency, publishErrors, limitRefusals)
	for _, r := range []string{limitStreamsPerIdentity, limitStreamsPerCertificate, limitResourceNames, limitRequestBytes} {
		limitRefusals.WithLabelValues(r) // exported at 0 from the start
	}
}
