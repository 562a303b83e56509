// Package testenv is the one test harness of the project: it starts a real
// control plane built from the Go module proxy (see hack/envtest-assets.sh),
// installs every CRD the product uses, optionally starts the real MetalLB
// controller and the shardgate manager, and tears everything down.
//
// Options.CertManager adds automatic-certificate machinery: cert-manager's
// CRDs, Pebble (Let's Encrypt's ACME test server, on loopback ports, serving
// TLS from a test CA the harness makes, Env.Pebble) and cert-manager's
// controller (leader election off, only the issuer, certificate, order and
// challenge controllers). Pebble validates challenges for real unless the
// test sets PebbleAlwaysValid; the solver Pods cert-manager creates never run.
//
// Two modes:
//   - Envtest: controller-runtime envtest with our kube-apiserver and etcd.
//   - Cluster: additionally kube-controller-manager, kube-scheduler and KWOK
//     managing one fake Node, so Deployments get Ready Pods and the real
//     endpointslice controller writes EndpointSlices; MetalLB always runs.
//
// The harness never sends traffic anywhere: Pod IPs come from 10.244.0.0/16
// and Service ClusterIPs from 127.96.0.0/16, and nothing here dials either.
// Every process it starts runs in its own process group, dies with the test
// binary (PDEATHSIG), and is recorded in a registry so that a later Start
// reaps leftovers of a test binary that was killed.
//
// Faults: StopAPIServer kills kube-apiserver (etcd keeps running) and
// StartAPIServer brings it back on the same port with the same certificates
// and data, so every client and kubeconfig made before keeps working;
// RestartAPIServer does both with a downtime in between.
package testenv
