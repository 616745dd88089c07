package wire

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/algorithms"
)

// Conn is one wire connection to one server. Not safe for concurrent use: one worker holds it.
// Its zero value is not usable: make one with NewConn.
type Conn struct {
	opt *redis.Options
	nc  net.Conn // nil until dialed, and after an error closed it
	rd  *respReader
	enc cmdEncoder
	out []byte
	// rdl and wdl are the read and write deadlines last set on nc.
	rdl, wdl time.Time
	// one holds the command ProcessHook sends.
	one [1]redis.Cmder
	// sent, when set (SetSent), is when the caller read the clock before it handed its requests
	// to the Calls: the next round trip takes it as its send time for the deadlines instead of
	// reading the clock again, and clears it.
	sent time.Time
}

// NewConn returns a wire connection to the server of opt, an initialised client's Options
// (Options of a redis.Client); it dials at its first request.
func NewConn(opt *redis.Options) *Conn {
	return &Conn{opt: opt, rd: newRespReader(nil)}
}

// Supports reports whether wire connections may stand in for the connections of c's pool: c is
// a client of one server, not go-redis's failover client (which follows the Sentinels and drops
// its connections to a master that was replaced), and it authenticates with a plain user name
// and password (no credentials provider, no OnConnect hook, which a wire connection could not
// honour).
func Supports(c *redis.Client) bool {
	o := c.Options()
	// go-redis's failover client is a redis.Client whose Addr says so (sentinel.go).
	return o.Addr != "FailoverClient" && o.Dialer != nil && o.OnConnect == nil && o.CredentialsProvider == nil &&
		o.CredentialsProviderContext == nil && o.StreamingCredentialsProvider == nil &&
		(o.Protocol == 2 || o.Protocol == 3)
}

// Close closes the connection, if it is open; the next request dials again.
func (c *Conn) Close() {
	if c.nc != nil {
		_ = c.nc.Close() // nothing is in flight: there is no error worth reporting
		c.nc = nil
	}
}

// Dial opens the connection and says hello, unless it is open. Its error is the dial's (a
// *net.OpError with Op "dial", as go-redis returns it), or the handshake's wrapped with
// algorithms.ErrNotSent: no request was sent on it.
func (c *Conn) Dial(ctx context.Context) error {
	if c.nc != nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, c.opt.DialTimeout)
	defer cancel()
	nc, err := c.opt.Dialer(dctx, c.opt.Network, c.opt.Addr)
	if err != nil {
		return err
	}
	c.nc, c.rdl, c.wdl = nc, time.Time{}, time.Time{}
	c.rd.reset(nc)
	if err := c.hello(ctx); err != nil {
		c.Close()
		return fmt.Errorf("%w: the connection to %s could not be set up: %w", algorithms.ErrNotSent, c.opt.Addr, err)
	}
	return nil
}

// hello sets up a new connection as go-redis does: HELLO with the client's protocol and
// credentials (on a server that refuses HELLO, AUTH with them and RESP2), then SELECT of the
// client's database.
func (c *Conn) hello(ctx context.Context) error {
	hello := []any{"hello", c.opt.Protocol}
	if c.opt.Password != "" {
		user := c.opt.Username
		if user == "" {
			user = "default"
		}
		hello = append(hello, "auth", user, c.opt.Password)
	}
	if c.opt.ClientName != "" {
		hello = append(hello, "setname", c.opt.ClientName)
	}
	var setup []*redis.Cmd
	cmd := redis.NewCmd(ctx, hello...)
	c.roundTrip(ctx, []redis.Cmder{cmd})
	if err := cmd.Err(); err != nil {
		if _, refused := err.(ReplyError); !refused || c.nc == nil {
			return err
		}
		// A server before Redis 6, or one that refuses the protocol: RESP2 and AUTH.
		if c.opt.Password != "" {
			if c.opt.Username != "" {
				setup = append(setup, redis.NewCmd(ctx, "auth", c.opt.Username, c.opt.Password))
			} else {
				setup = append(setup, redis.NewCmd(ctx, "auth", c.opt.Password))
			}
		}
		if c.opt.ClientName != "" {
			setup = append(setup, redis.NewCmd(ctx, "client", "setname", c.opt.ClientName))
		}
	}
	if c.opt.DB > 0 {
		setup = append(setup, redis.NewCmd(ctx, "select", c.opt.DB))
	}
	if len(setup) == 0 {
		return nil
	}
	cmds := make([]redis.Cmder, len(setup))
	for i, s := range setup {
		cmds[i] = s
	}
	c.roundTrip(ctx, cmds)
	for _, s := range setup {
		if err := s.Err(); err != nil {
			return fmt.Errorf("%s: %w", s.Args()[0], err)
		}
	}
	return nil
}

// Exec sends cmds in one write and reads their replies in order, dialing first when the
// connection is not open; every command carries its own reply or error (see roundTrip). A
// command of a type Exec cannot set (any but *redis.Cmd, *redis.IntCmd and *redis.StatusCmd)
// must not be given to it: the Conn's hook and Pipe send those through go-redis.
func (c *Conn) Exec(ctx context.Context, cmds []redis.Cmder) {
	if err := c.Dial(ctx); err != nil {
		for _, cmd := range cmds {
			cmd.SetErr(err)
		}
		return
	}
	c.roundTrip(ctx, cmds)
}

// SetSent tells the next round trip that its requests were sent at now, a time the caller read
// just before it handed them to their Calls, so that it sets its deadlines from now instead of
// reading the clock again.
func (c *Conn) SetSent(now time.Time) { c.sent = now }

// deadlineSlack is how far a deadline may lag behind the one a request would set before it is
// set again: setting a deadline costs a lock and a timer update in Go's network poller, so a
// request sets none while the one in place is within 1/deadlineSlack of its timeout of what it
// wants. A request therefore times out between (1 − 1/64) × and 1 × the client's timeout after
// it was sent.
const deadlineSlack = 64

// deadline returns the deadline a request sent at now with timeout d (a client's ReadTimeout or
// WriteTimeout) and context ctx should have, and whether it has one: none for a negative d
// (go-redis's "no timeout"), unless ctx has a deadline.
func deadline(ctx context.Context, now time.Time, d time.Duration) (time.Time, bool) {
	var dl time.Time
	if d > 0 {
		dl = now.Add(d)
	}
	if cd, ok := ctx.Deadline(); ok && (dl.IsZero() || cd.Before(dl)) {
		dl = cd
	}
	return dl, !dl.IsZero()
}

// refresh sets nc's deadline (set, the one last set in *last) to want unless *last is within
// 1/deadlineSlack of timeout d before it, or want is none and none is set.
func refresh(set func(time.Time) error, last *time.Time, want time.Time, ok bool, d time.Duration) error {
	if !ok {
		if last.IsZero() {
			return nil
		}
		*last = time.Time{}
		return set(time.Time{})
	}
	if !last.IsZero() && !last.After(want) && want.Sub(*last) <= d/deadlineSlack {
		return nil
	}
	*last = want
	return set(want)
}

// roundTrip writes cmds and reads their replies on the open connection. A reply sets its
// command's value (or its error, for an error reply or a null: redis.Nil). A network error, or
// a reply that cannot be read, is the error of its command and of every command after it, and
// closes the connection; a command that cannot be written is not sent, and neither are the
// others.
func (c *Conn) roundTrip(ctx context.Context, cmds []redis.Cmder) {
	out := c.out[:0]
	for i, cmd := range cmds {
		var err error
		if out, err = c.enc.append(out, i, cmd.Args()); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(fmt.Errorf("%w: %w", algorithms.ErrNotSent, err))
			}
			return
		}
	}
	c.out = out
	now := c.sent
	c.sent = time.Time{}
	if now.IsZero() {
		now = time.Now()
	}
	wd, wok := deadline(ctx, now, c.opt.WriteTimeout)
	err := refresh(c.nc.SetWriteDeadline, &c.wdl, wd, wok, c.opt.WriteTimeout)
	if err == nil {
		rd, rok := deadline(ctx, now, c.opt.ReadTimeout)
		err = refresh(c.nc.SetReadDeadline, &c.rdl, rd, rok, c.opt.ReadTimeout)
	}
	if err == nil {
		err = c.rd.send(c.nc, out)
	}
	if err != nil {
		c.fail(cmds, err)
		return
	}
	for i, cmd := range cmds {
		v, err := c.rd.reply()
		if err == nil {
			setReply(cmd, v)
			continue
		}
		if _, isReply := err.(ReplyError); isReply || err == redis.Nil {
			cmd.SetErr(err)
			continue
		}
		c.fail(cmds[i:], err)
		return
	}
}

// fail closes the connection after err, and makes err the error of cmds.
func (c *Conn) fail(cmds []redis.Cmder, err error) {
	c.Close()
	for _, cmd := range cmds {
		cmd.SetErr(err)
	}
}

// setReply sets v as the value of cmd, a command type canSend accepts. A value of the wrong type
// for cmd is its error, as go-redis's reader gives one.
func setReply(cmd redis.Cmder, v any) {
	switch cmd := cmd.(type) {
	case *redis.Cmd:
		cmd.SetErr(nil)
		cmd.SetVal(v)
	case *redis.IntCmd:
		n, ok := v.(int64)
		if !ok {
			cmd.SetErr(fmt.Errorf("redis: unexpected reply of type %T to %s, want an integer", v, cmd.Name()))
			return
		}
		cmd.SetErr(nil)
		cmd.SetVal(n)
	case *redis.StatusCmd:
		s, ok := v.(string)
		if !ok {
			cmd.SetErr(fmt.Errorf("redis: unexpected reply of type %T to %s, want a status", v, cmd.Name()))
			return
		}
		cmd.SetErr(nil)
		cmd.SetVal(s)
	}
}

// canSend reports whether a wire connection can send cmd: its reply type is one setReply sets.
func canSend(cmd redis.Cmder) bool {
	switch cmd.(type) {
	case *redis.Cmd, *redis.IntCmd, *redis.StatusCmd:
		return true
	}
	return false
}

// A Conn is a go-redis hook (redis.Hook) for a go-redis *redis.Conn of the same client
// (redis.Conn.AddHook): that redis.Conn's commands and pipelines go out on the wire connection
// instead of a connection of the client's pool, so that every Call, and every method of the
// redis.Conn a Call uses (EvalSha, Eval after NOSCRIPT, Pipeline for a WAIT after its request),
// sends on the same wire connection. A command of a type setReply cannot set, and a transaction
// (MULTI ... EXEC), go on to go-redis (next), which sends them on a connection of the pool that
// the redis.Conn then holds.
var _ redis.Hook = (*Conn)(nil)

// DialHook implements redis.Hook: dials are go-redis's own.
func (c *Conn) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook: it sends cmd on the wire connection and returns its error.
func (c *Conn) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !canSend(cmd) {
			return next(ctx, cmd)
		}
		c.one[0] = cmd
		c.Exec(ctx, c.one[:])
		c.one[0] = nil
		return cmd.Err()
	}
}

// ProcessPipelineHook implements redis.Hook: it sends cmds in one write on the wire connection
// and returns the first error among them, as go-redis's pipelines do.
func (c *Conn) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 {
			return nil
		}
		if cmds[0].Name() == "multi" {
			return next(ctx, cmds)
		}
		for _, cmd := range cmds {
			if !canSend(cmd) {
				return next(ctx, cmds)
			}
		}
		c.Exec(ctx, cmds)
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// Pipe is a pipeline on a wire connection: Process queues a command in a slice that every batch
// reuses, and Exec sends the queue in one write and reads the replies (go-redis's Pipeline makes
// a new slice for every batch). Its other methods (EvalSha and the like) are those of a go-redis
// pipeline on the redis.Conn the wire connection is the hook of, whose commands Exec sends after
// the queue's, on the same wire connection through that hook, so that nothing queued is left
// behind. Not safe for concurrent use.
type Pipe struct {
	redis.Pipeliner
	c    *Conn
	cmds []redis.Cmder
	// done holds the commands the last Exec sent (its result).
	done []redis.Cmder
}

// NewPipe returns a pipeline on c whose other methods are those of inner, a pipeline of the
// go-redis Conn that c is the hook of.
func NewPipe(inner redis.Pipeliner, c *Conn) *Pipe {
	return &Pipe{Pipeliner: inner, c: c}
}

// Process queues cmd and returns nil (the command carries its error after Exec).
func (p *Pipe) Process(ctx context.Context, cmd redis.Cmder) error {
	if !canSend(cmd) {
		return p.Pipeliner.Process(ctx, cmd)
	}
	p.cmds = append(p.cmds, cmd)
	return nil
}

// BatchProcess queues cmds.
func (p *Pipe) BatchProcess(ctx context.Context, cmds ...redis.Cmder) error {
	for _, cmd := range cmds {
		_ = p.Process(ctx, cmd)
	}
	return nil
}

// Len returns the number of commands queued.
func (p *Pipe) Len() int { return len(p.cmds) + p.Pipeliner.Len() }

// Cmds returns the commands queued.
func (p *Pipe) Cmds() []redis.Cmder {
	return append(slices.Clone(p.cmds), p.Pipeliner.Cmds()...)
}

// Discard empties the queue.
func (p *Pipe) Discard() {
	clear(p.cmds)
	p.cmds = p.cmds[:0]
	p.Pipeliner.Discard()
}

// Exec sends the queued commands, reads their replies and empties the queue. Like go-redis's Exec
// it returns the commands (in a slice valid until the next Exec) and the first error among them.
func (p *Pipe) Exec(ctx context.Context) ([]redis.Cmder, error) {
	if len(p.cmds) > 0 {
		p.c.Exec(ctx, p.cmds)
	}
	p.done = append(p.done[:0], p.cmds...)
	clear(p.cmds)
	p.cmds = p.cmds[:0]
	if p.Pipeliner.Len() > 0 {
		more, _ := p.Pipeliner.Exec(ctx) // the commands carry their errors
		p.done = append(p.done, more...)
	}
	for _, cmd := range p.done {
		if err := cmd.Err(); err != nil {
			return p.done, err
		}
	}
	return p.done, nil
}
