package redisenv_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// redisURL returns a redis:// URL with the target's password for its first master.
func redisURL(target *redisenv.Target) string {
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", target.Password), Host: target.Masters()[0]}
	return u.String()
}

func TestExternalSingleKeepsForeignKeys(t *testing.T) {
	needRedisServer(t)
	ctx := context.Background()
	server := startT(t, redisenv.Config{Backend: redisenv.BackendProcess})
	if err := server.Client.Set(ctx, "someone-else:key", "keep", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ext := startT(t, redisenv.Config{Backend: redisenv.BackendExternal, URL: redisURL(server)})
	if ext.Info.Backend != redisenv.BackendExternal || ext.Info.SharedClock || ext.Info.Version == "" {
		t.Errorf("Info = %+v, want external, SharedClock false, a version", ext.Info)
	}
	const prefix = "limitbench:run1:"
	if err := ext.ClaimPrefix(ctx, prefix); err != nil {
		t.Fatalf("ClaimPrefix on an empty prefix: %v", err)
	}
	for _, k := range []string{prefix + "a", prefix + "b", prefix + "*[odd]?"} {
		if err := ext.Client.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ext.ClaimPrefix(ctx, prefix); !errors.Is(err, redisenv.ErrPrefixInUse) {
		t.Errorf("ClaimPrefix on a used prefix = %v, want ErrPrefixInUse", err)
	}
	// A prefix whose glob characters would match more must be escaped.
	if err := ext.Client.Set(ctx, "limitbench:runX:z", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ext.CleanupPrefix(ctx, "limitbench:run?:"); err != nil {
		t.Fatal(err)
	}
	if err := ext.CleanupPrefix(ctx, prefix); err != nil {
		t.Fatalf("CleanupPrefix: %v", err)
	}
	keys, err := server.Client.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"someone-else:key": true, "limitbench:runX:z": true}
	if len(keys) != len(want) {
		t.Errorf("keys after cleanup = %v, want %v", keys, want)
	}
	for _, k := range keys {
		if !want[k] {
			t.Errorf("key %q survived cleanup", k)
		}
	}
	if err := ext.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// Stopping an external target leaves the server running.
	if err := server.Client.Ping(ctx).Err(); err != nil {
		t.Errorf("server after external Stop: %v", err)
	}
}

func TestExternalCluster(t *testing.T) {
	needRedisServer(t)
	ctx := context.Background()
	server := startT(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster})
	if err := server.Client.Set(ctx, "{other}:key", "keep", 0).Err(); err != nil {
		t.Fatal(err)
	}
	seeds := strings.Join(server.Masters()[1:], ",")
	ext := startT(t, redisenv.Config{Backend: redisenv.BackendExternal, Topology: redisenv.TopologyCluster,
		URL: seeds, Password: server.Password})
	checkCluster(t, ext, 3)
	const prefix = "limitbench:run2:"
	for i := range 50 {
		if err := ext.Client.Set(ctx, prefix+string(rune('a'+i%26))+strings.Repeat("x", i), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ext.CleanupPrefix(ctx, prefix); err != nil {
		t.Fatalf("CleanupPrefix: %v", err)
	}
	n := 0
	err := ext.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, "*").Result()
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				n++
			}
		}
		return err
	})
	if err != nil || n != 0 {
		t.Errorf("after CleanupPrefix: %d keys left, %v", n, err)
	}
	if v, err := server.Client.Get(ctx, "{other}:key").Result(); err != nil || v != "keep" {
		t.Errorf("foreign key = %q, %v; want keep", v, err)
	}
}

// silentListener accepts connections and never answers.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func TestExternalErrors(t *testing.T) {
	needRedisServer(t)
	single := startT(t, redisenv.Config{Backend: redisenv.BackendProcess})
	cluster := startT(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologyCluster})
	wrong := url.URL{Scheme: "redis", User: url.UserPassword("default", "not-the-password"), Host: single.Masters()[0]}
	tests := []struct {
		name     string
		cfg      redisenv.Config
		sentinel error
		want     string
	}{
		{"closed port", redisenv.Config{URL: "redis://" + closedPort(t)}, redisenv.ErrUnavailable, "cannot reach"},
		{"silent server", redisenv.Config{URL: silentListener(t)}, redisenv.ErrUnavailable, "cannot reach"},
		{"wrong password", redisenv.Config{URL: wrong.String()}, redisenv.ErrBadConfig, "wrong user or password"},
		{"cluster asked, single found", redisenv.Config{URL: redisURL(single), Topology: redisenv.TopologyCluster},
			redisenv.ErrBadConfig, "is not a Redis Cluster"},
		{"single asked, cluster found", redisenv.Config{URL: cluster.Masters()[0], Password: cluster.Password},
			redisenv.ErrBadConfig, "is a Redis Cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Backend = redisenv.BackendExternal
			begin := time.Now()
			target, err := redisenv.Start(context.Background(), tt.cfg)
			took := time.Since(begin)
			if err == nil {
				_ = target.Stop(context.Background())
				t.Fatalf("Start(%s) succeeded, want an error", tt.cfg.URL)
			}
			if !errors.Is(err, tt.sentinel) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start(%s) = %v; want %v containing %q", tt.cfg.URL, err, tt.sentinel, tt.want)
			}
			if strings.Contains(err.Error(), "not-the-password") {
				t.Errorf("error shows the password: %v", err)
			}
			// The 5 s bound is part of the contract; allow scheduling slack on a loaded machine.
			if took > 8*time.Second {
				t.Errorf("Start took %s, want about 5 s at most", took)
			}
		})
	}
}
