// Package docs holds no code: it is the user documentation in this
// directory, and its tests keep it true to the product (every condition
// reason documented, every relative link resolving, nothing user-facing
// pointing outside the repository). docs/api-reference.md is generated
// from api/v1alpha1 by `make api-docs`; hack/verify-generated.sh fails when
// it is stale.
package docs
