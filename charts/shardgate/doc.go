// Package shardgate holds no code: it is the Helm chart in this directory,
// and its tests. chart_test.go and values_test.go render the chart with the
// Helm SDK and check the objects; apiserver_test.go applies it to the test
// apiserver and runs the controller under the chart's ServiceAccount to
// prove that its RBAC covers every call the controller makes; helm_test.go
// runs the real helm (lint --strict of each option's values, each followed
// by a render of the same values, since lint does not fail on the
// templates' `fail` and `required`; template goldens) and helm-docs (the
// README). The Go files and testdata/ are left out of the packaged chart
// (.helmignore).
package shardgate
