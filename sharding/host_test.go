package sharding

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func TestComposeHost(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	label64 := strings.Repeat("a", 64)
	long := func(n int) string { // a valid domain of exactly n characters
		var parts []string
		for n > 0 {
			l := min(n, 63)
			if n-l == 1 { // never leave a lone dot
				l--
			}
			parts = append(parts, strings.Repeat("d", l))
			n -= l
			if n > 0 {
				n-- // the dot
			}
		}
		return strings.Join(parts, ".")
	}
	cases := []struct {
		name, subdomain, domain string
		want                    string
		wantErr                 string
	}{
		{"single label", "web", "shard-a.apps.example.test", "web.shard-a.apps.example.test", ""},
		{"multi-label subdomain", "a.b", "example.com", "a.b.example.com", ""},
		{"deep multi-label subdomain", "x.y.z", "d.example.com", "x.y.z.d.example.com", ""},
		{"normalised: case and space", " Web ", "Example.COM", "web.example.com", ""},
		{"63-char label", label63, "example.com", label63 + ".example.com", ""},
		{"64-char label in subdomain", label64, "example.com", "", "more than 63"},
		{"64-char label in domain", "web", label64 + ".com", "", "more than 63"},
		{"exactly 253", "web", long(249), "web." + long(249), ""},
		{"254 is too long", "webx", long(249), "", "254 characters long, more than 253"},
		{"multi-label subdomain makes it too long", strings.Repeat("s.", 20) + "s", long(213), "", "more than 253"},
		{"empty subdomain", "", "example.com", "", "empty subdomain"},
		{"empty domain", "web", "", "", "empty domain"},
		{"empty label", "a..b", "example.com", "", "empty label"},
		{"leading dot", ".web", "example.com", "", "empty label"},
		{"wildcard", "*", "example.com", "", `contains "*"`},
		{"underscore", "my_app", "example.com", "", `contains "_"`},
		{"leading dash", "-web", "example.com", "", "starts or ends with '-'"},
		{"trailing dash", "web-", "example.com", "", "starts or ends with '-'"},
		{"inner dash", "w-e-b", "example.com", "w-e-b.example.com", ""},
		{"trailing dot on domain", "web", "example.com.", "", "empty label"},
		{"digits", "1", "2.example.com", "1.2.example.com", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComposeHost(tc.subdomain, tc.domain)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ComposeHost(%q, %q) = %q, want error containing %q", tc.subdomain, tc.domain, got, tc.wantErr)
				}
				if !errors.Is(err, ErrInvalidHost) {
					t.Errorf("error %v does not wrap ErrInvalidHost", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ComposeHost(%q, %q): %v", tc.subdomain, tc.domain, err)
			}
			if got != tc.want {
				t.Errorf("ComposeHost(%q, %q) = %q, want %q", tc.subdomain, tc.domain, got, tc.want)
			}
		})
	}
}

func TestValidateHostRefusesUppercase(t *testing.T) {
	// ComposeHost folds case; ValidateHost checks a name as stored.
	if err := ValidateHost("Web.example.com"); err == nil || !strings.Contains(err.Error(), "lowercase") {
		t.Errorf("ValidateHost(uppercase) = %v, want a lowercase error", err)
	}
	if err := ValidateHost("web.example.com"); err != nil {
		t.Errorf("ValidateHost: %v", err)
	}
}

func TestDefaultCanonicalHostname(t *testing.T) {
	if got := DefaultCanonicalHostname("shard-a", "shard-a.apps.example.test"); got != "router-shard-a.shard-a.apps.example.test" {
		t.Errorf("got %q", got)
	}
}

func leaseHost(ns, name string, lbls map[string]string, mutate func(*shardgatev1alpha1.LeaseHostSpec)) *shardgatev1alpha1.LeaseHost {
	lh := &shardgatev1alpha1.LeaseHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec: shardgatev1alpha1.LeaseHostSpec{
			Lease:     shardgatev1alpha1.LeaseRef{Owner: "akash1alice", DSeq: 1},
			Subdomain: "web",
			Service:   shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
		},
	}
	if mutate != nil {
		mutate(&lh.Spec)
	}
	return lh
}

func TestHostsFor(t *testing.T) {
	shardA := Shard{Name: "shard-a", Domain: "shard-a.apps.example.test"}
	shardB := Shard{Name: "shard-b", Domain: "shard-b.apps.example.test"}
	longDomain := Shard{Name: "long", Domain: strings.Repeat("d", 63) + "." + strings.Repeat("e", 63) + "." + strings.Repeat("f", 63) + "." + strings.Repeat("g", 55)} // 247 characters
	type want struct {
		host string
		err  bool
	}
	cases := []struct {
		name   string
		mutate func(*shardgatev1alpha1.LeaseHostSpec)
		shards []Shard
		want   []want
	}{
		{"subdomain composes per shard", nil, []Shard{shardA, shardB},
			[]want{{"web.shard-a.apps.example.test", false}, {"web.shard-b.apps.example.test", false}}},
		{"multi-label subdomain", func(s *shardgatev1alpha1.LeaseHostSpec) { s.Subdomain = "api.v2" }, []Shard{shardA},
			[]want{{"api.v2.shard-a.apps.example.test", false}}},
		{"explicit hostname wins on every shard", func(s *shardgatev1alpha1.LeaseHostSpec) { s.Hostname = "www.example.com" }, []Shard{shardA, shardB},
			[]want{{"www.example.com", false}, {"www.example.com", false}}},
		{"explicit hostname wins even over an invalid composition", func(s *shardgatev1alpha1.LeaseHostSpec) {
			s.Hostname, s.Subdomain = "www.example.com", strings.Repeat("s", 63)
		}, []Shard{shardA, longDomain},
			[]want{{"www.example.com", false}, {"www.example.com", false}}},
		{"a too-long composition fails for that shard only", func(s *shardgatev1alpha1.LeaseHostSpec) { s.Subdomain = "webapp" }, []Shard{shardA, longDomain},
			[]want{{"webapp.shard-a.apps.example.test", false}, {"webapp." + longDomain.Domain, true}}},
		{"invalid explicit hostname fails everywhere", func(s *shardgatev1alpha1.LeaseHostSpec) { s.Hostname = "*.example.com" }, []Shard{shardA, shardB},
			[]want{{"*.example.com", true}, {"*.example.com", true}}},
		{"neither hostname nor subdomain", func(s *shardgatev1alpha1.LeaseHostSpec) { s.Subdomain = "" }, []Shard{shardA},
			[]want{{"", true}}},
		{"no shards", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := HostsFor(leaseHost("t", "lh", nil, tc.mutate), tc.shards)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d hosts, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if got[i].Shard.Name != tc.shards[i].Name {
					t.Errorf("[%d] shard = %q, want %q (order must follow the input)", i, got[i].Shard.Name, tc.shards[i].Name)
				}
				if got[i].Host != w.host {
					t.Errorf("[%d] host = %q, want %q", i, got[i].Host, w.host)
				}
				if (got[i].Err != nil) != w.err {
					t.Errorf("[%d] err = %v, want error: %v", i, got[i].Err, w.err)
				}
				if got[i].Err != nil && !errors.Is(got[i].Err, ErrInvalidHost) {
					t.Errorf("[%d] err %v does not wrap ErrInvalidHost", i, got[i].Err)
				}
			}
		})
	}
	if got := HostsFor(nil, []Shard{shardA}); got != nil {
		t.Errorf("HostsFor(nil) = %v", got)
	}
}
