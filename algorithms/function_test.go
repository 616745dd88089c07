package algorithms

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestParseCallMode(t *testing.T) {
	tests := []struct {
		in   string
		want CallMode
		ok   bool
	}{
		{"", CallEvalSha, true}, {"evalsha", CallEvalSha, true}, {"fcall", CallFCall, true},
		{"FCALL", "", false}, {"eval", "", false},
	}
	for _, tt := range tests {
		got, err := ParseCallMode(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseCallMode(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// functionLibraries returns how many masters of c hold each function library, and under "" how
// many masters c has.
func functionLibraries(t *testing.T, c redis.UniversalClient) map[string]int {
	t.Helper()
	libs := map[string]int{}
	var mu sync.Mutex
	err := onEveryMaster(context.Background(), c, func(ctx context.Context, m redis.Cmdable) error {
		list, err := m.FunctionList(ctx, redis.FunctionListQuery{}).Result()
		mu.Lock()
		defer mu.Unlock()
		libs[""]++ // the masters
		for _, l := range list {
			libs[l.Name]++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return libs
}

// fcallRequests is a sequence of requests across several windows, with costs above 1 when multi.
func fcallRequests(multi bool) []Request {
	var reqs []Request
	for i := range 80 {
		tm := base.Add(time.Duration(i) * 37 * time.Millisecond)
		cost := int64(1)
		if multi {
			cost = int64(1 + i%3)
		}
		reqs = append(reqs, Request{Subject: "s" + string(rune('a'+i%2)), Client: "c" + string(rune('a'+i%3)),
			Cost: cost, ClientTime: tm, FixedTime: tm})
	}
	return reqs
}

// TestFCallMatchesEvalSha: every built-in algorithm prepared as a Redis Function decides exactly as
// with EVALSHA on the same requests (at fixed times), sends FCALL, and its library is gone from
// every master after Delete.
func TestFCallMatchesEvalSha(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		l := Limit{Limit: 5, Window: time.Second, Burst: 7, ConsumerLimit: 3}
		for _, a := range All() {
			name := a.Describe().Name
			t.Run(name, func(t *testing.T) {
				var fns Functions
				sha, err := a.Prepare(ctx, c, l, env.Prefix+name+":e:")
				if err != nil {
					t.Fatal(err)
				}
				fc, err := a.Prepare(WithFunctions(ctx, &fns), c, l, env.Prefix+name+":f:")
				if err != nil {
					t.Fatalf("Prepare with functions: %v", err)
				}
				libs := fns.Libraries()
				scripted := name != "sliding-log-published" // plain commands, as the article sends them
				if scripted != (len(libs) == 1) {
					t.Fatalf("libraries loaded: %v", libs)
				}
				if scripted {
					on := functionLibraries(t, c)
					if on[libs[0]] != on[""] {
						t.Fatalf("library %s on %d masters, want %d", libs[0], on[libs[0]], on[""])
					}
				}
				sc, fcc := sha.NewCall(), fc.NewCall()
				admitted := 0
				for i, req := range fcallRequests(a.Describe().Cost) {
					sc.Send(ctx, c, req)
					want, werr := sc.Result()
					fcc.Send(ctx, c, req)
					got, gerr := fcc.Result()
					if (werr == nil) != (gerr == nil) || got != want {
						t.Fatalf("request %d %+v: fcall %+v, %v; evalsha %+v, %v", i, req, got, gerr, want, werr)
					}
					if gerr != nil {
						t.Fatalf("request %d: %v", i, gerr)
					}
					if got.Allowed {
						admitted++
					}
					if i == 0 && scripted {
						if v := fcc.(interface{ lastSent() *evalCmd }).lastSent().args[0]; v != "fcall" {
							t.Fatalf("sent %v, want fcall", v)
						}
					}
				}
				if admitted == 0 || admitted == 80 {
					t.Errorf("%d of 80 admitted: the sequence does not exercise both decisions", admitted)
				}
				if err := fns.Delete(ctx); err != nil {
					t.Fatal(err)
				}
				for lib := range functionLibraries(t, c) {
					if strings.HasPrefix(lib, "limitbench_") {
						t.Errorf("library %s left after Delete", lib)
					}
				}
			})
		}
	})
}

// TestFCallFunctionFlush: after FUNCTION FLUSH on every master, a Call on a client loads the
// library again and its request succeeds; in a pipeline the request meeting "Function not found"
// fails, the library is loaded again, and the next pipeline succeeds.
func TestFCallFunctionFlush(t *testing.T) {
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		flush := func() {
			t.Helper()
			if err := onEveryMaster(ctx, c, func(ctx context.Context, m redis.Cmdable) error {
				return m.FunctionFlush(ctx).Err()
			}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"gcra", "fixed-window", "token-bucket"} {
			t.Run(name, func(t *testing.T) {
				var fns Functions
				t.Cleanup(func() { _ = fns.Delete(ctx) })
				l := Limit{Limit: 1000, Window: time.Second}
				lim, err := lookup(t, name).Prepare(WithFunctions(ctx, &fns), c, l, env.Prefix+name+":")
				if err != nil {
					t.Fatal(err)
				}
				req := Request{Subject: "flush", Cost: 1}
				decide(t, c, lim, req)

				flush()
				decide(t, c, lim, req) // plain: reloaded and sent again
				if on := functionLibraries(t, c); on[fns.Libraries()[0]] != on[""] {
					t.Fatal("library not loaded again after FUNCTION FLUSH")
				}

				flush()
				calls := []Call{lim.NewCall(), lim.NewCall()}
				pipe := c.Pipeline()
				for _, call := range calls {
					call.Send(ctx, pipe, req)
				}
				_, _ = pipe.Exec(ctx)
				for i, call := range calls {
					if _, err := call.Result(); err == nil || !strings.Contains(err.Error(), "Function not found") {
						t.Fatalf("pipelined call %d after FUNCTION FLUSH: %v; want Function not found", i, err)
					}
				}
				pipe = c.Pipeline()
				for _, call := range calls {
					call.Send(ctx, pipe, req)
				}
				_, _ = pipe.Exec(ctx)
				for i, call := range calls {
					if _, err := call.Result(); err != nil {
						t.Fatalf("pipelined call %d after the reload: %v", i, err)
					}
				}
			})
		}
	})
}
