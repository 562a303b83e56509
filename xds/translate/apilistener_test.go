package translate

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

func apiListener(t *testing.T, routeName string) *listenerv3.Listener {
	t.Helper()
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		t.Fatal(err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "grpc",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: routeName,
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Listener{Name: "echo.test", ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}
}

// An API listener (proxyless gRPC) has no filter chains; it is valid when its
// route configuration exists and refused, by name, when it does not.
func TestValidateAPIListener(t *testing.T) {
	res := &Resources{
		Listeners: []*listenerv3.Listener{apiListener(t, "http-80")},
		Routes:    []*routev3.RouteConfiguration{{Name: "http-80"}},
	}
	if err := Validate(res); err != nil {
		t.Fatalf("valid API listener refused: %v", err)
	}
	res.Listeners = []*listenerv3.Listener{apiListener(t, "missing")}
	err := Validate(res)
	if err == nil || !strings.Contains(err.Error(), `listener "echo.test": api_listener: route configuration "missing" not found`) {
		t.Fatalf("API listener with a missing route: err = %v", err)
	}
}
