package load

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer sleeps with the kernel's resolution, not the Go runtime's millisecond one, without
// holding a P while it sleeps: it waits on a timerfd through the runtime's network poller, which
// wakes as soon as the fd fires. (A nanosleep system call would keep its P until sysmon took it
// back, up to 10 ms later, which stalls every goroutine when GOMAXPROCS is 1.)
type preciseTimer struct {
	f   *os.File // nil when no timerfd could be made: sleep falls back to time.Sleep
	buf [8]byte
}

// newPreciseTimer returns a timer; Close releases it.
func newPreciseTimer() *preciseTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &preciseTimer{}
	}
	// A non-blocking fd gives a File whose reads park the goroutine in the poller.
	return &preciseTimer{f: os.NewFile(uintptr(fd), "timerfd")}
}

// sleep sleeps for d; d <= 0 returns at once.
func (p *preciseTimer) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	if p.f != nil {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if unix.TimerfdSettime(int(p.f.Fd()), 0, &spec, nil) == nil {
			if _, err := p.f.Read(p.buf[:]); err == nil {
				return
			}
		}
	}
	time.Sleep(d)
}

// Close releases the timer's fd.
func (p *preciseTimer) Close() error {
	if p.f == nil {
		return nil
	}
	return p.f.Close()
}
