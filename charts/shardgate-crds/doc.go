// Package shardgatecrds holds no code: it is the Helm chart shardgate-crds
// in this directory, and its tests. The chart and its subcharts
// (charts/gateway-api-crds, charts/akash-crds) render, as templates, their
// CRD files (copied by `make chart-crds` from crds/, crds/akash and the
// Gateway API release staged in bin/crds); chart_test.go renders it with
// the real helm for each channel and option, lints it, checks the copies
// against their sources and the README against helm-docs; size_test.go
// checks that the release record Helm stores fits its Secret;
// apiserver_test.go applies the rendered CRDs to the test kube-apiserver over
// the ones it has (a channel switch each way, the Akash CRDs added).
// The Go files and testdata/ are left out of the packaged chart
// (.helmignore).
package shardgatecrds
