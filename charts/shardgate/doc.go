// Package shardgate holds no code: it is the Helm chart in this directory,
// and its test (chart_test.go) renders the chart with the Helm SDK, applies
// it to the test apiserver, and runs the controller under the chart's
// ServiceAccount to prove that its RBAC covers every call the controller
// makes. The Go files are left out of the packaged chart (.helmignore).
package shardgate
