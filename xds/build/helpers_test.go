/*
Copyright The shardgate Authors.
*/

package build

import (
	"testing"

	"github.com/shardgate/shardgate/internal/irtest"
	"github.com/shardgate/shardgate/xds/translate"
)

// goldenInputs are the IR inputs of translate's golden tests: what the
// memo and the checker must agree with translate on.
const goldenInputs = "../translate/testdata/*.in.yaml"

func assertEqualResources(t *testing.T, a, b *translate.Resources) {
	t.Helper()
	irtest.AssertSameMessages(t, "listeners", a.Listeners, b.Listeners)
	irtest.AssertSameMessages(t, "routes", a.Routes, b.Routes)
	irtest.AssertSameMessages(t, "clusters", a.Clusters, b.Clusters)
	irtest.AssertSameMessages(t, "secrets", a.Secrets, b.Secrets)
}
