package redisenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// tlsSettings is the TLS configuration of a rediss:// target.
type tlsSettings struct{ base *tls.Config }

// config returns a TLS config for addr (server name = addr's host; "" keeps the URL's host).
func (s *tlsSettings) config(addr string) *tls.Config {
	c := s.base.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil && addr != "" && net.ParseIP(host) == nil {
		c.ServerName = host
	}
	return c
}

// externalSpec is a parsed Config.URL.
type externalSpec struct {
	seeds              []string
	username, password string
	db                 int
	tls                *tlsSettings
}

// parseExternal parses a redis:// or rediss:// URL, or a comma-separated host:port list. Errors
// wrap ErrBadConfig and never contain the password.
func parseExternal(raw, username, password string) (externalSpec, error) {
	bad := func(format string, args ...any) (externalSpec, error) {
		return externalSpec{}, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	raw = strings.TrimSpace(raw)
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
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
		if spec.username == "default" && spec.password == "" {
			spec.username = ""
		}
		if u.Host == "" {
			return bad("URL %s has no host", u.Redacted())
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
		for _, a := range u.Query()["addr"] { // go-redis style extra cluster seeds
			if err := checkHostPort(a); err != nil {
				return bad("URL %s: addr %q: %v", u.Redacted(), a, err)
			}
			spec.seeds = append(spec.seeds, a)
		}
		if p := strings.Trim(u.Path, "/"); p != "" {
			db, err := strconv.Atoi(p)
			if err != nil || db < 0 {
				return bad("URL %s: database %q is not a number", u.Redacted(), p)
			}
			spec.db = db
		}
		if u.Scheme == "rediss" {
			spec.tls = &tlsSettings{base: &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}}
		}
		return spec, nil
	}
	spec := externalSpec{username: username, password: password}
	for a := range strings.SplitSeq(raw, ",") {
		a = strings.TrimSpace(a)
		if err := checkHostPort(a); err != nil {
			return bad("seed address %q: %v (want host:port[,host:port...] or redis://user:password@host:port)", a, err)
		}
		spec.seeds = append(spec.seeds, a)
	}
	return spec, nil
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

// startExternal connects to a server the user runs. It never writes to it.
func startExternal(ctx context.Context, cfg Config) (*Target, error) {
	spec, err := parseExternal(cfg.URL, cfg.Username, cfg.Password)
	if err != nil {
		return nil, err
	}
	timeout := cfg.StartTimeout
	if timeout == 0 || timeout > 5*time.Second {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	probe := &Target{Username: spec.username, Password: spec.password, tlsConn: spec.tls}
	var (
		c    *redis.Client
		errs []error
	)
	for _, seed := range spec.seeds {
		o := probe.nodeOptions(seed)
		o.DB = spec.db
		o.PoolSize = 1
		if dl, ok := ctx.Deadline(); ok {
			o.DialTimeout = time.Until(dl)
			o.ReadTimeout = time.Until(dl)
		}
		cand := redis.NewClient(o)
		err := cand.Ping(ctx).Err()
		if err == nil {
			c = cand
			break
		}
		_ = cand.Close()
		if isAuthError(err) {
			user := spec.username
			if user == "" {
				user = "default"
			}
			return nil, fmt.Errorf("%w: %s refused user %q: wrong user or password (%v)", ErrBadConfig, seed, user, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", seed, err))
	}
	if c == nil {
		return nil, fmt.Errorf("%w: cannot reach %s within %s: %w", ErrUnavailable, strings.Join(spec.seeds, ","), timeout, errors.Join(errs...))
	}
	defer c.Close()
	info, err := c.Info(ctx, "server", "cluster").Result()
	if err != nil {
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
	return t, nil
}
