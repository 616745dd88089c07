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
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// procServer is one redis-server child process.
type procServer struct {
	cmd  *exec.Cmd
	dir  string // temporary directory holding redis.conf, redis.log, stdout.log
	port int
	done chan struct{} // closed when the process has exited
}

func (s *procServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *procServer) exited() bool {
	select {
	case <-s.done:
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

// stop ends the server's process group: SIGTERM, then SIGKILL after grace or when ctx ends. It
// removes the temporary directory and the sweep record.
func (s *procServer) stop(ctx context.Context, grace time.Duration) error {
	pid := s.cmd.Process.Pid
	if !s.exited() {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		timer := time.NewTimer(grace)
		select {
		case <-s.done:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	// Kill the group in any case: it is gone or it did not stop in time.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-s.done
	removeRecord(pid)
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove %s: %w", s.dir, err)
	}
	return nil
}

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

// serverArgs returns the redis-server settings shared by the process and container backends.
// Everything stays in memory; only loopback is bound.
func serverArgs(port int, password string, cluster bool) [][2]string {
	args := [][2]string{
		{"port", strconv.Itoa(port)},
		{"bind", "127.0.0.1"},
		{"requirepass", password},
		{"masterauth", password},
		{"save", `""`},
		{"appendonly", "no"},
		{"enable-debug-command", "local"},
		{"repl-diskless-sync", "yes"},
		{"repl-diskless-sync-delay", "0"},
	}
	if cluster {
		args = append(args,
			[2]string{"cluster-enabled", "yes"},
			[2]string{"cluster-config-file", "nodes.conf"},
			[2]string{"cluster-node-timeout", "5000"},
		)
	}
	return args
}

// processNoPdeathsig, set by tests, starts servers that survive their harness (as on systems
// without Pdeathsig), to test the sweep.
var processNoPdeathsig = false

// startServerProcess starts one redis-server on a free port, retrying with another port when
// the bind fails, and waits until it answers PING.
func startServerProcess(ctx context.Context, bin, password string, cluster bool) (*procServer, error) {
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := launchServer(bin, password, cluster)
		if err != nil {
			return nil, err
		}
		err = waitServerReady(ctx, s, password)
		if err == nil {
			return s, nil
		}
		tail := s.logTail()
		_ = s.stop(context.Background(), 0)
		last = fmt.Errorf("redis-server on port %d: %w%s", s.port, err, tail)
		if !strings.Contains(tail, "Address already in use") || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, last)
}

// launchServer writes the config and starts redis-server without waiting for it.
func launchServer(bin, password string, cluster bool) (*procServer, error) {
	port, err := freePort(cluster)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	dir, err := os.MkdirTemp("", "limitbench-redis-")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var conf strings.Builder
	for _, kv := range serverArgs(port, password, cluster) {
		fmt.Fprintf(&conf, "%s %s\n", kv[0], kv[1])
	}
	fmt.Fprintf(&conf, "dir %s\nlogfile %s\ndaemonize no\n", dir, filepath.Join(dir, "redis.log"))
	confPath := filepath.Join(dir, "redis.conf")
	// The password is in the config file (mode 0600), not on the command line where ps shows it.
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer out.Close()
	cmd := exec.Command(bin, confPath)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr(!processNoPdeathsig)
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: start %s: %w", ErrUnavailable, bin, err)
	}
	s := &procServer{cmd: cmd, dir: dir, port: port, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	writeRecord(record{Kind: "process", PID: cmd.Process.Pid, Dir: dir, Addr: s.addr()})
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
		wg.Go(func() { servers[i], errs[i] = startServerProcess(ctx, bin, password, cluster) })
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
	return assemble(ctx, cfg, info, started{addrs: addrs, password: password, what: "nodes", logs: logs, gone: gone, stopAll: stopAll})
}
