package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	hostnameClaims = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardgate_hostname_claims",
		Help: "Hostname claims by state: reserved, withheld (Withheld, TransferredAway) or refused (Blocked, HostnameInUse, InvalidHostname).",
	}, []string{"state"})
	hostnameRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardgate_hostname_refusals_total",
		Help: "Hostname claims that became refused, by reason.",
	}, []string{"reason"})

	certificateQueue = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shardgate_certificates_queued",
		Help: "Names waiting for their Certificate to be written: under a rate limit (Queued) or backing off after a failure (Backoff).",
	})
	certificatesCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shardgate_certificates_created_total",
		Help: "Certificates written for names held on shards with automatic HTTPS.",
	})
	certificatesFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shardgate_certificates_failed_total",
		Help: "Certificates whose issuance failed (deleted, to be written again after a backoff).",
	})
	certificatesRevoked = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shardgate_certificates_revoked_total",
		Help: "Certificates deleted, with their Secrets, because their name is no longer held on a shard with automatic HTTPS.",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(hostnameClaims, hostnameRefusals,
		certificateQueue, certificatesCreated, certificatesFailed, certificatesRevoked)
}
