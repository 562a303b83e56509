package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/akash"
	akashv1 "github.com/shardgate/shardgate/internal/akash/v2beta2"
)

// AkashAPI serves the HTTP API of Akash's hostname and IP operators, so the
// provider finds what it used to ask them: GET /managed-hostnames,
// /ignore-list, /usage, /state, /ignored-leases,
// /ip-lease-status/{owner}/{dseq}/{gseq}/{oseq}, /version and /health. Every
// answer is computed from the informer cache (the generated routes, the
// leased-IP Services, the MetalLB pools and the ProviderHosts), so every
// replica answers, and a restart answers the same. Routes and Services are
// reported only when shardgate wrote them for a live ProviderHost or
// ProviderLeasedIP, in the lease namespace of the lease they name
// (akash.GeneratedRoutes, akash.GeneratedIPServices), never on labels
// alone. The API has no authentication (the provider's client sends
// none): the chart's NetworkPolicy admits only the provider to it.
// Responses are shaped as the operators' are: no Content-Type of their
// own (Go's sniffing gives text/plain), the listings with Cache-Control
// and Last-Modified, errors as the IP operator's {"Error","Code"} body.
type AkashAPI struct {
	// Reader is the manager's cache.
	Reader client.Reader
	// Namespace is where the provider writes ProviderHosts.
	Namespace string
	// MetalLBPool is the leased-IP pool GET /usage reports ("" is
	// akash.DefaultMetalLBPool).
	MetalLBPool string
	Log         logr.Logger
}

// Handler is the API's HTTP handler.
func (a *AkashAPI) Handler() http.Handler {
	mux := http.NewServeMux()
	// The operators answer /health whatever the method.
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "OK")
	})
	ver := a.encode(akash.NewVersionInfo())
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(ver)
	})
	mux.HandleFunc("GET /managed-hostnames", a.managedHostnames)
	mux.HandleFunc("GET /ignore-list", a.ignoreList)
	mux.HandleFunc("GET /ignored-leases", a.ignoredLeases)
	mux.HandleFunc("GET /usage", a.usage)
	mux.HandleFunc("GET /state", a.state)
	mux.HandleFunc("GET /ip-lease-status/{owner}/{dseq}/{gseq}/{oseq}", a.ipLeaseStatus)
	return mux
}

// Serve serves the API on lis until ctx ends.
func (a *AkashAPI) Serve(ctx context.Context, lis net.Listener) error {
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("akash API: %w", err)
	}
	return nil
}

// encode is v as the operators encode it: one JSON document and a newline.
func (a *AkashAPI) encode(v any) []byte {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		a.Log.Error(err, "encode Akash API response")
	}
	return buf.Bytes()
}

// writeListing writes v as the operators serve their prepared listings:
// Cache-Control: no-cache, max-age=0 and Last-Modified (the time the answer
// was computed, here now), status 200, the JSON document and a newline.
func (a *AkashAPI) writeListing(w http.ResponseWriter, v any) {
	body := a.encode(v)
	w.Header().Set("Cache-Control", "no-cache, max-age=0")
	w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// fail answers as the IP operator's handleHTTPError does: status 500 and
// the error body {"Error": ..., "Code": -1}.
func (a *AkashAPI) fail(w http.ResponseWriter, r *http.Request, err error) {
	a.Log.Error(err, "Akash API request failed", "method", r.Method, "path", r.URL.Path)
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write(a.encode(akash.ErrorResponse{Error: err.Error(), Code: -1}))
}

func (a *AkashAPI) managedHostnames(w http.ResponseWriter, r *http.Request) {
	var routes gatewayv1.HTTPRouteList
	if err := a.Reader.List(r.Context(), &routes, client.MatchingLabels{akash.LabelManaged: "true"}); err != nil {
		a.fail(w, r, fmt.Errorf("list generated routes: %w", err))
		return
	}
	var hosts akashv1.ProviderHostList
	if err := a.Reader.List(r.Context(), &hosts, client.InNamespace(a.Namespace)); err != nil {
		a.fail(w, r, fmt.Errorf("list ProviderHosts: %w", err))
		return
	}
	// Labels are not provenance: a tenant may label a route in its own
	// namespace with another tenant's lease.
	a.writeListing(w, akash.ManagedHostnames(akash.GeneratedRoutes(routes.Items, hosts.Items)))
}

// refused are the ProviderHosts refused for bad input: invalid fields, or a
// Service (or port) that does not exist in the lease namespace.
func (a *AkashAPI) refused(ctx context.Context) ([]akash.Refused, error) {
	var list akashv1.ProviderHostList
	if err := a.Reader.List(ctx, &list, client.InNamespace(a.Namespace)); err != nil {
		return nil, fmt.Errorf("list ProviderHosts: %w", err)
	}
	var out []akash.Refused
	for i := range list.Items {
		ph := &list.Items[i]
		l := akash.HostLease(ph)
		err := akash.ValidateHost(ph)
		if err == nil {
			var svc corev1.Service
			switch gerr := a.Reader.Get(ctx, types.NamespacedName{Namespace: l.Namespace(), Name: ph.Spec.ServiceName}, &svc); {
			case apierrors.IsNotFound(gerr):
				err = fmt.Errorf("service %s not found in lease namespace %s", ph.Spec.ServiceName, l.Namespace())
			case gerr != nil:
				return nil, fmt.Errorf("get service %s/%s: %w", l.Namespace(), ph.Spec.ServiceName, gerr)
			case !servicePort(&svc, int32(ph.Spec.ExternalPort)):
				err = fmt.Errorf("service %s has no port %d", ph.Spec.ServiceName, ph.Spec.ExternalPort)
			}
		}
		if err != nil {
			out = append(out, akash.Refused{Lease: l, Hostname: ph.Spec.Hostname, Err: err, At: ph.CreationTimestamp.Time})
		}
	}
	return out, nil
}

func (a *AkashAPI) ignoreList(w http.ResponseWriter, r *http.Request) {
	refused, err := a.refused(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.writeListing(w, akash.IgnoreList(refused))
}

// ignoredLeases is the IP operator's ignore list: shardgate ignores no
// lease's IPs (a bad ProviderLeasedIP gets an Event), so it is empty.
func (a *AkashAPI) ignoredLeases(w http.ResponseWriter, _ *http.Request) {
	a.writeListing(w, map[string]akash.IgnoreEntry{})
}

func (a *AkashAPI) usage(w http.ResponseWriter, r *http.Request) {
	var pools metallbv1beta1.IPAddressPoolList
	if err := a.Reader.List(r.Context(), &pools); err != nil {
		a.fail(w, r, fmt.Errorf("list IPAddressPools: %w", err))
		return
	}
	a.writeListing(w, akash.Usage(pools.Items, a.MetalLBPool))
}

func (a *AkashAPI) ipServices(ctx context.Context, extra client.MatchingLabels) ([]corev1.Service, error) {
	sel := client.MatchingLabels{akash.LabelManaged: "true", akash.LabelServiceTarget: akash.ServiceTargetMetalLB}
	for k, v := range extra {
		sel[k] = v
	}
	var list corev1.ServiceList
	if err := a.Reader.List(ctx, &list, sel); err != nil {
		return nil, fmt.Errorf("list leased-IP Services: %w", err)
	}
	var leased akashv1.ProviderLeasedIPList
	if err := a.Reader.List(ctx, &leased, client.InNamespace(a.Namespace)); err != nil {
		return nil, fmt.Errorf("list ProviderLeasedIPs: %w", err)
	}
	// Only the Services shardgate wrote for a live ProviderLeasedIP, in
	// its lease namespace: labels alone can be forged.
	return akash.GeneratedIPServices(list.Items, leased.Items), nil
}

func (a *AkashAPI) state(w http.ResponseWriter, r *http.Request) {
	svcs, err := a.ipServices(r.Context(), nil)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.writeListing(w, akash.State(svcs))
}

// ipLeaseStatus answers as Akash's IP operator does: 404 with no body for
// a malformed path (a sequence that is not a number, an owner that is not
// an Akash account address), 204 when the lease has no leased IP, 500 (with
// the error body) while an address is not assigned, else 200 and the list.
func (a *AkashAPI) ipLeaseStatus(w http.ResponseWriter, r *http.Request) {
	owner := r.PathValue("owner")
	dseq, err1 := strconv.ParseUint(r.PathValue("dseq"), 10, 64)
	gseq, err2 := strconv.ParseUint(r.PathValue("gseq"), 10, 32)
	oseq, err3 := strconv.ParseUint(r.PathValue("oseq"), 10, 32)
	if err := errors.Join(err1, err2, err3, akash.ValidateAddress(owner)); err != nil {
		a.Log.V(1).Info("malformed ip-lease-status path", "path", r.URL.Path, "error", err.Error())
		w.WriteHeader(http.StatusNotFound)
		return
	}
	svcs, err := a.ipServices(r.Context(), client.MatchingLabels{
		akash.LabelLeaseOwner: owner,
		akash.LabelLeaseDSeq:  strconv.FormatUint(dseq, 10),
		akash.LabelLeaseGSeq:  strconv.FormatUint(gseq, 10),
		akash.LabelLeaseOSeq:  strconv.FormatUint(oseq, 10),
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	statuses, err := akash.LeaseIPStatuses(svcs)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if len(statuses) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	body := a.encode(statuses)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// AkashAPIServer runs the API on Address as a manager Runnable, on every
// replica (it only reads).
type AkashAPIServer struct {
	API     *AkashAPI
	Address string
}

// Start listens and serves until ctx ends.
func (s *AkashAPIServer) Start(ctx context.Context) error {
	lis, err := net.Listen("tcp", s.Address)
	if err != nil {
		return fmt.Errorf("akash API: listen %s: %w", s.Address, err)
	}
	return s.API.Serve(ctx, lis)
}

// NeedLeaderElection is false: every replica answers.
func (s *AkashAPIServer) NeedLeaderElection() bool { return false }
