/*
Copyright The shardgate Authors.
*/

// Package autotls is automatic HTTPS for the names shards admit
// (GatewayParameters spec.shard.tls): the names of the Certificates
// shardgate writes and of the Secrets cert-manager stores them in, and the
// pure decisions of the certificate controller:
//
//   - DesiredFrom: from the names generated routes hold on shards (the
//     translator's ownership facts) and the shards, the Certificates
//     wanted (one per namespace and name held on a shard with tls whose
//     domain does not cover it) and the names the shards' own certificate
//     covers;
//   - Pacer: which wanted names get their Certificate written now, under
//     the ACME rate limits (new orders per issuer, certificates per
//     registered domain), tenants served round-robin, names whose
//     issuance failed backing off behind those that never failed;
//   - StateOf and friends: a name's CertificateReady condition from its
//     Certificate's status or its place in the queue;
//   - CertificateFor, SpecEqual, RecordOf: the Certificate shardgate
//     writes for a name, whether a stored one still asks for it, and what
//     the Pacer counts of it after a restart.
//
// Nothing here talks to the apiserver; time comes from the callers.
package autotls
