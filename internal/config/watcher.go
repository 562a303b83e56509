package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
)

const (
	// defaultDebounce coalesces the burst of events one save or one
	// ConfigMap update produces.
	defaultDebounce = 100 * time.Millisecond
	// defaultPollInterval is the re-stat fallback for missed events, and the
	// only mechanism if fsnotify cannot be set up.
	defaultPollInterval = 10 * time.Second
	// configMapDataLink is the symlink a Kubernetes ConfigMap/Secret volume
	// swaps atomically on every update.
	configMapDataLink = "..data"
)

// Watcher holds the current configuration of one file and reloads it when the
// file changes. Create it with NewWatcher, then run Run (or Start) in a
// goroutine. All methods are safe for concurrent use.
type Watcher struct {
	path string // as given; used for loading and in messages
	dir  string // directory watched
	base string // file name inside dir
	log  logr.Logger

	debounce     time.Duration
	pollInterval time.Duration

	cur      atomic.Pointer[Config]
	lastErr  atomic.Pointer[error]
	failures atomic.Uint64
	reloads  atomic.Uint64 // reload attempts, successful or not

	ready chan struct{} // closed once Run has set up watching

	mu      sync.Mutex
	subs    []chan Config
	started bool
	stopped bool

	stamp fileStamp // owned by the Run goroutine after NewWatcher returns
}

// NewWatcher loads the file at path once and returns a Watcher holding it.
// It returns the load error if that first load fails. Nothing is watched
// until Run is called.
func NewWatcher(path string, log logr.Logger) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	stamp := statFile(path)
	cfg, err := Load(path)
	if err != nil {
		recordLoad(false, time.Time{})
		return nil, err
	}
	recordLoad(true, time.Now())
	w := &Watcher{
		path:         path,
		dir:          filepath.Dir(abs),
		base:         filepath.Base(abs),
		log:          log,
		debounce:     defaultDebounce,
		pollInterval: defaultPollInterval,
		stamp:        stamp,
		ready:        make(chan struct{}),
	}
	w.cur.Store(&cfg)
	return w, nil
}

// Current returns the last successfully loaded configuration. It is cheap
// (one atomic load). Treat the result as read-only (see Config).
func (w *Watcher) Current() Config {
	return *w.cur.Load()
}

// LastError returns the error of the most recent reload attempt, or nil if
// it succeeded (or none has been made since NewWatcher). While it is non-nil,
// Current still returns the last good configuration.
func (w *Watcher) LastError() error {
	if p := w.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// ReloadFailures returns how many reload attempts have failed since
// NewWatcher.
func (w *Watcher) ReloadFailures() uint64 {
	return w.failures.Load()
}

// Subscribe returns a channel that receives the new configuration each time a
// reload yields one that differs (reflect.DeepEqual) from the previous one.
// The channel has a buffer of one and only the latest value is kept: a slow
// reader misses intermediate values, never the last one, and never blocks
// the watcher. To combine with the initial value without missing a change,
// call Subscribe first, then Current. The channel is closed when Run returns.
func (w *Watcher) Subscribe() <-chan Config {
	ch := make(chan Config, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		close(ch)
		return ch
	}
	w.subs = append(w.subs, ch)
	return ch
}

// Start is Run; it makes a Watcher a controller-runtime manager.Runnable.
func (w *Watcher) Start(ctx context.Context) error { return w.Run(ctx) }

// NeedLeaderElection returns false: every replica needs the current
// configuration (for example the block list), not just the leader.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Run watches the file until ctx is done, then returns nil. It watches the
// file's directory, so rename-replace saves and Kubernetes ConfigMap volume
// updates (an atomic swap of the "..data" symlink) are seen, and it re-stats
// the file periodically in case an event is missed. If fsnotify cannot be
// set up (for example the inotify limit is reached) it logs that and relies
// on polling alone. Run may be called only once.
func (w *Watcher) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("config: Watcher.Run called more than once")
	}
	w.started = true
	w.mu.Unlock()
	defer w.closeSubscribers()

	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if fw, err := fsnotify.NewWatcher(); err != nil {
		w.log.Error(err, "cannot watch the config file; falling back to polling", "path", w.path, "interval", w.pollInterval)
	} else {
		defer fw.Close()
		if err := fw.Add(w.dir); err != nil {
			w.log.Error(err, "cannot watch the config directory; falling back to polling", "dir", w.dir, "interval", w.pollInterval)
		} else {
			events, watchErrs = fw.Events, fw.Errors
		}
	}

	// Pick up anything that changed between NewWatcher and the watch starting.
	w.reloadIfChanged()
	close(w.ready)

	poll := time.NewTicker(w.pollInterval)
	defer poll.Stop()
	var debounce *time.Timer
	var debounceC <-chan time.Time
	defer func() {
		if debounce != nil {
			debounce.Stop()
		}
	}()

	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				w.log.Info("config file watch stopped; falling back to polling", "path", w.path)
				events, watchErrs = nil, nil
				continue
			}
			if !w.relevant(ev) {
				continue
			}
			if debounce == nil {
				debounce = time.NewTimer(w.debounce)
			} else {
				debounce.Reset(w.debounce)
			}
			debounceC = debounce.C
		case err, ok := <-watchErrs:
			if !ok {
				events, watchErrs = nil, nil
				continue
			}
			w.log.Error(err, "config file watch error", "dir", w.dir)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.reload() // events were lost
			}
		case <-debounceC:
			debounceC = nil
			w.reload()
		case <-poll.C:
			w.reloadIfChanged()
		}
	}
}

// relevant reports whether ev may have changed the file's content: a write,
// create, rename or remove of the file itself or of the ConfigMap "..data"
// symlink.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Rename) && !ev.Has(fsnotify.Remove) {
		return false
	}
	name := filepath.Base(ev.Name)
	return name == w.base || name == configMapDataLink
}

// reloadIfChanged reloads if the file's identity, size or mtime differs from
// what the last load saw.
func (w *Watcher) reloadIfChanged() {
	if statFile(w.path).equal(w.stamp) {
		return
	}
	w.reload()
}

// reload loads the file; on success it publishes the result if it differs
// from the current configuration, on failure it keeps the current one.
func (w *Watcher) reload() {
	// Stat before reading: if the file changes while it is read, the next
	// poll sees a different stamp and reads it again.
	w.stamp = statFile(w.path)
	cfg, err := Load(w.path)
	defer w.reloads.Add(1)
	if err != nil {
		w.failures.Add(1)
		w.lastErr.Store(&err)
		recordLoad(false, time.Time{})
		// One line: the file and why. The last good configuration stays
		// in force, so this is no programming error and gets no stack.
		w.log.Error(err, "config reload failed", "file", w.path)
		return
	}
	w.lastErr.Store(nil)
	recordLoad(true, time.Now())
	old := w.cur.Load()
	if reflect.DeepEqual(*old, cfg) {
		w.log.V(1).Info("config file changed but its content did not", "path", w.path)
		return
	}
	w.cur.Store(&cfg)
	w.log.Info("config reloaded", "path", w.path, "changedKeys", changedKeys(*old, cfg),
		"blockedHostnames", len(cfg.BlockedHostnames))
	w.notify(cfg)
}

func (w *Watcher) notify(cfg Config) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.subs {
		// Drop an unread older value, then send. Only this goroutine sends,
		// under mu, so the send finds room; the default is belt and braces.
		select {
		case <-ch:
		default:
		}
		select {
		case ch <- cfg:
		default:
		}
	}
}

func (w *Watcher) closeSubscribers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for _, ch := range w.subs {
		close(ch)
	}
	w.subs = nil
}

// changedKeys lists the top-level keys whose values differ.
func changedKeys(a, b Config) []string {
	var keys []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := range t.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			keys = append(keys, jsonName(t.Field(i)))
		}
	}
	return keys
}

// fileStamp identifies one version of a file well enough to notice that it
// changed: which file (device and inode, through symlinks), its size and its
// modification time.
type fileStamp struct {
	info os.FileInfo // nil if stat failed
}

func statFile(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{info: info}
}

func (s fileStamp) equal(o fileStamp) bool {
	if s.info == nil || o.info == nil {
		return s.info == nil && o.info == nil
	}
	return os.SameFile(s.info, o.info) && s.info.Size() == o.info.Size() && s.info.ModTime().Equal(o.info.ModTime())
}
