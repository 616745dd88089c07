package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/limitbench/limitbench/internal/measure"
)

// screen is what a terminal shows of the bytes written to it: lines, a carriage return going
// back to the start of the current line, "\033[K" erasing from the cursor to its end.
func screen(out string) []string {
	lines := []string{""}
	col := 0
	for i := 0; i < len(out); i++ {
		cur := &lines[len(lines)-1]
		switch {
		case out[i] == '\n':
			lines = append(lines, "")
			col = 0
		case out[i] == '\r':
			col = 0
		case strings.HasPrefix(out[i:], "\033[K"):
			*cur = (*cur)[:col]
			i += len("\033[K") - 1
		default:
			if col < len(*cur) {
				*cur = (*cur)[:col] + string(out[i]) + (*cur)[col+1:]
			} else {
				*cur += string(out[i])
			}
			col++
		}
	}
	return lines
}

// TestProgressConsole (issue 31): on a terminal, a message written while the live progress line
// is shown lands on a line of its own, and the live line comes back under it; a message written
// in pieces is not broken by the live line; ClearLive leaves an empty line for what follows (the
// summary on stdout). Off a terminal the live line is never drawn.
func TestProgressConsole(t *testing.T) {
	var out bytes.Buffer
	c := &console{w: &out, term: true}
	c.Live("gcra single  1s/2s  500 requests")
	fmt.Fprintln(c, "limitbench run: stopping cleanly; signal again to quit at once")
	c.Live("gcra single  1.5s/2s  750 requests")
	fmt.Fprint(c, "done gcra single: ")
	c.Live("gcra single  1.6s/2s  800 requests") // while the message is half written
	fmt.Fprintln(c, "1000 requests, pass")
	c.ClearLive()
	want := []string{
		"limitbench run: stopping cleanly; signal again to quit at once",
		"done gcra single: 1000 requests, pass",
		"",
	}
	if diff := cmp.Diff(want, screen(out.String())); diff != "" {
		t.Errorf("the terminal shows (-want +got):\n%s\nwritten: %q", diff, out.String())
	}

	var plain bytes.Buffer
	p := &console{w: &plain}
	p.Live("progress")
	fmt.Fprintln(p, "message")
	p.ClearLive()
	if plain.String() != "message\n" {
		t.Errorf("off a terminal the console wrote %q; want the message alone", plain.String())
	}
}

// TestProgressConsoleConcurrent: messages and live lines from many goroutines never interleave
// within a line (run under -race).
func TestProgressConsoleConcurrent(t *testing.T) {
	var out bytes.Buffer
	c := &console{w: &out, term: true}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if g%2 == 0 {
					c.Live(fmt.Sprintf("live %d %d", g, i))
				} else {
					fmt.Fprintf(c, "message %d %d\n", g, i)
				}
			}
		}()
	}
	wg.Wait()
	c.ClearLive()
	lines := screen(out.String())
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "message ") || strings.Count(l, "message") != 1 || strings.Contains(l, "live") {
			t.Errorf("screen line %q: want one message alone", l)
		}
	}
	if n := len(lines) - 1; n != 4*50 {
		t.Errorf("%d lines on the screen; want %d messages", n, 4*50)
	}
}

// TestInterruptOwnWords (issue 31): an error that a cancellation reached through Go's context
// package is printed in limitbench's words, never as "context canceled".
func TestInterruptOwnWords(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w; results so far are in out", fmt.Errorf("run gcra: %w", fmt.Errorf("%w: %w", measure.ErrInterrupted, context.Canceled))),
			"run gcra: run cut short; results so far are in out"},
		{context.Canceled, "interrupted"},
		{fmt.Errorf("read scenario: %w", context.Canceled), "interrupted: read scenario"},
		{errors.New("redis was lost"), "redis was lost"},
	} {
		if got := ownWords(tt.err); got != tt.want {
			t.Errorf("ownWords(%q) = %q; want %q", tt.err, got, tt.want)
		}
	}
}
