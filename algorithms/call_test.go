package algorithms

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// reuseCustom is a custom script for the Call tests: a fixed window per subject and client, by
// the client's second, charging {{cost}}; it returns {count, limit} and admits while count <=
// limit. Its arguments mix a constant ({{limit}}) and templates that change per request.
const reuseCustom = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], 2000)
redis.call('PEXPIRE', KEYS[1], 2000)
return {n <= tonumber(ARGV[1]) and 1 or 0, n}
`

func reuseCustomAlgorithm(t *testing.T) *Custom {
	spec := customSpec(reuseCustom, ReplyRule{Element: 1, Op: RuleEquals, Value: "1"})
	spec.Keys = []string{"rc:{{tag}}:{{client}}:{{now_s}}", "rc:{{tag}}:seen"}
	spec.Args = []string{"{{limit}}", "{{cost}}"}
	spec.Contract = Contract{Kind: NoContract}
	return newCustom(t, spec)
}

// reuseRequests are requests for subjects, clients and costs that change from one to the next,
// on both clocks, 30 ms apart from base.
func reuseRequests(multi bool) []Request {
	var out []Request
	for i := range 48 {
		at := base.Add(time.Duration(i) * 30 * time.Millisecond)
		r := Request{Subject: fmt.Sprintf("s%d", i%5), Client: fmt.Sprintf("c%d", i%3), Cost: 1, ClientTime: at, FixedTime: at}
		if multi && i%4 == 3 {
			r.Cost = 2
		}
		out = append(out, r)
	}
	return out
}

// TestCallReuse: a Call sending request after request (subjects, clients and costs changing) decides
// exactly as a Call per request does, on a client and in pipelines of Calls sent again and again;
// on a single server, where the Call sends the same command again, and on a cluster, where it
// makes one per request. Every algorithm, the reference and a custom script.
func TestCallReuse(t *testing.T) {
	l := Limit{Limit: 3, Window: time.Second}
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		algs := append(All(), Reference(), reuseCustomAlgorithm(t))
		for _, a := range algs {
			name := a.Describe().Name
			t.Run(name, func(t *testing.T) {
				fresh, err := a.Prepare(ctx, c, l, env.Prefix+name+":f:")
				if err != nil {
					t.Fatal(err)
				}
				reused, err := a.Prepare(ctx, c, l, env.Prefix+name+":r:")
				if err != nil {
					t.Fatal(err)
				}
				reqs := reuseRequests(a.Describe().Cost || name == "my-limiter")
				check := func(how string, req Request, got Decision, gotErr error, want Decision, wantErr error) {
					t.Helper()
					if got != want || (gotErr == nil) != (wantErr == nil) {
						t.Errorf("%s %+v: reused Call %+v, %v; a Call per request %+v, %v", how, req, got, gotErr, want, wantErr)
					}
				}
				// The first half one at a time on the client, through one Call.
				call := reused.NewCall()
				half := len(reqs) / 2
				for _, req := range reqs[:half] {
					call.Send(ctx, c, req)
					got, gotErr := call.Result()
					want, wantErr := Do(ctx, fresh, c, req)()
					check("client", req, got, gotErr, want, wantErr)
				}
				// The rest in pipelines of 4, through the same 4 Calls each time.
				const depth = 4
				calls := make([]Call, depth)
				for i := range calls {
					calls[i] = reused.NewCall()
				}
				for i := half; i < len(reqs); i += depth {
					batch := reqs[i:min(i+depth, len(reqs))]
					pr, pf := c.Pipeline(), c.Pipeline()
					pend := make([]Pending, len(batch))
					for j, req := range batch {
						calls[j].Send(ctx, pr, req)
						pend[j] = Do(ctx, fresh, pf, req)
					}
					_, _ = pr.Exec(ctx)
					_, _ = pf.Exec(ctx)
					for j, req := range batch {
						got, gotErr := calls[j].Result()
						want, wantErr := pend[j]()
						check("pipeline", req, got, gotErr, want, wantErr)
					}
				}
			})
		}
	})
}

// TestCallAllocs: on a single server a Call sent again and again allocates no more per request
// than go-redis does for a command it is given ready-made (an EVALSHA of the same script built
// once and sent again): everything above that floor would be the Call's own. On a client and on a
// connection of it; for scripts sent with EVALSHA and as functions sent with FCALL.
func TestCallAllocs(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	client := env.Target.Client
	conn := client.(*redis.Client).Conn()
	t.Cleanup(func() { _ = conn.Close() })
	l := Limit{Limit: 1 << 20, Window: time.Second}
	req := Request{Subject: "alloc", Client: "c", Cost: 1, ClientTime: time.Now()}
	for _, a := range append(All(), Reference(), reuseCustomAlgorithm(t)) {
		name := a.Describe().Name
		if name == "sliding-log-published" {
			continue // four plain commands built per request, as the article sends them
		}
		for _, mode := range []CallMode{CallEvalSha, CallFCall} {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				pctx := ctx
				if mode == CallFCall {
					var fns Functions
					pctx = WithFunctions(ctx, &fns)
					t.Cleanup(func() { _ = fns.Delete(ctx) })
				}
				lim, err := a.Prepare(pctx, client, l, env.Prefix+name+":"+string(mode)+":")
				if err != nil {
					t.Fatal(err)
				}
				for _, target := range []struct {
					name string
					c    redis.Cmdable
				}{{"client", client}, {"connection", conn}} {
					call := lim.NewCall()
					call.Send(ctx, target.c, req)
					if _, err := call.Result(); err != nil {
						t.Fatalf("%s: %v", target.name, err)
					}
					// The floor: the command this Call sent, sent again as it is.
					e := call.(interface{ lastSent() *evalCmd }).lastSent()
					floor := testing.AllocsPerRun(50, func() {
						e.cmd.SetErr(nil)
						_ = target.c.(processor).Process(ctx, e.cmd)
						_, _ = e.cmd.Result()
					})
					got := testing.AllocsPerRun(50, func() {
						call.Send(ctx, target.c, req)
						_, _ = call.Result()
					})
					if got > floor {
						t.Errorf("%s: %.1f allocations per request; go-redis's floor for the same command is %.1f", target.name, got, floor)
					}
				}
			})
		}
	}
}

// lastSent returns the command a script's Call sent last (tests).
func (s *scriptCall) lastSent() *evalCmd { return s.sent }
