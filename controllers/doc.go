// Package controllers holds the thin reconcilers: each reads objects from the
// informer cache, calls the pure packages (hostnames, sharding, leasehosts,
// gatewayapi, ...) and writes their results. Business rules never live here.
package controllers
