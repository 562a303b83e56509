package leasehosts

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/hostnames"
)

// RouteName is the generated HTTPRoute's name: the LeaseHost's own name, so
// that a tenant finds it without looking anything up.
func RouteName(lh *shardgatev1alpha1.LeaseHost) string { return lh.Name }

// LeaseLabels are the labels that carry the lease on generated objects.
// Label values are at most 63 characters of [A-Za-z0-9._-]; an owner that
// does not fit is replaced by "sha256-" and the first 40 hex digits of its
// hash, which is stable and still selectable.
func LeaseLabels(l shardgatev1alpha1.LeaseRef) map[string]string {
	owner := l.Owner
	if len(validation.IsValidLabelValue(owner)) > 0 {
		sum := sha256.Sum256([]byte(owner))
		owner = "sha256-" + hex.EncodeToString(sum[:])[:40]
	}
	return map[string]string{
		shardgatev1alpha1.LabelLeaseOwner: owner,
		shardgatev1alpha1.LabelLeaseDSeq:  strconv.FormatUint(l.DSeq, 10),
		shardgatev1alpha1.LabelLeaseGSeq:  strconv.FormatUint(uint64(l.GSeq), 10),
		shardgatev1alpha1.LabelLeaseOSeq:  strconv.FormatUint(uint64(l.OSeq), 10),
	}
}

// Reserved returns the plan's hosts that the decisions say are held.
func Reserved(p Plan, decisions map[string]hostnames.Decision) []string {
	var out []string
	for _, h := range p.Hosts {
		if d, ok := decisions[h]; ok && d.Reserved {
			out = append(out, h)
		}
	}
	return out
}

// RouteFor is the HTTPRoute lh must have, or nil when it holds no name. It
// lists only held names, and only the shards on which its name is held.
// Every field the apiserver would default is set, so that the desired route
// compares equal to the stored one and an unchanged LeaseHost costs no write.
func RouteFor(lh *shardgatev1alpha1.LeaseHost, p Plan, decisions map[string]hostnames.Decision) *gatewayv1.HTTPRoute {
	held := map[string]bool{}
	for _, h := range Reserved(p, decisions) {
		held[h] = true
	}
	if len(held) == 0 {
		return nil
	}
	var hostnamesOut []gatewayv1.Hostname
	for _, h := range p.Hosts {
		if held[h] {
			hostnamesOut = append(hostnamesOut, gatewayv1.Hostname(h))
		}
	}
	var parents []gatewayv1.ParentReference
	for _, sh := range p.Shards {
		if sh.Err != nil || !held[normalised(sh.Host)] {
			continue
		}
		parents = append(parents, gatewayv1.ParentReference{
			Group:     new(gatewayv1.Group(gatewayv1.GroupName)),
			Kind:      new(gatewayv1.Kind("Gateway")),
			Namespace: new(gatewayv1.Namespace(sh.Shard.Gateway.Namespace)),
			Name:      gatewayv1.ObjectName(sh.Shard.Gateway.Name),
		})
	}
	path := lh.Spec.Path
	if path == "" {
		path = "/"
	}
	blockOwnerDeletion := true
	isController := true
	return &gatewayv1.HTTPRoute{
		TypeMeta: metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        RouteName(lh),
			Namespace:   lh.Namespace,
			Labels:      LeaseLabels(lh.Spec.Lease),
			Annotations: RouteAnnotations(),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         shardgatev1alpha1.GroupVersion.String(),
				Kind:               "LeaseHost",
				Name:               lh.Name,
				UID:                lh.UID,
				Controller:         &isController,
				BlockOwnerDeletion: &blockOwnerDeletion,
			}},
		},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents},
			Hostnames:       hostnamesOut,
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{
					Path: &gatewayv1.HTTPPathMatch{
						Type:  new(gatewayv1.PathMatchPathPrefix),
						Value: new(path),
					},
				}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{
					BackendRef: gatewayv1.BackendRef{
						BackendObjectReference: gatewayv1.BackendObjectReference{
							Group: new(gatewayv1.Group("")),
							Kind:  new(gatewayv1.Kind("Service")),
							Name:  gatewayv1.ObjectName(lh.Spec.Service.Name),
							Port:  new(gatewayv1.PortNumber(lh.Spec.Service.Port)),
						},
						Weight: new(int32(1)),
					},
				}},
			}},
		},
	}
}

// RouteAnnotations are the annotations of every route generated for a
// LeaseHost: its visitors may upgrade to a WebSocket whatever the shard
// says for other routes, as ingress-nginx lets every route upgrade.
func RouteAnnotations() map[string]string {
	return map[string]string{shardgatev1alpha1.AnnotationWebSocket: "true"}
}

func normalised(h string) string {
	if n, err := hostnames.Normalise(h); err == nil {
		return n
	}
	return h
}
