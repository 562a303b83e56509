package testenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shardgate/shardgate/internal/scheme"
)

// Mode chooses how much of a cluster the harness runs.
type Mode string

const (
	// Envtest runs kube-apiserver and etcd only.
	Envtest Mode = "envtest"
	// Cluster adds kube-controller-manager, kube-scheduler, KWOK with one
	// fake Node, and the MetalLB controller.
	Cluster Mode = "cluster"
)

const (
	// ServiceCIDR is the ClusterIP range: loopback, so that no ClusterIP can
	// ever lead traffic off the machine.
	ServiceCIDR = "127.96.0.0/16"
	// PodCIDR is where KWOK takes Pod IPs from. EndpointSlices refuse
	// loopback addresses, so it is not loopback; nothing may dial it.
	PodCIDR = "10.244.0.0/16"
	// NodeName is the one fake Node in cluster mode.
	NodeName = "kwok-node-0"
	// SystemNamespace is shardgate's own namespace.
	SystemNamespace = "shardgate-system"
	// MetalLBNamespace is where the MetalLB controller and its pools live.
	MetalLBNamespace = "metallb-system"
	// DefaultPoolName is the pool Options.DefaultPool creates.
	DefaultPoolName = "test-pool"
	// DefaultPoolRange is a loopback pool: MetalLB assigns from it, and
	// nothing in the tests ever sends traffic to it.
	DefaultPoolRange = "127.240.0.0/28"
)

// Pool is a MetalLB IPAddressPool the harness creates.
type Pool struct {
	Name      string
	Addresses []string
}

// Options configure Start.
type Options struct {
	Mode Mode
	// MetalLB starts the MetalLB controller in envtest mode too.
	MetalLB bool
	// Pools are created after MetalLB is up. DefaultPool adds
	// DefaultPoolName with DefaultPoolRange.
	Pools       []Pool
	DefaultPool bool
	// WorkDir holds certificates, logs, the kubeconfig and etcd's data.
	// Empty means a new temporary directory, removed by Stop.
	WorkDir string
	// ExtraCRDPaths are installed with the product's CRDs.
	ExtraCRDPaths []string
	// CertManager, when set, installs cert-manager's CRDs and starts
	// Pebble and cert-manager's controller (Env.Pebble).
	CertManager *CertManagerOptions
}

// Env is a running control plane.
type Env struct {
	Mode       Mode
	Config     *rest.Config
	Client     client.Client
	Scheme     *runtime.Scheme
	Kubeconfig string
	Dir        string
	Root       string
	// Pebble is the ACME test server Options.CertManager starts.
	Pebble *Pebble

	env       *envtest.Environment
	procs     []*Process
	registry  string
	ownDir    bool
	cleanups  []func()
	stopOnce  sync.Once
	stopError error
	stopping  bool
	// supervisors are the goroutines of startRestarting; Stop waits for them.
	supervisors sync.WaitGroup
	mu          sync.Mutex
}

// Start boots a control plane. On error everything already started is
// stopped again.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Mode == "" {
		opts.Mode = Envtest
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	if missing := MissingAssets(root); len(missing) > 0 {
		return nil, fmt.Errorf("test control plane assets missing (%s): run `make envtest-assets`", strings.Join(missing, ", "))
	}
	if opts.CertManager != nil {
		if missing := MissingCertManagerAssets(root); len(missing) > 0 {
			return nil, fmt.Errorf("cert-manager test assets missing (%s): run `make envtest-assets`", strings.Join(missing, ", "))
		}
	}
	reap()

	e := &Env{Mode: opts.Mode, Scheme: scheme.New(), Root: root, Dir: opts.WorkDir}
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "shardgate-testenv-"); err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		e.ownDir = true
	}
	if e.registry, err = register(e.Dir); err != nil {
		return nil, fmt.Errorf("testenv: register: %w", err)
	}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	if err := e.startAPIServer(opts); err != nil {
		return nil, err
	}
	// The controller keeps its xDS CA and leader Lease here (the Helm
	// chart creates it on a real cluster).
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("testenv: create %s: %w", SystemNamespace, err)
	}
	if opts.Mode == Cluster {
		if err := e.startClusterComponents(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Mode == Cluster || opts.MetalLB {
		pools := opts.Pools
		if opts.DefaultPool {
			pools = append(pools, Pool{Name: DefaultPoolName, Addresses: []string{DefaultPoolRange}})
		}
		if err := e.startMetalLB(ctx, pools); err != nil {
			return nil, err
		}
	}
	if opts.CertManager != nil {
		if err := e.startCertManager(ctx, *opts.CertManager); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) startAPIServer(opts Options) error {
	k8s := filepath.Join(e.Root, "bin", "k8s")
	crds := append([]string{
		filepath.Join(e.Root, "crds"),
		filepath.Join(e.Root, "bin", "crds", "gateway-api", "experimental"),
		filepath.Join(e.Root, "bin", "crds", "metallb"),
	}, opts.ExtraCRDPaths...)
	if opts.CertManager != nil {
		crds = append(crds, filepath.Join(e.Root, "bin", "crds", "cert-manager"))
	}
	e.env = &envtest.Environment{
		Scheme:                e.Scheme,
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: k8s,
		// envtest's defaults (20 s to start each component, 10 s for the
		// CRDs to be established) are missed on a loaded machine, and a
		// start that times out is killed and retried, so it never gets
		// there. These bounds only matter when something is broken.
		ControlPlaneStartTimeout: 3 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: 2 * time.Minute},
	}
	cp := &e.env.ControlPlane
	cp.Etcd = &envtest.Etcd{Path: filepath.Join(k8s, "etcd"), DataDir: filepath.Join(e.Dir, "etcd")}
	cp.APIServer = &envtest.APIServer{Path: filepath.Join(k8s, "kube-apiserver"), CertDir: filepath.Join(e.Dir, "apiserver")}
	for _, d := range []string{cp.Etcd.DataDir, cp.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
	}
	args := cp.APIServer.Configure()
	args.Set("service-cluster-ip-range", ServiceCIDR)
	args.Set("endpoint-reconciler-type", "none")
	cfg, err := e.env.Start()
	if err != nil {
		return fmt.Errorf("testenv: start kube-apiserver and etcd: %w", err)
	}
	// A generous client: tests create thousands of objects.
	cfg.QPS, cfg.Burst = 1000, 2000
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("testenv: client: %w", err)
	}
	admin, err := e.env.AddUser(envtest.User{Name: "testenv-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("testenv: admin user: %w", err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("testenv: kubeconfig: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kc, 0o600); err != nil {
		return fmt.Errorf("testenv: write kubeconfig: %w", err)
	}
	return nil
}

func (e *Env) startClusterComponents(ctx context.Context) error {
	k8s := filepath.Join(e.Root, "bin", "k8s")
	certDir := e.env.ControlPlane.APIServer.CertDir
	caFile := filepath.Join(certDir, "ca.crt")
	if err := os.WriteFile(caFile, e.env.ControlPlane.APIServer.SecureServing.CA, 0o644); err != nil {
		return fmt.Errorf("testenv: write CA: %w", err)
	}
	saKey := filepath.Join(certDir, "sa-signer.key")
	saCert := filepath.Join(certDir, "sa-signer.crt")
	if _, err := e.StartProcess("kube-controller-manager", filepath.Join(k8s, "kube-controller-manager"), []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--controllers=*",
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + caFile,
		"--cluster-signing-cert-file=" + saCert,
		"--cluster-signing-key-file=" + saKey,
		"--allocate-node-cidrs=false",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--concurrent-service-endpoint-syncs=10",
		// The node is KWOK's, whose lease renewals queue behind its pod
		// updates: on a loaded machine they can lapse past the default
		// 50 s, and the node lifecycle controller then marks every pod
		// NotReady, which KWOK's pod-ready stage (Pending pods only) never
		// undoes. Only a node gone for 5 minutes is unhealthy here.
		"--node-monitor-grace-period=5m",
	}, nil); err != nil {
		return err
	}
	if _, err := e.StartProcess("kube-scheduler", filepath.Join(k8s, "kube-scheduler"), []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
	}, nil); err != nil {
		return err
	}
	if err := e.createNode(ctx); err != nil {
		return err
	}
	stages, err := e.kwokStages()
	if err != nil {
		return err
	}
	kwokPort, err := FreePort()
	if err != nil {
		return err
	}
	// KWOK v0.8.0 builds each stage's CEL environment on first use, from
	// the node and pod workers at once, and easycel's type cache is a
	// package map written without a lock: a start-up can die of
	// "concurrent map writes" (exit status 2) before the node is Ready.
	if err := e.startRestarting("kwok", filepath.Join(k8s, "kwok"), []string{
		"--kubeconfig=" + e.Kubeconfig,
		"-c", stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=" + PodCIDR,
		"--node-ip=10.244.255.254",
		"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
	}, nil, kwokRestarts); err != nil {
		return err
	}
	return e.waitFor(ctx, 3*time.Minute, "node "+NodeName+" Ready", func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := e.Client.Get(ctx, client.ObjectKey{Name: NodeName}, &n); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// kwokStages concatenates the staged KWOK stage files into one config.
func (e *Env) kwokStages() (string, error) {
	dir := filepath.Join(e.Root, "bin", "kwok-stages")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("testenv: no KWOK stages in %s: run `make envtest-assets`", dir)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
		b.WriteString("---\n")
		b.Write(data)
		b.WriteString("\n")
	}
	out := filepath.Join(e.Dir, "kwok-stages.yaml")
	return out, os.WriteFile(out, []byte(b.String()), 0o644)
}

func (e *Env) createNode(ctx context.Context) error {
	qty := func(s string) resource.Quantity { return resource.MustParse(s) }
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    qty("64"),
		corev1.ResourceMemory: qty("256Gi"),
		corev1.ResourcePods:   qty("2000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"kubernetes.io/hostname": NodeName, "type": "kwok", "kubernetes.io/os": "linux"},
		},
		Spec:   corev1.NodeSpec{PodCIDR: "10.244.0.0/24", PodCIDRs: []string{"10.244.0.0/24"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if err := e.Client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: create node: %w", err)
	}
	return nil
}

func (e *Env) startMetalLB(ctx context.Context, pools []Pool) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MetalLBNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: metallb namespace: %w", err)
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "metallb-memberlist", Namespace: MetalLBNamespace},
		StringData: map[string]string{"secretkey": base64.RawStdEncoding.EncodeToString(key)},
	}
	if err := e.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: metallb memberlist secret: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	if _, err := e.StartProcess("metallb-controller", filepath.Join(e.Root, "bin", "k8s", "metallb-controller"), []string{
		"--namespace=" + MetalLBNamespace,
		"--webhook-mode=disabled",
		"--disable-cert-rotation",
		"--port=" + strconv.Itoa(port),
		"--log-level=info",
	}, []string{"KUBECONFIG=" + e.Kubeconfig}); err != nil {
		return err
	}
	for _, p := range pools {
		if err := e.CreatePool(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// CreatePool creates a MetalLB IPAddressPool (avoidBuggyIPs, so .0 and
// .255 are never handed out) and waits until MetalLB reports its status.
func (e *Env) CreatePool(ctx context.Context, p Pool) error {
	pool := &metallbv1beta1.IPAddressPool{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: MetalLBNamespace},
		Spec:       metallbv1beta1.IPAddressPoolSpec{Addresses: p.Addresses, AvoidBuggyIPs: true},
	}
	if err := e.Client.Create(ctx, pool); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: create pool %s: %w", p.Name, err)
	}
	return e.waitFor(ctx, 3*time.Minute, "MetalLB status of pool "+p.Name, func(ctx context.Context) (bool, error) {
		var got metallbv1beta1.IPAddressPool
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pool), &got); err != nil {
			return false, err
		}
		return got.Status.AvailableIPv4+got.Status.AssignedIPv4 > 0, nil
	})
}

// StartProcess starts a process that Stop will stop. It fails fast if the
// process exits within the first 200ms, with the tail of its log.
func (e *Env) StartProcess(name, bin string, args, env []string) (*Process, error) {
	p, err := e.spawn(name, bin, args, env)
	if err != nil {
		return nil, err
	}
	select {
	case <-p.Done():
		_, werr := p.Exited()
		return nil, fmt.Errorf("testenv: %s exited at start (%v):\n%s", name, werr, p.Tail(30))
	case <-time.After(200 * time.Millisecond):
	}
	return p, nil
}

// spawn starts a process and adds it to those Stop stops, unless Stop has
// begun.
func (e *Env) spawn(name, bin string, args, env []string) (*Process, error) {
	p, err := startProcess(e.Dir, name, bin, args, env)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		_ = p.Stop(time.Second)
		return nil, fmt.Errorf("testenv: %s not started: the harness is stopping", name)
	}
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	return p, nil
}

// kwokRestarts bounds how often the harness starts KWOK again.
const kwokRestarts = 5

// startRestarting starts a process and, until Stop, starts it again each
// time it exits, at most restarts times in all. It is for a component whose
// own faults are not under test: one whose start-up is known to crash at
// random. Each exit is reported on stderr with the end of its log, so a
// crash that keeps coming back is still seen.
func (e *Env) startRestarting(name, bin string, args, env []string, restarts int) error {
	p, err := e.spawn(name, bin, args, env)
	if err != nil {
		return err
	}
	e.supervisors.Add(1)
	go func() {
		defer e.supervisors.Done()
		for {
			<-p.Done()
			if e.isStopping() {
				return
			}
			_, werr := p.Exited()
			if restarts == 0 {
				fmt.Fprintf(os.Stderr, "testenv: %s exited (%v), out of restarts:\n%s\n", name, werr, p.Tail(60))
				return
			}
			restarts--
			fmt.Fprintf(os.Stderr, "testenv: %s exited (%v), starting it again:\n%s\n", name, werr, p.Tail(60))
			next, err := e.spawn(name, bin, args, env)
			if err != nil {
				fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
				return
			}
			p = next
		}
	}()
	return nil
}

func (e *Env) isStopping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopping
}

// Processes lists the processes the harness started, in start order.
func (e *Env) Processes() []*Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Process(nil), e.procs...)
}

// Defer registers f to run at Stop, before the control plane stops: the
// place to cancel informers and managers that watch the apiserver.
func (e *Env) Defer(f func()) {
	e.mu.Lock()
	e.cleanups = append(e.cleanups, f)
	e.mu.Unlock()
}

// Stop stops everything Start started, in reverse order. It is safe to call
// more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		var errs []error
		e.mu.Lock()
		e.stopping = true
		cleanups, procs := e.cleanups, e.procs
		e.mu.Unlock()
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		for i := len(procs) - 1; i >= 0; i-- {
			// A process that outlives its SIGTERM grace is killed; that
			// is not a failure of the test (MetalLB drains slowly under
			// load), and nothing is left running either way.
			_ = procs[i].Stop(10 * time.Second)
		}
		// Every supervised process has stopped, and no new one can
		// start: each supervisor returns.
		e.supervisors.Wait()
		if e.env != nil {
			if err := e.env.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("testenv: stop kube-apiserver and etcd: %w", err))
			}
		}
		// Anything still mentioning our directory is ours and must go.
		for _, pid := range processesMentioning(e.Dir) {
			_ = killPID(pid)
		}
		if e.ownDir && len(errs) == 0 {
			_ = os.RemoveAll(e.Dir)
		}
		if e.registry != "" {
			_ = os.Remove(e.registry)
		}
		e.stopError = errors.Join(errs...)
	})
	return e.stopError
}

func (e *Env) waitFor(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("testenv: timed out after %s waiting for %s", timeout, what)
			if last != nil {
				msg += fmt.Sprintf(" (last error: %v)", last)
			}
			for _, p := range e.Processes() {
				if done, werr := p.Exited(); done {
					msg += fmt.Sprintf("\n%s exited: %v\n%s", p.Name, werr, p.Tail(20))
				}
			}
			return errors.New(msg)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StartT is Start for a plain Go test: it skips or fails t as Require does
// when the assets are missing, fails t when the control plane does not
// start, and stops it when t ends.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.CertManager != nil {
		RequireCertManager(t)
	} else {
		Require(t)
	}
	env, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}
