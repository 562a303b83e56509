// Package xdstest holds the xDS clients every test shares: one
// state-of-the-world ADS client (Sotw) and one incremental ADS client
// (Delta). Each speaks the protocol on one raw gRPC stream, as Envoy does:
// it subscribes, records every response in order with the resources
// decoded, ACKs (or, when told to, NACKs or stays silent) and keeps what it
// holds. Unlike grpc-go's xDS client it lets a test hold, stall, refuse or
// drop a stream at will.
//
// It also issues the certificates both ends use in tests: a proxy's
// (GatewayTLS) and the xDS server's (ServerCertificates).
//
// It is support for tests only: nothing but _test.go files imports it. It
// does not import the xDS server, so the server's own tests can use it.
package xdstest
