// Package docs holds no code: it is the user documentation in this
// directory, and its tests keep it true to the product (every condition
// reason documented, every relative link resolving, nothing user-facing
// pointing outside the repository, every config-file key documented in
// configuration.md and every shardgate_* metric in metrics.md with its type
// and labels). The tests that need the CLI itself (every controller flag
// documented, every `shardgate` command of troubleshooting.md parsing) are
// in cmd/shardgate. docs/api-reference.md is generated
// from api/v1alpha1 by `make api-docs`; hack/verify-generated.sh fails when
// it is stale.
package docs
