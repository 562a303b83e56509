package statuscli

import (
	"context"
	"fmt"
	"sort"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
	"github.com/shardgate/shardgate/internal/hostnames"
)

// Row sources.
const (
	SourceLeaseHost    = "LeaseHost"
	SourceProviderHost = "ProviderHost"
)

// providerHostRows are the rows of the Akash ProviderHosts (Akash mode), or
// none when the cluster does not serve the Akash CRDs. A ProviderHost has no
// status: a name it holds is one whose generated route exists in the lease
// namespace (one row per shard in the route's status.parents[], admitted
// when Accepted and ResolvedRefs are True); otherwise the row carries the
// reason and message of the latest Reserve Event on the ProviderHost. The
// rows of a held name carry the CertificateReady its latest Certify Event
// tells (certificateFromEvent), on every shard row alike.
func providerHostRows(ctx context.Context, c client.Client, opts Options) ([]Row, error) {
	rows, _, err := listProviderHostRows(ctx, c, opts)
	return rows, err
}

// listProviderHostRows is providerHostRows that also says whether the
// cluster serves the Akash CRDs.
func listProviderHostRows(ctx context.Context, c client.Client, opts Options) (_ []Row, served bool, _ error) {
	var items []akashv1.ProviderHost
	err := listPaged(ctx, c, func() *akashv1.ProviderHostList { return &akashv1.ProviderHostList{} },
		opts.Namespace, opts.PageSize, func(l *akashv1.ProviderHostList) { items = append(items, l.Items...) })
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("list ProviderHosts: %w", err)
	}
	if len(items) == 0 {
		return nil, true, nil
	}
	latest, certify, err := providerHostEvents(ctx, c, opts.Namespace)
	if err != nil {
		return nil, true, err
	}
	var rows []Row
	for i := range items {
		ph := &items[i]
		l := akash.HostLease(ph)
		base := Row{
			Source: SourceProviderHost, Namespace: ph.Namespace, LeaseHost: ph.Name,
			Owner: l.Owner, DSeq: l.DSeq, GSeq: l.GSeq, OSeq: l.OSeq, Host: ph.Spec.Hostname,
		}
		if ev, ok := latest[ph.UID]; ok {
			base.Reason, base.Message = ev.Reason, ev.Note
		}
		host := ph.Spec.Hostname
		if n, err := hostnames.Normalise(host); err == nil {
			host = n
		}
		var route gatewayv1.HTTPRoute
		err := akash.ValidateHost(ph)
		if err == nil {
			err = c.Get(ctx, types.NamespacedName{Namespace: l.Namespace(), Name: akash.RouteName(host)}, &route)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, true, fmt.Errorf("get route %s/%s: %w", l.Namespace(), host, err)
			}
		}
		if err != nil || !akash.IsGeneratedRoute(&route, ph) {
			r := base
			r.Reserved = string(metav1.ConditionFalse)
			r.Admitted = string(metav1.ConditionFalse)
			rows = append(rows, r)
			continue
		}
		base.Reserved, base.Route, base.Host = string(metav1.ConditionTrue), route.Name, host
		if ev, ok := certify[ph.UID]; ok {
			base.Certificate, base.CertificateReason, base.CertificateMessage = certificateFromEvent(ev)
		}
		if len(route.Status.Parents) == 0 {
			r := base
			r.Reason, r.Message = shardgatev1alpha1.ReasonReserved, "the route is written; no shard has answered yet"
			rows = append(rows, r)
			continue
		}
		for _, p := range route.Status.Parents {
			r := base
			ns := route.Namespace
			if p.ParentRef.Namespace != nil {
				ns = string(*p.ParentRef.Namespace)
			}
			r.Shard, r.Gateway = string(p.ParentRef.Name), ns+"/"+string(p.ParentRef.Name)
			acc := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted))
			res := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionResolvedRefs))
			switch {
			case acc != nil && acc.Status != metav1.ConditionTrue:
				r.Admitted, r.Reason, r.Message = string(acc.Status), acc.Reason, acc.Message
			case res != nil && res.Status != metav1.ConditionTrue:
				r.Admitted, r.Reason, r.Message = string(res.Status), res.Reason, res.Message
			case acc != nil:
				r.Admitted, r.Reason, r.Message = string(metav1.ConditionTrue), shardgatev1alpha1.ReasonAdmitted, acc.Message
			}
			rows = append(rows, r)
		}
	}
	return rows, true, nil
}

// actionCertify is the action of the certificate controller's Events
// (automatic HTTPS): the only place a ProviderHost's CertificateReady is
// told, since it has no status.
const actionCertify = "Certify"

// certificateFromEvent is the CertificateReady status, reason and message
// a ProviderHost's latest Certify Event tells: True for Issued and
// ShardCertificate, none once its Certificate was revoked (the name no
// longer wants one), False otherwise.
func certificateFromEvent(ev eventsv1.Event) (status, reason, message string) {
	switch ev.Reason {
	case shardgatev1alpha1.ReasonCertificateRevoked:
		return "", "", ""
	case shardgatev1alpha1.ReasonCertificateIssued, shardgatev1alpha1.ReasonShardCertificate:
		return string(metav1.ConditionTrue), ev.Reason, ev.Note
	}
	return string(metav1.ConditionFalse), ev.Reason, ev.Note
}

// providerHostEvents are the latest Reserve Event and the latest Certify
// Event of each ProviderHost, by UID.
func providerHostEvents(ctx context.Context, c client.Client, namespace string) (reserve, certify map[types.UID]eventsv1.Event, _ error) {
	var list eventsv1.EventList
	opts := []client.ListOption{}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, nil, fmt.Errorf("list Events: %w", err)
	}
	sort.SliceStable(list.Items, func(i, j int) bool { return eventTime(&list.Items[i]).Time.Before(eventTime(&list.Items[j]).Time) })
	reserve, certify = map[types.UID]eventsv1.Event{}, map[types.UID]eventsv1.Event{}
	for _, ev := range list.Items {
		if ev.Regarding.Kind != "ProviderHost" {
			continue
		}
		switch ev.Action {
		case "Reserve":
			reserve[ev.Regarding.UID] = ev
		case actionCertify:
			certify[ev.Regarding.UID] = ev
		}
	}
	return reserve, certify, nil
}

func eventTime(ev *eventsv1.Event) metav1.Time {
	t := ev.EventTime.Time
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	if t.IsZero() {
		return ev.CreationTimestamp
	}
	return metav1.NewTime(t)
}
