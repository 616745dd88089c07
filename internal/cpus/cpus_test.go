package cpus

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// ifaces returns a fixed set of interface addresses, as net.InterfaceAddrs would.
func ifaces(addrs ...string) func() ([]net.Addr, error) {
	return func() ([]net.Addr, error) {
		var out []net.Addr
		for _, a := range addrs {
			ip, n, err := net.ParseCIDR(a)
			if err != nil {
				return nil, err
			}
			out = append(out, &net.IPNet{IP: ip, Mask: n.Mask})
		}
		return out, nil
	}
}

func TestLocalServers(t *testing.T) {
	single := []redisenv.Topology{redisenv.TopologySingle}
	both := []redisenv.Topology{redisenv.TopologySingle, redisenv.TopologyCluster}
	external := func(url string) redisenv.Config {
		return redisenv.Config{Backend: redisenv.BackendExternal, URL: url}
	}
	own := ifaces("10.1.2.3/24", "fe80::1/64")
	tests := []struct {
		name  string
		cfg   redisenv.Config
		tops  []redisenv.Topology
		want  int
		where string // a part of the words
	}{
		{"external elsewhere", external("redis://10.9.9.9:6380"), both, 0, "10.9.9.9:6380 is not on this machine"},
		{"external by name", external("redis.example:6380"), single, 0, "not on this machine"},
		{"external loopback", external("redis://127.0.0.1:6380"), single, 1, "127.0.0.1:6380 (a loopback address)"},
		{"external 127.0.0.0/8", external("127.3.4.5:7000"), single, 1, "loopback"},
		{"external ::1", external("redis://[::1]:6380"), single, 1, "[::1]:6380 (a loopback address)"},
		{"external localhost", external("redis://user:pw@localhost:6380/2"), single, 1, "localhost:6380 (localhost)"},
		{"external own address", external("10.1.2.3:6380"), single, 1, "an address of this machine"},
		{"external cluster seeds", external("redis://127.0.0.1:7000,127.0.0.1:7001,10.9.9.9:7002"), both, 2, "2 redis-server(s) on this machine"},
		{"external repeated seed", external("127.0.0.1:7000,127.0.0.1:7000"), both, 1, ""},
		{"external bad URL", external("ftp://x"), single, 0, "unusable"},
		{"single process", redisenv.Config{Backend: redisenv.BackendProcess}, single, 1, "1 local redis-server(s)"},
		{"auto, no topology", redisenv.Config{Backend: redisenv.BackendAuto}, nil, 1, ""},
		{"default cluster", redisenv.Config{Backend: redisenv.BackendProcess}, both, 3, ""},
		{"5 masters, 1 replica each", redisenv.Config{Backend: redisenv.BackendContainer, Masters: 5, Replicas: 1}, both, 10, ""},
	}
	for _, tt := range tests {
		got, where := localServers(tt.cfg, tt.tops, own)
		if got != tt.want || !strings.Contains(where, tt.where) {
			t.Errorf("%s: localServers = %d, %q; want %d, containing %q", tt.name, got, where, tt.want, tt.where)
		}
	}
}

func TestLocalAddr(t *testing.T) {
	own := ifaces("10.1.2.3/24", "2001:db8::7/64")
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:6379", true},
		{"127.255.0.9:1", true},
		{"[::1]:6379", true},
		{"[::ffff:127.0.0.1]:6379", true},
		{"localhost:6379", true},
		{"LocalHost.:6379", true},
		{"redis.localhost:6379", true},
		{"10.1.2.3:6379", true},
		{"[2001:db8::7]:6379", true},
		{"/var/run/redis.sock", true},
		{"unix:///var/run/redis.sock", true},
		{"10.1.2.4:6379", false}, // same subnet, another machine
		{"128.0.0.1:6379", false},
		{"[::2]:6379", false},
		{"localhost.example.com:6379", false},
		{"redis:6379", false}, // a name: never looked up
		{"0.0.0.0:6379", false},
	}
	for _, tt := range tests {
		if got, why := localAddr(tt.addr, own); got != tt.want || got == (why == "") {
			t.Errorf("localAddr(%q) = %v, %q; want %v and a reason exactly when local", tt.addr, got, why, tt.want)
		}
	}
	failing := func() ([]net.Addr, error) { return nil, errors.New("no interfaces") }
	if got, _ := localAddr("10.1.2.3:6379", failing); got {
		t.Errorf("localAddr with failing interface addresses = true; want false")
	}
	if got, _ := localAddr("127.0.0.1:6379", nil); !got {
		t.Errorf("localAddr(127.0.0.1) without interface addresses = false; want true")
	}
}

func TestGeneratorProcs(t *testing.T) {
	tests := []struct {
		cpus, servers, want int
		note                bool
	}{
		{2, 0, 0, false}, // Redis elsewhere: Go's default
		{2, 1, 1, true},
		{2, 3, 1, true}, // never below one
		{16, 1, 15, true},
		{16, 3, 13, true},
	}
	for _, tt := range tests {
		got, note := generatorProcs(tt.cpus, tt.servers, "where")
		if got != tt.want || (note != "") != tt.note {
			t.Errorf("generatorProcs(%d, %d) = (%d, %q); want %d, note %v", tt.cpus, tt.servers, got, note, tt.want, tt.note)
		}
	}
}

// TestApplyExternal: an external target on a loopback address is local for the CPU policy, as the
// process backend is; one elsewhere keeps Go's default; --procs overrides both. Each says so in
// ProcsNote, Applied reports the State in effect, and the undo restores GOMAXPROCS and Applied.
func TestApplyExternal(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if _, ok := Applied(); ok {
		t.Fatalf("Applied before any Apply = true")
	}
	tests := []struct {
		name      string
		url       string
		procs     int
		want      int
		local     int
		noteParts []string
	}{
		{"loopback", "redis://127.0.0.1:6390", 0, max(1, runtime.NumCPU()-1), 1, []string{"127.0.0.1:6390 (a loopback address)", "--procs to change"}},
		{"localhost", "localhost:6390", 0, max(1, runtime.NumCPU()-1), 1, []string{"localhost:6390 (localhost)"}},
		{"elsewhere", "redis://10.255.255.254:6390", 0, before, 0, []string{"Go's default", "10.255.255.254:6390 is not on this machine"}},
		{"--procs on loopback", "redis://127.0.0.1:6390", 3, 3, 1, []string{"GOMAXPROCS 3: --procs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, undo := Apply(Policy{Env: redisenv.Config{Backend: redisenv.BackendExternal, URL: tt.url},
				Topologies: []redisenv.Topology{redisenv.TopologySingle}, Procs: tt.procs})
			got := runtime.GOMAXPROCS(0)
			applied, ok := Applied()
			undo()
			if got != tt.want || st.Procs != tt.want || st.LocalServers != tt.local {
				t.Errorf("GOMAXPROCS %d, State %+v; want %d with %d local server(s)", got, st, tt.want, tt.local)
			}
			for _, p := range tt.noteParts {
				if !strings.Contains(st.ProcsNote, p) {
					t.Errorf("ProcsNote %q; want it to contain %q", st.ProcsNote, p)
				}
			}
			if !ok || applied.ProcsNote != st.ProcsNote || applied.LocalServers != st.LocalServers {
				t.Errorf("Applied() = %+v, %v during the Apply; want %+v", applied, ok, st)
			}
			if now := runtime.GOMAXPROCS(0); now != before {
				t.Errorf("GOMAXPROCS %d after the undo; want %d", now, before)
			}
			if _, ok := Applied(); ok {
				t.Errorf("Applied after the undo = true; want false")
			}
		})
	}
}
