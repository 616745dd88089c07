package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

func init() {
	register("env", "start a Redis environment, print its nodes and hold it until Ctrl-C", runEnv)
}

// envFlags are the environment flags shared by the commands that start or reach Redis (env, run,
// capacity).
type envFlags struct {
	backend, topology, image, url string
	masters, replicas             int
}

// register defines --backend, --image, --redis, --masters and --replicas on fs; each command
// defines --topology itself (a single topology for env and capacity, a list for run).
func (f *envFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", string(redisenv.BackendAuto), "where Redis comes from: auto (process if redis-server is on PATH, else a local container image), process, container or external")
	fs.StringVar(&f.image, "image", "", `container image (default "`+redisenv.DefaultImage+`"), or "host" to build (once, offline) an image from the local redis-server`)
	fs.StringVar(&f.url, "redis", "", "external Redis: redis://user:password@host:port[/db], redis://user:password@host:port,host:port (cluster seeds), rediss://...[?ca_file=F&cert_file=F&key_file=F&server_name=N&skip_verify=true] for TLS (docs/environments.md), or host:port,host:port (implies --backend external)")
	fs.IntVar(&f.masters, "masters", 0, "cluster masters for started backends (default 3)")
	fs.IntVar(&f.replicas, "replicas", 0, "replicas per cluster master, or of the Sentinel topology's master (default 1 there) (process and container backends)")
}

// config turns the flags into a redisenv.Config and validates it; set says which flags the user
// gave. An empty topology (run and capacity take it from the scenario) is validated as cluster
// when --masters or --replicas was given, else as single, and left empty in the Config.
func (f envFlags) config(set map[string]bool) (redisenv.Config, error) {
	cfg := redisenv.Config{
		Backend:  redisenv.Backend(f.backend),
		Topology: redisenv.Topology(f.topology),
		Image:    f.image,
		URL:      f.url,
		Replicas: f.replicas,
	}
	if f.url != "" && !set["backend"] {
		cfg.Backend = redisenv.BackendExternal
	}
	if set["masters"] {
		if f.masters < 1 {
			return cfg, fmt.Errorf("--masters must be at least 1, got %d", f.masters)
		}
		cfg.Masters = f.masters
		if cfg.Topology == redisenv.TopologySingle && f.masters == 1 {
			cfg.Masters = 0
		}
	}
	check := cfg
	if check.Topology == "" {
		check.Topology = redisenv.TopologySingle
		if cfg.Masters > 0 || cfg.Replicas > 0 {
			check.Topology = redisenv.TopologyCluster
		}
	}
	return cfg, check.Validate()
}

func runEnv(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("env", "[--backend B] [--topology T] [--masters N] [--replicas R] [--image I] [--redis URL] [--build-only]", stderr)
	var f envFlags
	f.register(fs)
	fs.StringVar(&f.topology, "topology", string(redisenv.TopologySingle), "single, cluster or sentinel")
	buildOnly := fs.Bool("build-only", false, "with --backend container --image host: build (or find) the offline image, print its tag and exit without starting anything")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	cfg, err := f.config(set)
	if err != nil {
		return badInput(err)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	cfg.Logf = logf
	if *buildOnly {
		return buildHostImage(ctx, cfg, stdout, logf)
	}

	target, err := redisenv.Start(ctx, cfg)
	if err != nil {
		if errors.Is(err, redisenv.ErrBadConfig) {
			return badInput(err)
		}
		return envFailure(err)
	}
	printEnv(stdout, target)
	fmt.Fprintln(stdout, "holding the environment; press Ctrl-C (or send SIGTERM) to stop it")
	holdErr := target.Hold(ctx, 2*time.Second, 3) // a master silent for three checks is lost
	// Stop before writing anything else: a closed stdout (the reader went away) would end the
	// process with SIGPIPE on the next write and leave containers behind.
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopErr := target.Stop(sctx)
	switch {
	case holdErr != nil:
		return envFailure(errors.Join(holdErr, stopErr))
	case stopErr != nil:
		return envFailure(fmt.Errorf("stop: %w", stopErr))
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}

// buildHostImage is env --build-only: it builds (or finds already built) the image that
// --image host names and prints its tag. Only --backend container --image host may ask for it.
func buildHostImage(ctx context.Context, cfg redisenv.Config, stdout io.Writer, logf func(string, ...any)) error {
	if cfg.Backend != redisenv.BackendContainer || cfg.Image != redisenv.HostImage {
		return badInput(fmt.Errorf("--build-only builds the offline image: use it with --backend container --image host (got --backend %s --image %s)", cfg.Backend, cfg.Image))
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	tag, err := redisenv.BuildHostImage(ctx, logf)
	if err != nil {
		return envFailure(err)
	}
	fmt.Fprintln(stdout, tag)
	return nil
}

// printEnv writes one line per node and a ready-to-paste redis-cli command.
func printEnv(w io.Writer, t *redisenv.Target) {
	i := t.Info
	fmt.Fprintf(w, "%s %s, Redis %s, shared clock %v (%s)\n", i.Backend, i.Topology, i.Version, i.SharedClock, i.Chosen)
	for _, n := range i.Nodes {
		line := fmt.Sprintf("%-21s %-7s", n.Addr, n.Role)
		if len(n.Slots) > 0 {
			var rs []string
			for _, r := range n.Slots {
				rs = append(rs, fmt.Sprintf("%d-%d", r[0], r[1]))
			}
			line += " slots " + strings.Join(rs, ",")
		}
		if n.MasterID != "" {
			line += " of " + n.MasterID
		}
		if n.ID != "" {
			line += " id " + n.ID
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(w, redisCLI(t))
}

// redisCLI returns a redis-cli command line that connects to the first master.
func redisCLI(t *redisenv.Target) string {
	return redisCLILine(t.Masters()[0], t.Username, t.Password, t.IsCluster(), t.RedisCLIArgs(), t.DB())
}

// redisCLILine returns a redis-cli command line for addr with the given credentials, -c for a
// cluster, the TLS flags tlsArgs (Target.RedisCLIArgs) and -n for a database other than 0.
func redisCLILine(addr, username, password string, cluster bool, tlsArgs []string, db int) string {
	host, port, _ := net.SplitHostPort(addr)
	cmd := fmt.Sprintf("redis-cli -h %s -p %s", shellQuote(host), port)
	for _, a := range tlsArgs {
		cmd += " " + shellQuote(a)
	}
	if username != "" {
		cmd += " --user " + shellQuote(username)
	}
	if password != "" {
		cmd += " -a " + shellQuote(password) + " --no-auth-warning"
	}
	if db != 0 {
		cmd += " -n " + strconv.Itoa(db)
	}
	if cluster {
		cmd += " -c"
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@%+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
