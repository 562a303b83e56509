package manager

import (
	"net/http"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shardgate/shardgate/internal/metricsauth"
)

// DefaultPprofAddress is where --enable-profiling serves pprof when no
// pprof address is given: loopback only, since profiles are not
// authenticated.
const DefaultPprofAddress = "127.0.0.1:8082"

// metricsOptions is the metrics server: HTTPS with an authentication and
// authorization filter (TokenReview, then a SubjectAccessReview of the
// request path, both cached briefly: internal/metricsauth), as
// kubebuilder's default, or plain HTTP when MetricsInsecure asks for it.
func (p *process) metricsOptions() metricsserver.Options {
	o := metricsserver.Options{BindAddress: p.cfg.MetricsAddress, ExtraHandlers: p.metricsHandlers()}
	if p.opts.MetricsInsecure {
		return o
	}
	o.SecureServing = true
	o.FilterProvider = metricsauth.Provider(metricsauth.Options{})
	if p.opts.MetricsCertDir != "" {
		o.CertDir = p.opts.MetricsCertDir
	}
	return o
}

// pprofAddress is controller-runtime's PprofBindAddress: PprofAddress, or
// DefaultPprofAddress under EnableProfiling, or "0" (off).
func (p *process) pprofAddress() string {
	switch {
	case p.opts.PprofAddress != "":
		return p.opts.PprofAddress
	case p.opts.EnableProfiling:
		return DefaultPprofAddress
	default:
		return "0"
	}
}

// ConfigDumpPath serves `shardgate config dump`: the xDS resources of one
// Gateway at ConfigDumpPath/<namespace>/<name>, on the metrics server.
const ConfigDumpPath = "/debug/config_dump"

func (p *process) configDumpHandler() http.Handler { return p.xds.ConfigDumpHandler(ConfigDumpPath) }
