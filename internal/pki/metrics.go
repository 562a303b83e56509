package pki

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// caExpiry is the NotAfter of the xDS CA last loaded from its Secret (at
// start and at every load of ServerSource, so a replaced CA shows at once).
// Absent until a CA is loaded, and when the xDS TLS files of the config are
// used instead of the CA Secret.
var caExpiry = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "shardgate_xds_ca_expiry_timestamp_seconds",
	Help: "When the xDS CA certificate (the CA Secret's tls.crt) expires, in seconds since the epoch.",
})

// caExpirySet: a CA was loaded.
var caExpirySet atomic.Bool

func init() { ctrlmetrics.Registry.MustRegister(caExpiryCollector{}) }

// caExpiryCollector exports caExpiry only once a CA was loaded: a 0 would
// read as a CA expired in 1970.
type caExpiryCollector struct{}

func (caExpiryCollector) Describe(ch chan<- *prometheus.Desc) { caExpiry.Describe(ch) }

func (caExpiryCollector) Collect(ch chan<- prometheus.Metric) {
	if caExpirySet.Load() {
		caExpiry.Collect(ch)
	}
}

// observeCA records ca's expiry.
func observeCA(ca *CA) {
	caExpiry.Set(float64(ca.NotAfter().Unix()))
	caExpirySet.Store(true)
}

// NotAfter is when the CA certificate expires.
func (ca *CA) NotAfter() time.Time { return ca.cert.NotAfter }
