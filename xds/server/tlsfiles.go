package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// DefaultFileWatchInterval is how often NewFileCredentials re-reads the
// files besides watching them, in case a change event is missed, unless
// FileTLS.WatchInterval says otherwise.
const DefaultFileWatchInterval = 10 * time.Second

// FileTLS names the PEM files of the xDS server's TLS (the config key
// xds.tls).
type FileTLS struct {
	CertFile, KeyFile, CAFile string
	// WatchInterval is how often the files are re-read besides being
	// watched; zero takes DefaultFileWatchInterval.
	WatchInterval time.Duration
}

// secretDataLink is the symlink a Kubernetes Secret or ConfigMap volume
// swaps atomically on every update.
const secretDataLink = "..data"

// NewFileCredentials serves the xDS server's TLS from PEM files (the
// config key xds.tls) and follows them while Start runs: the certificate
// and key through controller-runtime's certwatcher (fsnotify on the two
// files, re-added when a Secret volume update replaces them, and its own
// re-read every WatchInterval), and fsnotify on the three files'
// directories (which sees in-place writes, rename-replace saves and the
// "..data" symlink swap of a Secret volume) with a re-read of all three
// once those watches are in place and every WatchInterval.
// A change loads the holder at once, so the next handshake gets the new
// certificate or trust bundle; connections already open keep theirs.
func NewFileCredentials(ctx context.Context, files FileTLS, log logr.Logger) (*Credentials, error) {
	certFile, keyFile, caFile := files.CertFile, files.KeyFile, files.CAFile
	cw, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("xds.tls certFile %s, keyFile %s: %w", certFile, keyFile, err)
	}
	interval := files.WatchInterval
	if interval <= 0 {
		interval = DefaultFileWatchInterval
	}
	cw.WithWatchInterval(interval)
	load := func(context.Context, bool) (*tls.Certificate, *x509.CertPool, error) {
		cert, err := cw.GetCertificate(nil)
		if err != nil {
			return nil, nil, fmt.Errorf("xds.tls: %w", err)
		}
		if cert == nil {
			return nil, nil, fmt.Errorf("xds.tls: no certificate loaded from %s", certFile)
		}
		pool, _, err := readCAPool(caFile)
		if err != nil {
			return nil, nil, err
		}
		c := *cert // Credentials may set Leaf; the watcher's copy stays its own
		return &c, pool, nil
	}
	c, err := NewCredentials(ctx, load, log)
	if err != nil {
		return nil, err
	}
	c.watch = func(ctx context.Context, changed func()) {
		watchFiles(ctx, cw, files, interval, log, changed)
	}
	return c, nil
}

// watchFiles calls changed whenever the certificate pair (through cw) or
// the CA bundle changes, until ctx ends. Besides certwatcher's own watches
// (added when its Start gets to it), it watches the directories of the
// three files itself and, once those watches are in place, reads the files
// again: a rotation between the first load and the watches is not missed
// until the next interval.
func watchFiles(ctx context.Context, cw *certwatcher.CertWatcher, files FileTLS, interval time.Duration, log logr.Logger, changed func()) {
	cw.RegisterCallback(func(tls.Certificate) { changed() })
	go func() {
		if err := cw.Start(ctx); err != nil {
			// The watches and re-reads below still call ReadCertificate.
			log.Error(err, "cannot watch the xds.tls certificate files; re-reading them every interval", "interval", interval)
		}
	}()

	caFile := files.CAFile
	_, lastCA, _ := readCAPool(caFile)
	// reported is the read error last logged ("" once the bundle reads
	// well again), so that a broken bundle is logged once.
	reported := ""
	// caChanged re-reads the bundle and loads it if it changed. A bundle
	// that does not read is kept out (the one in force stays); the
	// periodic re-read (report) logs it, the watch events do not: an
	// in-place write is seen truncated for a moment.
	caChanged := func(report bool) {
		_, data, err := readCAPool(caFile)
		if err != nil {
			if report && err.Error() != reported {
				reported = err.Error()
				log.Error(err, "the xds.tls client CA bundle cannot be read; the one loaded before stays in force")
			}
			return
		}
		reported = ""
		if bytes.Equal(data, lastCA) {
			return
		}
		lastCA = data
		changed()
	}
	certChanged := func() {
		if err := cw.ReadCertificate(); err != nil {
			log.Error(err, "re-reading the xds.tls certificate files failed; keeping the current certificate")
		}
	}

	// What each watched directory's events may change: a file's base
	// name, or the "..data" link a Secret volume update swaps.
	type watched struct{ ca, cert bool }
	byDir := map[string]*watched{}
	note := func(file string, ca bool) {
		dir := filepath.Clean(filepath.Dir(file))
		w := byDir[dir]
		if w == nil {
			w = &watched{}
			byDir[dir] = w
		}
		if ca {
			w.ca = true
		} else {
			w.cert = true
		}
	}
	note(files.CertFile, false)
	note(files.KeyFile, false)
	note(caFile, true)
	bases := map[string]bool{filepath.Base(files.CertFile): true, filepath.Base(files.KeyFile): true}
	caBase := filepath.Base(caFile)

	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if fw, err := fsnotify.NewWatcher(); err != nil {
		log.Error(err, "cannot watch the xds.tls files; re-reading them every interval", "interval", interval)
	} else {
		defer fw.Close()
		added := false
		for dir := range byDir {
			if err := fw.Add(dir); err != nil {
				log.Error(err, "cannot watch an xds.tls directory; re-reading its files every interval", "dir", dir, "interval", interval)
				continue
			}
			added = true
		}
		if added {
			events, watchErrs = fw.Events, fw.Errors
		}
	}
	// The watches are in place: what changed since the first load is read
	// now; what changes from here on is an event.
	caChanged(false)
	certChanged()

	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events, watchErrs = nil, nil
				continue
			}
			w := byDir[filepath.Clean(filepath.Dir(ev.Name))]
			if w == nil {
				continue
			}
			name := filepath.Base(ev.Name)
			if w.ca && (name == caBase || name == secretDataLink) {
				caChanged(false)
			}
			if w.cert && (bases[name] || name == secretDataLink) {
				certChanged()
			}
		case err, ok := <-watchErrs:
			if !ok {
				events, watchErrs = nil, nil
				continue
			}
			log.Error(err, "xds.tls file watch error")
		case <-tick.C:
			caChanged(true)
			// certwatcher polls too, but not if its Start failed.
			certChanged()
		}
	}
}

// readCAPool reads a PEM bundle of client CAs.
func readCAPool(caFile string) (*x509.CertPool, []byte, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, fmt.Errorf("xds.tls.caFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("xds.tls.caFile %s: no certificate", caFile)
	}
	return pool, caPEM, nil
}
