// Package reliability holds shardgate's fault tests (the tests are the
// package): several replicas of the real binary against a real apiserver,
// the leader killed mid-churn, and the apiserver itself stopped and
// restarted. Each checks from the outside what an operator would: who
// writes (shardgate_kube_writes_total), who is ready, what an independent
// xDS client receives, and whether any status of ours ever flaps.
package reliability
