package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// ErrBadFault means a LinkFault or a proxy's upstream is invalid.
var ErrBadFault = errors.New("bad network fault")

// LinkFaultKind names a network fault.
type LinkFaultKind string

// Network fault kinds.
const (
	// LinkLatency delays the data: every chunk that crosses the proxy in a direction the fault
	// applies to waits Latency, plus or minus Jitter (uniform, drawn per chunk), after it was
	// read; chunks of one connection keep their order.
	LinkLatency LinkFaultKind = "latency"
	// LinkReset resets connections: each connection is closed as soon as data crosses it in a
	// direction the fault applies to, and that data is lost. A connection opened while the fault
	// is on is reset with a TCP RST; one that was open before is closed with a FIN (toxiproxy
	// sets SO_LINGER 0 only on new connections). Applied in the direction to-server, a request
	// never reaches Redis; to-client, Redis runs it and the reply is lost.
	LinkReset LinkFaultKind = "reset"
	// LinkBlackhole stops the data: nothing crosses the proxy in a direction the fault applies
	// to, connections stay open (new ones are accepted and connected upstream). When the fault
	// ends the held data is released in order, late (Drop false), or, with Drop, everything
	// that arrived meanwhile has been dropped and every connection that carried the fault is
	// closed.
	LinkBlackhole LinkFaultKind = "blackhole"
)

// Direction says which way a fault acts on a proxied connection.
type Direction string

// Directions.
const (
	// DirBoth is both directions; the default for reset and blackhole.
	DirBoth Direction = "both"
	// DirToServer is the client's data towards Redis (requests).
	DirToServer Direction = "to-server"
	// DirToClient is Redis's data towards the client (replies); the default for latency, so
	// that a round trip takes Latency longer.
	DirToClient Direction = "to-client"
)

// LinkFault is one network fault on a Proxy. The zero Direction takes the kind's default.
type LinkFault struct {
	Kind      LinkFaultKind
	Direction Direction
	// Latency and Jitter, for latency: whole milliseconds (toxiproxy's unit), Jitter at most
	// Latency. Each direction the fault applies to adds Latency ± Jitter.
	Latency, Jitter time.Duration
	// Drop, for blackhole: drop the held data and close the connections when the fault ends,
	// instead of releasing the data.
	Drop bool
}

// direction returns f's direction, defaults applied.
func (f LinkFault) direction() Direction {
	if f.Direction != "" {
		return f.Direction
	}
	if f.Kind == LinkLatency {
		return DirToClient
	}
	return DirBoth
}

// String describes f: "latency 50ms±5ms to-client", "blackhole both (drop)".
func (f LinkFault) String() string {
	s := string(f.Kind)
	if f.Kind == LinkLatency {
		s += " " + f.Latency.String()
		if f.Jitter > 0 {
			s += "±" + f.Jitter.String()
		}
	}
	s += " " + string(f.direction())
	if f.Kind == LinkBlackhole {
		if f.Drop {
			s += " (drop)"
		} else {
			s += " (hold, then release)"
		}
	}
	return s
}

// Validate reports every problem with f at once, each wrapped with ErrBadFault.
func (f LinkFault) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadFault}, args...)...))
	}
	switch f.Kind {
	case LinkLatency, LinkReset, LinkBlackhole:
	default:
		bad("unknown kind %q (want latency, reset or blackhole)", f.Kind)
	}
	switch f.direction() {
	case DirBoth, DirToServer, DirToClient:
	default:
		bad("unknown direction %q (want both, to-server or to-client)", f.Direction)
	}
	if f.Kind == LinkLatency {
		if f.Latency <= 0 || f.Latency%time.Millisecond != 0 {
			bad("latency %s: want a positive whole number of milliseconds", f.Latency)
		}
		if f.Jitter < 0 || f.Jitter%time.Millisecond != 0 || f.Jitter > f.Latency {
			bad("jitter %s: want whole milliseconds from 0 to the latency (%s)", f.Jitter, f.Latency)
		}
	} else if f.Latency != 0 || f.Jitter != 0 {
		bad("latency and jitter are for kind latency, not %s", f.Kind)
	}
	if f.Drop && f.Kind != LinkBlackhole {
		bad("drop is for kind blackhole, not %s", f.Kind)
	}
	return errors.Join(errs...)
}

// Names of the custom toxics registered with toxiproxy.
const (
	holdToxicName = "limitbench-hold"
	dropToxicName = "limitbench-drop"
)

func init() {
	toxics.Register(holdToxicName, new(holdToxic))
	toxics.Register(dropToxicName, new(dropToxic))
}

// holdToxic reads nothing until it is removed: the data waits in the link's channels and, past
// them, in the sockets' buffers (TCP flow control), and flows again, in order, once the toxic
// is removed (toxiproxy flushes a removed toxic's buffer downstream).
type holdToxic struct{}

func (holdToxic) Pipe(stub *toxics.ToxicStub) { <-stub.Interrupt }

// dropToxic discards everything it reads and, when removed, closes its link, which closes the
// connection.
type dropToxic struct{}

func (dropToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
		}
	}
}

func (dropToxic) Cleanup(stub *toxics.ToxicStub) { stub.Close() }

// Proxy is a TCP proxy on 127.0.0.1 in front of one upstream address on 127.0.0.0/8, through which
// network faults are injected. It is toxiproxy's Proxy, run in process without its HTTP API.
// Its methods are safe for concurrent use.
type Proxy struct {
	p        *toxiproxy.Proxy
	upstream string
	addr     string // where p listens

	mu     sync.Mutex
	next   int                 // for toxic names
	active map[string]struct{} // toxic names in place
	closed bool
}

// NewProxy starts a proxy on a free port of 127.0.0.1 that forwards every connection to
// upstream, which must be a loopback address (the harness sends traffic nowhere else). Errors
// wrap ErrBadFault for a bad upstream.
func NewProxy(upstream string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(upstream)
	if err != nil {
		return nil, fmt.Errorf("%w: proxy upstream %q: %w", ErrBadFault, upstream, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%w: proxy upstream %s: only loopback addresses (127.0.0.0/8) are proxied", ErrBadFault, upstream)
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(server, "limitbench-"+upstream, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("proxy for %s: %w", upstream, err)
	}
	p.Lock() // Start has set Listen to the address it bound
	addr := p.Listen
	p.Unlock()
	return &Proxy{p: p, upstream: upstream, addr: addr, active: map[string]struct{}{}}, nil
}

// Addr returns the address the proxy listens on (127.0.0.1:port).
func (p *Proxy) Addr() string { return p.addr }

// Port returns the port the proxy listens on.
func (p *Proxy) Port() int {
	_, port, _ := net.SplitHostPort(p.Addr())
	n, _ := strconv.Atoi(port)
	return n
}

// Upstream returns the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Inject puts f on every connection through the proxy, those open now and those opened later,
// and returns remove, which takes it off (a blackhole then releases or drops what it held).
// remove is idempotent and safe to call from any goroutine; faults on one proxy may overlap
// (they apply in the order they were injected). Errors wrap ErrBadFault for an invalid f.
func (p *Proxy) Inject(f LinkFault) (remove func() error, err error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var streams []string
	switch f.direction() {
	case DirToServer:
		streams = []string{"upstream"}
	case DirToClient:
		streams = []string{"downstream"}
	default:
		streams = []string{"upstream", "downstream"}
	}
	typ, attrs := "", map[string]any{}
	switch f.Kind {
	case LinkLatency:
		typ = "latency"
		attrs["latency"] = f.Latency.Milliseconds()
		attrs["jitter"] = f.Jitter.Milliseconds()
	case LinkReset:
		typ = "reset_peer"
		attrs["timeout"] = 0
	case LinkBlackhole:
		typ = holdToxicName
		if f.Drop {
			typ = dropToxicName
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("proxy %s for %s is closed", p.Addr(), p.upstream)
	}
	var names []string
	for _, stream := range streams {
		p.next++
		name := fmt.Sprintf("%s-%d", f.Kind, p.next)
		body, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
		if _, err := p.p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			p.mu.Unlock()
			for _, n := range names {
				_ = p.remove(n)
			}
			return nil, fmt.Errorf("proxy %s: add %s: %w", p.Addr(), f, err)
		}
		p.active[name] = struct{}{}
		names = append(names, name)
	}
	p.mu.Unlock()
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			var errs []error
			for _, n := range names {
				errs = append(errs, p.remove(n))
			}
			rerr = errors.Join(errs...)
		})
		return rerr
	}, nil
}

// InjectFor puts f on the proxy for d, then takes it off (a blackhole releases or drops what it
// held), and returns the time the fault was in place: [start, end). When ctx ends first the
// fault comes off at once and the error says so; the times are still those of the fault.
func (p *Proxy) InjectFor(ctx context.Context, f LinkFault, d time.Duration) (start, end time.Time, err error) {
	remove, err := p.Inject(f)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	start = time.Now()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var cerr error
	select {
	case <-timer.C:
	case <-ctx.Done():
		cerr = fmt.Errorf("proxy %s: %s cut short: %w", p.addr, f, ctx.Err())
	}
	rerr := remove()
	return start, time.Now(), errors.Join(cerr, rerr)
}

// remove takes the toxic name off, if it is still in place.
func (p *Proxy) remove(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.active[name]; !ok {
		return nil
	}
	delete(p.active, name)
	if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("proxy %s: remove %s: %w", p.addr, name, err)
	}
	return nil
}

// Clear removes every fault in place (held data is released or dropped as each fault says);
// the remove functions of those faults then do nothing.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Toxics.ResetToxics(context.Background())
	clear(p.active)
}

// Close removes every fault (Clear), stops listening and closes every connection through the
// proxy. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.Clear()
	p.p.Stop()
	return nil
}
