package reliability_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/manager"
	"github.com/shardgate/shardgate/internal/pki"
	sgscheme "github.com/shardgate/shardgate/internal/scheme"
	"github.com/shardgate/shardgate/internal/tenancy"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/xdstest"
	xdsserver "github.com/shardgate/shardgate/xds/server"
)

// ---------------------------------------------------------------- replicas

// replica is one shardgate process (the real binary) with its own ports.
type replica struct {
	name    string
	proc    *testenv.Process
	metrics string // 127.0.0.1:port
	health  string
	xds     string
}

func startReplica(env *testenv.Env, name string, leaderElect bool) *replica {
	GinkgoHelper()
	port := func() string {
		p, err := testenv.FreePort()
		Expect(err).NotTo(HaveOccurred())
		return fmt.Sprintf("127.0.0.1:%d", p)
	}
	r := &replica{name: name, metrics: port(), health: port(), xds: port()}
	args := []string{
		"--metrics-address=" + r.metrics, "--metrics-secure=false", "--health-address=" + r.health, "--xds-address=" + r.xds,
		"--log-format=text",
	}
	if leaderElect {
		args = append(args, "--leader-elect")
	}
	var err error
	r.proc, err = env.StartShardgate(name, args...)
	Expect(err).NotTo(HaveOccurred())
	return r
}

// readyz returns the HTTP status of /readyz.
func (r *replica) readyz() (int, error) {
	// Generous: readiness is the answer, not how fast a loaded machine
	// gives it.
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + r.health + "/readyz")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// sample is one Prometheus series.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

type samples []sample

var labelRE = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

func (r *replica) scrape() (samples, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out samples
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			s.name = line[:i]
			for _, m := range labelRE.FindAllStringSubmatch(line[i+1:j], -1) {
				s.labels[m[1]] = m[2]
			}
			rest = line[j+1:]
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if s.value, err = strconv.ParseFloat(f[0], 64); err != nil {
			continue
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// sum adds the series of name whose labels include match.
func (ss samples) sum(name string, match map[string]string) (total float64, found bool) {
next:
	for _, s := range ss {
		if s.name != name {
			continue
		}
		for k, v := range match {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
		found = true
	}
	return total, found
}

// writesBy lists a replica's non-zero write series with the given leader
// label, for failure messages.
func (ss samples) writesBy(leader string) []string {
	var out []string
	for _, s := range ss {
		if s.name == "shardgate_kube_writes_total" && s.labels["leader"] == leader && s.value > 0 {
			out = append(out, fmt.Sprintf("%s %s=%v", s.labels["verb"], s.labels["kind"], s.value))
		}
	}
	sort.Strings(out)
	return out
}

// writeCounts is a replica's shardgate_kube_writes_total, by leader label.
type writeCounts struct {
	asLeader, asFollower float64
	seen                 bool // the metric family has at least one series
	followerSeries       []string
}

func (r *replica) writes() (writeCounts, error) {
	ss, err := r.scrape()
	if err != nil {
		return writeCounts{}, err
	}
	var w writeCounts
	var a, b bool
	w.asLeader, a = ss.sum("shardgate_kube_writes_total", map[string]string{"leader": "true"})
	w.asFollower, b = ss.sum("shardgate_kube_writes_total", map[string]string{"leader": "false"})
	w.seen = a || b
	w.followerSeries = ss.writesBy("false")
	return w, nil
}

// isLeader reads controller-runtime's leader_election_master_status.
func (r *replica) isLeader() (bool, error) {
	ss, err := r.scrape()
	if err != nil {
		return false, err
	}
	v, _ := ss.sum("leader_election_master_status", map[string]string{"name": config.DefaultLeaderElectionID})
	return v == 1, nil
}

// leaseHolder is the leader Lease's holderIdentity.
func leaseHolder(ctx context.Context, c client.Client) string {
	var l coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: config.DefaultLeaderElectionNamespace, Name: config.DefaultLeaderElectionID}, &l); err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// ------------------------------------------------------------------ world

const domain = "shard.rel.test"

// world is the set of objects every test works on: one shard Gateway with
// LeaseHosts covering the ownership decisions (reserved, another owner's
// name, the same owner's other deployment, a subdomain, a missing
// Service), and a Gateway that is not a shard with a few HTTPRoutes
// written directly (one of them churned). A shard serves only the routes
// shardgate generates, so the routes a test writes by hand go to the other.
type world struct {
	ns         string
	gw         types.NamespacedName // not a shard: the routes created directly
	shard      types.NamespacedName // the shard: the LeaseHosts' routes
	routes     []string             // HTTPRoutes created directly
	churn      string               // the HTTPRoute whose hostname the churn changes
	lhs        []string
	xdsHosts   []string // hostnames every replica must serve on gw
	shardHosts []string // hostnames every replica must serve on shard
}

func host(label string) string { return label + "." + domain }

func setupWorld(ctx context.Context, c client.Client) *world {
	GinkgoHelper()
	// The tenant's namespace, marked with its owner as a provider marks
	// tenant namespaces, and the provider's, which holds the shard (a
	// tenant namespace never holds one).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rel-",
		Annotations: map[string]string{tenancy.OwnerKey: "akash1alice"}}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	provider := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rel-provider-"}}
	Expect(c.Create(ctx, provider)).To(Succeed())
	dumps.Add(c, ns.Name)
	dumps.Add(c, provider.Name)
	w := &world{ns: ns.Name, gw: types.NamespacedName{Namespace: provider.Name, Name: "direct"},
		shard: types.NamespacedName{Namespace: provider.Name, Name: "shard"}, churn: "churn"}
	for _, svc := range []string{"web", "web2"} {
		Expect(c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: w.ns},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": svc},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		})).To(Succeed())
	}
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "shardgate"},
		// The config's default controllerName (config.Default()).
		Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(config.DefaultControllerName)},
	}
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, class))).To(Succeed())
	Expect(c.Create(ctx, &shardgatev1alpha1.GatewayParameters{
		ObjectMeta: metav1.ObjectMeta{Name: "shard", Namespace: w.shard.Namespace},
		Spec:       shardgatev1alpha1.GatewayParametersSpec{Shard: &shardgatev1alpha1.ShardSpec{Domain: domain}},
	})).To(Succeed())
	listeners := []gatewayv1.Listener{{
		Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
		Hostname:      ptr.To(gatewayv1.Hostname("*." + domain)),
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}},
	}}
	Expect(c.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: w.shard.Name, Namespace: w.shard.Namespace},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "shardgate",
			Infrastructure: &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{
				Group: "shardgate.io", Kind: "GatewayParameters", Name: "shard",
			}},
			Listeners: listeners,
		},
	})).To(Succeed())
	Expect(c.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: w.gw.Name, Namespace: w.gw.Namespace},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "shardgate", Listeners: listeners},
	})).To(Succeed())
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("r%d", i)
		w.createRoute(ctx, c, name, host(name), "/", "web")
		w.routes = append(w.routes, name)
		w.xdsHosts = append(w.xdsHosts, host(name))
	}
	w.createRoute(ctx, c, w.churn, host("churn-0"), "/", "web")

	lh := func(name, owner string, dseq uint64, mutate func(*shardgatev1alpha1.LeaseHostSpec)) {
		o := &shardgatev1alpha1.LeaseHost{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
			Spec: shardgatev1alpha1.LeaseHostSpec{
				Lease:   shardgatev1alpha1.LeaseRef{Owner: owner, DSeq: dseq, GSeq: 1, OSeq: 1},
				Service: shardgatev1alpha1.ServiceRef{Name: "web", Port: 80},
				Path:    "/",
			},
		}
		mutate(&o.Spec)
		Expect(c.Create(ctx, o)).To(Succeed())
		w.lhs = append(w.lhs, name)
	}
	hostname := func(h string) func(*shardgatev1alpha1.LeaseHostSpec) {
		return func(s *shardgatev1alpha1.LeaseHostSpec) { s.Hostname = h }
	}
	lh("lh-a", "akash1alice", 1, hostname(host("a")))
	Eventually(reserved(ctx, c, w.ns, "lh-a")).Should(Equal("True/Reserved"))
	lh("lh-b", "akash1bob", 2, hostname(host("a")))   // another owner in alice's namespace: NamespaceOwnerMismatch
	lh("lh-c", "akash1alice", 3, hostname(host("a"))) // same owner, other deployment: Withheld
	lh("lh-d", "akash1alice", 4, func(s *shardgatev1alpha1.LeaseHostSpec) { s.Subdomain = "d" })
	lh("lh-e", "akash1alice", 5, func(s *shardgatev1alpha1.LeaseHostSpec) {
		s.Hostname = host("e")
		s.Service.Name = "missing" // the route exists and reports ResolvedRefs=False
	})
	w.shardHosts = append(w.shardHosts, host("a"), host("d"))
	return w
}

func (w *world) createRoute(ctx context.Context, c client.Client, name, hostname, path, svc string) {
	GinkgoHelper()
	Expect(c.Create(ctx, &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Namespace: ptr.To(gatewayv1.Namespace(w.gw.Namespace)), Name: gatewayv1.ObjectName(w.gw.Name)}}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(hostname)},
			Rules:     []gatewayv1.HTTPRouteRule{routeRule(path, svc)},
		},
	})).To(Succeed())
}

func routeRule(path, svc string) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
			Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(path),
		}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(svc), Port: ptr.To(gatewayv1.PortNumber(80)),
		}}}},
	}
}

// reserved is a LeaseHost's Reserved condition as "Status/Reason", once
// written for its current generation.
func reserved(ctx context.Context, c client.Client, ns, name string) func(Gomega) string {
	return func(g Gomega) string {
		var lh shardgatev1alpha1.LeaseHost
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lh)).To(Succeed())
		g.Expect(lh.Status.ObservedGeneration).To(Equal(lh.Generation))
		cond := meta.FindStatusCondition(lh.Status.Conditions, shardgatev1alpha1.ConditionReserved)
		g.Expect(cond).NotTo(BeNil())
		return string(cond.Status) + "/" + cond.Reason
	}
}

// settled: every LeaseHost made its decision, and every HTTPRoute of the
// namespace (ours and the generated ones) is Accepted by our Gateway for
// its current generation.
func (w *world) settled(ctx context.Context, c client.Client) func(Gomega) {
	return func(g Gomega) {
		want := map[string]string{
			"lh-a": "True/Reserved", "lh-b": "False/NamespaceOwnerMismatch", "lh-c": "False/Withheld",
			"lh-d": "True/Reserved", "lh-e": "True/Reserved",
		}
		for name, decision := range want {
			g.Expect(reserved(ctx, c, w.ns, name)(g)).To(Equal(decision), name)
		}
		var routes gatewayv1.HTTPRouteList
		g.Expect(c.List(ctx, &routes, client.InNamespace(w.ns))).To(Succeed())
		g.Expect(len(routes.Items)).To(BeNumerically(">=", len(w.routes)+1+3), "direct and generated routes")
		for _, r := range routes.Items {
			g.Expect(routeAccepted(&r)).To(BeTrue(), "HTTPRoute %s accepted for generation %d", r.Name, r.Generation)
		}
	}
}

func routeAccepted(r *gatewayv1.HTTPRoute) bool {
	for _, p := range r.Status.Parents {
		if string(p.ControllerName) != config.DefaultControllerName {
			continue
		}
		c := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted))
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == r.Generation
	}
	return false
}

// setChurnHost moves the churn route to hostname h (a merge patch of the
// spec: no conflict with status writes).
func (w *world) setChurnHost(ctx context.Context, c client.Client, h string) error {
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.churn}}
	patch := fmt.Appendf(nil, `{"spec":{"hostnames":[%q]}}`, h)
	return c.Patch(ctx, r, client.RawPatch(types.MergePatchType, patch))
}

// churner changes the churn route's hostname every interval until stopped.
type churner struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	n      int
	last   string // the last hostname the apiserver accepted
	errs   int
}

func startChurn(ctx context.Context, c client.Client, w *world, prefix string, interval time.Duration) *churner {
	ctx, cancel := context.WithCancel(ctx)
	ch := &churner{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ch.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := 1; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			h := host(fmt.Sprintf("%s-%d", prefix, i))
			// Generous: a loaded apiserver may take seconds to answer, and
			// a write that times out counts as a failure.
			rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
			err := w.setChurnHost(rctx, c, h)
			rcancel()
			if err != nil && ctx.Err() != nil {
				return // stopped mid-write: not a failure of the write
			}
			ch.mu.Lock()
			if err == nil {
				ch.n++
				ch.last = h
			} else {
				ch.errs++
			}
			ch.mu.Unlock()
		}
	}()
	return ch
}

// written is how many writes have succeeded so far.
func (ch *churner) written() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.n
}

// stop ends the churn and returns the last hostname written and how many
// writes succeeded and failed.
func (ch *churner) stop() (last string, ok, failed int) {
	ch.cancel()
	<-ch.done
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.last, ch.n, ch.errs
}

// dumps are the namespaces the running spec created; a spec that fails
// prints their objects.
var dumps testenv.Dumps

var _ = AfterEach(func() { dumps.Flush(context.Background(), GinkgoWriter, CurrentSpecReport().Failed()) })

// pause waits d, or less if ctx ends first: a retry's backoff.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ------------------------------------------------------------ status flaps

// flapWatch watches HTTPRoutes and LeaseHosts of a namespace for as long as
// it runs and records every condition of ours that goes from True to False
// (or disappears from an object that still exists). A broken watch is
// re-listed, so an apiserver outage loses no state change that is still
// visible afterwards.
type flapWatch struct {
	mu     sync.Mutex
	last   map[string]map[string]metav1.ConditionStatus // object → condition key → status
	flaps  []string
	events int
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func watchFlaps(cfg *rest.Config, ns string) *flapWatch {
	GinkgoHelper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: sgscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	f := &flapWatch{last: map[string]map[string]metav1.ConditionStatus{}, cancel: cancel}
	for _, list := range []client.ObjectList{&gatewayv1.HTTPRouteList{}, &shardgatev1alpha1.LeaseHostList{}} {
		f.wg.Add(1)
		go func(list client.ObjectList) {
			defer f.wg.Done()
			f.run(ctx, c, list, ns)
		}(list)
	}
	DeferCleanup(f.stop)
	return f
}

func (f *flapWatch) run(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string) {
	for ctx.Err() == nil {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			pause(ctx, 200*time.Millisecond) // the apiserver may be down: retry
			continue
		}
		items, _ := meta.ExtractList(l)
		for _, o := range items {
			f.observe(o.(client.Object))
		}
		wi, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}})
		if err != nil {
			pause(ctx, 200*time.Millisecond)
			continue
		}
		for ev := range wi.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				f.observe(obj)
			case watch.Deleted:
				f.mu.Lock()
				delete(f.last, objKey(obj))
				f.mu.Unlock()
			}
		}
		wi.Stop()
	}
}

func objKey(o client.Object) string {
	kind := "LeaseHost"
	if _, ok := o.(*gatewayv1.HTTPRoute); ok {
		kind = "HTTPRoute"
	}
	return kind + " " + o.GetNamespace() + "/" + o.GetName()
}

// conditions are an object's conditions of ours, by key.
func conditions(o client.Object) map[string]metav1.ConditionStatus {
	out := map[string]metav1.ConditionStatus{}
	switch o := o.(type) {
	case *gatewayv1.HTTPRoute:
		for _, p := range o.Status.Parents {
			if string(p.ControllerName) != config.DefaultControllerName {
				continue
			}
			ref := fmt.Sprintf("%s/%s", ptr.Deref(p.ParentRef.Namespace, ""), p.ParentRef.Name)
			if p.ParentRef.SectionName != nil {
				ref += "#" + string(*p.ParentRef.SectionName)
			}
			for _, c := range p.Conditions {
				out["parent "+ref+" "+c.Type] = c.Status
			}
		}
	case *shardgatev1alpha1.LeaseHost:
		for _, c := range o.Status.Conditions {
			out[c.Type] = c.Status
		}
		for _, s := range o.Status.Shards {
			for _, c := range s.Conditions {
				out["shard "+s.Name+" "+c.Type] = c.Status
			}
		}
	}
	return out
}

func (f *flapWatch) observe(o client.Object) {
	now := conditions(o)
	k := objKey(o)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events++
	for ck, was := range f.last[k] {
		if was != metav1.ConditionTrue {
			continue
		}
		switch is, ok := now[ck]; {
		case !ok:
			f.flaps = append(f.flaps, fmt.Sprintf("%s %s: True → absent (rv %s)", k, ck, o.GetResourceVersion()))
		case is == metav1.ConditionFalse:
			f.flaps = append(f.flaps, fmt.Sprintf("%s %s: True → False (rv %s)", k, ck, o.GetResourceVersion()))
		}
	}
	f.last[k] = now
}

func (f *flapWatch) stop() {
	f.cancel()
	f.wg.Wait()
}

// result returns the flaps recorded so far and how many object states were
// observed.
func (f *flapWatch) result() ([]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.flaps...), f.events
}

// ------------------------------------------------------------ xDS client

// xdsCA reads the CA every replica shares.
func xdsCA(ctx context.Context, c client.Client) *pki.CA {
	GinkgoHelper()
	var sec corev1.Secret
	Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: testenv.SystemNamespace, Name: manager.XDSCASecret}, &sec)
	}).Should(Succeed())
	ca, err := pki.ParseCA(sec.Data[pki.KeyCert], sec.Data[pki.KeyKey])
	Expect(err).NotTo(HaveOccurred())
	return ca
}

// rdsUpdate is one RouteConfiguration response.
type rdsUpdate struct {
	at      time.Time
	version string
	routes  map[string]*routev3.RouteConfiguration
}

// domains are every virtual host domain of an update.
func (u rdsUpdate) domains() map[string]bool {
	out := map[string]bool{}
	for _, rc := range u.routes {
		for _, vh := range rc.GetVirtualHosts() {
			for _, d := range vh.GetDomains() {
				out[d] = true
			}
		}
	}
	return out
}

// adsClient is an independent xDS client, the shared state-of-the-world
// one (xdstest.Sotw): one ADS stream over mTLS with a client certificate
// for the Gateway, subscribed to every Cluster and every
// RouteConfiguration (wildcard) and ACKing each response, as an Envoy
// would. It never reconnects: a stream that ends is recorded as ended.
type adsClient struct {
	*xdstest.Sotw
	target string
}

var adsSeq atomic.Int64

func connectADS(ca *pki.CA, gw types.NamespacedName, target string) *adsClient {
	GinkgoHelper()
	// The server certificate names localhost; we dial 127.0.0.1 itself.
	tlsCfg, err := xdstest.GatewayTLS(ca, gw)
	Expect(err).NotTo(HaveOccurred())
	c, err := xdstest.DialSotw(context.Background(), target, tlsCfg, xdstest.SotwOptions{
		Node:          &core.Node{Id: fmt.Sprintf("reliability-%d", adsSeq.Add(1)), Cluster: xdsserver.NodeGroup(gw)},
		Subscriptions: []xdstest.Subscription{{TypeURL: resourcev3.ClusterType}, {TypeURL: resourcev3.RouteType}},
	})
	Expect(err).NotTo(HaveOccurred())
	a := &adsClient{Sotw: c, target: target}
	DeferCleanup(a.Close)
	return a
}

// clusterUpdate is one Cluster response: the names it holds.
type clusterUpdate struct {
	at    time.Time
	names map[string]bool
}

// clusterUpdates returns the CDS responses so far.
func (a *adsClient) clusterUpdates() []clusterUpdate {
	var out []clusterUpdate
	for _, r := range a.Responses(resourcev3.ClusterType) {
		u := clusterUpdate{at: r.At, names: map[string]bool{}}
		for _, name := range r.Names {
			u.names[name] = true
		}
		out = append(out, u)
	}
	return out
}

// state returns the updates so far and the error that ended the stream
// (nil while it is up).
func (a *adsClient) state() ([]rdsUpdate, error) {
	var out []rdsUpdate
	for _, r := range a.Responses(resourcev3.RouteType) {
		u := rdsUpdate{at: r.At, version: r.Version, routes: map[string]*routev3.RouteConfiguration{}}
		for name, m := range r.Resources {
			if rc, ok := m.(*routev3.RouteConfiguration); ok {
				u.routes[name] = rc
			}
		}
		out = append(out, u)
	}
	return out, a.Err()
}

// latest is the last update (zero if none).
func (a *adsClient) latest() rdsUpdate {
	us, _ := a.state()
	if len(us) == 0 {
		return rdsUpdate{}
	}
	return us[len(us)-1]
}

// serves asserts that the stream is up and its latest update serves every
// hostname.
func (a *adsClient) serves(hosts ...string) func(Gomega) {
	return func(g Gomega) {
		us, err := a.state()
		g.Expect(err).NotTo(HaveOccurred(), "ADS stream to %s ended", a.target)
		g.Expect(us).NotTo(BeEmpty(), "no RouteConfiguration from %s", a.target)
		d := us[len(us)-1].domains()
		for _, h := range hosts {
			g.Expect(d).To(HaveKey(h), "RouteConfiguration from %s", a.target)
		}
	}
}

// sameRoutes compares two RouteConfiguration sets by content.
func sameRoutes(a, b map[string]*routev3.RouteConfiguration) bool {
	if len(a) != len(b) {
		return false
	}
	for name, rc := range a {
		if !proto.Equal(rc, b[name]) {
			return false
		}
	}
	return true
}
