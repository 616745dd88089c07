package measure

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// served records, per node, when the load's connections last read a reply from it: the last
// moment the node could have decided one of the load's requests. On Sentinel a promotion leaves
// the former master acting as a master until the Sentinels reconfigure it, which the node watch
// may see only seconds later; while it acts as one, clients might be admitted by either master.
// Only the load touches the limiter's keys, so once the former master has answered the last of
// the load's requests it ever answers, its state no longer matters: the state is settled from
// then on (see disruptions). A request sent to it whose reply was never read is an unknown
// outcome, which never makes a definite violation.
//
// It is a go-redis hook (AddHook) on the load's client: it wraps each connection the client dials
// so that every read that returns bytes stamps the node's time. Its methods are safe for
// concurrent use.
type served struct {
	base  time.Time
	real  func(addr string) string // the node an address the client dialled stands for
	mu    sync.Mutex
	nodes map[string]*atomic.Int64 // ns since base of the last read; 0: never read
}

// newServed returns a tracker; real maps an address the client dials to the node it stands for
// (redisenv.Target.RealAddr), so that its times are by the node watch's addresses.
func newServed(real func(string) string) *served {
	return &served{base: time.Now(), real: real, nodes: map[string]*atomic.Int64{}}
}

// last returns when the load last read a reply from node addr, and whether it ever did.
func (s *served) last(addr string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.nodes[addr]
	if !ok || at.Load() == 0 {
		return time.Time{}, false
	}
	return s.base.Add(time.Duration(at.Load())), true
}

func (s *served) stamp(addr string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.nodes[addr]
	if !ok {
		at = &atomic.Int64{}
		s.nodes[addr] = at
	}
	return at
}

// DialHook wraps each connection the client dials (after its own dialer, TLS included).
func (s *served) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &servedConn{Conn: c, base: s.base, at: s.stamp(s.real(addr))}, nil
	}
}

// ProcessHook and ProcessPipelineHook leave commands as they are.
func (s *served) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (s *served) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// servedConn stamps its node's time at every read that returns bytes.
type servedConn struct {
	net.Conn
	base time.Time
	at   *atomic.Int64
}

func (c *servedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		now := max(int64(time.Since(c.base)), 1)
		for { // the latest of the node's connections' reads
			old := c.at.Load()
			if old >= now || c.at.CompareAndSwap(old, now) {
				break
			}
		}
	}
	return n, err
}
