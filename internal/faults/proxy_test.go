package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestLinkFaultValidate(t *testing.T) {
	tests := []struct {
		name string
		f    LinkFault
		want []string // nil: valid
	}{
		{"latency", LinkFault{Kind: LinkLatency, Latency: 50 * time.Millisecond, Jitter: 5 * time.Millisecond}, nil},
		{"reset to-server", LinkFault{Kind: LinkReset, Direction: DirToServer}, nil},
		{"blackhole drop", LinkFault{Kind: LinkBlackhole, Drop: true}, nil},
		{"unknown kind", LinkFault{Kind: "partition"}, []string{`unknown kind "partition"`}},
		{"unknown direction", LinkFault{Kind: LinkReset, Direction: "up"}, []string{`unknown direction "up"`}},
		{"no latency", LinkFault{Kind: LinkLatency}, []string{"latency 0s"}},
		{"sub-millisecond latency", LinkFault{Kind: LinkLatency, Latency: 1500 * time.Microsecond}, []string{"whole number of milliseconds"}},
		{"jitter above latency", LinkFault{Kind: LinkLatency, Latency: time.Millisecond, Jitter: 2 * time.Millisecond}, []string{"jitter 2ms"}},
		{"latency on reset", LinkFault{Kind: LinkReset, Latency: time.Millisecond}, []string{"latency and jitter are for kind latency"}},
		{"drop on latency", LinkFault{Kind: LinkLatency, Latency: time.Millisecond, Drop: true}, []string{"drop is for kind blackhole"}},
		{"all at once", LinkFault{Kind: "x", Direction: "y", Drop: true}, []string{`unknown kind "x"`, `unknown direction "y"`, "drop is for"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrBadFault) {
				t.Fatalf("Validate() = %v, want ErrBadFault", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to mention %q", err, w)
				}
			}
		})
	}
	if s := (LinkFault{Kind: LinkLatency, Latency: 50 * time.Millisecond, Jitter: 5 * time.Millisecond}).String(); s != "latency 50ms±5ms to-client" {
		t.Errorf("String() = %q", s)
	}
	if s := (LinkFault{Kind: LinkBlackhole, Drop: true}).String(); s != "blackhole both (drop)" {
		t.Errorf("String() = %q", s)
	}
}

func TestNewProxyLoopbackOnly(t *testing.T) {
	for _, up := range []string{"10.0.0.1:6380", "example.com:6380", "localhost", "[::2]:1"} {
		if p, err := NewProxy(up); !errors.Is(err, ErrBadFault) {
			if p != nil {
				_ = p.Close()
			}
			t.Errorf("NewProxy(%q) = %v, want ErrBadFault", up, err)
		}
	}
	p, err := NewProxy("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") || p.Port() == 0 || p.Upstream() != "127.0.0.1:1" {
		t.Errorf("proxy listens on %s (port %d) for %s; want 127.0.0.1", p.Addr(), p.Port(), p.Upstream())
	}
	if _, err := p.Inject(LinkFault{Kind: "x"}); !errors.Is(err, ErrBadFault) {
		t.Errorf("Inject of a bad fault = %v, want ErrBadFault", err)
	}
}

// proxied starts a single server, a proxy in front of it, and returns the target, the proxy, a
// client through the proxy (reads time out after 300 ms) and a direct client.
func proxied(t *testing.T) (*redisenv.Target, *Proxy, *redis.Client, *redis.Client) {
	t.Helper()
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess})
	p, err := NewProxy(target.Masters()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	through := redis.NewClient(&redis.Options{Addr: p.Addr(), Password: target.Password, MaxRetries: -1, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	direct := redis.NewClient(&redis.Options{Addr: target.Masters()[0], Password: target.Password, MaxRetries: -1})
	t.Cleanup(func() { _ = through.Close(); _ = direct.Close() })
	return target, p, through, direct
}

func TestProxyLatency(t *testing.T) {
	target, p, _, _ := proxied(t)
	through := redis.NewClient(&redis.Options{Addr: p.Addr(), Password: target.Password, MaxRetries: -1, PoolSize: 2})
	defer through.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	remove, err := p.Inject(LinkFault{Kind: LinkLatency, Latency: 60 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The open connection gets the latency: no reply can come sooner.
	for i := range 5 {
		begin := time.Now()
		if err := through.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING %d: %v", i, err)
		}
		if d := time.Since(begin); d < 60*time.Millisecond {
			t.Errorf("PING %d through a 60ms latency took %s", i, d)
		}
	}
	fresh := redis.NewClient(&redis.Options{Addr: p.Addr(), Password: target.Password, MaxRetries: -1, PoolSize: 1})
	defer fresh.Close()
	begin := time.Now()
	if err := fresh.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A new connection: the AUTH reply and the PONG each wait 60 ms.
	if d := time.Since(begin); d < 120*time.Millisecond {
		t.Errorf("AUTH and PING on a new connection through a 60ms latency took %s", d)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if err := remove(); err != nil {
		t.Errorf("remove twice: %v", err)
	}
	if err := through.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after the latency: %v", err)
	}
}

func TestProxyReset(t *testing.T) {
	for _, dir := range []Direction{DirToServer, DirToClient} {
		t.Run(string(dir), func(t *testing.T) {
			_, p, through, direct := proxied(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := through.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			remove, err := p.Inject(LinkFault{Kind: LinkReset, Direction: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := through.Set(ctx, "k", "v", 0).Err(); err == nil {
				t.Fatalf("SET through a reset link succeeded")
			}
			// to-server: the request never reached Redis; to-client: Redis ran it, the reply was lost.
			n, err := direct.Exists(ctx, "k").Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := map[Direction]int64{DirToServer: 0, DirToClient: 1}[dir]; n != want {
				t.Errorf("EXISTS k after a %s reset = %d, want %d", dir, n, want)
			}
			if err := remove(); err != nil {
				t.Fatal(err)
			}
			if err := through.Ping(ctx).Err(); err != nil {
				t.Errorf("PING on a new connection after the reset: %v", err)
			}
		})
	}
}

func TestProxyBlackhole(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("drop=%v", drop), func(t *testing.T) {
			_, p, through, direct := proxied(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := through.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			remove, err := p.Inject(LinkFault{Kind: LinkBlackhole, Drop: drop})
			if err != nil {
				t.Fatal(err)
			}
			// The request is held (or dropped): the client times out, Redis has not run it.
			if err := through.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "timeout") {
				t.Fatalf("SET through a blackhole = %v, want a timeout", err)
			}
			if n, err := direct.Exists(ctx, "k").Result(); err != nil || n != 0 {
				t.Fatalf("EXISTS k during the blackhole = %d, %v; want 0", n, err)
			}
			if err := remove(); err != nil {
				t.Fatal(err)
			}
			if !drop {
				// Released: the held request reaches Redis late, after the client gave up on it.
				deadline := time.Now().Add(5 * time.Second)
				for {
					n, err := direct.Exists(ctx, "k").Result()
					if err == nil && n == 1 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the held SET never reached Redis after the release (EXISTS = %d, %v)", n, err)
					}
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				// Dropped: a PING on a new connection crosses the proxy (so anything released
				// would have arrived before it), and the key is still absent.
				if err := through.Ping(ctx).Err(); err != nil {
					t.Fatalf("PING after the blackhole: %v", err)
				}
				if n, err := direct.Exists(ctx, "k").Result(); err != nil || n != 0 {
					t.Errorf("EXISTS k after a dropping blackhole = %d, %v; want 0", n, err)
				}
			}
			if err := through.Ping(ctx).Err(); err != nil {
				t.Errorf("PING after the blackhole: %v", err)
			}
		})
	}
}

// TestProxyCloseEndsConnections checks that Close ends the connections through a proxy, and
// that Inject after Close fails.
func TestProxyCloseEndsConnections(t *testing.T) {
	_, p, through, _ := proxied(t)
	ctx := context.Background()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Inject(LinkFault{Kind: LinkBlackhole}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := through.Ping(ctx).Err(); err == nil {
		t.Errorf("PING through a closed proxy succeeded")
	}
	if _, err := p.Inject(LinkFault{Kind: LinkReset}); err == nil {
		t.Errorf("Inject after Close succeeded")
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close twice: %v", err)
	}
}

// TestProxyInjectFor holds a write for the fault's duration: a write sent while the fault is in
// place reaches Redis, and returns, only once the fault is over, and InjectFor reports when the
// fault was in place.
func TestProxyInjectFor(t *testing.T) {
	target, p, _, direct := proxied(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		start, end time.Time
		err        error
	}
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			t.Fatalf("in 5 attempts no write was sent while the fault was in place")
		}
		c := redis.NewClient(&redis.Options{Addr: p.Addr(), Password: target.Password, MaxRetries: -1, PoolSize: 1})
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		done := make(chan result, 1)
		go func() {
			s, e, err := p.InjectFor(ctx, LinkFault{Kind: LinkBlackhole}, 300*time.Millisecond)
			done <- result{s, e, err}
		}()
		time.Sleep(50 * time.Millisecond) // sequencing only: a write sent before the fault is retried
		sent := time.Now()
		err := c.Set(ctx, "k", attempt, 0).Err()
		returned := time.Now()
		_ = c.Close()
		r := <-done
		if err != nil || r.err != nil {
			t.Fatalf("SET = %v, InjectFor = %v", err, r.err)
		}
		if !r.start.Before(r.end) {
			t.Fatalf("InjectFor reports [%s, %s)", r.start, r.end)
		}
		if sent.Before(r.start) || !sent.Before(r.end) {
			continue // not sent during the fault
		}
		// The blackhole holds the write until the fault comes off, which begins d after start
		// and ends by r.end (the release happens during the removal, so before r.end is allowed).
		if lifted := r.start.Add(300 * time.Millisecond); returned.Before(lifted) {
			t.Errorf("a SET sent at %s during the fault [%s, %s) returned at %s, before the fault came off at %s", sent, r.start, r.end, returned, lifted)
		}
		if v, err := direct.Get(ctx, "k").Int(); err != nil || v != attempt {
			t.Errorf("GET k = %d, %v; want %d", v, err, attempt)
		}
		break
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, _, err := p.InjectFor(cctx, LinkFault{Kind: LinkReset}, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("InjectFor with a cancelled context = %v, want context.Canceled", err)
	}
}
