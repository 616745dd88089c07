package redisenv

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestServerSpecConf(t *testing.T) {
	tests := []struct {
		name      string
		spec      serverSpec
		container bool
		want      []string // lines that must be present
		not       []string // substrings that must be absent
	}{
		{"plain", serverSpec{password: "pw"}, false,
			[]string{"port 7000", "bind 127.0.0.1", "requirepass pw", "masterauth pw", `save ""`, "appendonly no",
				"dir /tmp/x", "logfile /tmp/x/redis.log", "daemonize no"},
			[]string{"cluster-enabled", "replicaof", "protected-mode", "sentinel"}},
		{"aof-everysec", serverSpec{password: "pw", persistence: PersistenceAOFEverySec}, false,
			[]string{"appendonly yes", "appendfsync everysec", `save ""`}, nil},
		{"aof-always", serverSpec{password: "pw", persistence: PersistenceAOFAlways}, false,
			[]string{"appendonly yes", "appendfsync always"}, nil},
		{"cluster replica in a container", serverSpec{password: "pw", cluster: true, replicaOf: "127.0.0.1:7001"}, true,
			[]string{"cluster-enabled yes", "replicaof 127.0.0.1 7001", "protected-mode no"}, nil},
		{"sentinel", serverSpec{password: "pw", monitor: "127.0.0.1:7001"}, false,
			[]string{"port 7000", "requirepass pw", "sentinel sentinel-pass pw", "sentinel monitor limitbench 127.0.0.1 7001 2",
				"sentinel auth-pass limitbench pw", "sentinel down-after-milliseconds limitbench 2000"},
			[]string{"daemonize", "appendonly", "masterauth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.spec.conf(7000, "/tmp/x", "/tmp/x/redis.log", tt.container)
			lines := strings.Split(strings.TrimSpace(got), "\n")
			for _, w := range tt.want {
				if !contains(lines, w) {
					t.Errorf("conf lacks line %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("conf holds %q:\n%s", n, got)
				}
			}
		})
	}
}

func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}

func TestConfQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "plain",
		"":               `""`,
		"/tmp/a dir":     `"/tmp/a dir"`,
		`say "hi"\now`:   `"say \"hi\"\\now"`,
		"tab\there":      `"tab\there"`,
		"/tmp/limit-123": "/tmp/limit-123",
	} {
		if got := confQuote(in); got != want {
			t.Errorf("confQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseImageUser(t *testing.T) {
	for in, want := range map[string]fileOwner{
		"":            {},
		"65534:65534": {uid: 65534, gid: 65534},
		"999":         {uid: 999, gid: 999},
		"1000:0":      {uid: 1000, gid: 0},
		"redis":       {byName: true},
		"redis:redis": {byName: true},
		"1000:redis":  {byName: true},
	} {
		if got := parseImageUser(in); got != want {
			t.Errorf("parseImageUser(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestParseLiveClusterNodes(t *testing.T) {
	raw := strings.Join([]string{
		"a 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460",
		"b 127.0.0.1:7001@17001 master,fail - 0 1 2 disconnected 5461-10922",
		"c 127.0.0.1:7002@17002 master - 0 1 3 connected 10923-16383 [42->-b]",
		"d 127.0.0.1:7003@17003 slave,fail? b 0 1 2 connected",
		"e 127.0.0.1:7004@17004 handshake - 0 1 0 connected",
	}, "\n")
	got, err := parseLiveClusterNodes(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{ID: "a", Addr: "127.0.0.1:7000", Role: RoleMaster, Slots: [][2]int{{0, 5460}}},
		{ID: "b", Addr: "127.0.0.1:7001", Role: RoleMaster, Slots: [][2]int{{5461, 10922}}, Down: true},
		{ID: "c", Addr: "127.0.0.1:7002", Role: RoleMaster, Slots: [][2]int{{10923, 16383}}},
		{ID: "d", Addr: "127.0.0.1:7003", Role: RoleReplica, MasterID: "b", Down: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseLiveClusterNodes (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"short", "a 127.0.0.1:7000@17000 master - 0 0 1 connected x-1"} {
		if _, err := parseLiveClusterNodes(bad); err == nil {
			t.Errorf("parseLiveClusterNodes(%q) succeeded, want an error", bad)
		}
	}
}

func TestSentinelDown(t *testing.T) {
	for flags, want := range map[string]bool{
		"master": false, "slave": false, "sentinel": false,
		"master,s_down": true, "master,s_down,o_down": true, "slave,disconnected": true,
		"master,failover_in_progress": false,
	} {
		if got := sentinelDown(flags); got != want {
			t.Errorf("sentinelDown(%q) = %v, want %v", flags, got, want)
		}
	}
}
