package manager

import (
	"testing"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// TestTenantLimitsOfConfig: the config's defaults are the translator's
// DefaultTenantLimits, and each key reaches its field.
func TestTenantLimitsOfConfig(t *testing.T) {
	if got, want := tenantLimits(config.Default()), gatewayapi.DefaultTenantLimits(); got != want {
		t.Errorf("tenantLimits(config.Default()) = %+v, want %+v", got, want)
	}
	c := config.Default()
	c.Shards.TenantLimits = config.TenantLimitsConfig{Routes: 1, Rules: 2, Matches: 3, RegularExpressions: 4}
	if got, want := tenantLimits(c), (gatewayapi.TenantLimits{Routes: 1, Rules: 2, Matches: 3, RegularExpressions: 4}); got != want {
		t.Errorf("tenantLimits = %+v, want %+v", got, want)
	}
}
