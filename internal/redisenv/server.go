package redisenv

import (
	"context"
	"net"
	"strconv"
	"strings"
)

// server is one redis-server or Sentinel that a backend started: a child process (procServer) or
// a container (containerNode). Node control (control.go) drives it through this interface.
type server interface {
	addr() string
	// logTail returns the end of the server's log, for error messages.
	logTail() string
	// exited reports whether the server is not running (it died, or kill ended it).
	exited() bool
	// kill ends the server with SIGKILL and waits until it is gone; its configuration and data
	// stay for start. Killing a dead server does nothing.
	kill(ctx context.Context) error
	// start starts a killed (or dead) server again on the same port with the same configuration
	// and data directory, and waits until it answers an authenticated PING.
	start(ctx context.Context) error
	// pause freezes the server (SIGSTOP, docker pause): connections stay open, nothing is
	// answered. resume undoes it.
	pause(ctx context.Context) error
	resume(ctx context.Context) error
	// remove ends the server for good and removes what it left (directory, container).
	remove(ctx context.Context) error
}

var (
	_ server = (*procServer)(nil)
	_ server = (*containerNode)(nil)
)

// launcher starts servers of one backend.
type launcher interface {
	// launch starts a server for spec on a free loopback port and waits until it answers an
	// authenticated PING. Errors wrap ErrUnavailable and carry the server's log.
	launch(ctx context.Context, spec serverSpec) (server, error)
}

// SentinelMasterName is the name the Sentinels of a sentinel topology monitor its master under
// (Info.MasterName).
const SentinelMasterName = "limitbench"

// Sentinel timings of a sentinel topology. A master that does not answer for sentinelDownAfter is
// subjectively down; two Sentinels agreeing make it objectively down and start a failover. A
// failover that stalls is retried after twice sentinelFailoverTimeout, which is also how long a
// Sentinel waits before it points a replica that follows another address back at the master.
const (
	sentinelDownAfterMs       = 2000
	sentinelFailoverTimeoutMs = 10000
	sentinelQuorum            = 2
	sentinelCount             = 3
)

// serverSpec says what one server is: a master or replica of a single, cluster or sentinel
// topology, or a Sentinel. The same spec gives the process backend's and the container backend's
// configuration file.
type serverSpec struct {
	password    string
	cluster     bool
	persistence Persistence
	// replicaOf is the host:port of the master a replica follows; "" for a master.
	replicaOf string
	// monitor, for a Sentinel, is the host:port of the master it watches; "" for a server.
	monitor string
}

// sentinel reports whether the spec is a Sentinel.
func (s serverSpec) sentinel() bool { return s.monitor != "" }

// what names the kind of server in messages.
func (s serverSpec) what() string {
	if s.sentinel() {
		return "redis-sentinel"
	}
	return "redis-server"
}

// confName is the name of the configuration file: "sentinel.conf" or "redis.conf".
func (s serverSpec) confName() string {
	if s.sentinel() {
		return "sentinel.conf"
	}
	return "redis.conf"
}

// extraArgs are the arguments after the configuration file: "--sentinel" for a Sentinel (run by
// redis-server, which the official image and the host image both hold).
func (s serverSpec) extraArgs() []string {
	if s.sentinel() {
		return []string{"--sentinel"}
	}
	return nil
}

// setting is one configuration directive: a name ("port", "sentinel monitor") and its arguments.
type setting struct {
	name string
	args []string
}

// settings returns the configuration of the server on port. Servers listen on 127.0.0.1 only
// and require the password; a server keeps nothing on disk unless its persistence asks for an
// AOF.
func (s serverSpec) settings(port int) []setting {
	p := strconv.Itoa(port)
	if s.sentinel() {
		host, mport, _ := net.SplitHostPort(s.monitor)
		m := SentinelMasterName
		return []setting{
			{"port", []string{p}},
			{"bind", []string{"127.0.0.1"}},
			{"requirepass", []string{s.password}},
			{"sentinel sentinel-pass", []string{s.password}},
			{"sentinel resolve-hostnames", []string{"no"}},
			{"sentinel monitor", []string{m, host, mport, strconv.Itoa(sentinelQuorum)}},
			{"sentinel auth-pass", []string{m, s.password}},
			{"sentinel down-after-milliseconds", []string{m, strconv.Itoa(sentinelDownAfterMs)}},
			{"sentinel failover-timeout", []string{m, strconv.Itoa(sentinelFailoverTimeoutMs)}},
			{"sentinel parallel-syncs", []string{m, "1"}},
		}
	}
	appendonly, fsync := "no", "everysec"
	switch s.persistence {
	case PersistenceAOFEverySec:
		appendonly = "yes"
	case PersistenceAOFAlways:
		appendonly, fsync = "yes", "always"
	}
	out := []setting{
		{"port", []string{p}},
		{"bind", []string{"127.0.0.1"}},
		{"requirepass", []string{s.password}},
		{"masterauth", []string{s.password}},
		{"save", []string{""}},
		{"appendonly", []string{appendonly}},
		{"appendfsync", []string{fsync}},
		{"enable-debug-command", []string{"local"}},
		{"repl-diskless-sync", []string{"yes"}},
		{"repl-diskless-sync-delay", []string{"0"}},
	}
	if s.replicaOf != "" {
		host, mport, _ := net.SplitHostPort(s.replicaOf)
		out = append(out, setting{"replicaof", []string{host, mport}})
	}
	if s.cluster {
		out = append(out,
			setting{"cluster-enabled", []string{"yes"}},
			setting{"cluster-config-file", []string{"nodes.conf"}},
			setting{"cluster-node-timeout", []string{"5000"}},
		)
	}
	return out
}

// conf returns the configuration file of the server on port with its files in dir; logfile ""
// logs to standard output. container adds what a container needs: protected mode off (the
// password and the 127.0.0.1 bind protect the server; protected mode would refuse clients that the
// container cannot see come from loopback).
func (s serverSpec) conf(port int, dir, logfile string, container bool) string {
	all := s.settings(port)
	all = append(all, setting{"dir", []string{dir}}, setting{"logfile", []string{logfile}})
	if !s.sentinel() {
		all = append(all, setting{"daemonize", []string{"no"}})
	}
	if container {
		all = append(all, setting{"protected-mode", []string{"no"}})
	}
	var b strings.Builder
	for _, st := range all {
		b.WriteString(st.name)
		for _, a := range st.args {
			b.WriteByte(' ')
			b.WriteString(confQuote(a))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// confQuote returns one redis.conf argument: as it is when it is a plain word, else in double
// quotes with backslash escapes (an empty value, a path with spaces).
func confQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \"'\\\t\r\n") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}
