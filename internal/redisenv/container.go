package redisenv

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	pathpkg "path"
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
// A variable set to the empty string counts as not set, as testcontainers reads it so. It also
// silences testcontainers' default logger once, before the first Docker client is made: its
// "Connected to docker" banner would otherwise reach stderr, even in a process run whose start
// only sweeps leftover containers; failures come back as errors.
func containerEnv() {
	quietTestcontainers.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
	for _, kv := range [][2]string{
		{"TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1"},
		{"TESTCONTAINERS_RYUK_DISABLED", "true"},
	} {
		if os.Getenv(kv[0]) == "" {
			_ = os.Setenv(kv[0], kv[1])
		}
	}
}

// quietTestcontainers silences testcontainers' default logger once (see containerEnv).
var quietTestcontainers sync.Once

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

// sweepBudget bounds sweepLeftoverContainers: finding the engine, listing and removing.
const sweepBudget = 5 * time.Second

// sweepLeftoverContainers removes the containers left by killed harnesses when a Docker engine
// answers, whatever backend this run uses: a container run killed with SIGKILL leaves its
// containers running, and the next run may well be a process run. Without an engine it returns
// as soon as connecting fails (at once when the engine's socket does not exist); it never takes
// longer than sweepBudget. It logs what it removed, and nothing when no engine answers.
func sweepLeftoverContainers(ctx context.Context, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(ctx, sweepBudget)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return
	}
	defer cli.Close()
	sweepContainers(ctx, cli, logf)
}

// sweepMu serialises the sweeps of one harness: a process start's background sweep and a
// container start's own may overlap under auto.
var sweepMu sync.Mutex

// sweepContainers removes the containers labelled by a harness that is no longer running.
func sweepContainers(ctx context.Context, cli *testcontainers.DockerClient, logf func(string, ...any)) {
	sweepMu.Lock()
	defer sweepMu.Unlock()
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

// fileOwner is who owns the configuration file copied into a container: the image's user, so
// that the server, and only the server, can read it (mode 0600).
type fileOwner struct {
	uid, gid int
	// byName is set when the image names its user: the engine then looks the name up in the
	// container's /etc/passwd (CopyUIDGID) and uid and gid are unused.
	byName bool
}

// parseImageUser turns a container's user ("", "uid", "uid:gid", "name", "name:group") into the
// owner of the files copied into it: the numeric user and group ("65534:65534" for the host
// image; the group defaults to the user's number), root when the user is empty (the official
// image starts as root, and its entrypoint hands the files in /data to the redis user before it
// drops to it), or a name for the engine to resolve in the container's /etc/passwd.
func parseImageUser(user string) fileOwner {
	if user == "" {
		return fileOwner{}
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return fileOwner{byName: true}
	}
	gid := uid
	if hasGroup {
		if gid, err = strconv.Atoi(g); err != nil {
			return fileOwner{byName: true}
		}
	}
	return fileOwner{uid: uid, gid: gid}
}

// copyConf writes conf into the created (not yet started) container id at path, mode 0600, in
// its directory made mode 0700, both owned by the container's user (parseImageUser), so that the
// server, and nothing else in the container, reads the password it holds (a Sentinel rewrites
// its file with mode 0644; the directory still keeps it to its owner). The password is never a
// container argument, which docker inspect would show.
func copyConf(ctx context.Context, cli *testcontainers.DockerClient, id, path, conf string) error {
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("inspect container %.12s: %w", id, err)
	}
	user := ""
	if res.Container.Config != nil {
		user = res.Container.Config.User
	}
	owner := parseImageUser(user)
	dir := strings.TrimPrefix(pathpkg.Dir(path), "/")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, hdr := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o700, Uid: owner.uid, Gid: owner.gid, ModTime: now},
		{Typeflag: tar.TypeReg, Name: dir + "/" + pathpkg.Base(path), Mode: 0o600, Size: int64(len(conf)),
			Uid: owner.uid, Gid: owner.gid, ModTime: now},
	} {
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	if _, err := tw.Write([]byte(conf)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err = cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/",
		Content: &buf, CopyUIDGID: owner.byName})
	if err != nil {
		return fmt.Errorf("copy %s into container %.12s (the image needs a writable %s, as the official redis image and the host image have): %w",
			path, id, pathpkg.Dir(path), err)
	}
	return nil
}

// containerNode is one running container: a redis-server or a Sentinel. cli stays open for node
// control until the target stops.
type containerNode struct {
	ctr      *testcontainers.DockerContainer
	cli      *testcontainers.DockerClient
	port     int
	password string

	mu     sync.Mutex
	paused bool
}

func (n *containerNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// logTail returns the tail of the container's output.
func (n *containerNode) logTail() string { return n.logs() }

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
	n.mu.Lock()
	paused := n.paused
	n.paused = false
	n.mu.Unlock()
	if paused {
		_, _ = n.cli.ContainerUnpause(ctx, n.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	}
	return n.ctr.Terminate(ctx, testcontainers.StopTimeout(time.Second))
}

// remove terminates the container and its volumes.
func (n *containerNode) remove(ctx context.Context) error { return n.stop(ctx) }

// exited reports whether the container stopped running.
func (n *containerNode) exited() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := n.ctr.State(ctx)
	return err == nil && !st.Running
}

// kill sends SIGKILL to the container's server through the engine and waits until the container
// has stopped; the container, its configuration and its /data stay for start.
func (n *containerNode) kill(ctx context.Context) error {
	id := n.ctr.GetContainerID()
	if n.exited() {
		return nil
	}
	if _, err := n.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !n.exited() {
		return fmt.Errorf("kill container %.12s (%s): %w", id, n.addr(), err)
	}
	wait := n.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		if err != nil && !n.exited() {
			return fmt.Errorf("wait for container %.12s (%s) to stop: %w", id, n.addr(), err)
		}
	}
	n.mu.Lock()
	n.paused = false // killing a paused container ends it too
	n.mu.Unlock()
	return nil
}

// start starts the stopped container again (same command, port and /data) and waits until its
// server answers an authenticated PING.
func (n *containerNode) start(ctx context.Context) error {
	id := n.ctr.GetContainerID()
	if !n.exited() {
		return fmt.Errorf("container %.12s (%s) is still running", id, n.addr())
	}
	if _, err := n.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("%w: start container %.12s (%s): %w%s", ErrUnavailable, id, n.addr(), err, n.logs())
	}
	if err := waitPing(ctx, n.addr(), n.password, throttle(n.exited, 100*time.Millisecond)); err != nil {
		return fmt.Errorf("%w: restart container %.12s (%s): %w%s", ErrUnavailable, id, n.addr(), err, n.logs())
	}
	return nil
}

// pause freezes the container (docker pause: the cgroup freezer).
func (n *containerNode) pause(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused {
		return nil
	}
	if _, err := n.cli.ContainerPause(ctx, n.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause container %.12s (%s): %w", n.ctr.GetContainerID(), n.addr(), err)
	}
	n.paused = true
	return nil
}

// resume unfreezes a paused container; resuming a running one does nothing.
func (n *containerNode) resume(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.paused {
		return nil
	}
	if _, err := n.cli.ContainerUnpause(ctx, n.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("unpause container %.12s (%s): %w", n.ctr.GetContainerID(), n.addr(), err)
	}
	n.paused = false
	return nil
}

// containerLauncher starts servers as containers of image with host networking.
type containerLauncher struct {
	cfg   Config
	cli   *testcontainers.DockerClient
	image string
}

func (l containerLauncher) launch(ctx context.Context, spec serverSpec) (server, error) {
	n, err := startContainerNode(ctx, l, spec)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// startContainerNode runs one redis-server (or Sentinel) container for spec with host networking
// on a free port, retrying with another port if the bind fails, and waits until it answers PING.
// The configuration, password included, is a file in /data that only the server's user reads;
// the container's command is that file's path (the official image's entrypoint runs
// redis-server for an argument ending in .conf; the host image's entrypoint is redis-server).
func startContainerNode(ctx context.Context, l containerLauncher, spec serverSpec) (*containerNode, error) {
	var last error
	for range 3 {
		port, err := freePort(spec.cluster)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		labels := map[string]string{
			labelOwner:        "1",
			labelHarnessPID:   strconv.Itoa(os.Getpid()),
			labelHarnessStart: strconv.FormatUint(procStart(os.Getpid()), 10),
			labelAddr:         "127.0.0.1:" + strconv.Itoa(port),
		}
		confPath := "/data/" + spec.confName()
		conf := spec.conf(port, "/data", "", true)
		ctr, err := testcontainers.Run(ctx, l.image,
			testcontainers.WithLogger(l.cfg.tcLogger()),
			testcontainers.WithCmd(append([]string{confPath}, spec.extraArgs()...)...),
			testcontainers.WithLabels(labels),
			testcontainers.WithName(fmt.Sprintf("limitbench-%d-%d", os.Getpid(), port)),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.NetworkMode = "host"
			}),
			testcontainers.WithAdditionalLifecycleHooks(testcontainers.ContainerLifecycleHooks{
				PostCreates: []testcontainers.ContainerHook{func(ctx context.Context, c testcontainers.Container) error {
					return copyConf(ctx, l.cli, c.GetContainerID(), confPath, conf)
				}},
			}),
		)
		n := &containerNode{ctr: ctr, cli: l.cli, port: port, password: spec.password}
		if err != nil {
			logs := n.logs()
			_ = n.stop(context.Background())
			return nil, fmt.Errorf("%w: run %s: %w%s", ErrUnavailable, l.image, err, logs)
		}
		err = waitPing(ctx, n.addr(), spec.password, throttle(n.exited, 100*time.Millisecond))
		if err == nil {
			return n, nil
		}
		logs := n.logs()
		_ = n.stop(context.Background())
		last = fmt.Errorf("%s container on port %d: %w%s", spec.what(), port, err, logs)
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
	// The client stays open for node control while the target runs; stopAll closes it.
	keep := false
	defer func() {
		if !keep {
			_ = cli.Close()
		}
	}()
	sweepContainers(ctx, cli, cfg.logf)

	image := cfg.Image
	if image == HostImage {
		if image, err = ensureHostImage(ctx, cli, cfg.logf); err != nil {
			return nil, err
		}
	}
	l := containerLauncher{cfg: cfg, cli: cli, image: image}
	if cfg.Topology == TopologySentinel {
		t, err := startSentinel(ctx, cfg, l,
			Info{Backend: BackendContainer, Topology: cfg.Topology, SharedClock: true, Chosen: why, Image: image},
			func(context.Context) error { return cli.Close() })
		keep = err == nil
		return t, err
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
		wg.Go(func() {
			nodes[i], errs[i] = startContainerNode(ctx, l, serverSpec{password: password, cluster: cluster,
				persistence: cfg.Persistence})
		})
	}
	wg.Wait()
	stopAll := func(ctx context.Context) error {
		var wg sync.WaitGroup
		stopErrs := make([]error, len(nodes))
		for i, nd := range nodes {
			wg.Go(func() { stopErrs[i] = nd.stop(ctx) })
		}
		wg.Wait()
		return errors.Join(append(stopErrs, cli.Close())...)
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
	keep = true // assemble stops every node (stopAll closes the client) on any failure from here
	logs := func(i int) string { return nodes[i].logs() }
	return assemble(ctx, cfg, info, started{addrs: addrs, password: password, what: "containers", logs: logs, stopAll: stopAll, servers: asServers(nodes)})
}
