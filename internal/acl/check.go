package acl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
)

// ErrCannotCheck means the server cannot say what a user may run: redis.acl_check_cmd is Redis
// 7.0's, or a command the run needs is one the server does not know.
var ErrCannotCheck = errors.New("the server cannot check the user's permissions")

// keyProbe is the key whose access Check asks about: any key under KeyPattern.
const keyProbe = "limitbench:acl-check"

// checkScript asks redis.acl_check_cmd, for each of ARGV but the first (a command and its words,
// split on spaces), whether the connection's user may run it on keys under KeyPattern, and
// returns those it may not. Each is asked with ARGV[1] (keyProbe) six times after its words:
// every argument a command reads as a key is then under KeyPattern, and no command is asked
// without the arguments its key specification reads (Redis 7.0.15 crashes on EVALSHA, SET, SORT
// and some twenty others asked without them). A command the server does not know is returned as
// "?" followed by it.
const checkScript = `local refused = {}
for i = 2, #ARGV do
  local words = {}
  for w in string.gmatch(ARGV[i], '%S+') do words[#words + 1] = w end
  for _ = 1, 6 do words[#words + 1] = ARGV[1] end
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(words))
  if not ok then
    refused[#refused + 1] = '?' .. ARGV[i]
  elseif not allowed then
    refused[#refused + 1] = ARGV[i]
  end
end
return refused`

// Refusal is what Check found one master refusing.
type Refusal struct {
	// Addr is the master's address.
	Addr string
	// Missing are the commands its user may not run on the run's keys (KeyPattern): a command
	// it may not run at all, or one that touches keys when it may not touch those keys.
	Missing []Command
}

// Check asks every master of tgt, as the target's user, whether that user may run each command
// of n on keys under KeyPattern (redis.acl_check_cmd, in a script of its own sent with EVAL,
// which changes nothing). It returns the masters that refuse something, in the order of
// tgt.Masters(); none when the user has all it needs. A user that may not run EVAL is refused
// EVAL, and nothing else can be said of it. The error wraps ErrCannotCheck when the server
// cannot tell (before Redis 7.0), and is otherwise the error of a master that did not answer.
func Check(ctx context.Context, tgt *redisenv.Target, n Needs) ([]Refusal, error) {
	args := []any{keyProbe}
	for _, c := range n.Commands {
		args = append(args, strings.ReplaceAll(c.Name, "|", " "))
	}
	var mu sync.Mutex
	byAddr := map[string]Refusal{}
	err := tgt.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		r, err := checkMaster(ctx, c, n, args)
		if err != nil || len(r.Missing) == 0 {
			return err
		}
		mu.Lock()
		byAddr[r.Addr] = r
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Refusal
	for _, a := range tgt.Masters() {
		if r, ok := byAddr[a]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// checkMaster runs checkScript on the master at c with args (keyProbe, then n's commands).
func checkMaster(ctx context.Context, c *redis.Client, n Needs, args []any) (Refusal, error) {
	r := Refusal{Addr: c.Options().Addr}
	refused, err := c.Eval(ctx, checkScript, nil, args...).StringSlice()
	switch {
	case load.Refused(err):
		eval, _ := n.Lookup("eval")
		r.Missing = []Command{eval}
		return r, nil
	case err != nil && strings.Contains(err.Error(), "acl_check_cmd"):
		return r, fmt.Errorf("%w (Redis 7.0 or later can): %w", ErrCannotCheck, err)
	case err != nil:
		return r, err
	}
	for _, s := range refused {
		if name, unknown := strings.CutPrefix(s, "?"); unknown {
			return r, fmt.Errorf("%w: it does not know the command %s", ErrCannotCheck, strings.ToUpper(name))
		}
		name := strings.ReplaceAll(s, " ", "|")
		c, ok := n.Lookup(name)
		if !ok {
			c = Command{Name: name}
		}
		r.Missing = append(r.Missing, c)
	}
	return r, nil
}
