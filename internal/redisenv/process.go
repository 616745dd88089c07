package redisenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// procServer is one redis-server (or Sentinel) child process. Node control (control.go) kills
// it, starts it again from the same configuration on the same port, pauses and resumes it; mu
// guards the process fields that a start replaces.
type procServer struct {
	bin      string
	args     []string // after bin: the configuration file, then "--sentinel" for a Sentinel
	dir      string   // temporary directory holding the config, redis.log, stdout.log and any AOF
	port     int
	password string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current process has exited
	stopped bool          // stop ran: the directory is gone, start refuses
}

func (s *procServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// proc returns the current process and its exit channel.
func (s *procServer) proc() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.done
}

func (s *procServer) exited() bool {
	_, done := s.proc()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// logTail returns the last lines of the server's log files, for error messages.
func (s *procServer) logTail() string { return dirLogTail(s.dir) }

// dirLogTail returns the last 2 KiB of redis.log and stdout.log in dir.
func dirLogTail(dir string) string {
	var b strings.Builder
	for _, name := range []string{"stdout.log", "redis.log"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		if len(data) > 2048 {
			data = data[len(data)-2048:]
		}
		fmt.Fprintf(&b, "\n--- %s ---\n%s", filepath.Join(dir, name), strings.TrimRight(string(data), "\n"))
	}
	return b.String()
}

// spawn starts the process from the server's configuration without waiting for it. The caller
// holds mu.
func (s *procServer) spawn() error {
	out, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer out.Close()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr(!processNoPdeathsig)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: start %s: %w", ErrUnavailable, s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	writeRecord(record{Kind: "process", PID: cmd.Process.Pid, Dir: s.dir, Addr: s.addr()})
	return nil
}

// stop ends the server's process group: SIGTERM (and SIGCONT, should it be paused), then SIGKILL
// after grace or when ctx ends. It removes the temporary directory and the sweep record; a later
// start fails.
func (s *procServer) stop(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	pid := s.cmd.Process.Pid
	select {
	case <-s.done:
	default:
		_ = signalGroup(pid, sigTerm)
		_ = signalGroup(pid, sigCont)
		timer := time.NewTimer(grace)
		select {
		case <-s.done:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	// Kill the group in any case: it is gone or it did not stop in time.
	_ = signalGroup(pid, sigKill)
	<-s.done
	removeRecord(pid)
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove %s: %w", s.dir, err)
	}
	return nil
}

// remove stops the server (SIGTERM, SIGKILL after 3 s) and removes its directory.
func (s *procServer) remove(ctx context.Context) error { return s.stop(ctx, 3*time.Second) }

// procLauncher starts servers as child processes of bin (redis-server).
type procLauncher struct{ bin string }

func (l procLauncher) launch(ctx context.Context, spec serverSpec) (server, error) {
	s, err := startServerProcess(ctx, l.bin, spec)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// kill sends SIGKILL to the server's process group and waits until it has exited. Its
// directory (configuration, AOF, nodes.conf) stays for start. Killing a dead server does nothing.
func (s *procServer) kill(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("%s was stopped", s.addr())
	}
	pid := s.cmd.Process.Pid
	_ = signalGroup(pid, sigKill)
	select {
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("kill %s (pid %d): %w", s.addr(), pid, ctx.Err())
	}
	removeRecord(pid)
	return nil
}

// start starts the server again from its configuration on the same port, after kill (or after it
// died), and waits until it answers an authenticated PING. It fails, with the log's tail, if the
// server is still running or cannot start (its port taken meanwhile, for one).
func (s *procServer) start(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return fmt.Errorf("%s was stopped", s.addr())
	}
	select {
	case <-s.done:
	default:
		s.mu.Unlock()
		return fmt.Errorf("%s is still running (pid %d)", s.addr(), s.cmd.Process.Pid)
	}
	err := s.spawn()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := waitPing(ctx, s.addr(), s.password, s.exited); err != nil {
		return fmt.Errorf("%w: restart %s: %w%s", ErrUnavailable, s.addr(), err, s.logTail())
	}
	return nil
}

// signal sends sig to the server's process group.
func (s *procServer) signal(sig procSignal) error {
	cmd, _ := s.proc()
	if s.exited() {
		return fmt.Errorf("%s is not running", s.addr())
	}
	if err := signalGroup(cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s: %s: %w", s.addr(), sig, err)
	}
	return nil
}

// pause stops the server with SIGSTOP: it keeps its connections and answers nothing until resume.
func (s *procServer) pause(context.Context) error { return s.signal(sigStop) }

// resume continues a paused server with SIGCONT; resuming a running server does nothing.
func (s *procServer) resume(context.Context) error { return s.signal(sigCont) }

// newPassword returns a random 32-hex-digit password.
func newPassword() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// freePort asks the kernel for a free loopback port. With cluster it also checks that the
// cluster bus port (port+10000) is free.
func freePort(cluster bool) (int, error) {
	var last error
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !cluster {
			_ = l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			_ = l.Close()
			last = fmt.Errorf("port %d has no room for a bus port", port)
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		_ = l.Close()
		if err != nil {
			last = err
			continue
		}
		_ = bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port pair: %w", last)
}

// processNoPdeathsig, set by tests, starts servers that survive their harness (as on systems
// without Pdeathsig), to test the sweep.
var processNoPdeathsig = false

// startServerProcess starts one redis-server (or Sentinel) for spec on a free port, retrying
// with another port when the bind fails, and waits until it answers PING.
func startServerProcess(ctx context.Context, bin string, spec serverSpec) (*procServer, error) {
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := launchServer(bin, spec)
		if err != nil {
			return nil, err
		}
		err = waitServerReady(ctx, s, spec.password)
		if err == nil {
			return s, nil
		}
		tail := s.logTail()
		_ = s.stop(context.Background(), 0)
		last = fmt.Errorf("%s on port %d: %w%s", spec.what(), s.port, err, tail)
		if !strings.Contains(tail, "Address already in use") || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, last)
}

// launchServer writes the configuration and starts redis-server without waiting for it.
func launchServer(bin string, spec serverSpec) (*procServer, error) {
	port, err := freePort(spec.cluster)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	dir, err := os.MkdirTemp("", "limitbench-redis-")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	conf := spec.conf(port, dir, filepath.Join(dir, "redis.log"), false)
	confPath := filepath.Join(dir, spec.confName())
	// The password is in the config file (mode 0600, in a directory of mode 0700), not on the
	// command line where ps shows it.
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	s := &procServer{bin: bin, args: append([]string{confPath}, spec.extraArgs()...), dir: dir, port: port,
		password: spec.password}
	s.mu.Lock()
	err = s.spawn()
	s.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// waitServerReady polls the server until it answers an authenticated PING, the process exits
// or ctx ends. It polls every 1-2 ms: a fresh redis-server listens after some 5-50 ms, and
// every poll saved is start-up time saved.
func waitServerReady(ctx context.Context, s *procServer, password string) error {
	return waitPing(ctx, s.addr(), password, s.exited)
}

// waitPing polls addr until it answers an authenticated PING. gone, when not nil, reports that
// the server has died, which ends the wait early.
func waitPing(ctx context.Context, addr, password string, gone func() bool) error {
	delay := time.Millisecond
	for {
		if gone != nil && gone() {
			return errors.New("redis-server exited")
		}
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			c := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1,
				DialTimeout: time.Second, ReadTimeout: time.Second, PoolSize: 1,
				MaintNotificationsConfig: noMaintNotifications(), DisableIdentity: true})
			err = c.Ping(ctx).Err()
			_ = c.Close()
			if err == nil {
				return nil
			}
			if strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "NOAUTH") {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(delay):
		}
		if delay < 2*time.Millisecond {
			delay += delay / 4
		}
	}
}

// startProcess starts the process backend.
func startProcess(ctx context.Context, cfg Config, why string) (*Target, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: backend process needs redis-server on PATH (apt-get install redis-server, brew install redis): %w", ErrUnavailable, err)
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sweep(ctx, cfg.logf)
	if cfg.Topology == TopologySentinel {
		return startSentinel(ctx, cfg, procLauncher{bin: bin},
			Info{Backend: BackendProcess, Topology: cfg.Topology, SharedClock: true, Chosen: why}, nil)
	}

	cluster := cfg.Topology == TopologyCluster
	n := 1
	if cluster {
		n = cfg.masters() * (1 + cfg.Replicas)
	}
	password := newPassword()

	servers := make([]*procServer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() {
			servers[i], errs[i] = startServerProcess(ctx, bin, serverSpec{password: password, cluster: cluster,
				persistence: cfg.Persistence})
		})
	}
	wg.Wait()
	stopAll := func(ctx context.Context) error {
		var wg sync.WaitGroup
		stopErrs := make([]error, len(servers))
		for i, s := range servers {
			if s == nil {
				continue
			}
			wg.Go(func() { stopErrs[i] = s.stop(ctx, 3*time.Second) })
		}
		wg.Wait()
		return errors.Join(stopErrs...)
	}
	if err := errors.Join(errs...); err != nil {
		_ = stopAll(context.Background())
		return nil, err
	}

	info := Info{Backend: BackendProcess, Topology: cfg.Topology, SharedClock: true, Chosen: why}
	addrs := make([]string, n)
	for i, s := range servers {
		addrs[i] = s.addr()
	}
	gone := func() error {
		for _, s := range servers {
			if s.exited() {
				return fmt.Errorf("redis-server %s exited%s", s.addr(), s.logTail())
			}
		}
		return nil
	}
	logs := func(i int) string { return servers[i].logTail() }
	return assemble(ctx, cfg, info, started{addrs: addrs, password: password, what: "nodes", logs: logs, gone: gone, stopAll: stopAll, servers: asServers(servers)})
}
