package algorithms

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// TestStrictKeysGuard runs scripts behind the guard on a real redis-server: commands on keys in
// KEYS, and commands without keys, pass; a key not in KEYS is refused by redis.call (an error
// reply) and by redis.pcall (an error value the script can return); a shebang stays first; and
// every line keeps its number in Redis's errors.
func TestStrictKeysGuard(t *testing.T) {
	env := redistest.Single(t)
	c := env.Target.Client
	ctx := WithStrictKeys(context.Background())
	k1, k2 := env.Prefix+"a", env.Prefix+"b"
	tests := []struct {
		name, src string
		keys      []string
		want      string // a prefix of the reply's text, or of the error's
	}{
		{"keys in KEYS", "redis.call('SET', KEYS[1], 'x')\nreturn redis.call('MGET', KEYS[1], KEYS[2])", []string{k1, k2}, "[x <nil>]"},
		{"no keys", "local t = redis.call('TIME')\nreturn #t", []string{k1}, "2"},
		{"call on a key not in KEYS", "return redis.call('GET', KEYS[1] .. ':x')", []string{k1},
			"STRICTKEYS GET touched key " + k1 + ":x, which is not in KEYS"},
		{"pcall on a key not in KEYS", "local r = redis.pcall('INCR', KEYS[1] .. ':n')\nreturn r", []string{k1},
			"STRICTKEYS INCR touched key " + k1 + ":n, which is not in KEYS"},
		{"shebang", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", []string{k1}, "x"},
		{"line numbers", "local a = 1\nlocal b = 2\nreturn nosuch.field", []string{k1}, "ERR user_script:3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newScript(ctx, c, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			v, err := s.EvalSha(context.Background(), c, tt.keys).Result()
			got := fmt.Sprint(v)
			if err != nil && err != redis.Nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("%q = %q; want it to contain %q", tt.src, got, tt.want)
			}
		})
	}
	if g := guardKeys("#!lua\nreturn 1"); !strings.HasPrefix(g, "#!lua\n"+strictKeysGuard) || strings.Count(g, "\n") != 1 {
		t.Errorf("guardKeys(shebang) = %q; want the shebang first, the guard on line 2, no new line", g)
	}
}
