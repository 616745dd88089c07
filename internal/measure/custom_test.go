package measure

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
)

// fakeReplies is a limiter that reports fixed reply statistics.
type fakeReplies struct {
	algorithms.Limiter
	st algorithms.ReplyStats
}

func (f fakeReplies) ReplyStats() algorithms.ReplyStats { return f.st }

// TestCustomNotes: the sentences customNotes adds for each combination of reply statistics.
func TestCustomNotes(t *testing.T) {
	tests := []struct {
		name string
		st   algorithms.ReplyStats
		want []string
	}{
		{"all fine", algorithms.ReplyStats{Rule: "{equals: \"1\"}", Read: 10, Admitted: 4, FirstRead: "1"}, nil},
		{"some unreadable", algorithms.ReplyStats{Rule: "{element: 2, equals: \"1\"}", Read: 10, Admitted: 4, FirstRead: "[1, 1]",
			Unreadable: 3, FirstUnreadable: "[1]", FirstReason: `allowed rule {element: 2, equals: "1"}: want element 2, the reply has 1; raw reply: [1]`},
			[]string{`3 replies could not be read (counted as unknown outcomes, warmup included); the first: allowed rule {element: 2, equals: "1"}: want element 2, the reply has 1; raw reply: [1]`}},
		{"time unreadable", algorithms.ReplyStats{Rule: "{element: 1, at_most: 5}", Read: 0, Unreadable: 2, FirstUnreadable: `[1, "x"]`,
			FirstReason: `time rule {element: 2, unit: s}: element 2 "x" is not a time; raw reply: [1, "x"]`},
			[]string{`2 replies could not be read (counted as unknown outcomes, warmup included); the first: time rule {element: 2, unit: s}: element 2 "x" is not a time; raw reply: [1, "x"]`}},
		{"never admitted", algorithms.ReplyStats{Rule: "{equals: \"1\"}", Read: 7, FirstRead: `"no"`},
			[]string{`none of the 7 replies read by the allowed rule {equals: "1"} was an admission; first raw reply: "no"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := customNotes(fakeReplies{st: tt.st})
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("customNotes(%+v) = %q; want %q", tt.st, got, tt.want)
			}
		})
	}
	if got := customNotes(nil); got != nil {
		t.Errorf("customNotes(nil) = %q; want nil", got)
	}
	l := algorithms.Limit{Limit: 10, Window: time.Second}
	same := algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 10, Window: time.Second}
	e := withCustomNotes(result.Entry{Custom: true}, fakeReplies{st: tests[3].st}, same, l)
	if len(e.Verification.Reasons) != 1 {
		t.Errorf("withCustomNotes: reasons %q; want one note", e.Verification.Reasons)
	}
	looser := algorithms.Contract{Kind: algorithms.FixedWindow, Limit: 20, Window: time.Second}
	e = withCustomNotes(result.Entry{Custom: true}, fakeReplies{st: tests[0].st}, looser, l)
	if want := []string{"note: the contract fixed-window(20, 1s) differs from the scenario's limit: limit 20 where the scenario's limit is 10; the script is verified against its contract"}; !slices.Equal(e.Verification.Reasons, want) {
		t.Errorf("withCustomNotes with a looser contract: reasons %q; want %q", e.Verification.Reasons, want)
	}
	if e := withCustomNotes(result.Entry{}, fakeReplies{st: tests[0].st}, looser, l); len(e.Verification.Reasons) != 0 {
		t.Errorf("withCustomNotes of a built-in algorithm: reasons %q; want none", e.Verification.Reasons)
	}
}

// TestCheckCustomScripts: every custom script Redis rejects is reported at once, wrapping
// ErrBadScript with Redis's message and file:line; built-in algorithms and good scripts pass.
func TestCheckCustomScripts(t *testing.T) {
	for _, topo := range []string{"single", "cluster"} {
		t.Run(topo, func(t *testing.T) {
			env := redistest.Single(t)
			if topo == "cluster" {
				env = redistest.Cluster(t)
			}
			custom := func(name, src string) algorithms.Algorithm {
				a, err := customAlgorithmOf(nil, &algorithms.CustomSpec{
					Name: name, Script: name + ".lua", Path: "dir/" + name + ".lua", Source: src,
					Keys:     []string{"k:{{tag}}"},
					Allowed:  algorithms.ReplyRule{Op: algorithms.RuleEquals, Value: "1"},
					Contract: algorithms.Contract{Kind: algorithms.NoContract},
				})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			gcra, err := algorithms.Lookup("gcra")
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			good := []algorithms.Algorithm{gcra, custom("good", "return 1")}
			if err := CheckScripts(ctx, env.Target, good); err != nil {
				t.Errorf("CheckScripts(good) = %v; want nil", err)
			}
			bad := append(good, custom("bad1", "return = 1"), custom("bad2", "local a = 1\nif a then"))
			err = CheckScripts(ctx, env.Target, bad)
			if !errors.Is(err, ErrBadScript) {
				t.Fatalf("CheckScripts(bad) = %v; want ErrBadScript", err)
			}
			for _, want := range []string{"bad1: dir/bad1.lua:1: ERR Error compiling script", "bad2: dir/bad2.lua:2: ERR Error compiling script"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("CheckScripts(bad) = %v; want it to contain %q", err, want)
				}
			}
		})
	}
}
