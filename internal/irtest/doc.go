/*
Copyright The shardgate Authors.
*/

// Package irtest holds the IR Gateways and the comparison that the tests of
// xds/translate and xds/build share: a golden case's IR read from its
// .in.yaml file (LoadGateway), the large benchmark Gateway (LargeGateway),
// a Gateway with one upstream-TLS cluster (TLSGateway), and an in-order
// comparison of two lists of xDS messages (AssertSameMessages).
//
// It is support for tests only: nothing but _test.go files imports it. It
// imports neither xds/translate nor xds/build, so the in-package tests of
// both can use it.
package irtest
