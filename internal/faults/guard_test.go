package faults

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/load"
)

// outcome is a request that came back at ms with err (nil: a decision).
type outcome struct {
	ms  int
	err error
}

// Issue 14, item 13 (stop once the environment is lost) and item 3 (NOPERM is the
// environment's problem): the guard trips after LostRequests requests in a row over LostAfter
// could not reach Redis, never for a restart's short outage, a timeout or an error reply, and
// at once on NOPERM. Times are arguments; nothing sleeps.
func TestGuard(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}
	noperm := replyError("NOPERM this user has no permissions to access one of the keys used as arguments")
	oom := replyError("OOM command not allowed when used memory > 'maxmemory'.")
	every := func(from, to, step int, err error) []outcome {
		var out []outcome
		for ms := from; ms <= to; ms += step {
			out = append(out, outcome{ms, err})
		}
		return out
	}
	cat := func(parts ...[]outcome) []outcome {
		var out []outcome
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name     string
		outcomes []outcome
		want     error // nil: the guard does not trip
		wantAt   int   // index of the outcome that trips it
	}{
		{"decisions", every(0, 5000, 10, nil), nil, 0},
		{"killed: refused for over a second", cat(every(0, 100, 10, nil), []outcome{{105, io.EOF}}, every(110, 2000, 50, refused)),
			ErrUnreachable, 11 + 1 + 20}, // 1.005 s after the EOF
		{"a restart's outage is short", cat(every(0, 100, 10, nil), every(101, 160, 1, refused), every(170, 3000, 10, nil)), nil, 0},
		{"many refusals in a short outage are not enough", every(0, 900, 1, refused), nil, 0},
		{"a decision ends the streak", cat(every(0, 800, 40, refused), []outcome{{810, nil}}, every(820, 1700, 40, refused)), nil, 0},
		{"a timeout ends the streak: a paused server is still there", cat(every(0, 900, 40, reset), []outcome{{950, timeout}},
			every(1000, 1900, 40, reset)), nil, 0},
		{"an error reply ends the streak", cat(every(0, 900, 40, refused), []outcome{{950, oom}}, every(1000, 1900, 40, refused)), nil, 0},
		{"timeouts never trip it", every(0, 10000, 100, timeout), nil, 0},
		{"NOPERM trips it at once", cat(every(0, 50, 10, nil), []outcome{{55, fmt.Errorf("gcra: %w", noperm)}}), ErrNoPermission, 6},
		// Issue 28 item 4: Redis 7.0 words a command refused inside a script without NOPERM.
		{"a refusal inside a script trips it at once", cat(every(0, 50, 10, nil), []outcome{{55, inScript70}}), ErrNoPermission, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stopped []error
			g := NewGuard(GuardOptions{}, func(err error) { stopped = append(stopped, err) })
			tripped := -1
			for i, o := range tt.outcomes {
				class := load.ClassOK
				if o.err != nil {
					class = load.Classify(o.err)
				}
				g.Observe(&load.Outcome{Received: time.Duration(o.ms) * time.Millisecond, Err: o.err, Class: class})
				if tripped < 0 && len(stopped) > 0 {
					tripped = i
				}
			}
			switch {
			case tt.want == nil && (len(stopped) > 0 || g.Err() != nil):
				t.Errorf("tripped at outcome %d: %v; want no trip", tripped, g.Err())
			case tt.want != nil && (len(stopped) != 1 || !errors.Is(g.Err(), tt.want) || !errors.Is(stopped[0], tt.want)):
				t.Errorf("stop called %d times, Err %v; want once with %v", len(stopped), g.Err(), tt.want)
			case tt.want != nil && tripped != tt.wantAt:
				t.Errorf("tripped at outcome %d; want %d (%v)", tripped, tt.wantAt, g.Err())
			}
		})
	}
}

// A command refused inside a script, in Redis 7.0's words and in 7.2's.
var (
	inScript70 = replyError("ERR The user executing the script can't run this command or subcommand script: 2bab3b661081db58bd2341920e0ba7cf5dc77b25, on @user_script:1.")
	inScript72 = replyError("ERR ACL failure in script: User bench has no permissions to run the 'pexpire' command script: 2bab3b661081db58bd2341920e0ba7cf5dc77b25, on @user_script:4.")
)

// TestGuardNamesRefusal: the guard's error names what was refused, the command and the script,
// as far as Redis's words do.
func TestGuardNamesRefusal(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{replyError("NOPERM this user has no permissions to run the 'memory|usage' command"), "Redis refused the user MEMORY USAGE: NOPERM"},
		{replyError("NOPERM User bench has no permissions to run the 'fcall' command"), "Redis refused the user FCALL: NOPERM"},
		{replyError("NOPERM this user has no permissions to access one of the keys used as arguments"), "Redis refused the user a key: NOPERM"},
		{inScript70, "Redis refused the user a command that script 2bab3b661081db58bd2341920e0ba7cf5dc77b25 called (Redis 7.0 does not say which): ERR The user"},
		{inScript72, "Redis refused the user PEXPIRE, which script 2bab3b661081db58bd2341920e0ba7cf5dc77b25 called: ERR ACL failure"},
		{replyError("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: limitbench_gcra, on @user_function:2."),
			"Redis refused the user a key that script limitbench_gcra used: ERR"},
	} {
		var got error
		g := NewGuard(GuardOptions{}, func(err error) { got = err })
		g.Observe(&load.Outcome{Err: tt.err, Class: load.ClassFailed})
		if got == nil || !errors.Is(got, ErrNoPermission) || !strings.HasPrefix(got.Error(), tt.want) {
			t.Errorf("guard on %q stopped with %v; want ErrNoPermission starting %q", tt.err, got, tt.want)
		}
	}
}

// replyError is an error reply, as go-redis returns one (a redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
