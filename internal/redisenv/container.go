package redisenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels on every container this package starts.
const (
	labelOwner        = "limitbench"               // "1"
	labelHarnessPID   = "limitbench.harness_pid"   // pid of the harness that started it
	labelHarnessStart = "limitbench.harness_start" // its start time, /proc/<pid>/stat field 22
	labelAddr         = "limitbench.addr"          // 127.0.0.1:port
)

// containerEnv sets the testcontainers settings limitbench needs unless the user set them:
// dial the engine's containers on 127.0.0.1 (otherwise testcontainers may dial the machine's
// default gateway) and no Ryuk reaper (it would have to be pulled; leftovers are removed by label).
// A variable set to the empty string counts as not set, as testcontainers reads it so.
func containerEnv() {
	for _, kv := range [][2]string{
		{"TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1"},
		{"TESTCONTAINERS_RYUK_DISABLED", "true"},
	} {
		if os.Getenv(kv[0]) == "" {
			_ = os.Setenv(kv[0], kv[1])
		}
	}
}

// tcLogger drops testcontainers' per-container chatter; failures come back as errors and
// Config.Logf gets one line per environment.
func (c Config) tcLogger() tclog.Logger { return tclog.NewNoopLogger() }

// dockerClient connects to the engine and checks that it answers within a few seconds. Errors
// wrap ErrUnavailable and say what to do.
func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	containerEnv()
	// testcontainers falls back to the default socket when DOCKER_HOST does not answer; a user
	// who names an engine means that engine, so check it first.
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		if err := pingDockerHost(ctx); err != nil {
			return nil, fmt.Errorf("%w: no Docker engine answers at DOCKER_HOST=%s (%v); start it, unset DOCKER_HOST, or use --backend process with redis-server installed", ErrUnavailable, host, err)
		}
	}
	cli, err := func() (cli *testcontainers.DockerClient, err error) {
		// testcontainers panics on some broken environments; turn that into an error.
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		return testcontainers.NewDockerClientWithOpts(ctx)
	}()
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = cli.Ping(pctx, client.PingOptions{})
		cancel()
		if err != nil {
			_ = cli.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: no Docker engine answers (%v); start one (e.g. `sudo dockerd`, Docker Desktop) or use --backend process with redis-server installed", ErrUnavailable, err)
	}
	return cli, nil
}

// pingDockerHost pings the engine DOCKER_HOST names, for at most 5 s.
func pingDockerHost(ctx context.Context) error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = cli.Ping(ctx, client.PingOptions{})
	return err
}

// sweepContainers removes the containers labelled by a harness that is no longer running.
func sweepContainers(ctx context.Context, cli *testcontainers.DockerClient, logf func(string, ...any)) {
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", labelOwner+"=1")})
	if err != nil {
		logf("redisenv: list leftover containers: %v", err)
		return
	}
	for _, c := range res.Items {
		pid, _ := strconv.Atoi(c.Labels[labelHarnessPID])
		start, _ := strconv.ParseUint(c.Labels[labelHarnessStart], 10, 64)
		if pid == os.Getpid() || alive(pid, start) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			logf("redisenv: remove leftover container %.12s: %v", c.ID, err)
			continue
		}
		logf("redisenv: swept container %.12s (%s) left by dead harness pid %d", c.ID, c.Labels[labelAddr], pid)
	}
}

// imagePresent reports whether the engine has image locally.
func imagePresent(ctx context.Context, cli *testcontainers.DockerClient, image string) bool {
	_, err := cli.ImageInspect(ctx, image)
	return err == nil
}

// containerArgs returns the redis-server arguments for a node on port. The official image's
// entrypoint runs redis-server for arguments starting with "-"; the host image's entrypoint is
// redis-server itself.
func containerArgs(port int, password string, cluster bool) []string {
	var args []string
	for _, kv := range serverArgs(port, password, cluster) {
		v := kv[1]
		if v == `""` {
			v = ""
		}
		args = append(args, "--"+kv[0], v)
	}
	// Containers cannot see the harness's loopback restrictions: protected mode would refuse
	// clients; the password and the 127.0.0.1 bind protect the server instead.
	return append(args, "--protected-mode", "no", "--dir", "/data", "--logfile", "")
}

// containerNode is one running container.
type containerNode struct {
	ctr  *testcontainers.DockerContainer
	port int
}

func (n *containerNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// logs returns the tail of the container's output.
func (n *containerNode) logs() string {
	if n == nil || n.ctr == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := n.ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	data, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	if len(data) > 2048 {
		data = data[len(data)-2048:]
	}
	return fmt.Sprintf("\n--- container %.12s (%s) log ---\n%s", n.ctr.GetContainerID(), n.addr(), strings.TrimRight(string(data), "\n"))
}

func (n *containerNode) stop(ctx context.Context) error {
	if n == nil || n.ctr == nil {
		return nil
	}
	return n.ctr.Terminate(ctx, testcontainers.StopTimeout(time.Second))
}

// exited reports whether the container stopped running.
func (n *containerNode) exited() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := n.ctr.State(ctx)
	return err == nil && !st.Running
}

// startContainerNode runs one redis-server container with host networking on a free port,
// retrying with another port if the bind fails, and waits until it answers PING.
func startContainerNode(ctx context.Context, cfg Config, image, password string, cluster bool) (*containerNode, error) {
	var last error
	for range 3 {
		port, err := freePort(cluster)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		labels := map[string]string{
			labelOwner:        "1",
			labelHarnessPID:   strconv.Itoa(os.Getpid()),
			labelHarnessStart: strconv.FormatUint(procStart(os.Getpid()), 10),
			labelAddr:         "127.0.0.1:" + strconv.Itoa(port),
		}
		ctr, err := testcontainers.Run(ctx, image,
			testcontainers.WithLogger(cfg.tcLogger()),
			testcontainers.WithCmd(containerArgs(port, password, cluster)...),
			testcontainers.WithLabels(labels),
			testcontainers.WithName(fmt.Sprintf("limitbench-%d-%d", os.Getpid(), port)),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.NetworkMode = "host"
			}),
		)
		n := &containerNode{ctr: ctr, port: port}
		if err != nil {
			logs := n.logs()
			_ = n.stop(context.Background())
			return nil, fmt.Errorf("%w: run %s: %w%s", ErrUnavailable, image, err, logs)
		}
		err = waitPing(ctx, n.addr(), password, throttle(n.exited, 100*time.Millisecond))
		if err == nil {
			return n, nil
		}
		logs := n.logs()
		_ = n.stop(context.Background())
		last = fmt.Errorf("container on port %d: %w%s", port, err, logs)
		if !strings.Contains(logs, "Address already in use") || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, last)
}

// throttle calls f at most once per d and otherwise returns its last answer.
func throttle(f func() bool, d time.Duration) func() bool {
	var last time.Time
	var ans bool
	return func() bool {
		if time.Since(last) >= d {
			ans, last = f(), time.Now()
		}
		return ans
	}
}

// startContainer starts the container backend.
func startContainer(ctx context.Context, cfg Config, why string) (*Target, error) {
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = 120 * time.Second // a first pull or host-image build can take a while
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	sweepContainers(ctx, cli, cfg.logf)

	image := cfg.Image
	if image == HostImage {
		if image, err = ensureHostImage(ctx, cli, cfg.logf); err != nil {
			return nil, err
		}
	}

	cluster := cfg.Topology == TopologyCluster
	n := 1
	if cluster {
		n = cfg.masters() * (1 + cfg.Replicas)
	}
	password := newPassword()
	nodes := make([]*containerNode, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = startContainerNode(ctx, cfg, image, password, cluster) })
	}
	wg.Wait()
	stopAll := func(ctx context.Context) error {
		var wg sync.WaitGroup
		stopErrs := make([]error, len(nodes))
		for i, nd := range nodes {
			wg.Go(func() { stopErrs[i] = nd.stop(ctx) })
		}
		wg.Wait()
		return errors.Join(stopErrs...)
	}
	if err := errors.Join(errs...); err != nil {
		_ = stopAll(context.Background())
		return nil, err
	}

	info := Info{Backend: BackendContainer, Topology: cfg.Topology, SharedClock: true, Chosen: why, Image: image}
	addrs := make([]string, n)
	for i, nd := range nodes {
		addrs[i] = nd.addr()
	}
	logs := func(i int) string { return nodes[i].logs() }
	return assemble(ctx, cfg, info, started{addrs: addrs, password: password, what: "containers", logs: logs, stopAll: stopAll})
}
