package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// wireClient returns a go-redis client to env's server with the harness's options and
// overrides, and a wire connection with the same options, both closed when the test ends.
func wireClient(t *testing.T, env *redistest.Env, set func(*redis.Options)) (*redis.Client, *Conn) {
	t.Helper()
	o := env.Target.NodeOptions(env.Target.Masters()[0])
	if set != nil {
		set(o)
	}
	c := redis.NewClient(o)
	wc := NewConn(c.Options())
	t.Cleanup(func() {
		wc.Close()
		_ = c.Close()
	})
	return c, wc
}

// sameReply reports whether go-redis's reply (v, err) and the wire connection's (wv, werr) are
// the same: equal values (NaN equal to NaN, error replies inside aggregates equal when their
// texts are) and equal errors (both nil, both redis.Nil, or both error replies of the same text).
func sameReply(v any, err error, wv any, werr error) bool {
	if (err == nil) != (werr == nil) {
		return false
	}
	if err != nil {
		var re, wre redis.Error
		return err.Error() == werr.Error() && (err == redis.Nil) == (werr == redis.Nil) &&
			errors.As(err, &re) == errors.As(werr, &wre)
	}
	return sameValue(v, wv)
}

func sameValue(v, wv any) bool {
	switch v := v.(type) {
	case float64:
		wf, ok := wv.(float64)
		return ok && (v == wf || math.IsNaN(v) && math.IsNaN(wf))
	case redis.Error:
		we, ok := wv.(redis.Error)
		return ok && v.Error() == we.Error()
	case []any:
		wa, ok := wv.([]any)
		if !ok || len(wa) != len(v) {
			return false
		}
		for i := range v {
			if !sameValue(v[i], wa[i]) {
				return false
			}
		}
		return true
	case map[any]any:
		wm, ok := wv.(map[any]any)
		if !ok || len(wm) != len(v) {
			return false
		}
		for k, x := range v {
			if !sameValue(x, wm[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(v, wv)
}

func TestRepliesAreGoRedis(t *testing.T) {
	// Every kind of reply, read by go-redis and by a wire connection, on RESP2 and RESP3, gives
	// the same value or error: the decoders and error classes see no difference (an error is the
	// same when its text, its being redis.Nil and its being a redis.Error are, which is all
	// load.ErrorKindOf and load.Classify read of an error reply).
	env := redistest.Single(t)
	ctx := context.Background()
	k := env.Prefix + "{w}"
	script := func(body string) []any { return []any{"eval", body, 1, k} }
	resp3 := func(body string) []any { return script("redis.setresp(3) " + body) }
	cmds := [][]any{
		script("return 42"),
		script("return -9223372036854775807"),
		script("return 'text'"),
		script("return ''"),
		script("return {ok='FINE'}"),
		script("return {err='MYCODE the script says no'}"),
		script("return redis.error_reply('plain words')"),
		script("return false"),
		script("return true"),
		script("return nil"),
		script("return {1, 'two', {3, {'four'}}, {}}"),
		script("return {1, false, 3}"),
		script("return {1, {err='NESTED inside'}, 3}"),
		script("return {1, redis.pcall('INCR', KEYS[1] .. 'x', 'extra')}"),
		script("return 3.99"),
		script("error('raised')"),
		script("return string.rep('x', 70000)"),
		script("local t = {} for i = 1, 5000 do t[i] = i * 1000 end return t"),
		resp3("return {double=1.5}"),
		resp3("return {double=1/0}"),
		resp3("return {double=-1/0}"),
		resp3("return {double=0/0}"),
		resp3("return {big_number='123456789012345678901234567890'}"),
		resp3("return {verbatim_string={format='txt', string='verbatim'}}"),
		resp3("return {map={a=1}}"),
		resp3("return {set={x=true}}"),
		resp3("return true"),
		resp3("return false"),
		resp3("return nil"),
		{"dbsize"},
		{"get", k + "missing"},
		{"set", k, "v"},
		{"get", k},
		{"incr", k},
		{"evalsha", "0000000000000000000000000000000000000000", 0},
		{"hello", 3},
		{"nosuchcommand"},
		{"config", "get", "maxmemory*"},
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c, wc := wireClient(t, env, func(o *redis.Options) { o.Protocol = proto })
			for _, args := range cmds {
				want := c.Do(ctx, args...)
				if args[0] == "hello" {
					// HELLO switches the connection's protocol: ask for the connection's own.
					want = c.Do(ctx, "hello", proto)
					args = []any{"hello", proto}
				}
				got := redis.NewCmd(ctx, args...)
				wc.Exec(ctx, []redis.Cmder{got})
				v, err := want.Result()
				wv, werr := got.Result()
				if args[0] == "hello" {
					// The connection id and the like differ: compare the keys and the protocol.
					var m, wm map[any]any
					if proto == 2 {
						m, wm = pairs(v.([]any)), pairs(wv.([]any))
					} else {
						m, wm = v.(map[any]any), wv.(map[any]any)
					}
					if len(m) != len(wm) || fmt.Sprint(m["proto"]) != fmt.Sprint(wm["proto"]) {
						t.Errorf("HELLO: go-redis %v, wire %v", v, wv)
					}
					continue
				}
				if !sameReply(v, err, wv, werr) {
					t.Errorf("%.60q: go-redis (%T %.100s, %v), wire (%T %.100s, %v)", args, v, fmt.Sprint(v), err, wv, fmt.Sprint(wv), werr)
				}
			}
		})
	}
}

// pairs reads a RESP2 array of field-value pairs as a map.
func pairs(a []any) map[any]any {
	m := map[any]any{}
	for i := 0; i+1 < len(a); i += 2 {
		m[a[i]] = a[i+1]
	}
	return m
}

func TestPipelinesInOrder(t *testing.T) {
	// A batch goes out in one write and each command gets its own reply, an error reply in the
	// middle included; typed commands (WAIT's IntCmd) get theirs.
	env := redistest.Single(t)
	ctx := context.Background()
	_, wc := wireClient(t, env, nil)
	k := env.Prefix + "{p}"
	var cmds []redis.Cmder
	for i := range 40 {
		if i == 17 {
			cmds = append(cmds, redis.NewCmd(ctx, "eval", "return redis.error_reply('NO at 17')", 0))
			continue
		}
		cmds = append(cmds, redis.NewCmd(ctx, "incr", k))
	}
	wait := redis.NewIntCmd(ctx, "wait", 0, 0)
	status := redis.NewStatusCmd(ctx, "ping")
	cmds = append(cmds, wait, status)
	wc.Exec(ctx, cmds)
	n := int64(0)
	for i, cmd := range cmds[:40] {
		v, err := cmd.(*redis.Cmd).Result()
		if i == 17 {
			var re redis.Error
			if !errors.As(err, &re) || err.Error() != "NO at 17" {
				t.Errorf("command 17: %v, %v; want the error reply", v, err)
			}
			continue
		}
		n++
		if err != nil || v != n {
			t.Errorf("command %d: %v, %v; want %d", i, v, err, n)
		}
	}
	if v, err := wait.Result(); err != nil || v != 0 {
		t.Errorf("WAIT: %v, %v; want 0 replicas", v, err)
	}
	if v, err := status.Result(); err != nil || v != "PONG" {
		t.Errorf("PING: %v, %v; want PONG", v, err)
	}
}

func TestSetsUpAsGoRedis(t *testing.T) {
	// Credentials and the database are the client's, on RESP2 and RESP3.
	env := redistest.Single(t)
	ctx := context.Background()
	admin := env.Target.Client
	user := strings.TrimSuffix(env.Prefix, ":") + "-wire"
	if err := admin.Do(ctx, "acl", "setuser", user, "reset", "on", ">secret-pw", "~*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	defer admin.Do(ctx, "acl", "deluser", user)
	k := env.Prefix + "db"
	for _, proto := range []int{2, 3} {
		_, wc := wireClient(t, env, func(o *redis.Options) {
			o.Protocol, o.Username, o.Password, o.DB = proto, user, "secret-pw", 5
		})
		set := redis.NewCmd(ctx, "set", k, proto)
		who := redis.NewCmd(ctx, "acl", "whoami")
		wc.Exec(ctx, []redis.Cmder{set, who})
		if err := set.Err(); err != nil {
			t.Fatalf("RESP%d: SET: %v", proto, err)
		}
		if v, _ := who.Result(); v != user {
			t.Errorf("RESP%d: ACL WHOAMI %v; want %s", proto, v, user)
		}
		o := env.Target.NodeOptions(env.Target.Masters()[0])
		o.DB = 5
		db5 := redis.NewClient(o)
		v, err := db5.Get(ctx, k).Result()
		_ = db5.Del(ctx, k)
		_ = db5.Close()
		if err != nil || v != fmt.Sprint(proto) {
			t.Errorf("RESP%d: database 5 holds %q, %v; want the wire connection's write", proto, v, err)
		}
	}
	// A wrong password: the request fails (it was not sent) with Redis's words.
	_, wc := wireClient(t, env, func(o *redis.Options) { o.Username, o.Password = user, "wrong" })
	cmd := redis.NewCmd(ctx, "ping")
	wc.Exec(ctx, []redis.Cmder{cmd})
	if err := cmd.Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") || !errors.Is(err, algorithms.ErrNotSent) {
		t.Errorf("wrong password: %v; want WRONGPASS, not sent (algorithms.ErrNotSent)", err)
	}
}

func TestRefreshKeepsDeadlinesClose(t *testing.T) {
	// A deadline is set again only when the one in place is more than 1/64 of the timeout
	// short of the one wanted, or later than it; a request never gets more than its timeout.
	base := time.Unix(1000, 0)
	const d = 64 * time.Millisecond
	var last time.Time
	sets := 0
	set := func(time.Time) error { sets++; return nil }
	for i := range 200 {
		now := base.Add(time.Duration(i) * 100 * time.Microsecond)
		want, ok := deadline(context.Background(), now, d)
		if err := refresh(set, &last, want, ok, d); err != nil {
			t.Fatal(err)
		}
		if last.After(want) || want.Sub(last) > d/deadlineSlack {
			t.Fatalf("request %d: deadline %s for a wanted %s", i, last.Sub(base), want.Sub(base))
		}
	}
	if sets < 15 || sets > 25 {
		t.Errorf("%d deadlines set for 200 requests 100 µs apart with a slack of 1 ms; want one per 1.1 ms", sets)
	}
	// No timeout: the deadline is cleared once.
	before := sets
	want, ok := deadline(context.Background(), base, -1)
	_ = refresh(set, &last, want, ok, -1)
	_ = refresh(set, &last, want, ok, -1)
	if !last.IsZero() || sets != before+1 {
		t.Errorf("no timeout: deadline %v after %d sets; want none, cleared once", last, sets-before)
	}
	// A context's earlier deadline wins.
	ctx, cancel := context.WithDeadline(context.Background(), base.Add(time.Millisecond))
	defer cancel()
	if want, _ := deadline(ctx, base, d); !want.Equal(base.Add(time.Millisecond)) {
		t.Errorf("deadline with a context ending first: %v", want)
	}
}

func TestRespReaderAcrossReads(t *testing.T) {
	// Replies split anywhere across reads (here one byte per read) read as they do whole.
	stream := ":42\r\n*3\r\n:1\r\n:-7\r\n$5\r\nhello\r\n+OK\r\n-ERR no\r\n$-1\r\n*-1\r\n_\r\n#t\r\n,1.5\r\n" +
		"(12345678901234567890123\r\n=7\r\ntxt:abc\r\n%1\r\n$1\r\nk\r\n:9\r\n~1\r\n:3\r\n|1\r\n+a\r\n+b\r\n:8\r\n" +
		"*2\r\n-NESTED x\r\n_\r\n:1234567890123456789\r\n*70\r\n" + strings.Repeat(":5\r\n", 70)
	read := func(r io.Reader) []string {
		rd := newRespReader(r)
		var out []string
		for {
			v, err := rd.reply()
			if err == io.EOF {
				return out
			}
			out = append(out, fmt.Sprintf("%T %v %v", v, v, err))
			if err != nil && errors.Is(err, errProtocol) {
				t.Fatalf("reply %d: %v", len(out), err)
			}
		}
	}
	whole := read(strings.NewReader(stream))
	bytewise := read(iotest.OneByteReader(strings.NewReader(stream)))
	if len(whole) != 17 || !slices.Equal(whole, bytewise) {
		t.Errorf("whole: %d replies %q\nbyte by byte: %q", len(whole), whole, bytewise)
	}
	for _, bad := range []string{":12a\r\n", "?x\r\n", "$3\r\nabcd\r\n", ":99999999999999999999\r\n", "#x\r\n", ":1\n"} {
		if v, err := newRespReader(strings.NewReader(bad)).reply(); !errors.Is(err, errProtocol) {
			t.Errorf("%q: %v, %v; want a protocol error", bad, v, err)
		}
	}
}

func TestConnAsHook(t *testing.T) {
	// A go-redis Conn with a wire connection as its hook sends every command, its pipelines'
	// too, on the wire connection; a Pipe sends what was queued through its other methods as
	// well, on the same connection, in the same Exec.
	env := redistest.Single(t)
	ctx := context.Background()
	c, wc := wireClient(t, env, nil)
	conn := c.Conn()
	defer conn.Close()
	conn.AddHook(wc)
	id := redis.NewCmd(ctx, "client", "id")
	if err := conn.Process(ctx, id); err != nil {
		t.Fatalf("CLIENT ID: %v", err)
	}
	k := env.Prefix + "{h}"
	pipe := NewPipe(conn.Pipeline(), wc)
	queued := redis.NewCmd(ctx, "client", "id")
	_ = pipe.Process(ctx, queued)
	viaMethod := pipe.ClientID(ctx)
	incr := pipe.Incr(ctx, k)
	if pipe.Len() != 3 {
		t.Errorf("Len %d; want 3", pipe.Len())
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil || len(cmds) != 3 {
		t.Fatalf("Exec: %d commands, %v; want 3, nil", len(cmds), err)
	}
	if queued.Val() != id.Val() || viaMethod.Val() != id.Val().(int64) {
		t.Errorf("connection ids: Process %v, pipelined %v and %v; want one connection", id.Val(), queued.Val(), viaMethod.Val())
	}
	if incr.Val() != 1 {
		t.Errorf("INCR queued through a method: %v, %v; want 1", incr.Val(), incr.Err())
	}
	if pipe.Len() != 0 {
		t.Errorf("Len %d after Exec; want 0", pipe.Len())
	}
	s := c.PoolStats()
	gets := s.Hits + s.Misses
	if s.PipelineStats != nil {
		gets += s.PipelineStats.Hits + s.PipelineStats.Misses
	}
	if gets != 0 {
		t.Errorf("the client's pool handed out %d connections; want none", gets)
	}
}

func TestBoxes(t *testing.T) {
	// Interfaces made by boxes hold their values as Go's own would, across chunks and garbage
	// collections, while the boxes go on to hand out other values.
	var b boxes
	var ints, slices []any
	for i := range 3 * boxChunk {
		n := int64(i)*1_000_003 - 500
		ints = append(ints, b.int64(n))
		slices = append(slices, b.slice([]any{n, "s"}))
		if i%100 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for i := range 3 * boxChunk {
		n := int64(i)*1_000_003 - 500
		if v, ok := ints[i].(int64); !ok || v != n || ints[i] != any(n) {
			t.Fatalf("int %d: %T %v; want int64 %d", i, ints[i], ints[i], n)
		}
		s, ok := slices[i].([]any)
		if !ok || len(s) != 2 || s[0] != any(n) || s[1] != "s" {
			t.Fatalf("slice %d: %T %v; want [%d s]", i, slices[i], slices[i], n)
		}
	}
	if fmt.Sprint(b.int64(-7), b.int64(1<<40), b.slice([]any{int64(1)})) != "-7 1099511627776 [1]" {
		t.Errorf("formatted: %v %v %v", b.int64(-7), b.int64(1<<40), b.slice([]any{int64(1)}))
	}
	if allocs := testing.AllocsPerRun(1000, func() { _ = b.int64(123456) }); allocs > 0.01 {
		t.Errorf("%.2f allocations per boxed int64; want about 1/%d", allocs, boxChunk)
	}
}
