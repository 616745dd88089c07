package load

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/wire"
)

// wireTo returns a go-redis client to env's server with the harness's options changed by set,
// and a wire connection with its options; the test's end closes both.
func wireTo(t *testing.T, env *redistest.Env, set func(*redis.Options)) (*redis.Client, *wire.Conn) {
	t.Helper()
	o := env.Target.NodeOptions(env.Target.Masters()[0])
	set(o)
	c := redis.NewClient(o)
	wc := wire.NewConn(c.Options())
	t.Cleanup(func() { wc.Close(); _ = c.Close() })
	return c, wc
}

// TestWireConnectionFaults: a wire connection's errors are classified as go-redis's are (a
// refused dial failed; a killed connection or a timeout unknown), and it dials again after them.
func TestWireConnectionFaults(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	k := env.Prefix + "{f}"
	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		_, wc := wireTo(t, env, func(o *redis.Options) { o.Addr = addr })
		cmd := redis.NewCmd(ctx, "ping")
		wc.Exec(ctx, []redis.Cmder{cmd})
		if ErrorKindOf(cmd.Err()) != KindRefused || Classify(cmd.Err()) != ClassFailed {
			t.Errorf("nothing listening: %v is %q/%v; want %q/failed", cmd.Err(), ErrorKindOf(cmd.Err()), Classify(cmd.Err()), KindRefused)
		}
	})
	t.Run("killed", func(t *testing.T) {
		c, wc := wireTo(t, env, func(o *redis.Options) { o.ClientName = "lb-wire-kill" })
		cmd := redis.NewCmd(ctx, "incr", k)
		wc.Exec(ctx, []redis.Cmder{cmd})
		if cmd.Err() != nil {
			t.Fatalf("INCR: %v", cmd.Err())
		}
		if err := c.Do(ctx, "client", "kill", "skipme", "yes", "id", clientID(t, c, "lb-wire-kill")).Err(); err != nil {
			t.Fatalf("CLIENT KILL: %v", err)
		}
		cmds := []redis.Cmder{redis.NewCmd(ctx, "incr", k), redis.NewCmd(ctx, "incr", k)}
		wc.Exec(ctx, cmds)
		for _, cmd := range cmds {
			if ErrorKindOf(cmd.Err()) != KindConnLost || Classify(cmd.Err()) != ClassUnknown {
				t.Errorf("on a killed connection: %v is %q/%v; want %q/unknown", cmd.Err(), ErrorKindOf(cmd.Err()), Classify(cmd.Err()), KindConnLost)
			}
		}
		// The next request dials again.
		cmd = redis.NewCmd(ctx, "incr", k)
		wc.Exec(ctx, []redis.Cmder{cmd})
		if v, err := cmd.Result(); err != nil || v != int64(2) {
			t.Errorf("after the kill: %v, %v; want 2 (a new connection; the lost requests did not run)", v, err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		c, wc := wireTo(t, env, func(o *redis.Options) { o.ReadTimeout = 100 * time.Millisecond })
		// A script that runs 400 ms keeps the server from answering within the timeout.
		busy := "local t = redis.call('TIME') local e = t[1] * 1e6 + t[2] + 400000 " +
			"repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] >= e return 1"
		cmd := redis.NewCmd(ctx, "eval", busy, 0)
		wc.Exec(ctx, []redis.Cmder{cmd})
		if ErrorKindOf(cmd.Err()) != KindTimeout || Classify(cmd.Err()) != ClassUnknown {
			t.Errorf("a slow reply: %v is %q/%v; want %q/unknown", cmd.Err(), ErrorKindOf(cmd.Err()), Classify(cmd.Err()), KindTimeout)
		}
		time.Sleep(400 * time.Millisecond)
		_ = c
		cmd = redis.NewCmd(ctx, "ping")
		wc.Exec(ctx, []redis.Cmder{cmd})
		if v, err := cmd.Result(); err != nil || v != "PONG" {
			t.Errorf("after the timeout: %v, %v; want PONG on a new connection, not the late reply", v, err)
		}
	})
}

// clientID returns the id of the connection named name (CLIENT LIST).
func clientID(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+name+" ") {
			id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
			return id
		}
	}
	t.Fatalf("no connection named %s in %s", name, list)
	return ""
}
