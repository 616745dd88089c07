// Package redisenv owns the Redis environments limitbench talks to: it starts, checks and stops
// them, and hands back a Target with a go-redis client, the node list and the server's version.
//
// Backends: "process" (redis-server child processes), "container" (testcontainers-go), "external"
// (an address the user gives) and "auto" (process when redis-server is on PATH, else container when
// a Docker engine answers and the image is present locally). Topologies: "single", "cluster"
// (3 masters by default, optional replicas, joined from Go by a full-mesh CLUSTER MEET and slot
// assignment, ready only when every node reports cluster_state:ok and agrees on the slot map) and
// "sentinel" (one master, replicas, three Sentinels; ready when every Sentinel names the master,
// sees every replica and the two other Sentinels).
//
// Servers this package starts listen on 127.0.0.1 only, require a generated password (given in a
// configuration file only the server reads, never on a command line or as a container argument),
// keep nothing on disk unless Config.Persistence asks for an AOF, run in their own temporary
// directory and process group and die with the harness (Pdeathsig on Linux). Each started server
// or container is recorded, and leftovers of a harness that was killed are removed by the next
// Start, whatever its backend (containers whenever a Docker engine answers). An external server
// is never flushed: callers claim a key prefix (ClaimPrefix) and remove exactly that prefix
// afterwards (CleanupPrefix).
//
// Node control (control.go) kills, restarts, pauses and resumes the servers a Target started and
// fails a master over to its replica; Selector names the nodes a fault acts on and LiveNodes
// reads the topology as it is now. An external target refuses node control (ErrNotStarted).
//
// This package never installs signal handlers and never exits; callers cancel the context.
package redisenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrBadConfig means the Config (or a URL in it) is invalid: the CLI exits 2.
	ErrBadConfig = errors.New("bad environment config")
	// ErrUnavailable means the environment could not be started or reached: the CLI exits 3.
	ErrUnavailable = errors.New("redis environment unavailable")
	// ErrPrefixInUse is returned by ClaimPrefix when a key with the prefix already exists.
	ErrPrefixInUse = errors.New("key prefix already in use")
)

// Backend says where the Redis servers come from.
type Backend string

// Backends.
const (
	BackendAuto      Backend = "auto"
	BackendProcess   Backend = "process"
	BackendContainer Backend = "container"
	BackendExternal  Backend = "external"
)

// Topology is the shape of the Redis deployment: a Config's, and each of a scenario's
// topologies (package scenarios decodes them into this type).
type Topology string

// Topologies.
const (
	TopologySingle  Topology = "single"
	TopologyCluster Topology = "cluster"
	// TopologySentinel is one master, Config.Replicas replicas and three Sentinels watching them
	// (see sentinel.go); clients are go-redis failover clients.
	TopologySentinel Topology = "sentinel"
)

// Node roles reported in Node.Role.
const (
	RoleMaster  = "master"
	RoleReplica = "replica"
)

// Persistence says what a server limitbench starts keeps on disk, which decides what a restart
// loses.
type Persistence string

// Persistence modes.
const (
	// PersistenceNone keeps nothing on disk (save "", appendonly no): a restarted server comes back
	// empty. The default ("" means none).
	PersistenceNone Persistence = "none"
	// PersistenceAOFEverySec is appendonly yes with appendfsync everysec. Redis writes the AOF
	// before it replies, so a SIGKILL of the process normally loses nothing acknowledged; only
	// while a slow fsync makes Redis postpone its writes (at most 2 s) can a kill lose the
	// writes of that time, and a crash of the host loses up to about a second.
	PersistenceAOFEverySec Persistence = "aof-everysec"
	// PersistenceAOFAlways is appendonly yes with appendfsync always: every acknowledged write is
	// on disk before the reply.
	PersistenceAOFAlways Persistence = "aof-always"
)

// DefaultImage is the container image used when Config.Image is empty.
const DefaultImage = "redis:7.4"

// HostImage is the Config.Image value that builds (once, cached by the binary's hash) an image
// FROM scratch holding the local redis-server and the libraries it links, so nothing is pulled.
const HostImage = "host"

// Config says which environment Start brings up. The zero value is a single process-or-container
// ("auto") server.
type Config struct {
	// Backend is "auto" (default when empty), "process", "container" or "external".
	Backend Backend
	// Topology is "single" (default when empty), "cluster" or "sentinel".
	Topology Topology
	// Masters is the number of cluster masters; 0 means 3 for a cluster. Must be 0 or 1 for
	// single and sentinel. Ignored for external (the server says how many it has).
	Masters int
	// Replicas is the number of replicas per master (cluster and sentinel, started backends
	// only). For sentinel 0 means 1: a Sentinel group needs a replica to fail over to.
	Replicas int
	// Persistence is what started servers keep on disk: "none" (default when empty),
	// "aof-everysec" or "aof-always". It decides what Target.Restart loses. Started backends only.
	Persistence Persistence
	// Image is the container image: a registry reference (default "redis:7.4") or "host".
	Image string
	// URL is the external target, in one of these forms:
	//
	//	redis://[user[:password]@]host[:port][/db]         one server (port 6379 when omitted)
	//	redis://[user[:password]@]h1:p1,h2:p2,...[/db]      cluster seeds sharing the credentials
	//	rediss://...                                        either of the above over TLS
	//	redis://...?addr=h2:p2&addr=h3:p3                   extra seeds, go-redis style
	//	rediss://...?ca_file=F&cert_file=F&key_file=F      TLS options (below)
	//	h1:p1[,h2:p2...]                                    seeds, credentials from Username/Password
	//
	// User "default" is the same as no user. A password with reserved characters (@ : / ? # ,
	// %) must be percent-encoded in a URL. Options other than addr and, with rediss://, the TLS
	// options are refused, and so is a fragment. TLS options: ca_file (the PEM file of the CAs that
	// sign the servers' certificates; default the system's, which SSL_CERT_FILE may name),
	// cert_file and key_file (a client certificate, for servers with tls-auth-clients), server_name
	// (the name the certificates are checked against; default each node's host name, or the URL's
	// host for a node known by its IP address) and skip_verify=true (go-redis's option: no check).
	// A certificate that cannot be verified, or a handshake the server refuses, is ErrBadConfig.
	// Seeds are tried at once and the first that answers is used; for a cluster it tells the
	// others. A cluster has only database 0; a database the server does not have (above its
	// databases setting) is ErrBadConfig once the server answers.
	URL string
	// Username and Password authenticate to an external target whose URL carries no user
	// information (a plain seed list, or a URL without "user:password@").
	Username, Password string
	// StartTimeout bounds Start (default 30 s for process, 120 s for container). An external
	// target must answer within 4 s (less when StartTimeout is smaller), so an unreachable
	// address fails within 5 s.
	StartTimeout time.Duration
	// Logf, when set, receives progress lines (which backend, why, how long it took).
	Logf func(format string, args ...any)
}

// replicas returns the effective number of replicas per master.
func (c Config) replicas() int {
	if c.Topology == TopologySentinel && c.Replicas == 0 {
		return 1
	}
	return c.Replicas
}

// masters returns the effective number of masters.
func (c Config) masters() int {
	if c.Topology == TopologyCluster && c.Masters == 0 {
		return 3
	}
	if c.Masters == 0 {
		return 1
	}
	return c.Masters
}

func (c Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// withDefaults fills the empty fields of c.
func (c Config) withDefaults() Config {
	if c.Backend == "" {
		c.Backend = BackendAuto
	}
	if c.Topology == "" {
		c.Topology = TopologySingle
	}
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.Persistence == "" {
		c.Persistence = PersistenceNone
	}
	return c
}

// Validate reports every problem with c at once, each wrapped with ErrBadConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...))
	}
	switch c.Backend {
	case BackendAuto, BackendProcess, BackendContainer, BackendExternal:
	default:
		bad("unknown backend %q (want auto, process, container or external)", c.Backend)
	}
	switch c.Topology {
	case TopologySingle:
		if c.Masters > 1 {
			bad("topology single has 1 master, got masters %d", c.Masters)
		}
		if c.Replicas != 0 {
			bad("replicas need topology cluster or sentinel, got replicas %d", c.Replicas)
		}
	case TopologyCluster:
		if c.Masters != 0 && c.Masters < 3 && c.Backend != BackendExternal {
			bad("a cluster needs at least 3 masters, got %d", c.Masters)
		}
	case TopologySentinel:
		if c.Masters > 1 {
			bad("topology sentinel has 1 master, got masters %d", c.Masters)
		}
		if c.Backend == BackendExternal {
			bad("topology sentinel needs backend process or container (limitbench starts the Sentinels), got backend external")
		}
	default:
		bad("unknown topology %q (want single, cluster or sentinel)", c.Topology)
	}
	switch c.Persistence {
	case PersistenceNone, PersistenceAOFEverySec, PersistenceAOFAlways:
		if c.Backend == BackendExternal && c.Persistence != PersistenceNone {
			bad("persistence %q applies to servers limitbench starts, not to backend external", c.Persistence)
		}
	default:
		bad("unknown persistence %q (want none, aof-everysec or aof-always)", c.Persistence)
	}
	if c.Masters < 0 || c.Masters > 64 {
		bad("masters must be between 1 and 64, got %d", c.Masters)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		bad("replicas must be between 0 and 5, got %d", c.Replicas)
	}
	if c.StartTimeout < 0 {
		bad("start timeout must be >= 0, got %s", c.StartTimeout)
	}
	if c.Backend == BackendExternal {
		if c.URL == "" {
			bad("backend external needs a URL (redis://user:password@host:port or host:port,host:port)")
		} else if _, err := parseExternal(c.URL, c.Username, c.Password); err != nil {
			errs = append(errs, err)
		}
		if c.Replicas != 0 {
			bad("replicas cannot be set for an external server, got %d", c.Replicas)
		}
	} else if c.URL != "" {
		bad("a URL is only used with backend external, got backend %q", c.Backend)
	}
	if strings.TrimSpace(c.Image) != c.Image || strings.ContainsAny(c.Image, " \t\n") {
		bad("image %q contains spaces", c.Image)
	}
	return errors.Join(errs...)
}

// Node is one Redis server of an environment.
type Node struct {
	// Addr is host:port as clients dial it.
	Addr string
	// Role is "master" or "replica".
	Role string
	// Slots lists the inclusive hash-slot ranges a cluster master owns; nil for a single server
	// and for replicas.
	Slots [][2]int
	// ID is the cluster node ID; empty for a single server.
	ID string
	// MasterID is the ID of the master a replica follows.
	MasterID string `json:",omitempty"`
	// Down is set by LiveNodes for a node that its peers (cluster) or the Sentinels consider
	// failing or unreachable now; Info.Nodes never sets it.
	Down bool `json:",omitempty"`
}

// Info describes a running environment.
type Info struct {
	Backend  Backend
	Topology Topology
	// Version is redis_version from INFO server.
	Version string
	// Nodes lists every server: masters first, ordered by their first slot, then replicas.
	Nodes []Node
	// SharedClock is true when the server reads the same clock as the harness (processes and
	// containers on this host), so a script's TIME is comparable with local timestamps.
	SharedClock bool
	// Chosen says why this backend was used (interesting for "auto").
	Chosen string
	// Image is the container image, for the container backend.
	Image string `json:",omitempty"`
	// Sentinels lists the addresses of the Sentinels of a sentinel topology (always three);
	// empty for the others. Nodes holds the master and replicas as they were started.
	Sentinels []string `json:",omitempty"`
	// MasterName is the name the Sentinels monitor the master under (SentinelMasterName).
	MasterName string `json:",omitempty"`
}

// ClientOptions configures an extra client from Target.NewClient. Zero values take go-redis
// defaults (PoolSize 10 per CPU, DialTimeout 5 s, Read/WriteTimeout 3 s).
type ClientOptions struct {
	PoolSize     int
	MinIdleConns int
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// PoolTimeout is how long a call waits for a free connection (go-redis default ReadTimeout+1s).
	PoolTimeout time.Duration
	// Dialer, when set, opens every connection of the client (to each node, and to the
	// Sentinels of a sentinel topology) instead of a plain TCP dial; network-fault proxies use it
	// to route a client through them (internal/faults). nil dials directly.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Target is a running environment. Its methods are safe for concurrent use; Stop ends it.
type Target struct {
	// Client is a client for the whole environment: a *redis.Client for a single server, a
	// *redis.ClusterClient for a cluster, go-redis's failover client (a *redis.Client that asks
	// the Sentinels where the master is and follows a failover) for sentinel. Retries are off
	// (MaxRetries -1, MaxRedirects -1).
	Client redis.UniversalClient
	// Info describes the environment.
	Info Info
	// Username and Password authenticate to every node (Username empty means "default").
	Username, Password string

	tlsConn *tlsSettings // nil without TLS
	db      int          // database of a single external server

	mu       sync.Mutex
	masters  []*redis.Client // one per master, same order as Masters()
	extra    []redis.UniversalClient
	stopFn   func(ctx context.Context) error
	stopErr  error
	cluster  bool
	stopOnce sync.Once

	// servers maps the address of every server (and Sentinel) this package started to its
	// control; nil for an external target. See control.go.
	servers map[string]*controlled
	// aliases maps a proxy address that RouteReplication made a master known by to the
	// master's own address; guarded by mu. See replication.go.
	aliases map[string]string
}

// Start brings up the environment cfg describes and returns when it is ready: for a cluster,
// when every node reports cluster_state:ok and all nodes agree on the slot map. Errors wrap
// ErrBadConfig (invalid cfg) or ErrUnavailable (could not start or reach Redis); a start error of
// a server this package launched includes the tail of its log. Nothing is left running when
// Start fails.
func Start(ctx context.Context, cfg Config) (*Target, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	begin := time.Now()
	if cfg.Backend != BackendContainer {
		// Containers left by a killed container run are swept whatever this run's backend, while
		// this one starts (startContainer sweeps them itself).
		swept := make(chan struct{})
		go func() {
			defer close(swept)
			sweepLeftoverContainers(ctx, cfg.logf)
		}()
		defer func() { <-swept }()
	}
	var (
		t   *Target
		err error
	)
	switch cfg.Backend {
	case BackendProcess:
		t, err = startProcess(ctx, cfg, "backend process was asked for")
	case BackendContainer:
		t, err = startContainer(ctx, cfg, "backend container was asked for")
	case BackendExternal:
		t, err = startExternal(ctx, cfg)
	case BackendAuto:
		t, err = startAuto(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	cfg.logf("redisenv: %s %s ready in %s (%s)", t.Info.Backend, t.Info.Topology, time.Since(begin).Round(time.Millisecond), t.Info.Chosen)
	return t, nil
}

// Masters returns the addresses of the master nodes, in the order of Info.Nodes: the masters as
// started. After a failover LiveNodes says which nodes are masters now.
func (t *Target) Masters() []string {
	var out []string
	for _, n := range t.Info.Nodes {
		if n.Role == RoleMaster {
			out = append(out, n.Addr)
		}
	}
	return out
}

// IsCluster reports whether the target is a Redis Cluster.
func (t *Target) IsCluster() bool { return t.cluster }

// TLS reports whether clients reach the target over TLS (a rediss:// URL).
func (t *Target) TLS() bool { return t.tlsConn != nil }

// DB returns the database number clients select: the URL's /db for a single external server,
// else 0.
func (t *Target) DB() int { return t.db }

// universalOptions returns the options of a client of the whole target with o's pool, timeouts
// and dialer: its masters (cluster mode on a cluster), or on sentinel its Sentinels and master
// name. It is the one place where every client of the target gets its credentials, database and
// TLS, retries off (MaxRetries -1, MaxRedirects -1: a timed-out script may have run, and a MOVED
// reply is an error, never a silent re-send) and a quiet handshake (see noMaintNotifications).
func (t *Target) universalOptions(o ClientOptions) *redis.UniversalOptions {
	uo := &redis.UniversalOptions{
		Addrs:                    t.Masters(),
		IsClusterMode:            t.cluster,
		DB:                       t.db,
		Username:                 t.Username,
		Password:                 t.Password,
		MaxRetries:               -1,
		MaxRedirects:             -1,
		MaintNotificationsConfig: noMaintNotifications(),
		DisableIdentity:          true,
		PoolSize:                 o.PoolSize,
		MinIdleConns:             o.MinIdleConns,
		DialTimeout:              o.DialTimeout,
		ReadTimeout:              o.ReadTimeout,
		WriteTimeout:             o.WriteTimeout,
		PoolTimeout:              o.PoolTimeout,
		Dialer:                   o.Dialer,
	}
	if t.Info.Topology == TopologySentinel {
		uo.MasterName = t.Info.MasterName
		uo.Addrs = slices.Clone(t.Info.Sentinels)
		uo.SentinelPassword = t.Password
	}
	if t.tlsConn != nil {
		uo.TLSConfig = t.tlsConn.config("")
	}
	return uo
}

// nodeOptions returns the options of a plain client to one node (see universalOptions): a pool
// of 4, dial timeout 5 s, read and write timeouts 10 s, TLS checked against the node's name.
func (t *Target) nodeOptions(addr string) *redis.Options {
	uo := t.universalOptions(ClientOptions{PoolSize: 4, DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second})
	uo.Addrs = []string{addr}
	o := uo.Simple()
	if t.tlsConn != nil {
		o.TLSConfig = t.tlsConn.config(addr)
	}
	return o
}

// noMaintNotifications returns a fresh go-redis configuration that turns maintenance
// notifications off; every client of the harness also sets DisableIdentity. By default go-redis
// opens each connection with CLIENT SETINFO (lib-name, lib-ver; Redis 7.2 and later) and, in
// mode auto, CLIENT MAINT_NOTIFICATIONS (Redis 8.0 and later), which older servers refuse: each
// refusal counts in the user's INFO errorstats, the notifications handshake costs a round trip
// per connection, and when it is refused go-redis writes to the client's shared options, which
// races with connections set up at the same time (go-redis guards them with one lock per Conn).
// Each client gets its own copy.
func noMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// NewClient returns an extra client with its own connection pool and retries off (MaxRetries -1;
// on a cluster also MaxRedirects -1, so a MOVED reply is an error, never a silent re-send). On a
// cluster it is a *redis.ClusterClient, on sentinel a failover client (a *redis.Client), else a
// *redis.Client. Stop closes it.
func (t *Target) NewClient(o ClientOptions) redis.UniversalClient {
	c := redis.NewUniversalClient(t.universalOptions(o))
	t.mu.Lock()
	t.extra = append(t.extra, c)
	t.mu.Unlock()
	return c
}

// ForEachMaster calls fn with a client for each master, concurrently, and returns the errors
// joined, each prefixed with the master's address.
func (t *Target) ForEachMaster(ctx context.Context, fn func(ctx context.Context, c *redis.Client) error) error {
	t.mu.Lock()
	clients := slices.Clone(t.masters)
	t.mu.Unlock()
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			if err := fn(ctx, c); err != nil {
				errs[i] = fmt.Errorf("%s: %w", c.Options().Addr, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// InfoAll returns the raw INFO text of section (e.g. "commandstats", "cpu", "memory"; "" for the
// default sections) from every master, keyed by address.
func (t *Target) InfoAll(ctx context.Context, section string) (map[string]string, error) {
	var mu sync.Mutex
	out := map[string]string{}
	err := t.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		var s string
		var err error
		if section == "" {
			s, err = c.Info(ctx).Result()
		} else {
			s, err = c.Info(ctx, section).Result()
		}
		if err != nil {
			return fmt.Errorf("INFO %s: %w", section, err)
		}
		mu.Lock()
		out[c.Options().Addr] = s
		mu.Unlock()
		return nil
	})
	return out, err
}

// Stop closes every client and stops the servers or containers Start launched (an external
// server is left as it is). It is idempotent: later calls return the first call's result.
func (t *Target) Stop(ctx context.Context) error {
	t.stopOnce.Do(func() {
		t.mu.Lock()
		clients := append([]redis.UniversalClient{}, t.extra...)
		masters := t.masters
		t.mu.Unlock()
		var errs []error
		if t.Client != nil {
			_ = t.Client.Close()
		}
		for _, c := range clients {
			_ = c.Close()
		}
		for _, c := range masters {
			_ = c.Close()
		}
		if t.stopFn != nil {
			if err := t.stopFn(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		t.stopErr = errors.Join(errs...)
	})
	return t.stopErr
}

// newTarget builds the clients of a target whose nodes are known. Nodes must list masters first.
func newTarget(info Info, username, password string, tlsConn *tlsSettings, stopFn func(context.Context) error) *Target {
	t := &Target{Info: info, Username: username, Password: password, tlsConn: tlsConn, stopFn: stopFn,
		cluster: info.Topology == TopologyCluster}
	for _, a := range t.Masters() {
		t.masters = append(t.masters, redis.NewClient(t.nodeOptions(a)))
	}
	if t.cluster || info.Topology == TopologySentinel {
		t.Client = redis.NewUniversalClient(t.universalOptions(ClientOptions{}))
	} else {
		o := t.nodeOptions(t.Masters()[0])
		o.PoolSize = 0 // go-redis default
		t.Client = redis.NewClient(o)
	}
	return t
}

// serverVersion returns redis_version from INFO server.
func serverVersion(ctx context.Context, c *redis.Client) (string, error) {
	s, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	return infoField(s, "redis_version"), nil
}

// infoField returns the value of field in raw INFO text, or "".
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimRight(line, "\r")
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}
