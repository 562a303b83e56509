package conformance

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	upstream "sigs.k8s.io/gateway-api/conformance"
)

// UpstreamModule is the conformance module whose tests are scanned; it must
// be the version in go.mod (the scan reads the sources embedded in it).
const UpstreamModule = "sigs.k8s.io/gateway-api/conformance"

// trafficPackages are upstream packages whose every use sends traffic (or
// builds something only a traffic helper consumes): an HTTP, gRPC, TLS, TCP,
// UDP or WebSocket client, the weighted-distribution senders that drive
// them, and the mesh helpers that exec into Pods (the apiserver would then
// dial the fake Node's kubelet address).
var trafficPackages = map[string]string{
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper":        "HTTP round tripper",
	"sigs.k8s.io/gateway-api/conformance/utils/grpc":                "gRPC client",
	"sigs.k8s.io/gateway-api/conformance/utils/tls":                 "TLS client",
	"sigs.k8s.io/gateway-api/conformance/utils/tcp":                 "TCP client",
	"sigs.k8s.io/gateway-api/conformance/utils/udp":                 "UDP client",
	"sigs.k8s.io/gateway-api/conformance/utils/websocket":           "WebSocket client",
	"sigs.k8s.io/gateway-api/conformance/utils/weight":              "weighted request senders",
	"sigs.k8s.io/gateway-api/conformance/utils/echo":                "exec into echo Pods",
	"sigs.k8s.io/gateway-api/conformance/echo-basic/grpcechoserver": "gRPC echo messages",
	"sigs.k8s.io/gateway-api/conformance/echo-basic/udpechoserver":  "UDP echo messages",
	"golang.org/x/net/websocket":                                    "WebSocket client",
	"github.com/miekg/dns":                                          "DNS client",
	"net":                                                           "raw sockets",
	"net/http":                                                      "HTTP client",
	"crypto/tls":                                                    "TLS client",
	"google.golang.org/grpc":                                        "gRPC client",
}

// trafficFuncs are the request helpers of packages that also hold
// status-only code. utils/http's request helpers all go through
// suite.RoundTripper; ExpectMirroredRequest and DumpEchoLogs read Pod logs,
// which the apiserver fetches from the Node's kubelet address.
var trafficFuncs = map[string]map[string]string{
	"sigs.k8s.io/gateway-api/conformance/utils/http": {
		"MakeRequestAndExpectEventuallyConsistentResponse": "HTTP request",
		"MakeRequestAndExpectFailure":                      "HTTP request",
		"MakeRequest":                                      "HTTP request",
		"WaitForConsistentResponse":                        "HTTP request",
		"WaitForConsistentFailureResponse":                 "HTTP request",
		"CompareRoundTrip":                                 "HTTP request",
		"ExpectMirroredRequest":                            "Pod logs",
		"ExpectedResponse":                                 "HTTP request expectation",
	},
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes": {
		"DumpEchoLogs": "Pod logs",
	},
}

// trafficFields are ConformanceTestSuite fields that are traffic clients.
var trafficFields = map[string]string{
	"RoundTripper":     "suite.RoundTripper",
	"GRPCClient":       "suite.GRPCClient",
	"WebSocketDialer":  "suite.WebSocketDialer",
	"CaptureRoundTrip": "RoundTripper.CaptureRoundTrip",
	"SendRPC":          "GRPCClient.SendRPC",
}

// statusOnlyPackages are the packages a test that is not in the traffic list
// may use. Anything else makes the scan fail, so that a new kind of helper
// in a newer suite is looked at by a person before it can run here.
var statusOnlyPackages = []string{
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes",
	"sigs.k8s.io/gateway-api/conformance/utils/suite",
	"sigs.k8s.io/gateway-api/conformance/utils/tlog",
	"sigs.k8s.io/gateway-api/conformance/utils/config",
	"sigs.k8s.io/gateway-api/conformance/utils/http", // minus trafficFuncs
	"sigs.k8s.io/gateway-api/pkg/",
	"sigs.k8s.io/gateway-api/apis/",
	"sigs.k8s.io/gateway-api/apisx/",
	"sigs.k8s.io/controller-runtime/pkg/client",
	"k8s.io/apimachinery/",
	"k8s.io/api/",
	"k8s.io/utils/ptr",
	"github.com/stretchr/testify/require",
	"github.com/google/uuid",
	"testing", "context", "fmt", "time", "strings", "slices", "sync", "errors",
	"math", "bytes", "encoding/json", "sort", "net/netip", "net/url",
}

// Scan is the result of reading the upstream tests.
type Scan struct {
	// Traffic maps each traffic test's ShortName to why (the first
	// helper found, with the function it was found in).
	Traffic map[string]string
	// StatusOnly lists the other tests.
	StatusOnly []string
}

// TrafficNames is Traffic's keys, sorted.
func (s Scan) TrafficNames() []string {
	out := make([]string, 0, len(s.Traffic))
	for n := range s.Traffic {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type decl struct {
	pkg  string // directory in the FS, "tests" or "tests/mesh"
	name string
	node ast.Node
	file *ast.File
	// imports: local name -> import path
	imports map[string]string
}

// ScanUpstream parses the Go sources of the upstream tests (tests/*.go and
// tests/mesh/*.go, as embedded in the conformance module) and classifies
// every ConformanceTest by whether its Test function, or any package-level
// function it reaches, uses a traffic helper.
func ScanUpstream() (Scan, error) { return ScanFS(upstream.Manifests) }

// ScanFS is ScanUpstream over any FS laid out like the module.
func ScanFS(fsys fs.FS) (Scan, error) {
	fset := token.NewFileSet()
	decls := map[string]*decl{} // key pkg + "." + name
	var tests []*decl
	for _, dir := range []string{"tests", "tests/mesh"} {
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return Scan{}, err
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			p := path.Join(dir, e.Name())
			src, err := fs.ReadFile(fsys, p)
			if err != nil {
				return Scan{}, err
			}
			f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
			if err != nil {
				return Scan{}, err
			}
			imports := map[string]string{}
			for _, im := range f.Imports {
				ip, _ := strconv.Unquote(im.Path.Value)
				local := path.Base(ip)
				if im.Name != nil {
					local = im.Name.Name
				}
				imports[local] = ip
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv != nil || d.Name.Name == "init" {
						continue
					}
					decls[dir+"."+d.Name.Name] = &decl{pkg: dir, name: d.Name.Name, node: d, file: f, imports: imports}
				case *ast.GenDecl:
					for _, sp := range d.Specs {
						vs, ok := sp.(*ast.ValueSpec)
						if !ok {
							continue
						}
						for i, n := range vs.Names {
							var node ast.Node = vs
							if i < len(vs.Values) {
								node = vs.Values[i]
							}
							dd := &decl{pkg: dir, name: n.Name, node: node, file: f, imports: imports}
							decls[dir+"."+n.Name] = dd
							if isConformanceTest(node, imports) {
								tests = append(tests, dd)
							}
						}
					}
				}
			}
		}
	}

	// Direct references of every declaration.
	type refs struct {
		traffic  string // first traffic use, "" if none (calls first)
		isCall   bool
		local    []string // keys of package-level decls referenced
		external []string // "importpath.Name" referenced
	}
	direct := map[string]*refs{}
	for key, d := range decls {
		r := &refs{}
		calls := map[ast.Expr]bool{}
		note := func(what string, call bool) {
			if r.traffic == "" || (call && !r.isCall) {
				r.traffic, r.isCall = what, call
			}
		}
		ast.Inspect(d.node, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				calls[n.Fun] = true
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok {
					if ip, ok := d.imports[id.Name]; ok {
						r.external = append(r.external, ip+"."+n.Sel.Name)
						if why := trafficUse(ip, n.Sel.Name); why != "" {
							note(fmt.Sprintf("%s.%s (%s)", path.Base(ip), n.Sel.Name, why), calls[n])
						}
						return false
					}
				}
				if why, ok := trafficFields[n.Sel.Name]; ok {
					note(why, false)
				}
			case *ast.Ident:
				if k := d.pkg + "." + n.Name; decls[k] != nil && k != key {
					r.local = append(r.local, k)
				}
			}
			return true
		})
		direct[key] = r
	}

	// Transitive closure over package-level declarations.
	var reach func(key string, seen map[string]bool) (string, []string)
	reach = func(key string, seen map[string]bool) (string, []string) {
		if seen[key] {
			return "", nil
		}
		seen[key] = true
		r := direct[key]
		traffic, ext := "", append([]string(nil), r.external...)
		if r.traffic != "" {
			traffic = r.traffic + " in " + decls[key].name
		}
		for _, l := range r.local {
			t, e := reach(l, seen)
			if traffic == "" {
				traffic = t
			}
			ext = append(ext, e...)
		}
		return traffic, ext
	}

	out := Scan{Traffic: map[string]string{}}
	seenNames := map[string]bool{}
	var problems []string
	for _, d := range tests {
		name, err := shortName(d.node)
		if err != nil {
			return Scan{}, fmt.Errorf("%s.%s: %w", d.pkg, d.name, err)
		}
		if seenNames[name] {
			return Scan{}, fmt.Errorf("test %s is declared twice", name)
		}
		seenNames[name] = true
		traffic, ext := reach(d.pkg+"."+d.name, map[string]bool{})
		if traffic != "" {
			out.Traffic[name] = traffic
			continue
		}
		for _, e := range ext {
			if !statusOnly(e) {
				problems = append(problems, fmt.Sprintf("%s uses %s, which is neither a known traffic helper nor status-only", name, e))
			}
		}
		out.StatusOnly = append(out.StatusOnly, name)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return Scan{}, fmt.Errorf("upstream tests use helpers this scan does not know; classify them in trafficscan.go:\n%s", strings.Join(dedup(problems), "\n"))
	}
	sort.Strings(out.StatusOnly)
	return out, nil
}

func trafficUse(importPath, name string) string {
	if why, ok := trafficPackages[importPath]; ok {
		return why
	}
	return trafficFuncs[importPath][name]
}

func statusOnly(ref string) bool {
	i := strings.LastIndex(ref, ".")
	ip := ref[:i]
	for _, p := range statusOnlyPackages {
		if ip == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(ip, p)) {
			return true
		}
	}
	return false
}

func isConformanceTest(n ast.Node, imports map[string]string) bool {
	cl, ok := n.(*ast.CompositeLit)
	if !ok {
		return false
	}
	sel, ok := cl.Type.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "ConformanceTest" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && imports[id.Name] == "sigs.k8s.io/gateway-api/conformance/utils/suite"
}

func shortName(n ast.Node) (string, error) {
	for _, el := range n.(*ast.CompositeLit).Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "ShortName" {
			if bl, ok := kv.Value.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				return strconv.Unquote(bl.Value)
			}
			return "", fmt.Errorf("ShortName is not a string literal")
		}
	}
	return "", fmt.Errorf("no ShortName")
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// GenerateTrafficFile renders traffic_tests.go from a scan.
func GenerateTrafficFile(s Scan, version string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by `go generate ./conformance` (go run ./gentraffic); DO NOT EDIT.\n")
	b.WriteString("//\n")
	fmt.Fprintf(&b, "// The upstream conformance tests (%s %s) whose Test function, or a\n", UpstreamModule, version)
	b.WriteString("// package-level function it reaches, uses a traffic helper: an HTTP, gRPC,\n")
	b.WriteString("// TLS, TCP, UDP or WebSocket client, the suite's RoundTripper/GRPCClient/\n")
	b.WriteString("// WebSocketDialer, or Pod exec/logs. Found by parsing tests/*.go and\n")
	b.WriteString("// tests/mesh/*.go with go/parser (see trafficscan.go), not picked by hand.\n")
	b.WriteString("// Local mode skips them by name: there is no Envoy, and no traffic may leave\n")
	b.WriteString("// the machine. TestTrafficTestsUpToDate fails when this file is stale.\n\n")
	b.WriteString("package conformance\n\n")
	fmt.Fprintf(&b, "// TrafficTestsVersion is the conformance module version scanned.\nconst TrafficTestsVersion = %q\n\n", version)
	b.WriteString("// TrafficTests maps each traffic test's ShortName to the first traffic use found.\n")
	b.WriteString("var TrafficTests = map[string]string{\n")
	for _, n := range s.TrafficNames() {
		fmt.Fprintf(&b, "\t%q: %q,\n", n, s.Traffic[n])
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
