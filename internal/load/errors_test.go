package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/wire"
)

func TestErrorKindOf(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("gcra: %w", wire.ReplyError("OOM command not allowed when used memory > 'maxmemory'.")), "OOM"},
		{wire.ReplyError("NOSCRIPT No matching script. Please use EVAL."), "NOSCRIPT"},
		{wire.ReplyError("NOPERM this user has no permissions to run the 'evalsha' command"), "NOPERM"},
		{wire.ReplyError("ERR user_script:1: boom script: 8290, on @user_script:1."), "ERR"},
		// Issue 28 item 4: a command refused inside a script is an ACL refusal, in each wording.
		{wire.ReplyError("ERR The user executing the script can't run this command or subcommand script: 2bab3b66, on @user_script:1."), KindNoPerm},
		{wire.ReplyError("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: 76, on @user_script:1."), KindNoPerm},
		{fmt.Errorf("gcra: %w", wire.ReplyError("ERR ACL failure in script: User u has no permissions to run the 'incr' command script: 76, on @user_script:1.")), KindNoPerm},
		// A script's own error that quotes the words is not a refusal.
		{wire.ReplyError("ERR user_script:1: ACL failure in script script: 8290, on @user_script:1."), "ERR"},
		{wire.ReplyError("MOVED 3999 127.0.0.1:6381"), "MOVED"},
		{wire.ReplyError("my own words"), KindErrorReply},
		{wire.ReplyError("Busy"), KindErrorReply},
		{fmt.Errorf("gcra: %w: [1]", algorithms.ErrBadReply), KindBadReply},
		{algorithms.ErrCostUnsupported, KindCost},
		{redis.ErrPoolTimeout, KindPoolTimeout},
		{redis.ErrClosed, KindClosed},
		{&net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, KindRefused},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("no route to host")}, KindDial},
		{&net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}, KindConnLost},
		{&net.OpError{Op: "write", Net: "tcp", Err: &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}}, KindConnLost},
		{fmt.Errorf("gcra: %w", io.EOF), KindConnLost},
		{context.DeadlineExceeded, KindTimeout},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, KindTimeout},
		{errors.New("something else"), KindOther},
	}
	for _, tt := range tests {
		if got := ErrorKindOf(tt.err); got != tt.want {
			t.Errorf("ErrorKindOf(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
	for kind, want := range map[string]bool{KindRefused: true, KindDial: true, KindConnLost: true, KindTimeout: false,
		"OOM": false, KindPoolTimeout: false} {
		if got := Unreachable(kind); got != want {
			t.Errorf("Unreachable(%q) = %v; want %v", kind, got, want)
		}
	}
}

// errorOutcomes is a run's outcomes: decisions and errors of several classes, out of order.
func errorOutcomes() []Outcome {
	oom := wire.ReplyError("OOM command not allowed when used memory > 'maxmemory'.")
	var out []Outcome
	for i := range 40 {
		at := time.Duration(40-i) * ms // replies come back out of order across workers
		switch i % 4 {
		case 0:
			out = append(out, decided(true, 0, 0, at))
		case 1:
			out = append(out, Outcome{Received: at, Class: ClassFailed, Err: fmt.Errorf("gcra %d: %w", i, oom)})
		case 2:
			out = append(out, Outcome{Received: at, Class: ClassUnknown, Err: fmt.Errorf("gcra %d: %w", i, io.EOF)})
		default:
			out = append(out, Outcome{Received: at, Class: ClassFailed, Err: fmt.Errorf("gcra %d: %w", i, io.EOF)})
		}
	}
	return out
}

// Issue 14, item 3: errors are counted by kind and outcome, each with the text of its first
// error (the earliest reply), and shards merged give what one tally of the whole run gives,
// whatever the split; the encoding round-trips.
func TestErrorsTally(t *testing.T) {
	whole := NewErrors()
	outs := errorOutcomes()
	for i := range outs {
		whole.Add(&outs[i])
	}
	want := []ErrorClass{ // ties in count by kind, then outcome
		{Kind: "OOM", Outcome: "failed", Count: 10, First: "gcra 37: OOM command not allowed when used memory > 'maxmemory'.", FirstAtS: -0.097},
		{Kind: KindConnLost, Outcome: "failed", Count: 10, First: "gcra 39: EOF", FirstAtS: -0.099},
		{Kind: KindConnLost, Outcome: "unknown", Count: 10, First: "gcra 38: EOF", FirstAtS: -0.098},
	}
	if diff := cmp.Diff(want, whole.Classes(100*ms)); diff != "" {
		t.Errorf("Classes (-want +got):\n%s", diff)
	}
	if whole.Total() != 30 {
		t.Errorf("Total = %d; want 30", whole.Total())
	}
	for shards := 2; shards <= 5; shards++ {
		parts := make([]*Errors, shards)
		for i := range parts {
			parts[i] = NewErrors()
		}
		for i := range outs {
			parts[(i*7)%shards].Add(&outs[i])
		}
		merged := parts[0]
		for _, p := range parts[1:] {
			if err := merged.Merge(p); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(whole.Classes(0), merged.Classes(0)); diff != "" {
			t.Errorf("%d shards merged (-whole +merged):\n%s", shards, diff)
		}
	}
	b, err := whole.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Errors
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(whole.Classes(0), back.Classes(0)); diff != "" {
		t.Errorf("decoded (-encoded +decoded):\n%s", diff)
	}
	if err := back.UnmarshalBinary(b[:len(b)-3]); !errors.Is(err, ErrEncoding) {
		t.Errorf("truncated encoding: %v; want ErrEncoding", err)
	}
	if err := NewErrors().Merge(NewTimeline(0, time.Second, 0)); !errors.Is(err, ErrMismatch) {
		t.Errorf("Merge(timeline) = %v; want ErrMismatch", err)
	}
}
