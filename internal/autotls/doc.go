/*
Copyright The shardgate Authors.
*/

// Package autotls is automatic HTTPS for the names shards admit
// (GatewayParameters spec.shard.tls): the names of the Certificates
// shardgate writes and of the Secrets cert-manager stores them in.
package autotls
