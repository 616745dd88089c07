package main

import (
	"bytes"
	"io"
	"sync"
)

// console is a command's stderr with a live line: the progress line of a long run, redrawn in
// place on a terminal (Live). Every message written to it (Write) goes on lines of its own: the
// live line is cleared first and drawn again under the message once the message ends its line,
// so a message never shares a line with the live progress. Off a terminal there is no live line
// and messages pass through. Safe for concurrent use.
type console struct {
	mu   sync.Mutex
	w    io.Writer
	term bool
	// live is the live line on screen ("" for none); partial says that a message has begun a
	// line it has not ended yet, under which the live line is not drawn.
	live    string
	partial bool
}

// newConsole returns w as a console; a console stays itself.
func newConsole(w io.Writer) *console {
	if c, ok := w.(*console); ok {
		return c
	}
	return &console{w: w, term: isTerminal(w)}
}

// clearLine returns the terminal to the start of an empty line: carriage return, erase to the
// end of the line.
const clearLine = "\r\033[K"

// Write writes a message, clearing the live line before it and drawing it again after a message
// that ends its line.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b bytes.Buffer
	if c.live != "" && !c.partial {
		b.WriteString(clearLine)
	}
	b.Write(p)
	c.partial = len(p) > 0 && p[len(p)-1] != '\n' || len(p) == 0 && c.partial
	if c.live != "" && !c.partial {
		b.WriteString(c.live)
	}
	if _, err := c.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Live shows s as the live line in place of the one before; nothing off a terminal. An empty s
// clears it.
func (c *console) Live(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.term {
		return
	}
	if !c.partial {
		_, _ = io.WriteString(c.w, clearLine+s) // a progress line that cannot be drawn is no error
	}
	c.live = s
}

// ClearLive removes the live line, leaving the cursor at the start of an empty line, so that
// what comes next (the summary on stdout, on the same terminal) starts a line of its own.
func (c *console) ClearLive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live != "" && !c.partial {
		_, _ = io.WriteString(c.w, clearLine)
	}
	c.live = ""
}
