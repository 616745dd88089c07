package algorithms

import (
	"sync/atomic"
	"time"
)

// serverClock estimates the server's clock from this process's, for the limiters that send
// something the server's time decides and that their script checks (sliding-counter's window,
// token-bucket's expiry estimate): the estimate only spares the script work, it never decides. Its
// zero value estimates with the local clock (offset 0). It is safe for concurrent use.
type serverClock struct {
	// offset is the server's clock minus this process's, in µs, as a reply showed it (the
	// server's TIME minus the midpoint of the local times the request was sent and its reply read
	// at).
	offset atomic.Int64
}

// offsetSlack is how far, in µs, a reply's offset may be from the stored one before observe
// stores it: within it the estimate is as good as a round trip allows, and not writing the shared
// offset after every reply keeps the generator's workers from contending for it.
const offsetSlack = 100

// now returns the time in µs that req is estimated to be decided at on the server's clock: its
// FixedTime (tests), else the local time plus the offset. local is the local time in µs.
func (s *serverClock) now(req Request, local int64) int64 {
	if fixed := fixedMicros(req); fixed != 0 {
		return fixed
	}
	return local + s.offset.Load()
}

// predict returns the index of the aligned window [kW, (k+1)W) of w µs that req is estimated to
// be decided in (see now).
func (s *serverClock) predict(req Request, w int64) int64 {
	return floorDiv(s.now(req, time.Now().UnixMicro()), w)
}

// observe takes the server's time server (µs) from the reply to a request sent at sentAt (local
// µs): the server read it between the send and now, so the offset is taken from the midpoint.
func (s *serverClock) observe(server, sentAt int64) {
	off := server - (sentAt+time.Now().UnixMicro())/2
	if d := off - s.offset.Load(); d > offsetSlack || d < -offsetSlack {
		s.offset.Store(off)
	}
}
