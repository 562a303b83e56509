package config

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The config file's load outcome, named as Prometheus and Alertmanager name
// theirs so the usual alert applies:
// shardgate_config_last_reload_successful == 0 for some minutes. The names
// are a public contract (the chart's alert rule uses them).
var (
	lastReloadSuccessful = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shardgate_config_last_reload_successful",
		Help: "Whether the last load of the config file succeeded (1) or failed (0); after a failure the last good configuration stays in force.",
	})
	lastReloadSuccessTimestamp = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shardgate_config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful load of the config file, the initial one included.",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(lastReloadSuccessful, lastReloadSuccessTimestamp)
}

// recordLoad sets the load gauges after a load attempt.
func recordLoad(ok bool, at time.Time) {
	if !ok {
		lastReloadSuccessful.Set(0)
		return
	}
	lastReloadSuccessful.Set(1)
	lastReloadSuccessTimestamp.Set(float64(at.UnixNano()) / 1e9)
}

// RecordStaticLoad records a configuration that is not read from a file
// (the defaults and flags, without --config) as loaded successfully at
// start, so the load gauges say the configuration in force is good.
func RecordStaticLoad() { recordLoad(true, time.Now()) }
