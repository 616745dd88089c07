package redisenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// externalSpec is a parsed Config.URL.
type externalSpec struct {
	seeds              []string
	username, password string
	db                 int
	tls                *tlsSettings
}

// user returns the user name the spec authenticates as, "default" for none.
func (spec externalSpec) user() string {
	if spec.username == "" {
		return "default"
	}
	return spec.username
}

// parseExternal parses Config.URL: a redis:// or rediss:// URL whose host part may list several
// comma-separated cluster seeds, or a plain comma-separated host:port list (see Config.URL).
// username and password apply when the URL carries no user information. Errors wrap
// ErrBadConfig and never contain the password.
func parseExternal(raw, username, password string) (externalSpec, error) {
	bad := func(format string, args ...any) (externalSpec, error) {
		return externalSpec{}, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	raw = strings.TrimSpace(raw)
	if strings.Contains(raw, "://") {
		// url.Parse takes "h1:1,h2:2" for one odd host: split the seed list off first and parse
		// the URL with its first seed alone.
		first, extra := splitURLSeeds(raw)
		u, err := url.Parse(first)
		if err != nil {
			// url.Error repeats the URL, password included: report only the reason.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return bad("malformed URL: %v", err)
		}
		if u.Scheme != "redis" && u.Scheme != "rediss" {
			return bad("URL scheme %q: want redis:// or rediss://", u.Scheme)
		}
		spec := externalSpec{username: username, password: password}
		if u.User != nil {
			spec.username = u.User.Username()
			if p, ok := u.User.Password(); ok {
				spec.password = p
			}
		}
		if spec.username == "default" {
			spec.username = ""
		}
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = "6379"
		}
		if host == "" {
			return bad("URL %s has no host", u.Redacted())
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return bad("URL %s: bad port %q", u.Redacted(), port)
		}
		spec.seeds = []string{net.JoinHostPort(host, port)}
		for _, a := range extra {
			a = strings.TrimSpace(a)
			if _, _, err := net.SplitHostPort(a); err != nil && !strings.Contains(a, "]:") {
				a = net.JoinHostPort(strings.Trim(a, "[]"), "6379") // a URL's port defaults to 6379
			}
			if err := checkHostPort(a); err != nil {
				return bad("URL %s: seed %q: %v", u.Redacted(), a, err)
			}
			spec.seeds = append(spec.seeds, a)
		}
		if err := spec.urlOptions(u, host); err != nil {
			return externalSpec{}, err
		}
		return spec, nil
	}
	spec := externalSpec{username: username, password: password}
	for a := range strings.SplitSeq(raw, ",") {
		a = strings.TrimSpace(a)
		if err := checkHostPort(a); err != nil {
			return bad("seed address %q: %v (want host:port[,host:port...] or redis://user:password@host:port[,host:port...])", a, err)
		}
		spec.seeds = append(spec.seeds, a)
	}
	return spec, nil
}

// urlOptions reads what follows the host of URL u (whose host is host) into spec: its options
// (addr, an extra cluster seed; the TLS options, see parseTLS), its /db and its fragment (refused).
// Errors wrap ErrBadConfig and show u redacted.
func (spec *externalSpec) urlOptions(u *url.URL, host string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: URL %s: "+format, append([]any{ErrBadConfig, u.Redacted()}, args...)...)
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("malformed options: %v", err)
	}
	for name := range query {
		if name != "addr" && !slices.Contains(tlsOptions, name) {
			return bad("unknown option %q (the options are addr, an extra cluster seed, and for rediss:// %s)",
				name, strings.Join(tlsOptions, ", "))
		}
	}
	if spec.tls, err = parseTLS(u.Scheme, host, u.Redacted(), query); err != nil {
		return err
	}
	if u.Fragment != "" {
		return bad("unexpected fragment #%s", u.Fragment)
	}
	for _, a := range query["addr"] { // go-redis style extra cluster seeds
		if err := checkHostPort(a); err != nil {
			return bad("addr %q: %v", a, err)
		}
		spec.seeds = append(spec.seeds, a)
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 {
			return bad("database %q is not a number", p)
		}
		spec.db = db
	}
	return nil
}

// Seeds returns the addresses (host:port) an external target's URL names, as Start tries them;
// nil for the other backends. An unusable URL is an error wrapping ErrBadConfig (never showing the
// password).
func (c Config) Seeds() ([]string, error) {
	if c.Backend != BackendExternal {
		return nil, nil
	}
	spec, err := parseExternal(c.URL, c.Username, c.Password)
	return spec.seeds, err
}

// splitURLSeeds splits "scheme://[userinfo@]h1:p1,h2:p2[/db][?query]" into the URL with its
// first host alone and the other hosts. A URL with one host comes back unchanged. The user
// information ends at the authority's last '@', so a password may hold ',' or '@' (percent-encoded
// or not) without being taken for a host.
func splitURLSeeds(raw string) (string, []string) {
	i := strings.Index(raw, "://") + len("://")
	rest := raw[i:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	at := strings.LastIndexByte(authority, '@') + 1
	hosts := strings.Split(authority[at:], ",")
	if len(hosts) < 2 {
		return raw, nil
	}
	return raw[:i] + authority[:at] + hosts[0] + rest[end:], hosts[1:]
}

func checkHostPort(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("missing host")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// isAuthError reports whether err is Redis refusing the credentials.
func isAuthError(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "WRONGPASS") || strings.Contains(s, "NOAUTH") ||
		strings.Contains(s, "invalid password") || strings.Contains(s, "invalid username-password")
}

// isDBError reports whether err is Redis refusing the database the connection selects.
func isDBError(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "DB index is out of range") || strings.Contains(s, "invalid DB index")
}

// externalTimeout bounds reaching and checking an external server, so that an address that
// accepts connections and never answers fails within 5 s, set-up and reporting included.
const externalTimeout = 4 * time.Second

// probeSeeds pings every seed at once and returns a client to the first that answers, so one
// silent seed does not use up the time of the others. A seed that refuses the credentials ends
// the probe at once with ErrBadConfig (every seed shares them); when no seed answers within timeout
// (the deadline of ctx) the error wraps ErrUnavailable and lists each seed's error in the order given.
func probeSeeds(ctx context.Context, spec externalSpec, timeout time.Duration) (*redis.Client, error) {
	type result struct {
		i   int
		c   *redis.Client
		err error
	}
	results := make(chan result, len(spec.seeds))
	probe := &Target{Username: spec.username, Password: spec.password, tlsConn: spec.tls}
	for i, seed := range spec.seeds {
		o := probe.nodeOptions(seed)
		o.DB = spec.db
		o.PoolSize = 1
		if dl, ok := ctx.Deadline(); ok {
			o.DialTimeout = time.Until(dl)
			o.ReadTimeout = time.Until(dl)
		}
		go func() {
			c := redis.NewClient(o)
			err := c.Ping(ctx).Err()
			if err != nil {
				_ = c.Close()
				c = nil
				if alert := tlsAlertAfterHandshake(ctx, o, err); alert != nil {
					err = alert
				}
			}
			results <- result{i, c, err}
		}()
	}
	// closeRest closes the clients of the probes still running once one has been chosen.
	closeRest := func(n int) {
		go func() {
			for range n {
				if r := <-results; r.c != nil {
					_ = r.c.Close()
				}
			}
		}()
	}
	errs := make([]error, len(spec.seeds))
	for n := len(spec.seeds); n > 0; n-- {
		r := <-results
		seed := spec.seeds[r.i]
		switch {
		case r.err == nil:
			closeRest(n - 1)
			return r.c, nil
		case isAuthError(r.err):
			closeRest(n - 1)
			return nil, fmt.Errorf("%w: %s refused user %q: wrong user or password (%v)", ErrBadConfig, seed, spec.user(), r.err)
		case strings.HasPrefix(r.err.Error(), "NOPERM"):
			// The server answered: its ACL refuses the user PING, as every seed's would.
			closeRest(n - 1)
			return nil, fmt.Errorf("%w: %s: user %q may not run PING, which limitbench needs (`limitbench acl` prints all a run needs): %w",
				ErrUnavailable, seed, spec.user(), r.err)
		case tlsProblem(r.err, spec.tls) != "":
			// Every seed shares the TLS settings: the URL is wrong, not the server unreachable.
			closeRest(n - 1)
			return nil, fmt.Errorf("%w: %s: %s", ErrBadConfig, seed, tlsProblem(r.err, spec.tls))
		case isDBError(r.err):
			// The server answered and has no such database: the URL is wrong, not the server
			// unreachable (every seed of a cluster would say the same).
			closeRest(n - 1)
			return nil, fmt.Errorf("%w: %s has no database %d (%v); the URL's /db must be below the server's databases setting (16 by default)",
				ErrBadConfig, seed, spec.db, r.err)
		}
		errs[r.i] = fmt.Errorf("%s: %w", seed, r.err)
	}
	over := ""
	if spec.tls != nil {
		over = " over TLS (a port that does not speak TLS never answers the handshake: use redis:// for a plain one)"
	}
	return nil, fmt.Errorf("%w: cannot reach %s within %s%s: %w", ErrUnavailable, strings.Join(spec.seeds, ","), timeout, over, errors.Join(errs...))
}

// startExternal connects to a server the user runs. It never writes to it.
func startExternal(ctx context.Context, cfg Config) (*Target, error) {
	spec, err := parseExternal(cfg.URL, cfg.Username, cfg.Password)
	if err != nil {
		return nil, err
	}
	timeout := cfg.StartTimeout
	if timeout == 0 || timeout > externalTimeout {
		timeout = externalTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	c, err := probeSeeds(ctx, spec, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	info, err := c.Info(ctx, "server", "cluster").Result()
	if err != nil {
		if strings.HasPrefix(err.Error(), "NOPERM") {
			return nil, fmt.Errorf("%w: %s: user %q may not run INFO, which limitbench needs (`limitbench acl` prints all a run needs): %w",
				ErrUnavailable, c.Options().Addr, spec.user(), err)
		}
		return nil, fmt.Errorf("%w: %s: INFO: %w", ErrUnavailable, c.Options().Addr, err)
	}
	isCluster := infoField(info, "cluster_enabled") == "1"
	switch {
	case isCluster && cfg.Topology == TopologySingle:
		return nil, fmt.Errorf("%w: %s is a Redis Cluster (cluster_enabled:1) but topology single was asked; use topology cluster", ErrBadConfig, c.Options().Addr)
	case !isCluster && cfg.Topology == TopologyCluster:
		return nil, fmt.Errorf("%w: %s is not a Redis Cluster (cluster_enabled:0) but topology cluster was asked; use topology single", ErrBadConfig, c.Options().Addr)
	}
	if isCluster && spec.db != 0 {
		return nil, fmt.Errorf("%w: a Redis Cluster has only database 0, URL asks for %d", ErrBadConfig, spec.db)
	}
	out := Info{Backend: BackendExternal, Topology: cfg.Topology, Version: infoField(info, "redis_version"),
		SharedClock: false, Chosen: "an external URL was given"}
	if isCluster {
		nodes, err := clusterAgreed(ctx, []*redis.Client{c}, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster at %s is not healthy: %w", ErrUnavailable, c.Options().Addr, err)
		}
		out.Nodes = nodes
	} else {
		out.Nodes = []Node{{Addr: c.Options().Addr, Role: RoleMaster}}
	}
	if spec.tls != nil && spec.tls.base.InsecureSkipVerify {
		cfg.logf("redisenv: warning: skip_verify=true: the TLS certificates of %s are not verified", strings.Join(spec.seeds, ","))
	}
	t := newTarget(out, spec.username, spec.password, spec.tls, nil)
	t.db = spec.db
	if !isCluster {
		// Rebuild the clients with the URL's database.
		_ = t.Client.Close()
		for _, m := range t.masters {
			_ = m.Close()
		}
		t.masters = nil
		o := t.nodeOptions(out.Nodes[0].Addr)
		t.masters = append(t.masters, redis.NewClient(o))
		o = t.nodeOptions(out.Nodes[0].Addr)
		o.PoolSize = 0
		t.Client = redis.NewClient(o)
	}
	t.warnEviction(ctx, cfg)
	return t, nil
}

// warnEviction warns, through cfg's Logf, of every master of t that may evict keys: maxmemory
// set with a policy that evicts (allkeys-* or volatile-*). The limiters' keys (with a TTL, so
// volatile-* policies take them too) may then be evicted during a run, which loses their state;
// the node watch sees evictions and the verifier cuts the history there. A master that does not
// answer INFO memory is left to the run to report.
func (t *Target) warnEviction(ctx context.Context, cfg Config) {
	infos, _ := t.InfoAll(ctx, "memory")
	for _, addr := range slices.Sorted(maps.Keys(infos)) {
		info := infos[addr]
		policy, limit := infoField(info, "maxmemory_policy"), infoField(info, "maxmemory")
		if limit == "" || limit == "0" || policy == "" || policy == "noeviction" {
			continue
		}
		cfg.logf("redisenv: warning: %s has maxmemory %s bytes with maxmemory-policy %s: it may evict the limiters' keys during a run, "+
			"which loses their state (the verdict is then inconclusive, never a fail)", addr, limit, policy)
	}
}
