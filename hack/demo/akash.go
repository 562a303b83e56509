package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// akashAct applies the Akash provider's own objects (examples/akash) and
// shows what shardgate did with them in Akash drop-in mode: the route in
// dave's lease namespace, erin refused for the same name, dave's leased IP,
// and the operators' HTTP API.
func akashAct(ctx context.Context, c client.Client, dir, api string) error {
	step("the Akash act: an unchanged Akash provider's ProviderHosts and ProviderLeasedIP (%s/)", dir)
	if err := applyDir(ctx, c, dir); err != nil {
		return err
	}
	// Wait for the decisions: dave's route, erin's Event, dave's IP.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var routes gatewayv1.HTTPRouteList
		if err := c.List(ctx, &routes, client.MatchingLabels{"akash.network": "true"}); err != nil {
			return err
		}
		code, body := get(api, "/ip-lease-status/akash1v3shvegqqqqqqqqqqqqqqqqqqqqqqqqqf5gazh/500/1/1")
		if len(routes.Items) > 0 && len(providerHostEvents(ctx, c)) >= 2 && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			fmt.Printf("    (still waiting after 60s: %d routes, ip-lease-status %d %s)\n", len(routes.Items), code, body)
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	var routes gatewayv1.HTTPRouteList
	if err := c.List(ctx, &routes, client.MatchingLabels{"akash.network": "true"}); err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "    GENERATED HTTPROUTE (lease namespace/name)\tHOSTNAME\tBACKEND\tPARENTS")
	for _, r := range routes.Items {
		var parents []string
		for _, p := range r.Spec.ParentRefs {
			parents = append(parents, string(p.Name))
		}
		b := r.Spec.Rules[0].BackendRefs[0]
		fmt.Fprintf(w, "    %s\t%s\t%s:%d\t%s\n", objName(&r), r.Spec.Hostnames[0], b.Name, *b.Port, strings.Join(parents, ","))
	}
	_ = w.Flush()
	fmt.Println()
	w = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "    PROVIDERHOST\tEVENT\tMESSAGE")
	for _, line := range providerHostEvents(ctx, c) {
		fmt.Fprintln(w, "    "+line)
	}
	_ = w.Flush()
	for _, path := range []string{"/managed-hostnames", "/ip-lease-status/akash1v3shvegqqqqqqqqqqqqqqqqqqqqqqqqqf5gazh/500/1/1", "/usage"} {
		code, body := get(api, path)
		fmt.Printf("\n    GET %s -> %d\n    %s\n", path, code, strings.TrimSpace(indent(body)))
	}
	return nil
}

// providerHostEvents are "name\tType/Reason\tnote" of the Reserve Events on
// ProviderHosts, sorted.
func providerHostEvents(ctx context.Context, c client.Client) []string {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace("lease")); err != nil {
		return nil
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "ProviderHost" && ev.Action == "Reserve" {
			out = append(out, fmt.Sprintf("%s\t%s/%s\t%s", ev.Regarding.Name, ev.Type, ev.Reason, ev.Note))
		}
	}
	sort.Strings(out)
	return out
}

func get(api, path string) (int, string) {
	resp, err := http.Get("http://" + api + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// indent pretty-prints JSON bodies for the terminal.
func indent(body string) string {
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return body
	}
	b, err := json.MarshalIndent(v, "    ", "  ")
	if err != nil {
		return body
	}
	return string(b)
}
