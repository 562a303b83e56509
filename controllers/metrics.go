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
)

func init() {
	ctrlmetrics.Registry.MustRegister(hostnameClaims, hostnameRefusals)
}
