package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one child process started by the harness.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	once sync.Once
}

// startProcess starts bin with args in its own process group, logging to
// dir/logs/<name>.log. The child is sent SIGKILL if the test binary dies.
func startProcess(dir, name, bin string, args []string, env []string) (*Process, error) {
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the child's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and its wait error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process (not its group).
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// the group. It returns the wait error of a process that exited on its own
// accord after SIGTERM as nil.
func (p *Process) Stop(grace time.Duration) error {
	var result error
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
			result = fmt.Errorf("%s (pid %d) ignored SIGTERM for %s and was killed", p.Name, pgid, grace)
		}
		// Children that escaped into the group are removed too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
	return result
}

// Tail returns the last n lines of the process log, for failure messages.
func (p *Process) Tail(n int) string { return tailFile(p.LogPath, n) }

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// registryRoot holds one directory per live harness: <owner pid>-<n>, which
// contains the harness's working directory path. reap kills the processes of
// harnesses whose owner has died.
func registryRoot() string { return filepath.Join(os.TempDir(), "shardgate-testenv") }

func register(workDir string) (string, error) {
	root := registryRoot()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(root, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.WriteString(workDir)
	return f.Name(), err
}

// reap kills processes whose command line mentions the working directory of
// a harness whose test binary is gone, and removes those directories.
func reap() {
	entries, err := os.ReadDir(registryRoot())
	if err != nil {
		return
	}
	for _, e := range entries {
		owner, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(owner)
		if !ok || err != nil || alive(pid) {
			continue
		}
		entry := filepath.Join(registryRoot(), e.Name())
		data, err := os.ReadFile(entry)
		if err == nil && len(data) > 0 {
			workDir := string(data)
			for _, p := range processesMentioning(workDir) {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			_ = os.RemoveAll(workDir)
		}
		_ = os.Remove(entry)
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func processesMentioning(s string) []int {
	procs, _ := os.ReadDir("/proc")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), s) {
			out = append(out, pid)
		}
	}
	return out
}
