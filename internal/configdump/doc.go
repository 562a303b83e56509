// Package configdump owns `shardgate config dump GATEWAY`: it fetches the
// xDS resources one Gateway's proxies are served from the controller's
// /debug/config_dump endpoint (on the metrics server) and prints them as
// YAML or JSON. Over HTTPS it sends a bearer token (--token, or the
// kubeconfig user's); over plain HTTP (--metrics-secure=false) only an
// explicit --token, never the kubeconfig's credentials.
//
// It only reads; it never talks to the proxies, and it never sees a private
// key (the controller redacts them before answering).
package configdump
