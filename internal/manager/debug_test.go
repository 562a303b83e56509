package manager

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/shardgate/shardgate/internal/config"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// /debug/xds names every Gateway's clusters and Secrets, and the metrics
// address has no authentication of its own: it is served only when the
// config (xds.debugEndpoint) or the flag turns it on.
func TestDebugXDSOffByDefault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config bool
		flag   *bool
		served bool
	}{
		{"default", false, nil, false},
		{"config on", true, nil, true},
		{"flag on", false, boolPtr(true), true},
		{"config on, flag off", true, boolPtr(false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.XDS.DebugEndpoint = tc.config
			applyOverrides(&cfg, Options{EnableDebugXDS: tc.flag})
			p := &process{cfg: cfg, xds: xdsserver.New(xdsserver.Options{Log: logr.Discard()})}
			h, ok := p.metricsHandlers()["/debug/xds"]
			if ok != tc.served {
				flag := "unset"
				if tc.flag != nil {
					flag = fmt.Sprint(*tc.flag)
				}
				t.Fatalf("/debug/xds mounted: %t, want %t (config %t, flag %s; handlers %v)", ok, tc.served, tc.config, flag, keys(p.metricsHandlers()))
			}
			if !ok {
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/xds", nil))
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
				t.Fatalf("/debug/xds: %d %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
		})
	}
}

func keys(m map[string]http.Handler) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
func boolPtr(b bool) *bool { return &b }
